"""The gate's cost and latency budgets: gate.py's flags, else the state dir's profile.yaml.

    # <state>/profile.yaml
    budgets:
      max_cost_per_case: 0.002   # mean cost per traced case, in prices.yaml's currency
      max_p95_latency_s: 4       # p95 end-to-end case latency, in seconds

A flag (`--max-cost-per-case`, `--max-p95-latency-s`) overrides the profile's key of the same
name. The profile is read with the schema check convert_suite.py applies (one definition:
profile.schema.json), so a misspelled key is exit 2 naming the file, the line and the closest
key. Every budget in effect carries the source the gate names beside it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core.errors import AssayError

# profile key -> the gate flag that overrides it
BUDGET_FLAGS = {"max_cost_per_case": "--max-cost-per-case", "max_p95_latency_s": "--max-p95-latency-s"}
PROFILE_FILE = "profile.yaml"


def _label(path: Path) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else str(path)


def profile_budgets(state_dir: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """({key: {value, source}} from `<state>/profile.yaml`'s `budgets`, the profile's label);
    ({}, None) when the state dir has no profile.yaml. A profile that does not read or does not
    match its schema is AssayError(2) naming file, line and key."""
    from ..schemas.checked import validate_yaml
    from ..core.strict_yaml import load

    path = Path(state_dir) / PROFILE_FILE
    if not path.is_file():
        return {}, None
    label = _label(path)
    doc, lines = load(path, label)
    if not isinstance(doc, dict):
        raise AssayError(f"{label}: the profile must be a YAML mapping (got {type(doc).__name__})", 2, file=label)
    validate_yaml(doc, "profile", label=label, lines=lines, what="profile")
    found = {}
    for key, value in (doc.get("budgets") or {}).items():
        line = lines.line_of(("budgets", key))
        found[key] = {"value": float(value), "source": f"{label}:{line} budgets.{key}" if line else f"{label} budgets.{key}"}
    return found, label


def resolve_budgets(flags: dict[str, float | None], state_dir: Path) -> dict[str, Any]:
    """The budgets the gate checks: `{"budgets": {key: {value, source}}, "profile": label|None}`.
    A flag wins over the profile (its source says what it overrode)."""
    # read even when both flags are given: a misspelled budget key is an error, never ignored
    from_profile, label = profile_budgets(state_dir)
    chosen: dict[str, dict[str, Any]] = {}
    for key, flag in BUDGET_FLAGS.items():
        if flags.get(key) is not None:
            source = flag
            if key in from_profile:
                source += f" (overrides {from_profile[key]['source']}: {from_profile[key]['value']:g})"
            chosen[key] = {"value": float(flags[key]), "source": source}
        elif key in from_profile:
            chosen[key] = from_profile[key]
    return {"budgets": chosen, "profile": label}
