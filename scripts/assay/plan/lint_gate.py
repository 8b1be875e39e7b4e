"""make_plan runs the linter: a suite with linter ERRORs is refused (wave 2 §1), naming each
case, file, line and code; `--allow-invalid` lets it through, and the plan records that.

The rules are validate_cases.py's, run in-process on the converted suite (the same
inputs its by-hand command reads: cases, capability matrix, adapter, dataset manifest).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..lint.engine import lint_suite
from ..lint.findings import ERROR

MAX_SHOWN = 20


def line_of(state_dir: Path, source: str | None, key: str | None) -> int | None:
    """The line of `key` (a dotted path) in the case file `source` (relative to the state dir)."""
    if not source:
        return None
    path = state_dir / source
    try:
        from ..core.strict_yaml import load
        _, lines = load(path, source)
    except (AssayError, OSError, ImportError):
        return None
    dotted = re.sub(r"\[(\d+)\]", r".\1", key or "")   # `input.turns[0].expect.rout` as the message writes it
    parts = [int(p) if p.isdigit() else p for p in dotted.split(".") if p]  # list indices are ints
    line = lines.line_of(parts) if parts else None
    return line if line is not None else lines.line_of(["id"])


def located(finding: dict[str, Any], state_dir: Path) -> str:
    """`datasets/x.yaml:4: c-1234 [unknown_key] message` for one finding."""
    source = finding.get("source")
    line = line_of(state_dir, source, finding.get("key"))
    where = f"{source}:{line}" if source and line else (source or "(suite)")
    case = f" {finding['case_id']}" if finding.get("case_id") else ""
    return f"{where}:{case} [{finding['code']}] {finding['message']}"


def lint_converted(converted: dict[str, Any], state_dir: Path, *, allow_invalid: bool) -> dict[str, Any]:
    """Lint the converted suite; raise AssayError(2) on any ERROR unless allow_invalid.

    Returns the record make_plan keeps in `manifest_extra.validation` (copied into the
    run's manifest): `{errors, warnings, allow_invalid, error_codes}`.
    """
    suite = {"cases": converted["cases"], "sources": converted.get("sources") or {},
             "unnamed_sources": converted.get("unnamed_sources") or [], "scoring": converted.get("scoring"),
             "rubrics": converted.get("rubrics"), "label": "converted suite"}
    adapter = converted.get("adapter")
    root = None
    if isinstance(adapter, dict):
        from ..invoke.approot import app_root
        root = app_root(adapter, state_dir)
    out = lint_suite(suite, matrix=converted.get("capability_matrix"), adapter=adapter,
                     manifest=converted.get("manifest"), app_root=root)
    errors = [f for f in out["findings"] if f["severity"] == ERROR]
    record = {"errors": out["error_count"], "warnings": out["warn_count"], "allow_invalid": bool(allow_invalid),
              "error_codes": sorted({f["code"] for f in errors})}
    if errors:  # what --allow-invalid overrode, located, for the gate and the report to name
        record["overridden"] = [located(f, state_dir) for f in errors[:MAX_SHOWN]]
    record["warning_lines"] = warning_lines([f for f in out["findings"] if f["severity"] != ERROR], state_dir)
    if errors and not allow_invalid:
        shown = [located(f, state_dir) for f in errors[:MAX_SHOWN]]
        more = f"\n  ... and {len(errors) - MAX_SHOWN} more (validate_cases.py lists them all)" \
            if len(errors) > MAX_SHOWN else ""
        raise AssayError(
            f"the suite has {len(errors)} linter ERROR(s), so no plan was written (a case the linter rejects "
            "can pass without checking what it means to):\n  " + "\n  ".join(shown) + more
            + "\nFix the YAML and re-run convert_suite.py, or pass --allow-invalid to plan it anyway "
            "(recorded in the plan and the run's manifest).",
            2, errors=[dict(f, where=located(f, state_dir).split(": ", 1)[0]) for f in errors])
    return record


MAX_WARN_CODES = 5


def is_code_line(line: str, code: str) -> bool:
    """Whether a warning_lines line is the one of linter code `code`."""
    return line.startswith("linter WARN x") and f" [{code}] " in line


def warning_lines(warns: list[dict[str, Any]], state_dir: Path) -> list[str]:
    """One line per WARN code (the first finding, located, and how many), so make_plan's stderr
    shows what the linter warned about instead of a bare count."""
    by_code: dict[str, list[dict[str, Any]]] = {}
    for f in warns:
        by_code.setdefault(f["code"], []).append(f)
    lines = [f"linter WARN x{len(rows)}: {located(rows[0], state_dir)}"
             for code, rows in list(by_code.items())[:MAX_WARN_CODES]]
    if len(by_code) > MAX_WARN_CODES:
        lines.append(f"linter WARN: {len(by_code) - MAX_WARN_CODES} more code(s); validate_cases.py lists them all")
    return lines
