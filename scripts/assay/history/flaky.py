"""Which cases of a history series are flaky, and which changed with the app (a regression or a fix).

- **Within a run** (k > 1): the run's reliability.json says per case how many of its repeats
  passed; a run whose repeats disagreed (`stats.reliability.repeats_disagree`) is that case
  flaking, whatever its verdicts across runs (a case flaky in every run fails pass^k every time
  and never flips: it is still flaky).
- **Across runs**: a case whose scored verdicts flip between pass and fail and back (two flips or
  more) is flaky, unless every run that scored it had repeats and they agreed in each (all passed
  or all failed): then each flip went with the app, and the case is a regression or a fix by its
  last change, never "flaky" (a break fixed a run later is not noise). At k = 1 nothing says so,
  and flipping back counts as flaky.
- A case that changed once and stayed is a regression (pass → fail) or a fix (fail → pass).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..stats.reliability import repeats_disagree

# the run file the repeats are read from (k > 1): every reader of a run for history must bring it
# (run_history.py --store mirrors it, assay.history.store.STORE_FILES), or a case whose repeats disagreed
# in every run is never flaky and a break fixed a run later reads as flaky
REPEATS_FILE = "reliability.json"
FLAKY_FLIPS = 2  # flipped and flipped back: one change that stayed is a regression or a fix


def flips(sequence: list[str | None]) -> int:
    """Pass/fail changes between consecutive scored verdicts (other verdicts neither flip nor break a run)."""
    scored = [v for v in sequence if v in ("pass", "fail")]
    return sum(1 for a, b in zip(scored, scored[1:]) if a != b)


def repeat_counts(run_dir: Path) -> dict[str, dict]:
    """reliability.json's per-case repeat counts ({case_id: {"n", "c"}}); empty when the run has none
    (k = 1, or a run read from a store without it): no evidence, never evidence of agreement."""
    try:
        doc = json.loads((run_dir / REPEATS_FILE).read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    rows = doc.get("per_case") if isinstance(doc, dict) else None
    return {r["case_id"]: {"n": r.get("n"), "c": r.get("c")} for r in rows or []
            if isinstance(r, dict) and isinstance(r.get("case_id"), str)}


def classify(case_id: str, sequence: list[str | None], runs: list[dict]) -> tuple[str | None, dict]:
    """("flaky" | "changed" | None, the entry's fields) for one case of a series (runs oldest first,
    each with its `repeats` from `repeat_counts`)."""
    n_flips = flips(sequence)
    scored = [(i, v) for i, v in enumerate(sequence) if v in ("pass", "fail")]
    rows = [runs[i].get("repeats", {}).get(case_id) for i, _ in scored]
    split = [runs[i]["run_id"] for (i, _), row in zip(scored, rows) if row and repeats_disagree(row)]
    agreed = bool(rows) and all(row and isinstance(row.get("n"), int) and row["n"] > 1 and not repeats_disagree(row)
                                for row in rows)
    if split or (n_flips >= FLAKY_FLIPS and not agreed):
        return "flaky", {"flips": n_flips, "repeats_disagreed_in": split}
    if n_flips == 0:
        return None, {"flips": 0}
    at = [i for (_, a), (i, b) in zip(scored, scored[1:]) if a != b][-1]
    return "changed", {"flips": n_flips, "kind": "regression" if scored[-1][1] == "fail" else "fix",
                       "since_run": runs[at]["run_id"]}
