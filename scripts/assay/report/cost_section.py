"""The report's "Cost and latency" section: the numbers score_cost.py prints, from the same function."""

from __future__ import annotations

from pathlib import Path

from ..stats.cost import default_prices_path, load_prices, run_cost
from .mdtext import code


def cost_section(run_dir: Path) -> list[str]:
    prices_path = default_prices_path(run_dir)
    prices = load_prices(prices_path) if prices_path.is_file() else None
    cost = run_cost(Path(run_dir), prices, prices_note=None if prices else f"no {prices_path.name} in the state dir")
    t, cap = cost["totals"], cost["capability"]
    out = ["## Cost and latency", ""]
    lat = t["latency_ms"]
    if lat["n"]:
        over = (f"over {lat['n']} latencies (every repeat of {t['cases']} cases at k={t['k']})" if t.get("k", 1) > 1
                else f"over {lat['n']} cases")
        out.append(f"- Latency per case (end to end): p50 {lat['p50']:.0f} ms, p95 {lat['p95']:.0f} ms {over}.")
    judge = judge_cost_line(t.get("judge") or {}, cost.get("currency"), prices is not None)
    if not cap["enabled"]:
        out += [f"- Tokens and cost: not measured ({cap['blocked_by']}).", *judge, ""]
        return out
    out.append(f"- Tokens: {t['input_tokens']} in + {t['output_tokens']} out over {t['model_calls']} model calls "
               f"({t['traced_cases']} traced cases); model time p95 {t['model_latency_ms']['p95'] or 0:.1f} ms per case.")
    if prices is None:
        out.append(f"- Cost: not priced ({cost['prices_note']}; see `score_cost.py --help`).")
    elif t["cost"]["total"] is None or not t["complete"]:
        # the run's own reason (usage missing on a call, no model call traced, unpriced models), never a guess
        out.append(f"- Cost: incomplete (not priced at 0): {t.get('incomplete_reason') or 'some traced cases are unpriced'}.")
    else:
        c, untraced = t["cost"], t["cases"] - t["traced_cases"]
        part = (f" of the {t['traced_cases']} traced cases of {t['cases']} ({untraced} have no trace: their cost is "
                "unknown and not in it)") if untraced > 0 else ""
        out.append(f"- Cost: {c['total']:.6f} {cost['currency']} in all{part}; per case mean {c['mean']:.6f}, "
                   f"p95 {c['p95']:.6f} (prices: {code(Path(cost['prices']).name)}).")
    if t.get("k_note"):   # k > 1: every repeat's spend, one answer's mean, or the deciding repeat's only
        out.append(f"- {t['k_note']}.")
    out += judge
    out.append("")
    return out


def judge_cost_line(judge: dict, currency: str | None, priced: bool) -> list[str]:
    """The judge's tokens and cost, apart from the app's (stats.judge_cost.judge_totals)."""
    if not judge.get("calls"):
        return []
    line = (f"- Judge (apart from the app): {judge['calls']} call(s), {judge['input_tokens']} in + "
            f"{judge['output_tokens']} out tokens")
    if not priced:
        return [line + "; not priced (no prices file)."]
    if judge.get("cost") is None and judge.get("calls_without_usage"):
        return [line + f"; not priced: {judge['incomplete_reason']}."]
    if judge.get("cost") is None:
        named = ", ".join(code(m) for m in judge.get("unpriced_models") or []) or "none named"
        return [line + f"; not priced: the prices file does not name the judge model(s) {named}."]
    of = " (one answer's)" if isinstance(judge.get("answers"), int) else ""   # k > 1: k_note says it
    return [line + f"; {judge['cost']:.6f} {currency} in all, {judge['mean_per_case']:.6f} per case{of} "
                   "(counted in gate.py's cost budget unless --no-judge-cost)."]
