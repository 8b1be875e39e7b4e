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
- A case that changed once and stayed is a regression (pass → fail) or a fix (fail → pass), also
  when its repeats disagreed only in the run where it changed and agreed in every other run (it
  flaked as it broke or mended: `repeats_disagreed_in` names that run).
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
    settled = _settled_change(scored, rows, n_flips)
    if (split and not settled) or (n_flips >= FLAKY_FLIPS and not agreed):
        return "flaky", {"flips": n_flips, "repeats_disagreed_in": split}
    if n_flips == 0:
        return None, {"flips": 0}
    at = [i for (_, a), (i, b) in zip(scored, scored[1:]) if a != b][-1]
    fields = {"flips": n_flips, "kind": "regression" if scored[-1][1] == "fail" else "fix", "since_run": runs[at]["run_id"]}
    if split:
        fields["repeats_disagreed_in"] = split
    return "changed", fields


def _settled_change(scored: list[tuple[int, str]], rows: list[dict | None], n_flips: int) -> bool:
    """One change whose repeats disagreed only as it happened: one flip, one run whose repeats split,
    that run beside the flip (the last of the old verdict or the first of the new, as 3/3 -> 1/3 -> 0/3
    breaks or 0/3 -> 2/3 -> 3/3 mends), and repeats (two or more) that agreed in every other scored
    run, at least one before that run and one after. A regression that flaked in the run it broke
    is a regression; a case still splitting in its last run, or splitting anywhere else, is flaky."""
    if n_flips != 1:
        return False
    split = [j for j, row in enumerate(rows) if row and repeats_disagree(row)]
    if len(split) != 1:
        return False
    flip = next(j for j in range(1, len(scored)) if scored[j][1] != scored[j - 1][1])
    j = split[0]
    if j not in (flip - 1, flip) or j == 0 or j == len(scored) - 1:
        return False
    return all(row and isinstance(row.get("n"), int) and row["n"] > 1 and not repeats_disagree(row)
               for k, row in enumerate(rows) if k != j)
