"""Schema-check a YAML document, pointing each violation at its line.

A thin binding of assay.schemas.validate (the one validator) to a strict-YAML line index.
"""

from __future__ import annotations

from typing import Any

from ..schemas import validate
from ..core.strict_yaml import LineIndex


def validate_yaml(doc: Any, schema: str, *, label: str, lines: LineIndex, what: str) -> None:
    """Raise AssayError(2) naming `label:line: key.path: problem` for each violation (first 10)."""
    validate(doc, schema, source=label, what=what, line_of=lambda path: lines.line_of(path) if path else lines.get(()))
