"""The gate's one screen: `summary_lines(result)` — the verdict line, the counts, and one line per
thing a reader must know (conversations, canaries, holdout, the judge, the gate rule, each reason)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.writer import clip
from ..stats.counts import cases_phrase
from .gate_case import closing_rows, gate_rows
from .gate_judge import MAX_NAMED
from .gate_reasons import infra_cases_named, is_count, rate_of
from .rundir import case_verdict
from .throughput import throughput_line

if TYPE_CHECKING:
    from .gate import GateResult


def _num(value: object) -> str:
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else "n/a"


def _pct(value: object) -> str:
    r = rate_of(value)
    return f"{r * 100:.1f}%" if r is not None else "n/a"


def repeated_5xx_reason(res: GateResult, summary: dict) -> str | None:
    """The gate's close reason for gating cases that got the same 5xx status and body on every attempt
    (`repeated_5xx`): a transient outage differs between attempts; the same error each time, while the
    other cases were answered, is the app's own failure on those inputs. Under --max-infra-rate it
    would otherwise open the gate on an app that crashes on some inputs. Holdout runs: the count only."""
    rep = summary.get("repeated_5xx")
    if not (is_count(rep) and rep):
        return None
    fix = "open their response.json and fix the app (a passing outage would differ between attempts)"
    holdout = res.results.get("mode") == "holdout"
    named = repeated_5xx_cases(res, gating_only=True, holdout=holdout)
    if holdout:   # counted from the rows when results.json lists them, else the summary's count
        listed = any(isinstance(r, dict) and r.get("holdout") for r in res.results.get("cases") or [])
        n = len(named) if listed else rep
        return (f"{n} gating case(s) got the same 5xx status and body on every attempt: the app's own error on "
                "those inputs, not a transient outage (holdout: sealed, not named); fix the app, then run again"
                if n else None)
    if not named:
        return None   # only canaries or gating: false cases (named on their own lines)
    shown = ", ".join(named[:MAX_NAMED]) + (f" and {len(named) - MAX_NAMED} more" if len(named) > MAX_NAMED else "")
    return (f"{len(named)} gating case(s) got the same 5xx status and body on every attempt: the app's own error on "
            f"those inputs, not a transient outage: {shown}; {fix}")


def repeated_5xx_cases(res: GateResult, gating_only: bool = False, holdout: bool = False) -> list[str]:
    """`id (status xattempts)` for each infra case whose verdict.json has repeated_5xx (`gating_only`: not
    canaries, not gating: false; holdout cases only with `holdout`, to be counted, never shown)."""
    named = []
    for row in res.results.get("cases") or []:
        if not isinstance(row, dict) or row.get("verdict") not in ("infra_error", "infra_incomplete"):
            continue
        if gating_only and (row.get("gating") is False or row.get("canary") or bool(row.get("holdout")) != holdout):
            continue
        doc = case_verdict(res.run_dir, str(row.get("case_id")))
        rep = doc.get("repeated_5xx") if doc else None
        if isinstance(rep, dict):
            named.append(f"{row['case_id']} ({rep.get('status')} x{rep.get('attempts')})")
    return named


def _incomplete_traces(s: dict) -> str:
    """' + 2 of 3 traces incomplete (66.7%)' beside the infra rate (which counts infra_error only)."""
    incomplete, n, skipped = s.get("infra_incomplete"), s.get("n"), s.get("skipped", 0)
    if not (is_count(incomplete) and incomplete and is_count(n) and is_count(skipped)) or n <= skipped:
        return ""
    return f" + {incomplete} of {n - skipped} traces incomplete ({incomplete / (n - skipped) * 100:.1f}%)"


def _infra_counts(s: dict) -> str:
    """', 1 infra_error, 2 infra_incomplete' when any (so the counts on the line add up), else ''."""
    parts = [f"{s[k]} {k.rstrip('s') if k == 'infra_errors' else k}" for k in ("infra_errors", "infra_incomplete")
             if is_count(s.get(k)) and s[k]]
    return "".join(", " + p for p in parts)


def counts_line(s: dict) -> str:
    """`30 cases + 1 canary: 29 pass, 0 fail (0 gating), 0 unscored, 0 skipped, 1 infra_error`: the gate's
    counts line and the report banner's (the counts on it add up to the cases)."""
    canaries = s.get("canaries") if isinstance(s.get("canaries"), dict) else {}
    return (f"{cases_phrase(s.get('n'), canaries.get('n'))}: {_num(s.get('passes'))} pass, {_num(s.get('failures'))} "
            f"fail ({_num(s.get('gating_failures'))} gating), {_num(s.get('unscored', 0))} unscored, "
            f"{_num(s.get('skipped', 0))} skipped" + _infra_counts(s))


def infra_under_bar_line(res: GateResult) -> str | None:
    """The infra_error cases that did not close the gate (under --max-infra-rate), each named: never left
    unnamed beside a PASS, in the gate's summary or the report's banner."""
    s = res.summary
    infra = s.get("infra_errors")
    if not (is_count(infra) and infra) or any(r.startswith("infra rate ") for r in res.reasons):
        return None
    # a case that closes the gate on its own (a simulated user short of its goal, a replay miss) is
    # named by its own reason, never here as one that does not close it
    closing = frozenset(str(row.get("case_id")) for row, _ in closing_rows(res.run_dir, gate_rows(res.run_dir, res.results))
                        if row.get("verdict") == "infra_error")
    named = infra_cases_named(res.run_dir, res.results, "infra_error", skip=closing)
    if not named:
        return None
    return (f"{infra - len(closing)} infra_error case(s) under --max-infra-rate (not closing the gate; not "
            f"measured, read each before trusting the result): " + "; ".join(named))


LOOSE_INFRA_BAR = 0.5   # at or above it, infrastructure errors close the gate almost never


def loose_infra_bar_line(bar: float) -> str | None:
    """A note (never a refusal: a test may mean it) when --max-infra-rate is a bar so loose that infra
    errors almost never close the gate: `--max-infra-rate 1` read as 1% is 100%."""
    if bar < LOOSE_INFRA_BAR:
        return None
    return (f"note: --max-infra-rate {bar:g} lets up to {bar * 100:g}% of the cases end in infra errors (never "
            "answered, so never measured) with this gate open; the flag takes a fraction: for 1% pass 0.01, "
            "for 5% 0.05 (the default)")


def summary_lines(res: GateResult) -> list[str]:
    s, results = res.summary, res.results
    nongating = 0
    if is_count(s.get("failures")) and is_count(s.get("gating_failures")):
        nongating = s["failures"] - s["gating_failures"]
    head = f"{res.run_id}: {'PASS' if res.open else 'FAIL'}"
    if res.replayed:
        head += f" [{res.replayed}]"
    if res.reasons:   # the headline names what closed it first (its words up to the first colon), never a side note
        first = res.reasons[0].split(": ", 1)[0]
        first += ")" * max(0, first.count("(") - first.count(")"))   # a cut inside '(… only: ids sealed)'
        head += f" -- closed: {clip(first, 120, ellipsis='…')}"
        if len(res.reasons) > 1:
            head += f" (+{len(res.reasons) - 1} more below)"
    if nongating > 0:
        head += f" ({nongating} failure(s) on gating:false cases, not counted)"
    lines = [head, *res.trust_head, *((res.comparison or {}).get("lines") or []),
             "  " + counts_line(s),
             f"  infra {_pct(s.get('infra_rate'))}{_incomplete_traces(s)}, crash {_pct(s.get('crash_rate'))}, "
             f"scorer errors {_num(s.get('scorer_errors', 0))}"
             + (f", rate-limited retries {_num(s.get('rate_limited_retries'))} (throttled, not failures)"
                if s.get("rate_limited_retries") else "")]
    loose = loose_infra_bar_line(res.max_infra_rate)
    if loose:
        lines.append("  " + loose)
    throttled = throughput_line(res.run_dir)
    if throttled:
        lines.append("  " + throttled)
    lines += res.trust_info
    lines += kind_lines(s)
    rep = s.get("repeated_5xx")
    if is_count(rep) and rep:
        if results.get("mode") == "holdout":
            tail = "the cases are holdout and sealed: do not open them; re-run only when the app is fixed"
        else:
            named = repeated_5xx_cases(res)
            tail = "open their response.json before re-running or raising --max-infra-rate"
            if named:
                tail += ": " + ", ".join(named[:MAX_NAMED])
        lines.append(f"  {rep} infra case(s) got the same 5xx on every attempt: possibly the app's own "
                     f"error, not the provider -- {tail}")
    under = infra_under_bar_line(res)
    if under:
        lines.append("  " + under)
    lines.append(canary_line(res))
    holdout = s.get("holdout")
    if isinstance(holdout, dict) and is_count(holdout.get("n")) and holdout["n"] > 0:
        p, f = holdout.get("passes"), holdout.get("failures")
        scored = p + f if is_count(p) and is_count(f) else holdout["n"]
        rest = holdout["n"] - scored if is_count(scored) else 0
        lines.append(f"  holdout (aggregate only): {_num(p)}/{scored} pass"
                     + (f" ({rest} of {holdout['n']} not scored: unscored, skipped or infra)" if rest > 0 else ""))
    unscorable = s.get("unscorable_layers")
    if isinstance(unscorable, dict) and unscorable:
        parts = []
        for layer, info in unscorable.items():
            info = info if isinstance(info, dict) else {}
            parts.append(f"{layer} ({_num(info.get('cases'))} cases: {info.get('blocked_by') or 'disabled'})")
        lines.append("  NOT scored this run: " + "; ".join(parts))
    unjudged = s.get("unjudged")
    if isinstance(unjudged, dict) and unjudged:
        lines.append("  judged layers: " + "; ".join(f"{why} x{_num(n)}" for why, n in unjudged.items()))
    lines.append(gate_rule_line(results, unmeasured_gating(res)))
    lines += judged_lines(s.get("judged"))
    from .gate_judge import provisional_fail_line
    lines += provisional_fail_line(res.run_dir, results)
    from .gate_judge import judge_cost_gate_line
    lines += judge_cost_gate_line(results.get("cost_latency"))
    if not res.verified:
        lines.append("  not verified: --no-verify skipped the completeness check (run_cases.py --verify)")
    lines += [f"  budget: {line}" for line in res.budget_lines]
    lines += [f"  gate closed: {why}" for why in res.reasons]
    return lines


def _kind_rate(block: dict) -> str:
    p, f = block.get("passes"), block.get("failures")
    if not (is_count(p) and is_count(f)):
        return "n/a"
    return f"{p}/{p + f} pass" + (f" ({p / (p + f) * 100:.1f}%)" if p + f else "")


def kind_lines(summary: dict) -> list[str]:
    """Conversations apart from single-turn cases (summary.by_kind), and the memory: user warning."""
    kinds = summary.get("by_kind")
    if not isinstance(kinds, dict) or not isinstance(kinds.get("conversation"), dict):
        return []
    conv, single = kinds["conversation"], kinds.get("single_turn") if isinstance(kinds.get("single_turn"), dict) else {}
    line = f"  conversations: {_kind_rate(conv)} of {_num(conv.get('n'))}"
    failed = conv.get("failed_turns")
    if isinstance(failed, dict) and failed:
        line += " (failed at " + ", ".join(f"turn {t} x{n}" for t, n in failed.items()) + ")"
    if is_count(conv.get("skipped")) and conv["skipped"]:
        line += f", {conv['skipped']} skipped"
    line += f"; single-turn: {_kind_rate(single)} of {_num(single.get('n'))}"
    out = [line]
    sim = kinds.get("simulated")
    if isinstance(sim, dict):
        ended = sim.get("outcomes") if isinstance(sim.get("outcomes"), dict) else {}
        how = ", ".join(f"{n} {k}" for k, n in ended.items() if is_count(n))
        out.append(f"  simulated users: {_kind_rate(sim)} of {_num(sim.get('n'))}"
                   + (f" (ended: {how})" if how else "")
                   + (f"; {sim['harness']} ended by the simulator, not the app (infra_error)"
                      if is_count(sim.get("harness")) and sim["harness"] else ""))
    mu = conv.get("memory_user")
    if is_count(mu) and mu:
        out.append(f"  warning: {mu} conversation(s) ran against an app declaring memory: user -- what one case "
                   "said can leak into another (contamination); read their verdicts with that in mind")
    return out


def _counts(block: dict) -> str:
    return ", ".join(f"{_num(block.get(v))} {v}" for v in ("pass", "fail", "unscored", "infra_error", "judge_unstable")
                     if block.get(v))


def judged_lines(judged: object) -> list[str]:
    """The judge's lines: what gated (calibrated rubric versions) and what did not (provisional), and why."""
    if not isinstance(judged, dict) or not is_count(judged.get("cases")) or not judged["cases"]:
        return []
    cal = judged.get("calibrated") if isinstance(judged.get("calibrated"), dict) else {}
    prov = judged.get("provisional") if isinstance(judged.get("provisional"), dict) else {}
    n_cal = sum(v for v in cal.values() if is_count(v))
    n_prov = sum(v for v in prov.values() if is_count(v))
    out = []
    if n_cal:
        out.append(f"  judged (calibrated, gating): {n_cal} case(s): {_counts(cal)}")
    if n_prov:
        why = judged.get("provisional_why") if isinstance(judged.get("provisional_why"), dict) else {}
        reasons = "; ".join(f"{r} x{_num(n)}" for r, n in list(why.items())[:MAX_NAMED])
        out.append(f"  judged (provisional, never gating): {n_prov} case(s): {_counts(prov)} -- {reasons}")
    from .gate_judge import instability_lines
    out += instability_lines(judged.get("instability"))
    from ..stats.pairwise import pairwise_lines
    out += pairwise_lines(judged)
    usage = judged.get("usage")
    if isinstance(usage, dict) and is_count(usage.get("calls")) and usage["calls"]:
        if usage.get("calls_without_usage") == usage["calls"]:
            line = f"  judge usage: {usage['calls']} call(s); the judge reported no token usage"
        else:
            line = (f"  judge usage: {usage['calls']} call(s), {_num(usage.get('input_tokens'))} input + "
                    f"{_num(usage.get('output_tokens'))} output tokens")
            if usage.get("calls_without_usage"):
                line += f" ({usage['calls_without_usage']} call(s) reported no usage)"
        out.append(line)
    return out


# What each gate type means (the plan's `gate`, from the mode). Every type closes on the same
# reasons: there is no lenient gate. The type says what an OPEN gate is worth.
GATE_RULES = {
    "soft": "closes on the same reasons as a hard gate; open means no failure among these cases at k=1, "
            "not a release decision",
    "hard": "open only when every gating case passed all k repeats (pass^k) over the full split; open is the "
            "release signal",
    "decision": "closes on the same reasons as a hard gate; the holdout aggregate decides keep or revert, "
                "never what to change next",
}


def unmeasured_gating(res: GateResult) -> int:
    """Gating, non-canary cases that were not measured (infra, unscored, skipped): an open gate
    never says "every gating case passed" over them."""
    s = res.summary
    total = 0
    for key in ("infra_errors", "infra_incomplete", "unscored", "skipped"):
        total += s[key] if is_count(s.get(key)) else 0
    if not total:
        return 0
    rows = res.results.get("cases") if isinstance(res.results.get("cases"), list) else []
    return sum(1 for r in rows if isinstance(r, dict) and not r.get("canary") and r.get("gating", True) is not False
               and r.get("verdict") in ("infra_error", "infra_incomplete", "unscored", "skipped"))


def gate_rule_line(results: dict, unmeasured: int = 0) -> str:
    gate, mode, k = results.get("gate"), results.get("mode"), results.get("k")
    rule = GATE_RULES.get(str(gate))
    if rule is None:
        return f"  gate rule: {gate!r} is not soft, hard or decision; the close reasons above apply as listed"
    if unmeasured and gate == "hard":
        rule = (f"every gating case that was measured passed all k repeats (pass^k); {unmeasured} gating case(s) "
                "were not measured (infra, unscored or skipped), so open is not a release signal for them")
    return f"  {gate} gate ({mode}, k={k}): {rule}"


def canary_line(res: GateResult) -> str:
    block = res.summary.get("canaries")
    if not isinstance(block, dict) or not is_count(block.get("n")):
        return "  canaries n/a (no canaries block in results.json)"
    n, passed = block["n"], block.get("passed")
    line = f"  canaries {_num(passed)}/{n} pass"
    verify_ok = res.verify_clean is not False  # clean, or not run (--no-verify)
    if res.summary.get("status") == "ok" and verify_ok and is_count(passed) and passed < n:
        failed = block.get("failed") if is_count(block.get("failed")) else 0
        unverified = n - passed - failed
        if unverified > 0:
            line += (f"; {unverified} NOT VERIFIED (infra, unscored or skipped: the harness was not "
                     f"verified by it; not a canary failure)")
            named = unverified_canaries(res)
            if named:
                line += ": " + "; ".join(named)
    return line


def unverified_canaries(res: GateResult) -> list[str]:
    """`id (verdict: reason)` for each canary that got no pass/fail, so NOT VERIFIED says why."""
    named = []
    for row in res.results.get("cases") or []:
        if not (isinstance(row, dict) and row.get("canary")) or row.get("verdict") in ("pass", "fail"):
            continue
        doc = case_verdict(res.run_dir, str(row.get("case_id"))) or {}
        why = doc.get("infra_reason") or doc.get("unscored_reason") or doc.get("skip_reason") or "no reason recorded"
        why = " ".join(str(why).split())
        named.append(f"{row.get('case_id')} ({row.get('verdict')}: {clip(why, 200, ellipsis='…')})")
        if len(named) >= MAX_NAMED:
            break
    return named
