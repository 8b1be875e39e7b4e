"""`gate.py RUN --baseline RUN|auto` (runner contract §20.5): the run's own decision, plus a reason
for every gating case newly failing against the baseline, named first.

A comparison never opens what the run's own decision closes: a gating case that fails closes the
gate whatever bucket the comparison puts it in. An edited case (`expectation_changed`) is not the
app's regression and a judge flip is not the app's change, so neither is named as newly failing;
each is said beside its failure ("edited since the baseline", "judge flip").

Two arms' runs of a lift (references/evaluate-agents.md step 6) are said as compare_runs.py says them:
an arm's run that did not finish its plan leads the notes with the lift's `withheld` words (its status
and the fix: run the arm again), arms given in the swapped order with the lift's `arm_swapped` note, and
a red baseline that is the other arm's run is expected, never sent to `--baseline auto` (which would
choose a run of another arm, or none). The decision stays the run's own, with its reasons.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..compare.baseline import pinned, refuse_either_unverified, resolve_baseline
from ..compare.buckets import BUCKETS
from ..compare.document import compare_runs
from ..compare.gate_words import (bucket_lines, is_gating_pair, named_pair, red_baseline_note,
                                  removed_gating, summary_markdown)
from ..compare.pairs import first_diff_line
from ..report.gate import GateResult, evaluate
from ..report.gate_judge import MAX_NAMED
from ..report.gate_lines import summary_lines
from ..report.gate_reasons import status_words

NOTES = {"expectation_changed": "edited since the baseline", "judge_flip": "judge flip: same answer, new verdict"}


def regression_reason(regressions: list[dict], base_id: str, status: dict[str, str] | None = None) -> str:
    status = status or {}
    named = "; ".join(named_pair(p, status.get(p["case_id"])) for p in regressions[:MAX_NAMED])
    more = len(regressions) - min(len(regressions), MAX_NAMED)
    return (f"{len(regressions)} gating case(s) newly failing against {base_id} (passed there): {named}"
            + (f" and {more} more" if more > 0 else ""))


def red_baseline_words(spec: str, candidate_dir: Path, base_dir: Path, base_id: str, *,
                       is_open: Callable[[Path], tuple[bool, str | None]], named: bool = True,
                       arm: str | None = None) -> str | None:
    """red_baseline_note's words when the baseline `spec` resolved to (`base_dir`, run `base_id`) is a run
    whose own gate is closed, as `is_open` (assay.verdict.gate_open) decides it; else None. `auto` without
    a pin chose an open run: nothing to ask. A pinned one (reports/baseline.json) is asked, and so is a run
    named by path when `named` (gate.py and draft_report.py; compare_runs.py compares any two runs, and a
    lift's base without the plugin is often red). gate.py, compare_runs.py and draft_report.py say these
    words, first among the comparison's notes."""
    pin = pinned(Path(candidate_dir).parent) if spec == "auto" else None
    if (pin is None) if spec == "auto" else not named:
        return None
    base_open, why = is_open(Path(base_dir))
    return None if base_open else red_baseline_note(base_id, why, pin is not None, arm)


def decide_against(run_dir: Path, baseline: str, *, is_open: Callable[[Path], tuple[bool, str | None]],
                   **kwargs: Any) -> GateResult:
    """Gate `run_dir` with the comparison against `baseline` (a run dir, or `auto`: the newest run of
    the series `is_open` says was open)."""
    said: list[str] = []   # runs of another app passed over; a base whose app could not be checked by name
    base_dir = resolve_baseline(baseline, run_dir, is_open=is_open, said=said)
    if kwargs.get("verify", True) is not False:   # compare_runs.py's refusal: never a comparison of edited files
        refuse_either_unverified(base_dir, run_dir)
    doc = compare_runs(base_dir, run_dir)
    lift = doc.get("lift") or {}
    arms = [(lift.get(k) or {}).get("name") for k in ("base_arm", "candidate_arm")]
    base_arm = arms[0] if None not in arms and arms[0] != arms[1] else None   # two arms' runs: a lift's
    if lift.get("withheld"):   # an arm's run that did not finish: compare_runs.py's words, first
        said.insert(0, f"{lift['withheld']}; the cases it did not score pair with nothing, so none reads as "
                       "newly failing: the decision is the run's own")
    doc["notes"][:0] = said
    red_words = red_baseline_words(baseline, run_dir, base_dir, doc["base"]["run_id"], is_open=is_open,
                                   arm=base_arm)
    notes = {p["case_id"]: NOTES[b] for b in NOTES for p in doc["buckets"][b]}
    res = evaluate(run_dir, notes=notes, **kwargs)
    regress = [p for p in doc["buckets"]["newly_failing"] if is_gating_pair(p)]
    # the status of a failed http layer, said beside each case the reason names
    status = {p["case_id"]: words for p in regress[:MAX_NAMED]
              if "http" in ((p.get("failing_layers") or {}).get("candidate") or ())
              and (words := status_words(run_dir, p["case_id"]))}
    if regress:
        res.reasons.insert(0, regression_reason(regress, doc["base"]["run_id"], status))
    removed = removed_gating(doc)
    res.comparison = {
        "base_run_id": doc["base"]["run_id"], "lines": bucket_lines(doc, red_words),
        "buckets": {p["case_id"]: b for b in BUCKETS for p in doc["buckets"][b]},
        "first_lines": {p["case_id"]: first_diff_line(p) for p in doc["buckets"]["newly_failing"]},
        "markdown": summary_markdown(doc),
        "removed": [{"case_id": p["case_id"], "base": p["verdict"]["base"]} for p in removed[:MAX_NAMED]],
        "summary": {"base": doc["base"]["run_id"], "headline": doc["headline"], "counts": doc["counts"],
                    "judge_flips": doc["judge_flips"],
                    "notes": ([red_words] if red_words else []) + doc["notes"],
                    "newly_failing_gating": [p["case_id"] for p in regress],
                    "removed_gating": [p["case_id"] for p in removed],
                    "red_baseline": red_words,
                    "holdout": doc["holdout"]},
    }
    res.lines = summary_lines(res)
    return res
