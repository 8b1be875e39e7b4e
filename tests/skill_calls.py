"""Every script call a skill documents (its SKILL.md body and its references/), with the placeholders
filled as a user in the example app's directory would fill them, in the form the skills tell the
agent to type: `python3 "<plugin root>/scripts/<name>.py" …`, the root written out and quoted."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import ROOT

CALL_RE = re.compile(r'python3 "?\$\{CLAUDE_PLUGIN_ROOT\}/scripts/([a-z_]+\.py)"?([^`\n|]*)')
# a listing the skills tell the agent to make (Claude Code gives their sessions no Glob or Grep tool)
LS_RE = re.compile(r"`(ls [^`\n]*)`")

# what a user standing in the example app's directory types for each placeholder
FILL = {
    "<state-dir>": ".assay", "<app>": ".", "<work-dir>": ".assay/work", "<new-dir>": "imported/.assay",
    "<run-id>": "smoke-20261204T101500Z", "<baseline-run-id>": "smoke-20261203T101500Z",
    "<champion-run-id>": "regression-20261203T120000Z", "<holdout-run-id>": "holdout-20261204T140000Z",
    "<mode>": "smoke", "<id>": "kb-desc-1", "<path>": "desk.py", "<n>": "7", "<file>": "labels",
    "<cluster>": "search_kb picked for refund questions",
    "<failure <- cause <- fix>": "refund routed to search_kb <- vague tool description <- say refunds",
    "<their reason>": "the suite was rewritten", "<the person's name>": "Dana Reviewer",
    "<promptfooconfig.yaml>": "promptfooconfig.yaml", "<spans.jsonl>": "spans.jsonl", "<out-dir>": "bundle",
    "examples/helpdesk/.assay": ".assay",
}


def skill_docs(name: str) -> list[Path]:
    folder = ROOT / "skills" / name
    return [folder / "SKILL.md", *sorted((folder / "references").glob("*.md"))]


def _body(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.name == "SKILL.md" and text.startswith("---\n"):
        return text.split("\n---\n", 1)[1]   # allowed-tools is not a call
    return text


def fill(rest: str) -> str:
    """A documented call's arguments as a user types them: placeholders filled, `[optional]` parts kept."""
    rest = rest.split("  #", 1)[0].split("   #", 1)[0]
    for placeholder in sorted(FILL, key=len, reverse=True):
        rest = rest.replace(placeholder, FILL[placeholder])
    rest = re.sub(r"\[(--[^\]]*)\]", r"\1", rest)
    left = re.findall(r"<[^<>]+>", rest)
    assert not left, f"unfilled placeholder {left} in a documented call: add it to skill_calls.FILL"
    return " ".join(rest.split())


def documented_calls(name: str, root: Path = ROOT) -> list[str]:
    """Each distinct documented call of skill `name`, in the order the docs give them."""
    seen: dict[str, None] = {}
    for path in skill_docs(name):
        for script, rest in CALL_RE.findall(_body(path)):
            seen[f'python3 "{root}/scripts/{script}" {fill(rest)}'.rstrip()] = None
    return list(seen)


def documented_listings(name: str) -> list[str]:
    """Each distinct `ls …` call skill `name` documents (placeholders filled), in the order given."""
    seen: dict[str, None] = {}
    for path in skill_docs(name):
        for call in LS_RE.findall(_body(path)):
            seen[fill(call)] = None
    return list(seen)
