"""`gate.py RUN --baseline RUN|auto` (runner contract §20.5): the run's own decision, plus a reason
for every gating case newly failing against the baseline, named first.

A comparison never opens what the run's own decision closes: a gating case that fails closes the
gate whatever bucket the comparison puts it in. An edited case (`expectation_changed`) is not the
app's regression and a judge flip is not the app's change, so neither is named as newly failing;
each is said beside its failure ("edited since the baseline", "judge flip").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..compare.baseline import refuse_unverified, resolve_baseline
from ..compare.buckets import BUCKETS
from ..compare.document import compare_runs
from ..compare.gate_words import bucket_lines, is_gating_pair, named_pair, summary_markdown
from ..compare.pairs import first_diff_line
from ..report.gate import GateResult, evaluate
from ..report.gate_judge import MAX_NAMED
from ..report.gate_lines import summary_lines

NOTES = {"expectation_changed": "edited since the baseline", "judge_flip": "judge flip: same answer, new verdict"}


def regression_reason(regressions: list[dict], base_id: str) -> str:
    named = "; ".join(named_pair(p) for p in regressions[:MAX_NAMED])
    more = len(regressions) - min(len(regressions), MAX_NAMED)
    return (f"{len(regressions)} gating case(s) newly failing against {base_id} (passed there): {named}"
            + (f" and {more} more" if more > 0 else ""))


def decide_against(run_dir: Path, baseline: str, *, is_open: Callable[[Path], tuple[bool, str | None]],
                   **kwargs: Any) -> GateResult:
    """Gate `run_dir` with the comparison against `baseline` (a run dir, or `auto`: the newest run of
    the series `is_open` says was open)."""
    base_dir = resolve_baseline(baseline, run_dir, is_open=is_open)
    if kwargs.get("verify", True) is not False:   # compare_runs.py's refusal: never a comparison of edited files
        refuse_unverified(base_dir)
        refuse_unverified(run_dir, "candidate")
    doc = compare_runs(base_dir, run_dir)
    notes = {p["case_id"]: NOTES[b] for b in NOTES for p in doc["buckets"][b]}
    res = evaluate(run_dir, notes=notes, **kwargs)
    regress = [p for p in doc["buckets"]["newly_failing"] if is_gating_pair(p)]
    if regress:
        res.reasons.insert(0, regression_reason(regress, doc["base"]["run_id"]))
    res.comparison = {
        "base_run_id": doc["base"]["run_id"], "lines": bucket_lines(doc),
        "buckets": {p["case_id"]: b for b in BUCKETS for p in doc["buckets"][b]},
        "first_lines": {p["case_id"]: first_diff_line(p) for p in doc["buckets"]["newly_failing"]},
        "markdown": summary_markdown(doc),
        "summary": {"base": doc["base"]["run_id"], "headline": doc["headline"], "counts": doc["counts"],
                    "judge_flips": doc["judge_flips"], "notes": doc["notes"],
                    "newly_failing_gating": [p["case_id"] for p in regress],
                    "holdout": doc["holdout"]},
    }
    res.lines = summary_lines(res)
    return res
