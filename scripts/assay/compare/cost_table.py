"""compare.json's `cost_latency` block (compare.cost_delta) as text: the rows, notes and "what it
covers" lines compare.html and the report's comparison section print, in the viewer's Compare
page's labels and formats (stats.cost_words: one definition of what each figure covers).

An unknown figure is "–" and its reason is in `notes` (never 0); a side whose judge cost is unknown
says so, and that the cost gate.py's budget checks is unknown with it.
"""

from __future__ import annotations

import math
from typing import Any, Callable

MINUS, PLUS_MINUS, DASH = "\u2212", "\u00b1", "–"


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _precision3(x: float) -> str:
    """JavaScript's x.toPrecision(3) (the viewer's money under 0.01): 0.0000121, 1.21e-7."""
    mantissa, exp = f"{x:.2e}".split("e")
    e = int(exp)
    if e < -6 or e >= 3:
        return f"{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"
    return f"{x:.{max(0, 2 - e)}f}"


def money(x: Any, currency: str | None = "") -> str:
    """0.0005 USD as the gate words it; "–" when unknown."""
    if not _number(x):
        return DASH
    text = _precision3(x) if abs(x) < 0.01 and x != 0 else f"{x:.4f}"
    return text + (f" {currency}" if currency else "")


def ms(x: Any) -> str:
    """Under 10 ms a tenth is shown (6.4 -> 5.8 ms never reads "6 ms -> 6 ms"); seconds from 1,000 ms."""
    if not _number(x):
        return DASH
    if abs(x) >= 1000:
        return f"{x / 1000:.2f} s"
    return f"{x:.1f} ms" if abs(x) < 10 else f"{math.floor(x + 0.5)} ms"


def count(x: Any) -> str:
    return DASH if x is None else str(x)


def signed(x: Any, fmt: Callable[[Any], str]) -> str:
    """A change: + or −, or ± when it rounds to nothing as shown (0.4 ms is "±0.4 ms", never "−0 ms")."""
    if not _number(x):
        return DASH
    shown = fmt(abs(x))
    digits = shown.split("e")[0]
    zero = x == 0 or not any(ch in "123456789" for ch in digits)
    return (PLUS_MINUS if zero else "+" if x > 0 else MINUS) + shown


def _label(cl: dict, key: str) -> str:
    return ((cl.get("words") or {}).get(key) or {}).get("label") or key


def judged(cl: dict) -> bool:
    return bool((cl["base"].get("judge_calls") or 0) + (cl["candidate"].get("judge_calls") or 0))


def _judge(s: dict, cur: str) -> str:
    if not s.get("judge_calls"):
        return "no judge call"
    return money(s["judge_cost_per_case"], cur) if _number(s.get("judge_cost_per_case")) else "unknown"


def rows(cl: dict) -> list[tuple[str, str, str, str]]:
    """(label, base, candidate, change) per figure, as the viewer's Compare table has them."""
    cur, both = cl.get("currency") or "", cl.get("both_traced") or {}
    delta = cl.get("delta") or {}
    cash = lambda x: money(x, cur)   # noqa: E731
    spec: list[tuple[str, Callable[[dict, str], str], Any, Callable[[Any], str]]] = [
        (_label(cl, "cost_per_case"), lambda s, r: cash(s.get("cost_per_case")), delta.get("cost_per_case"), cash)]
    if judged(cl):
        spec += [(_label(cl, "judge_cost_per_case"), lambda s, r: _judge(s, cur), delta.get("judge_cost_per_case"), cash),
                 (_label(cl, "cost_per_case_with_judge"), lambda s, r: cash(s.get("cost_per_case_with_judge")),
                  delta.get("cost_per_case_with_judge"), cash)]
    spec += [
        (f"app cost over the {count(both.get('cases'))} case(s) traced in both runs",
         lambda s, r: cash((both.get(r) or {}).get("cost_total")), (both.get("delta") or {}).get("cost_total"), cash),
        (_label(cl, "input_tokens_per_case"), lambda s, r: count(s.get("input_tokens_per_case")),
         delta.get("input_tokens_per_case"), count),
        (_label(cl, "output_tokens_per_case"), lambda s, r: count(s.get("output_tokens_per_case")),
         delta.get("output_tokens_per_case"), count),
        ("traced cases", lambda s, r: count(s.get("traced_cases")), delta.get("traced_cases"), count),
        (_label(cl, "latency") + " p50", lambda s, r: ms(s.get("latency_p50_ms")), delta.get("latency_p50_ms"), ms),
        (_label(cl, "latency") + " p95", lambda s, r: ms(s.get("latency_p95_ms")), delta.get("latency_p95_ms"), ms)]
    return [(label, f(cl["base"], "base"), f(cl["candidate"], "candidate"), signed(d, fd)) for label, f, d, fd in spec]


def notes(cl: dict) -> list[str]:
    """Why a figure is "–" or covers fewer cases, side by side: the traced cases, each side's unknown
    app and judge cost, the prices file."""
    out = [cl["traced_note"]] if cl.get("traced_note") else []
    out += [f"the {role}: {cl[role]['cost_note']}" for role in ("base", "candidate") if cl[role].get("cost_note")]
    out += [f"the {role}: {cl[role]['judge_note']} — so its {_label(cl, 'cost_per_case_with_judge')}, what gate.py's "
            "cost budget checks, is unknown too" for role in ("base", "candidate") if cl[role].get("judge_note")]
    if cl.get("note"):
        out.append(cl["note"])
    return out


def covers(cl: dict) -> list[tuple[str, str]]:
    """(label, what it covers) of each figure shown (the judge's only when a side called one)."""
    show_judge = judged(cl)
    return [(w["label"], w["covers"]) for w in (cl.get("words") or {}).values()
            if show_judge or "judge" not in w["label"]]


def summary(cl: dict) -> str:
    """One line on top: the change in the app's cost per traced case, labelled as such; beside it the
    judge's, or why it is unknown; the traced cases when they differ; the p95 latency's change."""
    cur, delta = cl.get("currency") or "", cl.get("delta") or {}
    parts = [f"{_label(cl, 'cost_per_case')} {signed(delta.get('cost_per_case'), lambda x: money(x, cur))}"]
    unknown = [r for r in ("base", "candidate") if cl[r].get("judge_note")]
    if unknown:
        parts.append(f"judge's cost unknown in the {' and '.join(unknown)}: not in this figure, and gate.py's cost "
                     "budget cannot be checked")
    elif judged(cl):
        parts.append(f"judge {signed(delta.get('judge_cost_per_case'), lambda x: money(x, cur))} per case, not in "
                     "this figure")
    if cl.get("traced_note"):
        parts.append(f"traced cases differ: {cl['base'].get('traced_cases')} \u2192 {cl['candidate'].get('traced_cases')}")
    parts.append(f"p95 latency {signed(delta.get('latency_p95_ms'), ms)}")
    return "; ".join(parts)


def case_line(p: dict) -> str | None:
    """A pair's own figures (its `cost_latency`, when it changed): "app cost 0.0000121 → 0.0000140
    (+0.0000019) · latency 12 ms → 15 ms (+3 ms)"."""
    c = p.get("cost_latency") if isinstance(p, dict) else None
    if not isinstance(c, dict) or not isinstance(c.get("cost"), list) or not isinstance(c.get("latency_ms"), list):
        return None
    cost, lat = c["cost"], c["latency_ms"]
    return (f"app cost {money(cost[0])} \u2192 {money(cost[1])} ({signed(cost[2], money)}) · latency "
            f"{ms(lat[0])} \u2192 {ms(lat[1])} ({signed(lat[2], ms)})")
