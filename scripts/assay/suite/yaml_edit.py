"""Surgical edits of one top-level key in a YAML file, keeping every other line (comments
included) byte for byte, and proving the edit by re-parsing: the new document equals the
old one with only that key changed."""

from __future__ import annotations

import re
from typing import Any

import yaml

from ..core.errors import AssayError

_MISSING = object()


def _extent(lines: list[str], key: str) -> tuple[int, int] | None:
    """[start, end) of the key's line and its block value (indented or `- ` lines)."""
    pat = re.compile(rf"^{re.escape(key)}:(\s|$)")
    for i, line in enumerate(lines):
        if pat.match(line):
            j = i + 1
            while j < len(lines) and lines[j][:1] in (" ", "\t", "-") and lines[j].strip():
                j += 1
            return i, j
    return None


def render_key(key: str, value: Any) -> str:
    return yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=False, allow_unicode=True)


def set_top_level(text: str, key: str, value: Any, *, label: str) -> str:
    """`text` with top-level `key` set to `value` (appended when absent). An empty or comments-only
    document is an empty mapping (reseal creates datasets/dataset.yaml when the suite has none)."""
    before = yaml.safe_load(text)
    if before is None:
        before = {}
    if not isinstance(before, dict):
        raise AssayError(f"{label}: expected a YAML mapping to edit {key!r}", 2, file=label)
    lines = text.splitlines(keepends=True)
    block = render_key(key, value)
    span = _extent(lines, key)
    if span is None:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines.append(block)
    else:
        lines[span[0]:span[1]] = [block]
    new_text = "".join(lines)
    after = yaml.safe_load(new_text)
    expected = dict(before)
    expected[key] = value
    if after != expected:
        raise AssayError(f"{label}: could not rewrite {key!r} without touching other keys (unusual layout: a "
                         f"flow mapping or a multi-line value?); edit {key} by hand", 2, file=label, key=key)
    return new_text
