"""Every SKILL.md's front matter, parsed strictly (Claude Code loads a skill with broken YAML without a word).

Strict: the project's own YAML reader (duplicate keys, unknown tags, odd scalars are
errors), a mapping with only keys Claude Code reads, `name` equal to the folder and
in the allowed alphabet, a description within the limit.
"""

from __future__ import annotations

import re

import pytest

from helpers import ROOT

from assay.core.errors import AssayError
from assay.core.strict_yaml import loads

KNOWN_KEYS = {"name", "description", "argument-hint", "allowed-tools", "disable-model-invocation",
              "user-invocable", "model", "context", "agent", "hooks", "license", "version"}
SKILLS = sorted((ROOT / "skills").glob("*/SKILL.md"))


def front_matter(text: str, label: str) -> dict:
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if not m:
        raise AssayError(f"{label}: no front matter between two `---` lines at the top", 2)
    meta, _ = loads(m.group(1), label)
    if not isinstance(meta, dict):
        raise AssayError(f"{label}: front matter is not a mapping", 2)
    unknown = sorted(set(meta) - KNOWN_KEYS)
    if unknown:
        raise AssayError(f"{label}: unknown front-matter key(s) {unknown}", 2)
    return meta


@pytest.mark.parametrize("skill", SKILLS, ids=lambda p: p.parent.name)
def test_front_matter_is_strict_yaml_claude_code_understands(skill):
    meta = front_matter(skill.read_text(encoding="utf-8"), str(skill.relative_to(ROOT)))
    assert meta["name"] == skill.parent.name
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", meta["name"])
    assert isinstance(meta["description"], str) and 0 < len(meta["description"]) <= 1024
    if "disable-model-invocation" in meta:
        assert isinstance(meta["disable-model-invocation"], bool)
    if "allowed-tools" in meta:
        assert isinstance(meta["allowed-tools"], (str, list))


@pytest.mark.parametrize("bad, complaint", [
    ("---\nname: run\nname: run\ndescription: x\n---\n", "duplicate"),
    ("---\nname: run\ndescription: [unclosed\n---\n", "invalid YAML"),
    ("---\nname: run\ndescripton: x\n---\n", "unknown front-matter key"),
    ("---\n- a\n---\n", "not a mapping"),
    ("no front matter\n", "no front matter"),
])
def test_the_strict_reader_refuses_what_the_cli_would_load(bad, complaint):
    with pytest.raises(AssayError) as err:
        front_matter(bad, "skills/x/SKILL.md")
    assert complaint in err.value.message
