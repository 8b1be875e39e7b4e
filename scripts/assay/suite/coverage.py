"""The suite's coverage grid and split sizes against the targets (the generate step's map).

Grid: unit x category x test_type counts over every case file. Empty cells are reported
at two levels a person can act on: a unit with no case of a category, and a unit with no
case of a test type (each gets a case or a `known_gaps` entry in dataset.yaml).

Split targets (case-format guidance), over all N case files:
- smoke: about 1/3 of the suite, at least 5 (ok when count >= the floor and 20-50 %);
- holdout: 20 % once the suite has 25 cases or more (ok at 15-25 %); below 25 none is
  expected and any holdout is too small to decide anything;
- canary: about 10 %, at least 2 (ok when count >= 2 and at most 20 %);
- INV + DIR together: at most 25 % of the suite.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..core.vocab import CATEGORIES, TEST_TYPES
from .convert import convert_state_dir

HOLDOUT_MIN_SUITE = 25


def _status(ok: bool, under: bool) -> str:
    return "ok" if ok else ("under" if under else "over")


def split_targets(n: int, counts: dict[str, int], metamorphic: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}

    def entry(name: str, count: int, target: int, ok: bool, under: bool, rule: str) -> None:
        out[name] = {"count": count, "ratio": round(count / n, 3) if n else 0.0, "target": target,
                     "rule": rule, "status": _status(ok, under),
                     "gap": max(0, target - count) if under and not ok else 0}

    smoke = counts.get("smoke", 0)
    t = max(5, round(n / 3))
    entry("smoke", smoke, t, smoke >= 5 and 0.2 <= smoke / max(n, 1) <= 0.5, smoke < t,
          "about 1/3 of the suite, at least 5")
    hold = counts.get("holdout", 0)
    if n >= HOLDOUT_MIN_SUITE:
        t = round(0.2 * n)
        entry("holdout", hold, t, 0.15 <= hold / n <= 0.25, hold < t, "20% once the suite has 25+ cases")
    else:
        entry("holdout", hold, 0, hold == 0, False, "none below 25 cases (too few to decide anything)")
        if hold:
            out["holdout"]["status"] = "too_small"
    can = counts.get("canary", 0)
    t = max(2, round(0.1 * n))
    entry("canary", can, t, can >= 2 and can / max(n, 1) <= 0.2, can < 2, "about 10%, at least 2")
    t = int(0.25 * n)
    entry("INV+DIR", metamorphic, t, metamorphic <= t, False, "at most 25% of the suite")
    out["INV+DIR"]["target"] = t
    return out


# The case-format findings that leave a case out of the grid or the split counts (a typo'd category,
# `split: smoke` as a string): coverage counts nothing it cannot place, so it refuses instead.
UNCOUNTABLE = ("missing_split", "bad_split", "bad_category", "missing_test_type", "bad_test_type")


def _refuse_uncountable(state_dir: str | os.PathLike[str], conv: dict[str, Any]) -> None:
    """Exit 2 naming each case whose split, category or test_type the grid cannot count (file, line,
    key, case id and the linter's fix), where the grid would have dropped it without a word."""
    from ..core.errors import AssayError
    from ..plan.lint_gate import line_of
    from .lint_state import lint_state_dir

    found = [f for f in lint_state_dir(state_dir, conv)["findings"] if f.get("code") in UNCOUNTABLE]
    if not found:
        return
    rows = []
    for f in found:
        line = line_of(Path(state_dir), f.get("source"), f.get("key"))
        rows.append({"file": f.get("source"), "line": line, "key": f.get("key"), "case_id": f.get("case_id"),
                     "code": f.get("code"), "message": f.get("message")})
    where = "; ".join(f"{r['file']}:{r['line']} ({r['case_id']}) {r['message']}" for r in rows[:5])
    more = f"; and {len(rows) - 5} more (see findings)" if len(rows) > 5 else ""
    first = rows[0]
    raise AssayError(f"{len(rows)} case finding(s) leave cases out of the coverage grid or the split counts: "
                     f"{where}{more}. Fix each in its case file, then run coverage.py again", 2,
                     file=first["file"], line=first["line"], key=first["key"], case_id=first["case_id"],
                     findings=rows)


def coverage(state_dir: str | os.PathLike[str]) -> dict[str, Any]:
    conv = convert_state_dir(state_dir)
    _refuse_uncountable(state_dir, conv)
    cases = conv["cases"]
    n = len(cases)
    units = sorted({str(c.get("unit")) for c in cases})
    grid: dict[str, dict[str, dict[str, int]]] = {u: {cat: {t: 0 for t in TEST_TYPES} for cat in CATEGORIES}
                                                   for u in units}
    for c in cases:
        cat, tt = c.get("category"), c.get("test_type")
        if cat in CATEGORIES and tt in TEST_TYPES:
            grid[str(c.get("unit"))][cat][tt] += 1
    by_unit = {}
    empty_categories, empty_test_types = [], []
    for u in units:
        row = {"total": sum(sum(v.values()) for v in grid[u].values())}
        for t in TEST_TYPES:
            row[t] = sum(grid[u][cat][t] for cat in CATEGORIES)
            if row[t] == 0:
                empty_test_types.append({"unit": u, "test_type": t})
        for cat in CATEGORIES:
            row[cat] = sum(grid[u][cat].values())
            if row[cat] == 0:
                empty_categories.append({"unit": u, "category": cat})
        by_unit[u] = row
    split_count = Counter(s for c in cases for s in (c.get("split") or []))
    metamorphic = sum(1 for c in cases if c.get("test_type") in ("INV", "DIR"))
    manifest = conv.get("manifest") or {}
    return {
        "cases": n,
        "units": units,
        "grid": {u: {cat: counts for cat, counts in grid[u].items() if sum(counts.values())} for u in units},
        "by_unit": by_unit,
        "by_category": {cat: sum(1 for c in cases if c.get("category") == cat) for cat in CATEGORIES},
        "empty_cells": {"unit_category": empty_categories, "unit_test_type": empty_test_types},
        "splits": split_targets(n, dict(split_count), metamorphic),
        "gating_false": sum(1 for c in cases if c.get("gating") is False),
        "review": dict(Counter(((c.get("review") or {}).get("status") or "pending") for c in cases)),
        "known_gaps": manifest.get("known_gaps") or [],
        "dataset_version": manifest.get("dataset_version", 1),
    }
