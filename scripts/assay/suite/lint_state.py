"""Lint a state dir in-process, the same rules as convert_suite.py + validate_cases.py --manifest."""

from __future__ import annotations

import os
from typing import Any

from ..lint.engine import lint_suite
from .convert import convert_state_dir


def lint_state_dir(state_dir: str | os.PathLike[str], converted: dict[str, Any] | None = None) -> dict[str, Any]:
    """validate_cases.py's output object for the state dir (capabilities, adapter and manifest checked)."""
    conv = converted if converted is not None else convert_state_dir(state_dir)
    suite = {"cases": conv["cases"], "sources": conv["sources"],
             "unnamed_sources": conv.get("unnamed_sources", []), "scoring": conv["scoring"],
             "label": f"{state_dir}/datasets"}
    return lint_suite(suite, matrix=conv["capability_matrix"], adapter=conv["adapter"], manifest=conv["manifest"])


def error_summary(lint: dict[str, Any], limit: int = 5) -> str:
    errs = [f for f in lint.get("findings", []) if f.get("severity") == "ERROR"]
    return "; ".join(f"{f.get('case_id') or '-'} {f.get('code')}: {f.get('message')}" for f in errs[:limit])
