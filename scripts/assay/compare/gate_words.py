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


def named_pair(p: dict) -> str:
    layers = ", ".join(c["layer"] for c in p.get("layers_changed") or [] if c.get("candidate") == "fail")
    line = first_diff_line(p)
    if line and len(line) > MAX_LINE:
        line = line[:MAX_LINE - 1] + "…"
    return f"{p['case_id']} ({layers or 'no layer named'}{': ' + line if line else ''})"


def bucket_lines(doc: dict) -> list[str]:
    counts = doc["counts"]
    shown = ", ".join(f"{counts[b]} {b}" for b in BUCKETS if counts.get(b))
    lines = [f"  compared with {doc['base']['run_id']}: {doc['headline']}",
             f"  buckets: {shown or 'no case paired'}"]
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
