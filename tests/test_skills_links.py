"""Every `${CLAUDE_PLUGIN_ROOT}/…` path and every relative Markdown link in every skill,
shared reference and doc resolves to an existing file; every SKILL.md has valid frontmatter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from helpers import ROOT

PLUGIN_PATH_RE = re.compile(r"\$\{CLAUDE_PLUGIN_ROOT\}/([^\s\"'`()<>*\[\]{}|,;]*)")
LINK_RE = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE_RE = re.compile(r"^(```+|~~~+)")


def doc_files() -> list[Path]:
    files = sorted((ROOT / "skills").glob("**/*.md")) + sorted((ROOT / "references").glob("*.md")) \
        + sorted((ROOT / "docs").glob("*.md"))
    return [f for f in files if f.is_file()]


def strip_fenced(text: str) -> str:
    """Drop fenced code blocks (a `[x](y)` inside code is not a link)."""
    out, fence = [], None
    for line in text.splitlines():
        m = FENCE_RE.match(line.strip())
        if fence is None and m:
            fence = m.group(1)[0] * 3
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        out.append(line)
    return "\n".join(out)


def plugin_paths(text: str) -> list[str]:
    found = []
    for m in PLUGIN_PATH_RE.finditer(text):
        path = m.group(1).rstrip(".:")
        nxt = text[m.end():m.end() + 1]
        if nxt in ("<", "*", "{", "[") or not path or path.endswith("/") or path.startswith(("…", "...")):
            continue  # a template (`scripts/<name>.py`, `scripts/*`) or the bare root, not a file
        found.append(path)
    return found


def relative_links(text: str) -> list[str]:
    links = []
    for m in LINK_RE.finditer(strip_fenced(text)):
        target = m.group(1).strip("<>")
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue  # external or same-page anchor
        links.append(target.split("#", 1)[0])
    return links


def test_there_are_docs_to_check():
    names = {str(p.relative_to(ROOT)) for p in doc_files()}
    for expected in ("skills/run/SKILL.md", "skills/run/references/run-modes.md", "skills/generate/SKILL.md",
                     "skills/analyze/SKILL.md", "skills/optimize/SKILL.md"):
        assert expected in names


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_plugin_path_resolves(doc):
    missing = [p for p in plugin_paths(doc.read_text(encoding="utf-8")) if not (ROOT / p).is_file()]
    assert not missing, f"{doc.relative_to(ROOT)}: ${{CLAUDE_PLUGIN_ROOT}} paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    missing = [t for t in relative_links(doc.read_text(encoding="utf-8"))
               if t and not (doc.parent / t).resolve().exists()]
    assert not missing, f"{doc.relative_to(ROOT)}: relative links that do not resolve: {missing}"


@pytest.mark.parametrize("skill", sorted((ROOT / "skills").glob("*/SKILL.md")), ids=lambda p: p.parent.name)
def test_skill_frontmatter_is_valid(skill):
    text = skill.read_text(encoding="utf-8")
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert m, f"{skill}: no YAML frontmatter"
    meta = yaml.safe_load(m.group(1))
    assert isinstance(meta, dict)
    assert meta.get("name") == skill.parent.name
    for key in ("description", "argument-hint", "allowed-tools"):
        assert isinstance(meta.get(key), str) and meta[key].strip(), f"{skill}: frontmatter {key!r}"
    assert len(meta["description"]) <= 1024


def test_run_skill_names_every_step_it_promises():
    text = (ROOT / "skills" / "run" / "SKILL.md").read_text(encoding="utf-8")
    for script in ("convert_suite", "validate_cases", "make_plan", "run_cases", "wait_run", "draft_report",
                   "md_to_html", "gate"):
        assert f"${{CLAUDE_PLUGIN_ROOT}}/scripts/{script}.py" in text, script
    for mode in ("smoke", "regression", "targeted", "holdout", "full"):
        assert f"| `{mode}` |" in text
    assert "<!-- assay:clusters -->" in text


# ---- the checker itself can fail ----

def test_checker_catches_missing_paths_and_links(tmp_path):
    text = ("see ${CLAUDE_PLUGIN_ROOT}/scripts/nope.py and `${CLAUDE_PLUGIN_ROOT}/scripts/<name>.py` "
            "and `${CLAUDE_PLUGIN_ROOT}/…` and [a](missing.md#x) and [b](https://x.y) and [c](#top)\n```\n[d](in-code.md)\n```\n")
    assert plugin_paths(text) == ["scripts/nope.py"]
    assert relative_links(text) == ["missing.md"]


def test_run_modes_workflow_yaml_parses_and_gates_tokenless():
    text = (ROOT / "skills" / "run" / "references" / "run-modes.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    workflows = [b for b in blocks if isinstance(b, dict) and "jobs" in b]
    assert len(workflows) == 2     # the single-job gate, then the sharded one (tests/test_shard_ci.py)
    steps_only = [b for b in blocks if isinstance(b, list)]   # the no-Claude variant's one step
    assert len(steps_only) == 1 and "--latest" not in steps_only[0][0]["run"]
    assert 'gate.py" ".assay/reports/$RUN_ID"' in steps_only[0][0]["run"]   # it gates the run it made, by path
    wf = workflows[0]
    steps = wf["jobs"]["assay"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert 'claude -p "/assay:run --regression" --bare --plugin-dir' in runs
    assert "--output-format stream-json --verbose" in runs
    assert "is_error == true" in runs and "plugin_errors" in runs and 'index("assay")' in runs
    assert "scripts/gate.py" in runs and "--github-summary" in runs
    for mode in ("smoke", "regression", "targeted", "holdout", "full"):
        assert f"\n## {mode}\n" in text
