"""The report's comparison section from compare.json (draft_report.py --baseline): the headline,
the notes, then the cases of each bucket with their changed layers and first change; ids only
for non-holdout cases (compare.json holds no holdout id). No answer text is quoted here: the
report's own excerpts are the redacted place for that; compare.html shows the diffs. The cost and
latency of both runs (compare.json's `cost_latency`) in compare.cost_table's rows and words.
"""

from __future__ import annotations

from ..report.mdtext import code, esc
from . import cost_table
from .buckets import BUCKETS

MAX_LISTED = 25
QUIET = ("still_passing", "still_unscored")


def comparison_lines(doc: dict) -> list[str]:
    out = ["## Compared with the baseline", "",
           f"Against {code(doc['base']['run_id'])}: **{esc(doc['headline'])}**.", ""]
    for note in doc.get("notes") or []:
        out += [f"> {esc(note)}", ""]
    said = doc.get("words") or {}
    for key in ("statistics", "judge_flips"):
        if said.get(key):
            out += [esc(said[key]), ""]
    out += ["| bucket | cases | meaning |", "|---|---:|---|"]
    out += [f"| {b} | {doc['counts'][b]} | {esc(doc['meaning'][b])} |" for b in BUCKETS if doc["counts"].get(b)]
    out.append("")
    out += cost_lines(doc.get("cost_latency"))
    for b in BUCKETS:
        pairs = doc["buckets"].get(b) or []
        if not pairs or b in QUIET:
            continue
        out += [f"**{b}** ({len(pairs)}):", ""]
        for p in pairs[:MAX_LISTED]:
            layers = ", ".join(f"{c['layer']} {c['base']}→{c['candidate']}" for c in p.get("layers_changed") or [])
            bits = [layers] if layers else []
            exp = p.get("expectation")
            if exp:
                bits.append("edited: " + (", ".join(k["key"] for k in exp["keys"]) or exp.get("note", "")))
            if p.get("judge_flip"):
                bits.append("judge flip")
            if (p.get("answer") or {}).get("changed"):
                bits.append("answer changed")
            if (p.get("trajectory") or {}).get("changed"):
                bits.append("trajectory changed")
            n = (p.get("turns") or {}).get("first_differing_turn")
            if n is not None:
                bits.append(f"first differing turn {n}")
            cost = cost_table.case_line(p)
            if cost:
                bits.append(cost)
            out.append(f"- {code(p['case_id'])}" + (f": {esc('; '.join(bits))}" if bits else ""))
        if len(pairs) > MAX_LISTED:
            out.append(f"- and {len(pairs) - MAX_LISTED} more (compare.json)")
        out.append("")
    quiet = [f"{doc['counts'][b]} {b}" for b in QUIET if doc["counts"].get(b)]
    if quiet:
        out += [f"Not listed: {', '.join(quiet)}.", ""]
    held = doc.get("holdout") or {}
    if held.get("pairs"):
        out += ["Holdout (counts only, ids sealed): " + ", ".join(f"{n} {b}" for b, n in held["counts"].items()) + ".", ""]
    return out



def cost_lines(cl: object) -> list[str]:
    """The comparison's cost and latency: the table, why a figure is unknown, what each covers."""
    out = ["**Cost and latency**", ""]
    if not isinstance(cl, dict) or cl.get("error"):
        why = cl.get("error") if isinstance(cl, dict) else "not in this comparison"
        return out + [f"Cost and latency: {esc(why)}.", ""]
    out += [esc(cost_table.summary(cl)) + ".", "", "| | base | candidate | change |", "|---|---:|---:|---:|"]
    out += [f"| {esc(label)} | {esc(b)} | {esc(c)} | {esc(d)} |" for label, b, c, d in cost_table.rows(cl)]
    out.append("")
    for note in cost_table.notes(cl):
        out += [f"> {esc(note)}", ""]
    out += ["What each figure covers:", ""]
    out += [f"- **{esc(label)}**: {esc(words)}" for label, words in cost_table.covers(cl)]
    out.append("")
    return out
