"""The words of `gate.py RUN --baseline RUN|auto` (runner contract §20.5): the bucket lines that
lead its one screen, the GitHub step summary's opening, and how a newly failing case is named.
The decision itself is `assay.verdict` (baseline.py): this module only says it."""

from __future__ import annotations

from ..report.gate_judge import MAX_NAMED
from .buckets import BUCKETS
from .pairs import first_diff_line

MAX_LINE = 160


def is_gating_pair(p: dict) -> bool:
    return p.get("gating", True) and not p.get("canary")


def named_pair(p: dict, status: str | None = None) -> str:
    """`id (layers: first diff line)`; `status` (the app's answer to a failed http layer, "HTTP 404")
    after the layers: `id (http; HTTP 404: - old answer)`."""
    layers = ", ".join(c["layer"] for c in p.get("layers_changed") or [] if c.get("candidate") == "fail")
    line = first_diff_line(p)
    if line and len(line) > MAX_LINE:
        line = line[:MAX_LINE - 1] + "…"
    return f"{p['case_id']} ({layers or 'no layer named'}{'; ' + status if status else ''}{': ' + line if line else ''})"


def removed_gating(doc: dict) -> list[dict]:
    """The gating, non-canary cases of the base run the candidate no longer has (`only_in_base`), the
    ones that failed there first: a case deleted from the suite leaves the gate, and a deleted
    failing case would turn it green with nothing but "1 removed" said."""
    removed = [p for p in doc["buckets"]["only_in_base"] if is_gating_pair(p)]
    return sorted(removed, key=lambda p: p["verdict"]["base"] != "fail")   # stable: plan order otherwise


def removed_words(removed: list[dict]) -> str:
    """`c-3 (fail there), c-4 (pass there) and N more`: the first MAX_NAMED named, the rest counted."""
    named = ", ".join(f"{p['case_id']} ({p['verdict']['base']} there)" for p in removed[:MAX_NAMED])
    return named + (f" and {len(removed) - MAX_NAMED} more" if len(removed) > MAX_NAMED else "")


def red_baseline_note(base_id: str, why: str | None, pinned: bool, arm: str | None = None) -> str:
    """Said when the baseline's own gate is closed (`why`: its first reason, assay.verdict's words):
    against a red baseline a case failing in both runs is `still_failing`, never newly failing. `arm`:
    the baseline is another arm's run of a lift (references/evaluate-agents.md step 6), red as the arm
    without the plugin often is; `--baseline auto` would choose a run of another arm, or none."""
    fix = ("re-pin reports/baseline.json to a run whose gate was open" if pinned else
           f"that is expected of arm {arm}'s run, whose failures are what the lift is measured against"
           if arm else "compare with a run whose gate was open (--baseline auto chooses one)")
    return (f"the baseline {base_id} is red: its own gate is closed ({why or 'no reason given'}); a case failing "
            f"there too is still_failing here, never newly failing (its failure here still closes this gate); {fix}")


def bucket_lines(doc: dict, red_baseline: str | None = None) -> list[str]:
    """The comparison's lines of the gate's screen; `red_baseline`: red_baseline_note's words, the
    first note when the baseline's own gate is closed."""
    counts = doc["counts"]
    shown = ", ".join(f"{counts[b]} {b}" for b in BUCKETS if counts.get(b))
    lines = [f"  compared with {doc['base']['run_id']}: {doc['headline']}",
             f"  buckets: {shown or 'no case paired'}"]
    if red_baseline:
        lines.append(f"  note: {red_baseline}")
    lines += [f"  note: {n}" for n in doc.get("notes") or []]
    flips = [p for b in BUCKETS for p in doc["buckets"][b] if p.get("judge_flip")]
    if flips:
        lines.append(f"  judge flips (the judge changed its verdict on the same answer and material; not the app's "
                     f"change; a gating case that fails on it still closes the gate, as it would without --baseline): {len(flips)}: "
                     + ", ".join(f"{p['case_id']} ({', '.join(f['layer'] + ' ' + f['base'] + '->' + f['candidate'] for f in p['judge_flips'])})"
                                 for p in flips[:MAX_NAMED]) + (f" and {len(flips) - MAX_NAMED} more" if len(flips) > MAX_NAMED else ""))
    edited = doc["buckets"]["expectation_changed"]
    if edited:
        failing = [p for p in edited if p["verdict"]["candidate"] == "fail"]
        lines.append(f"  cases edited since the baseline (expectation_changed: not the app's regression, but a gating case that fails closes the gate): {len(edited)}"
                     + (f", {len(failing)} failing now: " + ", ".join(p["case_id"] for p in failing[:MAX_NAMED])
                        if failing else ""))
    removed = removed_gating(doc)
    if removed:
        lines.append(f"  gating cases removed since the baseline (only_in_base: no longer run, so no longer gated; "
                     f"failing there first): {len(removed)}: " + removed_words(removed))
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
    regress = [p for p in doc["buckets"]["newly_failing"] if is_gating_pair(p)]
    if regress:
        out.append("Newly failing:")
        out += [f"- `{p['case_id']}`: " + named_pair(p).split(" (", 1)[1].rstrip(")").replace("|", "\\|")
                for p in regress[:20]]
        out.append("")
    return out
