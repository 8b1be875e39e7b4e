"""Schema-check a YAML document, pointing each violation at its line.

Like assay.schemas.validate, but an unknown key is reported at the line of the
unknown key itself (not of its parent mapping), which is where the user must look.
"""

from __future__ import annotations

import re
from typing import Any

from ..core.errors import AssayError
from ..schemas import MAX_REPORTED, iter_errors, load_schema
from .strict_yaml import LineIndex

_UNKNOWN = re.compile(r"^unknown key\(s\) (.*?) \(allowed")


def _line(error: dict[str, Any], lines: LineIndex) -> int | None:
    m = _UNKNOWN.match(error["message"])
    if m:
        for name in re.findall(r"'([^']*)'", m.group(1)):
            line = lines.get(tuple(error["path"]) + (name,))
            if line is not None:
                return line
    return lines.line_of(error["path"])


def _schema_at(schema: dict[str, Any], path: list[Any]) -> dict[str, Any] | None:
    """The sub-schema describing the value at `path` (properties / items only; None if unknown)."""
    node: Any = schema
    for part in path:
        if not isinstance(node, dict):
            return None
        if isinstance(part, int):
            node = node.get("items")
        else:
            node = (node.get("properties") or {}).get(part)
    return node if isinstance(node, dict) else None


def _plainer(error: dict[str, Any], schema: str) -> str:
    """A oneOf miss says only "not valid under any of the given schemas": name the allowed forms instead."""
    if "is not valid under any of the given schemas" not in error["message"]:
        return error["message"]
    sub = _schema_at(load_schema(schema), error["path"]) or {}
    forms = [alt.get("description", "") for alt in sub.get("oneOf", [])]
    listed = " or ".join(f for f in forms if f)
    return f"matches none of its allowed forms: {listed}" if listed else error["message"]


def validate_yaml(doc: Any, schema: str, *, label: str, lines: LineIndex, what: str) -> None:
    """Raise AssayError(2) naming `label:line: key.path: problem` for each violation (first 10)."""
    errors = iter_errors(doc, schema)
    if not errors:
        return
    shown, violations = [], []
    for e in errors[:MAX_REPORTED]:
        e["message"] = _plainer(e, schema)
        line = _line(e, lines)
        shown.append(f"{label}:{line}: {e['key']}: {e['message']}" if line else f"{label}: {e['key']}: {e['message']}")
        violations.append({"key": e["key"], "message": e["message"], "line": line})
    more = f" (and {len(errors) - MAX_REPORTED} more)" if len(errors) > MAX_REPORTED else ""
    raise AssayError(f"{what} does not match its schema: " + "; ".join(shown) + more + ". Fix the YAML and re-run.",
                     2, file=label, schema=schema, violations=violations)
