"""compare.html: one self-contained, inert page over compare.json.

Inert by construction, like report.html (report/html.py): every piece of run data is escaped with
html.escape (an answer holding `<script>` is text); no link is built from run data; no script, no
external asset; the same Content-Security-Policy (default-src 'none', inline style only). Folding
uses <details>, which needs no script. Each bucket lists at most MAX_SHOWN cases (the rest are in
compare.json, said on the page).
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..report.html_style import CSS
from . import cost_table
from .buckets import BUCKETS
from .pairs import first_diff_line

MAX_SHOWN = 200
OPEN_BUCKETS = ("newly_failing", "newly_passing", "judge_flip", "expectation_changed", "changed_unscored")
EXTRA_CSS = """
main { max-width: 1180px; }
.headline { font-size: 1.35em; font-weight: 650; margin: 10px 0 6px; }
.sub { color: var(--muted); font-size: 0.9em; }
.notes { margin: 12px 0; }
.counts td.n { text-align: right; font-weight: 700; }
.counts tr.hot td.n { color: var(--fail-fg); }
.counts tr.good td.n { color: var(--pass-fg); }
details.bucket { margin: 1.4em 0; }
details.bucket > summary { font-size: 1.2em; font-weight: 650; cursor: default; padding: 4px 0;
  border-bottom: 1px solid var(--rule); }
details.bucket > summary .meaning { font-weight: 400; font-size: 0.75em; color: var(--muted); margin-left: 8px; }
.case { background: var(--panel); border: 1px solid var(--rule); border-radius: 10px; padding: 12px 16px;
  margin: 12px 0; }
.case h3 { margin: 0 0 6px; font-size: 1em; }
.case h3 code { font-size: 0.95em; }
.chip { display: inline-block; padding: 1px 8px; margin: 0 4px 4px 0; border-radius: 10px; font-size: 0.82em;
  background: var(--code-bg); }
.chip.fail { background: var(--fail-bg); color: var(--fail-fg); font-weight: 600; }
.chip.pass { background: var(--pass-bg); color: var(--pass-fg); font-weight: 600; }
.chip.warn { background: var(--off-bg); color: var(--off-fg); font-weight: 600; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; margin: 8px 0; }
.side > div { background: var(--code-bg); border-radius: 8px; padding: 8px 10px; font-size: 0.9em;
  overflow-wrap: anywhere; }
.side .label { display: block; font-size: 0.75em; color: var(--muted); text-transform: uppercase;
  letter-spacing: 0.05em; margin-bottom: 2px; }
del { background: var(--fail-bg); color: var(--fail-fg); text-decoration: line-through; }
ins { background: var(--pass-bg); color: var(--pass-fg); text-decoration: none; }
ol.calls { margin: 0; padding-left: 1.4em; font: 0.85em/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
ol.calls li.first { background: var(--off-bg); color: var(--off-fg); font-weight: 600; }
.what { font-size: 0.85em; color: var(--muted); margin: 6px 0 2px; }
table.turns { font-size: 0.85em; margin: 6px 0; }
table.turns tr.first td { background: var(--off-bg); }
table.turns td { white-space: nowrap; }
table.turns td:last-child { white-space: normal; }
table.cost td.delta { text-align: right; white-space: nowrap; }
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'"


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _chip(text: str, kind: str = "") -> str:
    return f'<span class="chip {kind}">{_e(text)}</span>'


def _verdict_chip(v: Any) -> str:
    return _chip(str(v), "pass" if v == "pass" else "fail" if v == "fail" else "")


def _answer_sides(answer: dict) -> str:
    if not answer.get("changed"):
        return ""
    diff = answer.get("diff")
    if diff:
        left, right = [], []
        for op in diff.get("ops") or []:
            if op["op"] == "equal":
                left.append(_e(op["base"]))
                right.append(_e(op["candidate"]))
                continue
            if op["base"]:
                left.append(f"<del>{_e(op['base'])}</del>")
            if op["candidate"]:
                right.append(f"<ins>{_e(op['candidate'])}</ins>")
        cut = " …(diff cut; the whole answers are in compare.json)" if diff.get("truncated") else ""
        lhtml = " ".join(left) + _e(cut) or "<em>(empty)</em>"
        rhtml = " ".join(right) + _e(cut) or "<em>(empty)</em>"
    else:
        lhtml = _e(answer.get("base") if answer.get("base") is not None else "(no answer)")
        rhtml = _e(answer.get("candidate") if answer.get("candidate") is not None else "(no answer)")
    return ('<p class="what">answer changed</p><div class="side">'
            f'<div><span class="label">base</span>{lhtml}</div>'
            f'<div><span class="label">candidate</span>{rhtml}</div></div>')


def _calls(calls: list, first: int | None) -> str:
    if not calls:
        return "<em>no tool call</em>"
    items = "".join(f'<li{" class=first" if i == first else ""}>{_e(c)}</li>' for i, c in enumerate(calls))
    return f'<ol class="calls">{items}</ol>'


def _trajectory_sides(traj: dict) -> str:
    if not traj.get("changed"):
        return ""
    first = (traj.get("first_difference") or {}).get("index")
    return (f'<p class="what">trajectory changed: {_e(traj.get("first_line"))}</p><div class="side">'
            f'<div><span class="label">base</span>{_calls(traj.get("base") or [], first)}</div>'
            f'<div><span class="label">candidate</span>{_calls(traj.get("candidate") or [], first)}</div></div>')


def _turns(turns: dict) -> str:
    first = turns.get("first_differing_turn")
    rows = []
    for t in turns.get("turns") or []:
        detail = t.get("answer_first_line") or t.get("trajectory_first_line") or ""
        rows.append(f'<tr{" class=first" if t.get("n") == first else ""}><td>turn {_e(t.get("n"))}</td>'
                    f'<td>{_verdict_chip(t.get("base"))} → {_verdict_chip(t.get("candidate"))}</td>'
                    f'<td>{"answer changed" if t.get("answer_changed") else ""}'
                    f'{"; trajectory changed" if t.get("trajectory_changed") else ""}</td><td>{_e(detail)}</td></tr>')
    head = (f"first differing turn: {first}" if first is not None else "no turn differs")
    return (f'<p class="what">conversation: {_e(head)}</p><table class="turns"><tr><th>turn</th><th>verdict</th>'
            f'<th>changed</th><th>first change</th></tr>{"".join(rows)}</table>')


def _cost_block(cl: Any) -> str:
    """compare.json's cost_latency (compare.cost_table's rows, notes and words, the viewer's)."""
    if not isinstance(cl, dict) or cl.get("error"):
        why = cl.get("error") if isinstance(cl, dict) else "not in this compare.json"
        return f'<h2 id="cost-latency">Cost and latency</h2><p class="sub">Cost and latency: {_e(why)}</p>'
    rows = "".join(f"<tr><td>{_e(label)}</td><td>{_e(b)}</td><td>{_e(c)}</td><td class=\"delta\">{_e(d)}</td></tr>"
                   for label, b, c, d in cost_table.rows(cl))
    notes = "".join(f"<li>{_e(n)}</li>" for n in cost_table.notes(cl))
    covers = "".join(f"<li><strong>{_e(label)}</strong>: {_e(words)}</li>" for label, words in cost_table.covers(cl))
    return (f'<h2 id="cost-latency">Cost and latency</h2><p id="cost-summary">{_e(cost_table.summary(cl))}</p>'
            f'<table class="cost" id="cost"><tr><th></th><th>base</th><th>candidate</th><th>change</th></tr>{rows}</table>'
            + (f'<ul class="notes" id="cost-notes">{notes}</ul>' if notes else "")
            + f'<details id="cost-covers"><summary>what each figure covers</summary><ul>{covers}</ul></details>')


def _case(p: dict) -> str:
    v = p.get("verdict") or {}
    title = f' <span class="sub">{_e(p["title"])}</span>' if p.get("title") else ""
    chips = [_verdict_chip(v.get("base")), "→", _verdict_chip(v.get("candidate"))]
    if not p.get("gating", True):
        chips.append(_chip("gating: false"))
    if p.get("canary"):
        chips.append(_chip("canary"))
    if p.get("case") == "changed":
        chips.append(_chip("case edited", "warn"))
    elif p.get("case") == "unknown":
        chips.append(_chip("case version unknown"))
    for f in p.get("judge_flips") or []:
        chips.append(_chip(f"judge flip on {f['layer']}: {f['base']} → {f['candidate']}"
                           + (" (provisional)" if f.get("provisional") else ""), "warn"))
    out = [f'<div class="case"><h3><code>{_e(p["case_id"])}</code>{title}</h3><div>{" ".join(chips)}</div>']
    changed = p.get("layers_changed") or []
    if changed:
        out.append('<p class="what">layers that changed verdict</p><div>'
                   + " ".join(_chip(f"{c['layer']}: {c['base']} → {c['candidate']}",
                                    "fail" if c["candidate"] == "fail" else "pass" if c["candidate"] == "pass" else "")
                              for c in changed) + "</div>")
    fl = p.get("failing_layers") or {}
    if p.get("bucket") == "still_failing":
        same = fl.get("base") == fl.get("candidate")
        out.append(f'<p class="what">failing layers {"unchanged" if same else "changed"}: '
                   f'{_e(", ".join(fl.get("base") or []))} → {_e(", ".join(fl.get("candidate") or []))}</p>')
    if p.get("case_note") and "differs" in p["case_note"]:  # the page's notes say "unknown" once
        out.append(f'<p class="what">{_e(p["case_note"])}</p>')
    exp = p.get("expectation")
    if exp:
        out.append('<p class="what">the case was edited: '
                   + (_e(exp["note"]) if exp.get("note") else "; ".join(
                       f"<code>{_e(k['key'])}</code> {_e(k['base'])} → {_e(k['candidate'])}" for k in exp["keys"]))
                   + "</p>")
    if p.get("turns"):
        out.append(_turns(p["turns"]))
    out.append(_answer_sides(p.get("answer") or {}))
    out.append(_trajectory_sides(p.get("trajectory") or {}))
    reps = p.get("repeats")
    if reps:
        out.append(f'<p class="what">repeats: base {_e(" ".join(reps.get("base") or ["n/a"]))}; candidate '
                   f'{_e(" ".join(reps.get("candidate") or ["n/a"]))} (the folded verdicts are compared)</p>')
    cost = cost_table.case_line(p)
    if cost:
        out.append(f'<p class="what cost-line">{_e(cost)}</p>')
    if not changed and not (p.get("answer") or {}).get("changed") and not (p.get("trajectory") or {}).get("changed") \
            and p.get("bucket") not in ("only_in_base", "only_in_candidate") and not exp:
        line = first_diff_line(p)
        out.append(f'<p class="what">{_e(line) if line else "nothing else changed"}</p>')
    out.append("</div>")
    return "".join(out)


def _counts_table(doc: dict) -> str:
    rows = []
    for b in BUCKETS:
        n = doc["counts"].get(b, 0)
        cls = " class=hot" if b == "newly_failing" and n else " class=good" if b == "newly_passing" and n else ""
        rows.append(f'<tr{cls}><td><a href="#{b}">{b}</a></td><td class="n">{n}</td><td>{_e(doc["meaning"][b])}</td></tr>')
    held = doc.get("holdout") or {}
    if held.get("pairs"):
        parts = ", ".join(f"{k} {v}" for k, v in (held.get("counts") or {}).items())
        rows.append(f'<tr><td>holdout</td><td class="n">{_e(held["pairs"])}</td><td>counts only, ids sealed: '
                    f'{_e(parts)}</td></tr>')
    return f'<table class="counts"><tr><th>bucket</th><th>cases</th><th>meaning</th></tr>{"".join(rows)}</table>'


def render(doc: dict) -> str:
    base, cand = doc["base"], doc["candidate"]
    title = f"assay compare: {base['run_id']} → {cand['run_id']}"
    body = [f"<h1>{_e(title)}</h1>",
            f'<p class="sub">base {_e(base["run_id"])} ({_e(base["mode"])}, k={_e(base["k"])}, dataset '
            f'v{_e(base["dataset_version"])}) · candidate {_e(cand["run_id"])} ({_e(cand["mode"])}, k={_e(cand["k"])}, '
            f'dataset v{_e(cand["dataset_version"])})</p>',
            f'<p class="headline">{_e(doc["headline"])}</p>']
    if doc.get("notes"):
        body.append('<blockquote class="notes">' + "".join(f"<p>{_e(n)}</p>" for n in doc["notes"]) + "</blockquote>")
    said = doc.get("words") or {}
    if said.get("statistics"):
        body.append(f'<p>{_e(said["statistics"])}</p>')
    if said.get("judge_flips"):
        body.append(f'<p class="sub">{_e(said["judge_flips"])}</p>')
    body.append(_counts_table(doc))
    body.append(_cost_block(doc.get("cost_latency")))
    for b in BUCKETS:
        pairs = doc["buckets"].get(b) or []
        if not pairs:
            continue
        shown = pairs[:MAX_SHOWN]
        more = (f'<p class="sub">and {len(pairs) - len(shown)} more in compare.json</p>'
                if len(pairs) > len(shown) else "")
        body.append(f'<details class="bucket" id="{b}"{" open" if b in OPEN_BUCKETS else ""}><summary>{b} '
                    f'({len(pairs)})<span class="meaning">{_e(doc["meaning"][b])}</span></summary>'
                    + "".join(_case(p) for p in shown) + more + "</details>")
    body.append('<hr><p>Written by <code>compare_runs.py</code> from the two run directories; compare.json '
                'holds every pair.</p>')
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"color-scheme\" content=\"light dark\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            f"<title>{_e(title)}</title>\n<style>\n{CSS}{EXTRA_CSS}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(body) + "\n</main>\n</body>\n</html>\n")
