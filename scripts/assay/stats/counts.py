"""The counts table (contracts §5.8): one definition of every number in results.json.

`summarize(records, ...)` is used by the runner when it writes results.json AND by
`run_cases.py --verify` when it recounts from the case directories, so the two can
never disagree by construction. A record is a `cases/<id>/verdict.json` dict.

| field | counts | canaries | skipped | infra |
|---|---|---|---|---|
| n | non-canary cases selected (finished) | out | in | in |
| attempted | cases sent (once per case, whatever k) | in | out | in |
| passes, failures | scored cases: the only pass-rate denominator | out | out | out |
| gating_failures | failures with gating true (absent = true) | out | out | out |
| infra_rate | infra_errors / (n - skipped) | out | out | - |
| crash_rate | crashes / attempted | in | out | in |
| canaries | {n, passed (pass^k), failed, not_verified} | only | - | - |
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..core.vocab import (FAIL, INFRA_ERROR, JUDGE_UNSTABLE, INFRA_INCOMPLETE, LAYER_ORDER, PASS, SIM_HARNESS_OUTCOMES, SKIPPED,
                          UNSCORABLE, UNSCORED)
from ..score.hollow import hollow_layers

# The keys summarize() owns; --verify recounts exactly these.
COUNT_KEYS = (
    "n", "attempted", "passes", "failures", "gating_failures", "unscored", "skipped",
    "infra_errors", "infra_incomplete", "crashes", "infra_rate", "crash_rate",
    "repeated_5xx", "scorer_errors", "canaries", "holdout", "layers",
    "unscorable_layers", "unjudged", "hollow_layers", "by_kind", "judged", "undeclared_tools",
    "route_from_response",
)
JUDGED_VERDICTS = ("pass", "fail", "unscored", "infra_error", JUDGE_UNSTABLE)


def cases_phrase(n_cases: Any, n_canaries: Any) -> str:
    """How every tool says how big a run is: `12 cases + 2 canaries` (one wording everywhere)."""
    def part(n: Any, one: str, many: str) -> str:
        ok = isinstance(n, int) and not isinstance(n, bool)
        return f"{n if ok else 'n/a'} {one if n == 1 else many}"
    return f"{part(n_cases, 'case', 'cases')} + {part(n_canaries, 'canary', 'canaries')}"


def stopped_line(stopped: Mapping[str, Any]) -> str:
    """The one sentence every tool says about a fail-fast stop."""
    n = stopped.get("fail_fast")
    return (f"the run stopped early after {stopped.get('gating_failures')} gating failure(s) (--fail-fast {n}); "
            f"{stopped.get('not_run')} case(s) not run, never counted as passed")


def _layer_verdict(entry: Any) -> str:
    return str(entry.get("verdict")) if isinstance(entry, dict) else str(entry)


def _rate(num: int, den: int) -> float:
    return round(num / den, 6) if den > 0 else 0.0


def _basic(records: list[dict]) -> dict[str, int]:
    out = {"n": 0, "attempted": 0, "passes": 0, "failures": 0, "gating_failures": 0,
           "unscored": 0, "skipped": 0, "infra_errors": 0, "infra_incomplete": 0}
    for r in records:
        v = r.get("verdict")
        out["n"] += 1
        if v != SKIPPED:
            out["attempted"] += 1
        if v == PASS:
            out["passes"] += 1
        elif v == FAIL:
            out["failures"] += 1
            if r.get("gating", True) is not False:
                out["gating_failures"] += 1
        elif v == UNSCORED:
            out["unscored"] += 1
        elif v == SKIPPED:
            out["skipped"] += 1
        elif v == INFRA_ERROR:
            out["infra_errors"] += 1
        elif v == INFRA_INCOMPLETE:
            out["infra_incomplete"] += 1
    return out


def summarize(records: Iterable[dict], *, status: str, missing_artifacts: list) -> dict:
    """results.json `summary` from verdict.json records (any order; the result is order-free)."""
    records = list(records)
    main = [r for r in records if not r.get("canary")]
    canaries = [r for r in records if r.get("canary")]
    holdout = [r for r in main if r.get("holdout")]

    basic = _basic(main)
    attempted_all = sum(1 for r in records if r.get("verdict") != SKIPPED)
    crashes = sum(1 for r in records if r.get("verdict") != SKIPPED and r.get("crashed"))

    layers: dict[str, dict[str, int]] = {name: {} for name in LAYER_ORDER}
    unscorable: dict[str, dict[str, Any]] = {}
    unjudged: dict[str, int] = {}
    for r in main:
        for name, entry in (r.get("layers") or {}).items():
            v = _layer_verdict(entry)
            bucket = layers.setdefault(name, {})
            bucket[v] = bucket.get(v, 0) + 1
            if v == UNSCORABLE:
                slot = unscorable.setdefault(name, {"cases": 0, "blocked_by": None})
                slot["cases"] += 1
                if slot["blocked_by"] is None and isinstance(entry, dict):
                    slot["blocked_by"] = entry.get("blocked_by")
            if name == "judged" and v == UNSCORED and isinstance(entry, dict):
                reason = str(entry.get("reason") or "")
                if reason.startswith("unjudged"):
                    unjudged[reason] = unjudged.get(reason, 0) + 1

    summary: dict[str, Any] = {"status": status}
    summary.update(basic)
    summary["attempted"] = attempted_all
    summary["crashes"] = crashes
    summary["infra_rate"] = _rate(basic["infra_errors"], basic["n"] - basic["skipped"])
    summary["crash_rate"] = _rate(crashes, attempted_all)
    summary["repeated_5xx"] = sum(1 for r in records if r.get("repeated_5xx"))
    summary["rate_limited_retries"] = sum(int(r.get("rate_limited_retries") or 0) for r in records)
    summary["scorer_errors"] = sum(int(r.get("scorer_errors") or 0) for r in records)
    summary["canaries"] = {
        "n": len(canaries),
        "passed": sum(1 for r in canaries if r.get("verdict") == PASS),
        "failed": sum(1 for r in canaries if r.get("verdict") == FAIL),
        "not_verified": sum(1 for r in canaries if r.get("verdict") not in (PASS, FAIL)),
    }
    summary["holdout"] = _basic(holdout)
    summary["layers"] = layers
    summary["unscorable_layers"] = unscorable
    summary["unjudged"] = unjudged
    summary["hollow_layers"] = hollow_layers(main)
    kinds = by_kind(main)
    if kinds is not None:
        summary["by_kind"] = kinds
    summary["judged"] = judged_summary(records)
    undeclared = undeclared_summary(main)
    if undeclared is not None:
        summary["undeclared_tools"] = undeclared
    route_path = route_path_summary(main)
    if route_path is not None:
        summary["route_from_response"] = route_path
    summary["missing_artifacts"] = list(missing_artifacts)
    return summary


def _kind_block(records: list[dict]) -> dict[str, Any]:
    b = _basic(records)
    out: dict[str, Any] = {k: b[k] for k in ("n", "passes", "failures", "gating_failures", "unscored", "skipped",
                                             "infra_errors", "infra_incomplete")}
    out["pass_rate"] = _rate(b["passes"], b["passes"] + b["failures"]) if b["passes"] + b["failures"] else None
    return out


def by_kind(main: list[dict]) -> dict[str, Any] | None:
    """Conversations apart from single-turn cases (non-canary), present only when the run has a
    conversation: the same counts for each kind, each conversation still ONE case. The
    conversation block adds `failed_turns` ({turn: cases whose stopping turn it was}) and
    `memory_user` (sent conversations against an app declaring `memory: user`). Simulated-user
    conversations are a kind of their own (`simulated`, with `outcomes`: how each ended)."""
    conv = [r for r in main if r.get("multi_turn") and not r.get("simulated")]
    sims = [r for r in main if r.get("simulated")]
    if not conv and not sims:
        return None
    block = _kind_block(conv)
    failed: dict[str, int] = {}
    for r in conv:
        t = r.get("failed_turn")
        if r.get("verdict") == FAIL and isinstance(t, int):
            failed[str(t)] = failed.get(str(t), 0) + 1
    block["failed_turns"] = dict(sorted(failed.items(), key=lambda kv: int(kv[0])))
    block["memory_user"] = sum(1 for r in conv if r.get("memory") == "user" and r.get("verdict") != SKIPPED)
    reasons: dict[str, int] = {}
    for r in conv:
        if r.get("verdict") == UNSCORED and r.get("unscored_reason"):
            reasons[str(r["unscored_reason"])] = reasons.get(str(r["unscored_reason"]), 0) + 1
    # the most common reason a conversation was unscored (ties: the first in plan order)
    block["top_unscored_reason"] = max(reasons, key=lambda k: reasons[k]) if reasons else None
    out = {"single_turn": _kind_block([r for r in main if not r.get("multi_turn")]), "conversation": block}
    if sims:
        out["simulated"] = simulated_block(sims)
    return out


def simulated_block(sims: list[dict]) -> dict[str, Any]:
    """by_kind.simulated: the usual counts and `outcomes` {outcome: cases} (assay.simulate.outcomes;
    a skipped case has none); the simulator's own failures are the `harness` ones, never the app's."""
    block = _kind_block(sims)
    outcomes: dict[str, int] = {}
    for r in sims:
        name = (r.get("simulator") or {}).get("outcome")
        if name:
            outcomes[str(name)] = outcomes.get(str(name), 0) + 1
    block["outcomes"] = dict(sorted(outcomes.items()))
    block["harness"] = sum(n for k, n in outcomes.items() if k in SIM_HARNESS_OUTCOMES)
    return block


def undeclared_summary(records: list[dict]) -> dict[str, Any] | None:
    """`summary.undeclared_tools` (absent when none): called tools the adapter's tools list does not
    declare, `{tools: {name: cases}, cases, checked_cases}`; `checked_cases` had a tool or authz check
    resting on tool names (made unscored: the gate closes on them)."""
    tools: dict[str, int] = {}
    cases = checked = 0
    for r in records:
        names = r.get("undeclared_tools")
        if not isinstance(names, list) or not names:
            continue
        cases += 1
        for name in names:
            tools[str(name)] = tools.get(str(name), 0) + 1
        if any(isinstance(e, dict) and e.get("undeclared_tools") for e in (r.get("layers") or {}).values()):
            checked += 1
    return {"tools": dict(sorted(tools.items())), "cases": cases, "checked_cases": checked} if cases else None


def route_path_summary(records: list[dict]) -> dict[str, Any] | None:
    """`summary.route_from_response` (absent when no routing layer read a declared path):
    `{path, read, found, fell_back}` over the non-skipped cases' routing layers; `fell_back` took
    the route from a later source (the trace, the status map)."""
    path, read, found, fell = None, 0, 0, 0
    for r in records:
        entry = (r.get("layers") or {}).get("routing")
        rp = entry.get("response_path") if isinstance(entry, dict) else None
        if r.get("verdict") == SKIPPED or not isinstance(rp, dict):
            continue
        path = path or rp.get("path")
        read += 1
        if rp.get("found"):
            found += 1
        elif entry.get("observed_from"):
            fell += 1
    return {"path": path, "read": read, "found": found, "fell_back": fell} if read else None


def judged_summary(records: list[dict]) -> dict[str, Any]:
    """`summary.judged`: cases the run's judge judged, split by whether their rubric versions gate.

    `calibrated` counts non-canary cases by their judged layer verdict (the rubric versions that
    gate); `provisional` counts them by `provisional_verdict` (recorded, never gating), and
    `provisional_why` says why. `usage` sums judge calls and tokens over every case (canaries and
    holdout in: cost is cost); `calls_without_usage` counts calls whose provider reported none.
    `unstable_cases` counts non-canary cases the judge left unstable (their judged layer decided by
    a judge_unstable rubric); `instability` gives each rubric pin's rate over the nodes judged
    (`{judged_nodes, unstable_nodes, rate}`; a node is unstable when the judge's repeated answers differ).
    """
    calibrated = {v: 0 for v in JUDGED_VERDICTS}
    provisional = {v: 0 for v in JUDGED_VERDICTS}
    why: dict[str, int] = {}
    usage = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "calls_without_usage": 0}
    cases = unstable_cases = 0
    instability: dict[str, dict[str, Any]] = {}
    for r in records:
        u = r.get("judge_usage")
        if isinstance(u, dict):
            for key in usage:
                usage[key] += int(u.get(key) or 0)
        entry = (r.get("layers") or {}).get("judged")
        if r.get("canary") or not isinstance(entry, dict) or not isinstance(entry.get("rubrics"), list):
            continue
        cases += 1
        unstable_cases += 1 if entry.get("judge_unstable") is True else 0
        rubrics = [x for x in entry["rubrics"] if isinstance(x, dict)]
        for x in rubrics:
            if isinstance(x.get("judged"), int) and isinstance(x.get("unstable"), int):
                slot = instability.setdefault(str(x.get("pin")), {"judged_nodes": 0, "unstable_nodes": 0})
                slot["judged_nodes"] += x["judged"]
                slot["unstable_nodes"] += x["unstable"]
        if any(not x.get("provisional") for x in rubrics):
            v = str(entry.get("verdict"))
            calibrated[v] = calibrated.get(v, 0) + 1
        if any(x.get("provisional") for x in rubrics):
            v = str(entry.get("provisional_verdict"))
            provisional[v] = provisional.get(v, 0) + 1
            for reason in sorted({str(x.get("why_provisional")) for x in rubrics if x.get("provisional")}):
                why[reason] = why.get(reason, 0) + 1
    for slot in instability.values():
        slot["rate"] = _rate(slot["unstable_nodes"], slot["judged_nodes"]) if slot["judged_nodes"] else None
    from .pairwise import pairwise_summary
    out = {"cases": cases, "calibrated": calibrated, "provisional": provisional, "provisional_why": why,
           "usage": usage, "unstable_cases": unstable_cases, "instability": dict(sorted(instability.items()))}
    pairwise = pairwise_summary(records)
    if pairwise:
        out["pairwise"] = pairwise
    return out
