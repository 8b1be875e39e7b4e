"""The tokenless CI gate: read results.json (the runner's one count definition), decide open or
closed, and say why on one screen. No model is ever in this path, and nothing here recounts.

`evaluate(run_dir, ...)` returns a GateResult; `gate_lines.summary_lines(result)` is the
one-screen text; the close rules themselves are `gate_reasons`. Close reasons are checked in the
reference order (scripts-facts, gate.py): malformed counts, status, exit code, gating failures,
holdout > total, infra rate, incomplete traces, missing artifacts, nothing measured, hollow layers
(asserted, never scored), unscored gating cases (a check that never ran), canaries (with
--require-canaries), verify.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..stats.counts import cases_phrase
from .gate_lines import loose_infra_bar_line, repeated_5xx_reason, summary_lines
from .gate_reasons import (gating_reason, is_count, rate_of, canary_failures, canary_reason, conversations_reason, replayed_phrase,
                           goal_not_reached_reason, hollow_reasons, no_gating_case_reason, incomplete_reason, infra_cases_named, malformed_counts, replay_miss_reason, run_verify,
                           kept_verify,
                           skipped_gating_reason, unscored_gating_reason)
from .rundir import RunResultsView, load_results
from .run_files import status_from_tail

KEPT = "kept"   # evaluate(verify=KEPT): the completeness check's answer only when a reader kept it (rundir.checked)
KNOWN = "known"   # the same, never the check even of a small run (run_history.py --no-verify: skipping it is asked)


@dataclass
class GateResult(RunResultsView):
    run_dir: Path
    results: dict
    reasons: list[str] = field(default_factory=list)
    verified: bool = False          # --verify ran
    verify_clean: bool | None = None
    verify_detail: str | None = None
    budget_lines: list[str] = field(default_factory=list)
    trust_head: list[str] = field(default_factory=list)   # printed right under the verdict line
    trust_info: list[str] = field(default_factory=list)
    budgets: dict = field(default_factory=dict)   # {key: {value, source}} the gate checked
    lines: list[str] = field(default_factory=list)
    # --baseline (assay.compare.gate_rule): {base_run_id, lines, buckets {case_id: bucket}, summary, markdown}
    comparison: dict | None = None
    in_progress: str | None = None  # the runner still holds the lock: what it has finished so far
    replayed: str | None = None     # run_cases.py --replay: where the answers came from (first line)
    max_infra_rate: float = 0.05    # the bar the infra rate was held to (--max-infra-rate)

    @property
    def open(self) -> bool:
        return not self.reasons


def evaluate(run_dir: Path, *, max_infra_rate: float = 0.05, require_canaries: bool = False,
             verify: bool | str = True, budgets: dict | None = None, notes: dict | None = None) -> GateResult:
    """The gate's decision over one run dir. Call it through `assay.verdict.decide` (the one entry:
    the same defaults for every surface); `budgets` overrides profile.yaml's (None: the profile's),
    `notes` ({case_id: words}) is said beside a gating failure (--baseline: "edited since ...")."""
    from .gate_case import forget
    forget()   # the case walk the reasons share is this decision's alone
    try:
        return _evaluate(Path(run_dir), max_infra_rate, require_canaries, verify, dict(budgets or {}), notes)
    finally:
        forget()


def _status_on_disk(run_dir: Path) -> str | None:
    """results.json's summary.status, from its tail when the runner wrote it (a 100,000-case file's
    rows are not walked twice: the whole file is read once, below), else from the whole file."""
    status = status_from_tail(run_dir / "results.json")
    return status if status is not None else load_results(run_dir, rows=False)["summary"].get("status")


def _evaluate(run_dir: Path, max_infra_rate: float, require_canaries: bool, verify: bool | str, budgets: dict,
              notes: dict | None) -> GateResult:
    checked = None
    if verify and verify not in (KEPT, KNOWN) and _status_on_disk(run_dir) != "running":
        # the completeness re-check first, while no case row is held (its reason keeps its place below):
        # at 100,000 cases the two never share the memory. (A tail that said running for a run the whole
        # file says finished is checked below, where `verify` is, as every unchecked run is.)
        checked = run_verify(run_dir)
    results = load_results(run_dir)
    if verify in (KEPT, KNOWN):   # the viewer: only an answer a reader kept for these bytes (rundir.checked)
        checked = kept_verify(run_dir, small=verify == KEPT) if results["summary"].get("status") != "running" else None
        verify = checked is not None
    summary = results["summary"]
    res = GateResult(run_dir=run_dir, results=results, replayed=replayed_phrase(run_dir), max_infra_rate=max_infra_rate)
    reasons = res.reasons
    bad = malformed_counts(summary)
    if bad:
        reasons.append("malformed count(s) in results.json summary: " + ", ".join(bad)
                       + " (must be non-negative integers)")
    if summary.get("status") == "running":
        from .interrupted import interrupted_view
        recount, rows, why = interrupted_view(run_dir, results)
        if recount is not None:  # the runner is gone: quote (and name) what finished, not a stale batch
            results["summary"] = summary = recount
            results["cases"] = rows
        reasons.append(why)
        if recount is None:  # the runner is alive: nothing is final, so say only that (D5)
            from ..rundir.runlock import lock_path
            from .rundir import progress_phrase, since_last_case, since_phrase
            since = since_phrase(since_last_case(run_dir, lock_path(run_dir, res.run_id)))
            res.in_progress = progress_phrase(run_dir)[0] + (f"; {since}" if since else "")
            res.lines = [f"{res.run_id}: IN PROGRESS (not gated: a run that is still running never opens the gate)"
                         + (f" [{res.replayed}]" if res.replayed else ""),
                         f"  {res.in_progress} (from the committed lines of cases.jsonl; results.json is refreshed in batches)",
                         f"  gate closed: {why}"]
            return res
    elif summary.get("status") == "stopped_fail_fast":   # never a silent green: the rest was not run
        from ..stats.counts import stopped_line
        stopped = results.get("stopped_early") if isinstance(results.get("stopped_early"), dict) else {}
        reasons.append(stopped_line(stopped))
    elif summary.get("status") != "ok":
        reasons.append(f"run status is {summary.get('status')!r}, not 'ok'")
    reasons.extend(canary_failures(run_dir, results))
    if results.get("exit_code") not in (0, None):
        reasons.append(f"runner exit code {results.get('exit_code')} (not 0)")
    gating = gating_reason(run_dir, results, summary, notes) if not bad and summary["gating_failures"] > 0 else None
    if gating:
        reasons.append(gating)
    not_run = replay_miss_reason(run_dir, results)
    if not_run:
        reasons.append(not_run)
    unreached = goal_not_reached_reason(run_dir, results)
    if unreached:
        reasons.append(unreached)
    holdout = summary.get("holdout")
    if not bad and isinstance(holdout, dict) and is_count(holdout.get("gating_failures")) \
            and holdout["gating_failures"] > summary["gating_failures"]:
        reasons.append(f"holdout gating failures ({holdout['gating_failures']}) exceed the total "
                       f"({summary['gating_failures']}): the counts are inconsistent")
    infra = rate_of(summary.get("infra_rate"))
    if infra is not None and infra > max_infra_rate:
        named = [] if bad else infra_cases_named(run_dir, results, "infra_error")
        reasons.append(f"infra rate {infra * 100:.1f}% is above {max_infra_rate * 100:.1f}%"
                       + (": " + "; ".join(named) if named else ""))
    elif infra is None and "infra_rate" in summary:
        reasons.append("infra_rate in results.json is not a number")
    crashed = None if bad else repeated_5xx_reason(res, summary)
    if crashed:
        reasons.append(crashed)
    incomplete = None if bad else incomplete_reason(run_dir, results, summary, max_infra_rate)
    if incomplete:
        reasons.append(incomplete)
    missing = summary.get("missing_artifacts")
    if missing:
        reasons.append("missing artifacts: " + ", ".join(str(m) for m in (missing if isinstance(missing, list) else [missing])[:10]))
    if not bad and summary["passes"] + summary["failures"] == 0:
        reasons.append("nothing was measured (0 passes + 0 failures), which is not a pass")
    nothing_gated = None if bad else no_gating_case_reason(run_dir, results, summary)
    if nothing_gated:
        reasons.append(nothing_gated)
    reasons.extend(hollow_reasons(summary, _invocation_mode(run_dir)))
    from .gate_trust import trust_checks
    res.trust_head, res.trust_info, trusted = trust_checks(run_dir, results)
    reasons.extend(trusted)
    unscored_conv = conversations_reason(summary)
    if unscored_conv:
        reasons.append(unscored_conv)
    unscored_gating = unscored_gating_reason(run_dir, results)
    if unscored_gating:
        reasons.append(unscored_gating)
    from .gate_judge import judge_unstable_reason
    unstable = judge_unstable_reason(run_dir, results)
    if unstable:
        reasons.append(unstable)
    skipped_gating = None if bad else skipped_gating_reason(run_dir, results)
    if skipped_gating:
        reasons.append(skipped_gating)
    if require_canaries:
        why = canary_reason(summary, results.get("mode"))
        if why:
            reasons.append(why)
    if verify:
        res.verified = True
        res.verify_clean, res.verify_detail = checked if checked is not None else run_verify(run_dir)
        if not res.verify_clean:
            reasons.append(res.verify_detail or "run_cases.py --verify failed")
    _check_budgets(res, run_dir, budgets)
    res.lines = summary_lines(res)
    return res


def _check_budgets(res: GateResult, run_dir: Path, budgets: dict) -> None:
    """Cost and latency budgets (stats/budgets.py: the overrides, else <state>/profile.yaml;
    stats/cost.py: the numbers): over budget, or not checkable, closes."""
    reasons = res.reasons
    from ..stats.budgets import resolve_budgets
    from ..stats.cost import PRICES_FILE, load_prices, run_cost, state_dir_of_run
    from ..stats.cost_budget import budget_lines
    state = Path(budgets["state_dir"]) if budgets.get("state_dir") else state_dir_of_run(run_dir)
    resolved = resolve_budgets(budgets, state)
    res.budgets = resolved["budgets"]
    if resolved["profile"] is None:   # no profile.yaml where the run sits (a run dir copied out of its state dir)
        res.budgets.update(recorded_budgets(run_dir, state, res.budgets))
    if res.budgets:
        prices_path = Path(budgets.get("prices") or state / PRICES_FILE)
        prices = load_prices(prices_path) if prices_path.is_file() or budgets.get("prices") else None
        cost = run_cost(run_dir, prices, prices_note=None if prices else f"no {prices_path}")
        close, res.budget_lines = budget_lines(
            cost, max_cost_per_case=(res.budgets.get("max_cost_per_case") or {}).get("value"),
            max_p95_latency_s=(res.budgets.get("max_p95_latency_s") or {}).get("value"),
            sources={k: b["source"] for k, b in res.budgets.items()},
            include_judge=budgets.get("include_judge", True) is not False)
        reasons.extend(close)


def _invocation_mode(run_dir: Path) -> str | None:
    """The run's invocation.mode as its manifest recorded it (None: an http app or unknown): a hint
    names the keys that mode's adapter has."""
    from .rundir import try_json_head
    manifest = try_json_head(Path(run_dir) / "manifest.yaml")
    invocation = manifest.get("invocation") if isinstance(manifest, dict) else None
    mode = invocation.get("mode") if isinstance(invocation, dict) else None
    return mode if isinstance(mode, str) else None


def recorded_budgets(run_dir: Path, state: Path, chosen: dict) -> dict:
    """The budgets the plan recorded from its profile (manifest_extra.budgets), for each key no flag set,
    when the state dir the run sits in has no profile.yaml: a run dir copied out of its state dir is
    gated on the budgets it was planned under, never on none."""
    from ..stats.budgets import BUDGET_FLAGS
    from .rundir import try_json_head
    manifest = try_json_head(Path(run_dir) / "manifest.yaml")   # its top-level keys, kept while unchanged
    extra = manifest.get("manifest_extra") if isinstance(manifest, dict) else None
    recorded = extra.get("budgets") if isinstance(extra, dict) else None
    if not isinstance(recorded, dict):
        return {}
    return {key: {"value": float(recorded[key]), "source": f"the run's manifest.yaml manifest_extra.budgets.{key} "
                  f"(the profile's when the plan was made: no profile.yaml in {state}; --state-dir names one)"}
            for key in BUDGET_FLAGS if key not in chosen and isinstance(recorded.get(key), (int, float))
            and not isinstance(recorded.get(key), bool)}


def to_json(res: GateResult) -> dict:
    s = res.summary
    keys = ("n", "attempted", "passes", "failures", "gating_failures", "unscored", "skipped",
            "infra_errors", "infra_incomplete", "infra_rate", "crash_rate", "scorer_errors", "repeated_5xx", "status")
    out = {k: s.get(k) for k in keys}
    out.update({"run_id": res.run_id, "run_dir": str(res.run_dir), "mode": res.results.get("mode"),
                # the runner's exit, never the gate's (a closed gate on a complete run has runner exit 0):
                # a key named exit_code read as the decision was a green from a red gate; the decision is `gate`
                "runner_exit_code": res.results.get("exit_code"), "canaries": s.get("canaries"),
                "holdout": s.get("holdout"), "by_kind": s.get("by_kind"),
                "verified": res.verified, "verify_clean": res.verify_clean,
                "gate": "open" if res.open else "closed", "reasons": list(res.reasons),
                "budgets": list(res.budget_lines), "budget_sources": dict(res.budgets),
                # the screen's note on a bar so loose infra errors never close the gate, in its words; else null
                "infra_bar_note": loose_infra_bar_line(res.max_infra_rate),
                "gate_rule": res.results.get("gate"), "replayed": res.replayed,
                "counts": cases_phrase(s.get("n"), (s.get("canaries") or {}).get("n")
                                       if isinstance(s.get("canaries"), dict) else None)})
    if res.comparison:
        out["comparison"] = res.comparison.get("summary")
    return out
