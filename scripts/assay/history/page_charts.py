"""history.html's trend charts, inline SVG drawn here (no JavaScript): per series the pass rate with its
95 % Wilson interval, the app's cost per traced case and the p95 latency, from history.json's run fields
(`pass_rate`/`interval`, `cost_per_case`/`currency`, `p95_latency_ms`) — the ones the viewer's History
draws. One drawing function, `line_chart`: a run keeps its place on the axis, and a run without the
figure (no scored case, no priced trace, no timing) is a gap in the line, never a 0 and never bridged.
A series without the figure in any run says so in words instead of an empty chart. Each chart's caption
names its unit (the currency for cost) and says the latest value in words.
"""

from __future__ import annotations

import html
import math
from typing import Callable

from ..compare.cost_table import money, ms
from ..stats.cost_words import WORDS

W, H, T, B, R, INSET = 262, 150, 10, 12, 8, 8
ACCENT = "#3451b2"
NOT_VERIFIED = "not verified (run_cases.py --verify not run on it)"
CSS = """
.charts { display: flex; flex-wrap: wrap; gap: 14px; margin: 0.6em 0 0.4em; }
.charts figure { margin: 0; padding: 8px 10px 4px; flex: 1 1 250px; max-width: 100%; background: var(--panel);
  border: 1px solid var(--rule); border-radius: 8px; }
.charts figcaption { font-size: 0.86em; line-height: 1.35; min-height: 2.7em; }
.charts figcaption .latest { color: var(--muted); }
.charts svg { display: block; width: 100%; height: auto; }
.charts .no-chart { font-size: 0.9em; color: var(--muted); margin: 1.2em 0; }
p.chart-notes { font-size: 0.82em; color: var(--muted); }
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _pct(x) -> str:
    return "—" if x is None else f"{x * 100:.1f} %"


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def line_chart(runs: list[dict], value: Callable[[dict], object], *, label: str, fmt: Callable[[float], str],
               axis: Callable[[float], str], empty: str, band: Callable[[dict], tuple] | None = None,
               point: Callable[[dict], tuple[str, str]] | None = None) -> str:
    """One figure: `label` (its unit in it) over the svg, the latest value in words (`fmt`) beside it.
    `band`: a run's (low, high), drawn as a bar, on a fixed 0..1 axis; otherwise the axis runs from 0 to
    the largest value. `point`: a run's (circle attributes, words added to its tooltip)."""
    pts = [(i, r, float(value(r))) for i, r in enumerate(runs) if _number(value(r))]
    if not pts:
        return f'<figure><figcaption><strong>{_e(label)}</strong></figcaption><p class="no-chart">{_e(empty)}</p></figure>'
    lo, hi = (0.0, 1.0) if band else (0.0, _nice(max(v for _i, _r, v in pts)))
    ticks = (lo, (lo + hi) / 2, hi)
    left = max(30, 8 + 6 * max(len(axis(t)) for t in ticks))   # the plot starts right of its widest label
    n = len(runs)

    def x(i: int) -> float:
        return left + INSET + (i * (W - left - INSET - R) / (n - 1) if n > 1 else (W - left - INSET - R) / 2)

    def y(v: float) -> float:
        return T + (1 - (v - lo) / (hi - lo)) * (H - T - B)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
             f'role="img" aria-label="{_e(label)} per run">']
    for t in ticks:
        parts.append(f'<line x1="{left}" x2="{W - R}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#999" '
                     f'stroke-width="0.5" stroke-dasharray="3 3"/><text x="{left - 4}" y="{y(t) + 3.5:.1f}" '
                     f'font-size="10" text-anchor="end" fill="currentColor">{_e(axis(t))}</text>')
    segments: list[list[tuple[int, dict, float]]] = []
    for p in pts:   # consecutive runs with the figure are joined; a run without it breaks the line
        if segments and segments[-1][-1][0] == p[0] - 1:
            segments[-1].append(p)
        else:
            segments.append([p])
    for seg in segments:
        if len(seg) > 1:
            line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, _r, v in seg)
            parts.append(f'<polyline points="{line}" fill="none" stroke="{ACCENT}" stroke-width="1.5"/>')
    for i, r, v in pts:
        if band:   # the interval is in the runs table: the tooltip keeps the run's words
            b_lo, b_hi = band(r) or (v, v)
            parts.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(b_hi):.1f}" y2="{y(b_lo):.1f}" '
                         f'stroke="{ACCENT}" stroke-width="3" stroke-opacity="0.35"/>')
        attrs, more = point(r) if point else (f'fill="{ACCENT}"', "")
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3.5" {attrs}>'
                     f'<title>{_e(r["run_id"])}: {_e(fmt(v))}{_e(more)}</title></circle>')
    parts.append("</svg>")
    return (f"<figure><figcaption><strong>{_e(label)}</strong><br>"
            f"<span class=\"latest\">{_latest(runs, pts, fmt, band)}</span></figcaption>{''.join(parts)}</figure>")


def _nice(top: float) -> float:
    """The axis' top: the smallest of 1, 2, 2.5, 5 times a power of ten at or above the largest value."""
    if top <= 0:
        return 1.0
    scale = 10 ** math.floor(math.log10(top))
    return next(m * scale for m in (1, 2, 2.5, 5, 10) if m * scale >= top * (1 - 1e-9))


def _latest(runs: list[dict], pts: list, fmt: Callable[[float], str], band) -> str:
    """The latest value in words; when the series' last run has none, whose it is and how many runs since."""
    i, r, v = pts[-1]
    iv = band(r) if band else None
    text = f"latest <strong>{_e(fmt(v))}</strong>" + (f" ({_e(fmt(iv[0]))} – {_e(fmt(iv[1]))})" if iv else "")
    later = len(runs) - 1 - i
    if later:
        text += f", in <code>{_e(r['run_id'])}</code>; the {later} run(s) since have none"
    return text


def _rate_point(r: dict) -> tuple[str, str]:
    """Green only when the one decision opened the gate (run_history.py hands it in) on a clean run: a closed
    gate is red; an unclean run's rate covers only the scored cases (amber); a run whose completeness check
    never answered is a hollow point, and says so."""
    closed = r.get("gate") == "closed" or (r.get("gate") is None and r.get("gating_failures"))
    color = "#a12020" if closed else "#17633a" if r.get("clean", True) else "#b26b00"
    note = "" if r.get("clean", True) else f" of scored (not clean: {r.get('not_clean')})"
    gate = f"; gate {r['gate']}" if r.get("gate") else ""
    fill = f'fill="{color}"' if r.get("verified", True) else f'fill="#fff" stroke="{color}" stroke-width="2"'
    return fill, note + gate + ("" if r.get("verified", True) else f"; {NOT_VERIFIED}")


def _label(words: dict | None, key: str) -> str:
    return ((words or {}).get(key) or {}).get("label") or WORDS[key][0]


def _covers(words: dict | None, key: str) -> str:
    return ((words or {}).get(key) or {}).get("covers") or WORDS[key][1]


def charts(runs: list[dict], words: dict | None) -> str:
    """A series' three charts and, under them, what the cost and latency cover and the judge's part
    (never in the cost chart: the app's cost per traced case is the app's own calls)."""
    curs = sorted({r["currency"] for r in runs if r.get("currency")})
    cur = "mixed: " + ", ".join(curs) if len(curs) > 1 else curs[0] if curs else ""
    latencies = [r["p95_latency_ms"] for r in runs if _number(r.get("p95_latency_ms"))]
    in_s = bool(latencies) and max(latencies) >= 1000
    cost_label, lat_label = _label(words, "cost_per_case"), "p95 " + _label(words, "latency")
    figs = [
        line_chart(runs, lambda r: r.get("pass_rate"), label="pass rate, % (bar: 95 % Wilson interval)", fmt=_pct,
                   axis=lambda t: f"{t * 100:.0f}%", band=lambda r: r.get("interval"), point=_rate_point,
                   empty="no scored cases in this series"),
        line_chart(runs, lambda r: r.get("cost_per_case"), label=f"{cost_label}, {cur or 'currency unknown'}",
                   fmt=lambda v: money(v, cur if len(curs) == 1 else ""), axis=lambda t: money(t) if t else "0",
                   empty="no cost in this series: no run priced its cases (traced model calls with token usage, "
                         "and prices.yaml)"),
        line_chart(runs, lambda r: r.get("p95_latency_ms"), label=f"{lat_label}, {'s' if in_s else 'ms'}", fmt=ms,
                   axis=lambda t: (f"{t / 1000:.3g}" if in_s else f"{t:.3g}") if t else "0",
                   empty="no latency in this series: no run timed its cases"),
    ]
    notes = [f"{_e(cost_label)}: {_e(_covers(words, 'cost_per_case'))}."]
    judged = [r for r in runs if r.get("judge_calls")]
    if judged:
        known = [r for r in judged if _number(r.get("judge_cost_per_case"))]
        if known:
            r, cur_r = known[-1], known[-1].get("currency")
            notes.append(f"The judge's part, apart from the chart, in <code>{_e(r['run_id'])}</code>: {_e(_label(words, 'judge_cost_per_case'))} "
                         f"{_e(money(r['judge_cost_per_case'], cur_r))}, {_e(_label(words, 'cost_per_case_with_judge'))} "
                         f"(what gate.py's cost budget checks) {_e(money(r.get('cost_per_case_with_judge'), cur_r))}.")
        unknown = [r for r in judged if not _number(r.get("judge_cost_per_case"))]
        if unknown:
            why = [str(r.get("judge_cost_note") or "").removeprefix("the judge's cost is unknown: ") for r in unknown]
            notes.append("The judge's cost is unknown in " + "; ".join(
                f"<code>{_e(r['run_id'])}</code>" + (f": {_e(w)}" if w else "") for r, w in zip(unknown, why))
                + ", so gate.py's cost budget could not be checked there.")
    notes.append(f"{_e(lat_label)}: {_e(_covers(words, 'latency'))}.")
    return f'<div class="charts">{"".join(figs)}</div><p class="chart-notes">{"<br>".join(notes)}</p>'
