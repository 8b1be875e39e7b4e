"""The gate on regressions: `gate.py RUN --baseline RUN|auto` (runner contract §20.5).

The run is gated as always (report.gate.evaluate), against a comparison with the baseline:

- it closes on every gating, non-canary case in `newly_failing`, named first, each with its
  changed layers and the first line of its diff;
- a gating failure whose pair is `expectation_changed` (the case was edited) or `judge_flip`
  (the judge flipped on the same answer and material) is not counted against the app: such
  cases never close the gate by themselves, and are printed apart;
- every other close reason stands (a case still failing, a new case failing, infra, ...).

The bucket counts and the judge flips lead the one-screen summary, the JUnit XML marks newly
failing cases, and the GitHub step summary opens with the buckets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..report.gate import GateResult, evaluate
from ..report.gate_lines import summary_lines
from ..report.gate_reasons import MAX_NAMED
from .baseline import resolve_baseline
from .buckets import BUCKETS
from .document import compare_runs
from .pairs import first_diff_line

EXCUSED = ("expectation_changed", "judge_flip")
MAX_LINE = 160


def _gating(p: dict) -> bool:
    return p.get("gating", True) and not p.get("canary")


def _named(p: dict) -> str:
    layers = ", ".join(c["layer"] for c in p.get("layers_changed") or [] if c.get("candidate") == "fail")
    line = first_diff_line(p)
    if line and len(line) > MAX_LINE:
        line = line[:MAX_LINE - 1] + "…"
    return f"{p['case_id']} ({layers or 'no layer named'}{': ' + line if line else ''})"


def regression_reason(regressions: list[dict], base_id: str) -> str:
    named = "; ".join(_named(p) for p in regressions[:MAX_NAMED])
    more = len(regressions) - min(len(regressions), MAX_NAMED)
    return (f"{len(regressions)} gating case(s) newly failing against {base_id} (passed there): {named}"
            + (f" and {more} more" if more > 0 else ""))


def bucket_lines(doc: dict) -> list[str]:
    counts = doc["counts"]
    shown = ", ".join(f"{counts[b]} {b}" for b in BUCKETS if counts.get(b))
    lines = [f"  compared with {doc['base']['run_id']}: {doc['headline']}",
             f"  buckets: {shown or 'no case paired'}"]
    lines += [f"  note: {n}" for n in doc.get("notes") or []]
    flips = [p for b in BUCKETS for p in doc["buckets"][b] if p.get("judge_flip")]
    if flips:
        lines.append(f"  judge flips (the judge changed its verdict on the same answer and material; not the app's "
                     f"change, never closes the gate): {len(flips)}: "
                     + ", ".join(f"{p['case_id']} ({', '.join(f['layer'] + ' ' + f['base'] + '->' + f['candidate'] for f in p['judge_flips'])})"
                                 for p in flips[:MAX_NAMED]) + (f" and {len(flips) - MAX_NAMED} more" if len(flips) > MAX_NAMED else ""))
    edited = doc["buckets"]["expectation_changed"]
    if edited:
        failing = [p for p in edited if p["verdict"]["candidate"] == "fail"]
        lines.append(f"  cases edited since the baseline (expectation_changed, never closes the gate): {len(edited)}"
                     + (f", {len(failing)} failing now: " + ", ".join(p["case_id"] for p in failing[:MAX_NAMED])
                        if failing else ""))
    held = doc.get("holdout") or {}
    if held.get("pairs"):
        lines.append("  holdout (counts only): " + ", ".join(f"{n} {b}" for b, n in held["counts"].items()))
    return lines


def summary_markdown(doc: dict) -> list[str]:
    """The GitHub step summary's opening: the buckets, then the newly failing cases."""
    out = [f"**Compared with `{doc['base']['run_id']}`: {doc['headline']}**", "",
           "| bucket | cases |", "|---|---:|"]
    out += [f"| {b} | {doc['counts'][b]} |" for b in BUCKETS if doc["counts"].get(b)]
    if doc.get("judge_flips"):
        out.append(f"| judge flips (apart) | {doc['judge_flips']} |")
    out.append("")
    regress = [p for p in doc["buckets"]["newly_failing"] if _gating(p)]
    if regress:
        out.append("Newly failing:")
        out += [f"- `{p['case_id']}`: " + _named(p).split(" (", 1)[1].rstrip(")").replace("|", "\\|")
                for p in regress[:20]]
        out.append("")
    return out


def evaluate_against(run_dir: Path, baseline: str, **kwargs: Any) -> GateResult:
    """Gate `run_dir` with the comparison against `baseline` (a run dir or `auto`)."""
    run_dir = Path(run_dir)
    base_dir = resolve_baseline(baseline, run_dir)
    doc = compare_runs(base_dir, run_dir)
    explained = {p["case_id"]: b for b in EXCUSED for p in doc["buckets"][b]}
    res = evaluate(run_dir, explained=explained, **kwargs)
    regress = [p for p in doc["buckets"]["newly_failing"] if _gating(p)]
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
