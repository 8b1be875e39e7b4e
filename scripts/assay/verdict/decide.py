"""The gate's decision for one run dir, with one set of defaults for every surface (see __init__)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.errors import AssayError
from ..report.gate import GateResult, evaluate


@dataclass(frozen=True)
class GateOptions:
    """What a caller may set; everything else comes from the run dir and its state dir (profile.yaml's
    budgets, prices.yaml). The defaults are gate.py's: every surface that leaves them decides alike."""
    max_infra_rate: float = 0.05
    require_canaries: bool = False
    verify: bool | str = True                  # "kept": only a completeness answer a reader kept (the viewer)
    max_cost_per_case: float | None = None     # None: profile.yaml's budgets.max_cost_per_case
    max_p95_latency_s: float | None = None     # None: profile.yaml's budgets.max_p95_latency_s
    prices: str | None = None                  # None: <state>/prices.yaml
    state_dir: str | None = None               # None: the state dir holding the run (<state>/reports/<id>)
    include_judge: bool = True                 # the judge's tokens count in the cost budget
    baseline: str | None = None                # a run dir or "auto": also close on newly failing cases


DEFAULT = GateOptions()


def decide(run_dir: str | Path, options: GateOptions = DEFAULT) -> GateResult:
    """The decision: `result.open`, `result.reasons` (each reason that closed it, the first first),
    `result.lines` (the one screen). Bad input (not a run dir, a bad profile) is AssayError(2)."""
    budgets = {"max_cost_per_case": options.max_cost_per_case, "max_p95_latency_s": options.max_p95_latency_s,
               "prices": options.prices, "state_dir": options.state_dir, "include_judge": options.include_judge}
    kwargs = dict(max_infra_rate=options.max_infra_rate, require_canaries=options.require_canaries,
                  verify=options.verify, budgets=budgets)
    if options.baseline:
        from .baseline import decide_against
        return decide_against(Path(run_dir), options.baseline, is_open=gate_open, **kwargs)
    return evaluate(Path(run_dir), **kwargs)


def outside_inputs(run_dir: str | Path, options: GateOptions = DEFAULT) -> list[Path]:
    """The files outside the run dir that its decision with `options` reads: the state dir's
    profile.yaml (the budgets), the prices file (a cost budget's prices), the holdout ledger (a
    holdout run's look budget) and, for a merged run, each `<run id>.shard-*` dir's manifest.yaml
    beside it (a shard run again after the merge). A decision kept for a run dir's bytes stands
    only while these are as they were too: the viewer keys its decisions on both (a budget
    tightened in profile.yaml while it serves is decided again, closed as gate.py closes it)."""
    from ..plan.modes import HOLDOUT_LEDGER
    from ..report.gate_trust import shard_manifests_read
    from ..stats.budgets import PROFILE_FILE
    from ..stats.cost import PRICES_FILE, state_dir_of_run
    run_dir = Path(run_dir)
    run_state = state_dir_of_run(run_dir)
    state = Path(options.state_dir) if options.state_dir else run_state
    return [state / PROFILE_FILE, Path(options.prices) if options.prices else state / PRICES_FILE,
            run_state / HOLDOUT_LEDGER, *shard_manifests_read(run_dir)]


def decision_dict(run_dir: str | Path, options: GateOptions = DEFAULT) -> dict:
    """The decision as the viewer and the history show it, never raising: a run that cannot be
    read is closed, with the reason (never open, never a traceback)."""
    try:
        res = decide(run_dir, options)
    except AssayError as exc:
        return {"gate": "closed", "reasons": [str(exc)], "verified": False, "in_progress": None}
    except (OSError, ValueError, RecursionError) as exc:
        return {"gate": "closed", "reasons": [f"unreadable run files ({type(exc).__name__}: {exc})"],
                "verified": False, "in_progress": None}
    except Exception as exc:  # noqa: BLE001 - a bug in the decision never reads as open, nor as a traceback
        return {"gate": "closed", "reasons": [f"the gate could not be evaluated ({type(exc).__name__}: {exc})"],
                "verified": False, "in_progress": None}
    return {"gate": "open" if res.open else "closed", "reasons": list(res.reasons), "verified": res.verified,
            "verify_clean": res.verify_clean, "verify_detail": res.verify_detail, "in_progress": res.in_progress, "budgets": list(res.budget_lines),
            "headline": res.lines[0] if res.lines else None, "counts": _counts(res)}


def check_failed(decision: dict | None) -> str | None:
    """The completeness check's words (`run_cases.py --verify exit 6: ...`, the reason the gate closed on)
    when the decision ran the check, or took the answer a reader kept for the run's bytes, and it failed;
    None when it passed or was not run (`verified: false`: unknown, never clean). The viewer's pages and
    run_history.py ask this one question of a decision: a run it names is no point of any trend."""
    if isinstance(decision, dict) and decision.get("verified") and decision.get("verify_clean") is False:
        return decision.get("verify_detail") or "run_cases.py --verify failed"
    return None


COUNT_KEYS = ("n", "passes", "failures", "gating_failures", "infra_rate", "unscored")


def _counts(res: GateResult) -> dict | None:
    """The counts the decision read (for an interrupted run, its recount of the finished cases, not
    results.json's last batch); None while the runner still writes them (nothing final to show)."""
    summary = res.results.get("summary") if isinstance(res.results, dict) else None
    if res.in_progress is not None or not isinstance(summary, dict):
        return None
    return {k: summary.get(k) for k in COUNT_KEYS}


def holdout_look_reason(run_dir: str | Path, results: dict) -> str | None:
    """Why a holdout run's look is not within the budget (LOOK_BUDGET looks per sealed holdout), in the
    words the gate closes on, or None (within it, or not a holdout run). `candidate.py keep` refuses such
    a run as its holdout evidence before any keep is read: the same rule as the gate's, asked here."""
    from ..report.gate_trust import holdout_budget_reason
    return holdout_budget_reason(Path(run_dir), results)


def gate_open(run_dir: Path) -> tuple[bool, str | None]:
    """(open, the first reason it closed) for a past run: what `--baseline auto` asks of each candidate
    baseline (compare_runs.py, gate.py, draft_report.py, run_cases.py, rescore.py)."""
    try:
        res = decide(run_dir)
    except AssayError as err:
        return False, err.message
    return res.open, (res.reasons[0] if res.reasons else None)
