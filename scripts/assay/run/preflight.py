"""Pre-flight (contracts §5.4), in order: everything here happens before the first case.

1. plan validation (exit 2), --out and the state dir (`run_dir`), the holdout ledger's path
(`holdout_ledger`) and env resolution (`preflight_env`, exit 3); 2. invocation mode supported
and well-formed (`invoke.preflight`); 3. health check (`invoke.preflight`); 4. trace branch; 5. safety
gates recorded; 6. the PII .gitignore; 7. manifest.yaml and cases.jsonl; 8. results.json `running`;
9. the holdout ledger's look (`holdout_ledger`). Steps 1-4 write nothing; exit 2 and exit 3
leave nothing behind (the lock is beside the run dir and removed on exit).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import writer
from ..core.errors import AssayError
from ..core.jsonio import atomic_write_json, loads, read_json, read_jsonl
from ..core.version import HARNESS_VERSION
from ..core.runplan import RunPlan, dataset_version_of, read_plan_text
from ..core.vocab import is_holdout
from ..plan.validate import run_plan, validate_parts, validate_plan
from .holdout_ledger import ledger_path
from .judged_reason import judged_reason_fn
from ..invoke.preflight import build_invoker, check_adapter
from .preflight_env import placeholders, register_run_secrets, resolve_env
from .run_paths import state_dir_of
from ..traces.collect import TraceConfig, trace_branch


# ---------------------------------------------------------------- step 1: plan, baseline
def load_plan(path: str, stdin_text: Callable[[], str] | None = None) -> RunPlan:
    """The plan read and checked once (exit 2 naming the key): a frozen RunPlan whose cases are
    streamed out of the text one at a time and kept compact (core.runplan)."""
    try:
        if path == "-":
            text = (stdin_text or sys.stdin.read)()
        else:
            with open(path, "rb") as fh:
                text = fh.read().decode("utf-8")
        parts = read_plan_text(text)
        checked = validate_parts(*parts, source=path) if parts is not None else None
        if checked is not None:
            return checked
        del parts
        plan = loads(text)
    except FileNotFoundError:
        raise AssayError(f"--plan {path}: no such file; build it with make_plan.py", 2)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise AssayError(f"--plan {path}: not readable JSON ({exc}); rebuild it with make_plan.py", 2)
    validate_plan(plan, source=path)
    return run_plan(plan)


def dataset_version(plan: Mapping[str, Any]) -> int:
    return dataset_version_of(plan.get("manifest_extra"))


def check_baseline(path: str | None, plan: Mapping[str, Any]) -> dict[str, Any] | None:
    """--baseline-verdicts: its run's manifest must match dataset_version, harness_version and k, and be
    a holdout run exactly when this plan is one (the two splits share no case)."""
    if not path:
        return None
    p = Path(path)
    from ..report.interrupted import refuse_unfinished   # a killed run's file is its last batch, no baseline
    refuse_unfinished(p.absolute().parent, "--baseline-verdicts", str(path), key="--baseline-verdicts")
    try:
        rows = read_jsonl(p)
    except (OSError, ValueError) as exc:
        raise AssayError(f"--baseline-verdicts {path}: not readable JSONL ({exc}); pass "
                         "reports/<baseline-run>/verdicts_for_stats.jsonl", 2, key="--baseline-verdicts")
    mpath = p.parent / "manifest.yaml"
    try:
        manifest = read_json(mpath)
    except (OSError, ValueError) as exc:
        raise AssayError(f"--baseline-verdicts {path}: its run's manifest.yaml is missing or unreadable "
                         f"({exc}); the baseline must be a run directory's verdicts_for_stats.jsonl", 2,
                         key="--baseline-verdicts")
    mine = {"dataset_version": dataset_version(plan), "harness_version": HARNESS_VERSION, "k": plan["k"]}
    theirs = {key: manifest.get(key) for key in mine}
    diff = [key for key in mine if mine[key] != theirs[key]]
    sealed = [d.get("mode") == "holdout" or d.get("selecting_split") == "holdout" for d in (plan, manifest)]
    if not diff and sealed[0] != sealed[1]:   # disjoint splits: no case pairs, and a holdout look spent for nothing
        want = "the champion's holdout run" if sealed[0] else "a run of the full split (the pinned champion's)"
        raise AssayError(f"--baseline-verdicts {path} is the verdicts of a {manifest.get('mode')} run, and this plan is "
                         f"a {plan.get('mode')} run: the holdout and the full split share no case, so nothing would "
                         f"pair. Pass {want}: reports/<run-id>/verdicts_for_stats.jsonl (`auto` takes "
                         "reports/baseline.json's pin, a training run)", 2, key="--baseline-verdicts",
                         mismatch=["selecting_split"])
    if diff:
        detail = ", ".join(f"{key}: baseline {theirs[key]!r} vs this plan {mine[key]!r}" for key in diff)
        raise AssayError(f"--baseline-verdicts {path} is not comparable with this plan ({detail}); "
                         "re-run the baseline under the same dataset_version, harness_version and k, or "
                         "run without --baseline-verdicts", 2, key="--baseline-verdicts", mismatch=diff)
    return {"path": str(p), "rows": rows, "holdout_ids": manifest_ids(manifest, "holdout"),
            "canary_ids": manifest_ids(manifest, "canary"), "run_id": manifest.get("run_id"), **theirs}


# the baseline's per-case keys: read by the comparison, never copied into a manifest
BASELINE_CASE_KEYS = ("rows", "holdout_ids", "canary_ids")


def manifest_ids(manifest: Mapping[str, Any], which: str) -> list[str]:
    """The ids of a run manifest's cases in one set (`holdout`, `canary`: `case_set` below)."""
    return [c.get("id") for c in manifest.get("cases") or [] if isinstance(c, dict) and c.get("set") == which]


# ---------------------------------------------------------------- step 5: safety
def safety_gates(adapter: Mapping[str, Any]) -> dict[str, Any]:
    envb = adapter.get("environment") or {}
    kind = envb.get("kind")
    never_live = sorted(str(t.get("name")) for t in (adapter.get("tools") or [])
                        if isinstance(t, Mapping) and t.get("side_effects") == "never-live")
    return {"safe_to_attack": envb.get("safe_to_attack") is True, "environment_kind": kind,
            "never_live_tools": never_live, "live_environment": isinstance(kind, str) and kind.startswith("live"),
            "identity_map": sorted((adapter.get("invocation") or {}).get("identity_map") or {})}


# ---------------------------------------------------------------- steps 6-9: writes
PII_IGNORES = ("*/cases/", "*/cases.jsonl")


def write_gitignore(reports: Path, adapter: Mapping[str, Any]) -> bool:
    if (adapter.get("data") or {}).get("may_contain_pii") is not True:
        return False
    path = reports / ".gitignore"
    existing = writer.read_bytes(path).decode("utf-8") if path.exists() or path.is_symlink() else ""
    # the case journal holds every request and answer; `*/cases/` covers older run dirs' case dirs
    wanted = [p for p in PII_IGNORES if p not in existing.splitlines()]
    if wanted:
        from ..core.jsonio import atomic_write_text
        atomic_write_text(path, existing + ("" if not existing or existing.endswith("\n") else "\n")
                          + "".join(p + "\n" for p in wanted))
    return True


def case_set(case: Mapping[str, Any]) -> str:
    split = case.get("split") or []
    return "canary" if "canary" in split else ("holdout" if is_holdout(case) else "main")


@dataclass
class RunSetup:
    plan: RunPlan
    plan_sha256: str
    out: Path
    state: Path
    execution: dict[str, Any]
    scoring: dict[str, Any]
    env: dict[str, str]
    invoker: Any
    trace: TraceConfig
    safety: dict[str, Any]
    baseline: dict[str, Any] | None
    ledger: Path | None
    max_concurrency: int
    health: dict[str, Any] = field(default_factory=dict)
    conversation: Any = None   # invoke.conversation.ConversationConfig, or None when undeclared
    shard: dict[str, Any] | None = None     # run_cases.py --shard: {index, count}, recorded in the manifest
    judge: Any = None              # assay.judge.runtime.JudgeRuntime when the plan enables a judge
    simulator: Any = None          # assay.simulate.runtime.SimulatorRuntime when a simulated case runs
    # False for a rescore: no app is called, so execution.infra_rate_abort (a verdict on the app's
    # health, exit 5) never applies; its infra cases are counted and gated like any others
    calls_app: bool = True
    replay: Any = None             # assay.replay.session.ReplaySession (--record/--replay/--judge-cache)
    stale_plan: str | None = None  # run_cases.py --stale-plan over a plan older than its suite: what changed
    ledger_note: str | None = None  # a holdout run under CI without --publish: commit the ledger (holdout_ledger)


def max_concurrency(plan: Mapping[str, Any]) -> int:
    v = (plan["adapter"].get("invocation") or {}).get("max_concurrency", 1)   # the one default
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise AssayError(f"pre-flight: invocation.max_concurrency must be an integer >= 1 (got {v!r})", 3,
                         key="invocation.max_concurrency")
    return v


def build_manifest(setup: RunSetup, started_at: str) -> dict[str, Any]:
    plan = setup.plan
    inv = plan.invocation
    invocation: dict[str, Any] = {"mode": inv.get("mode"), "timeout_s": setup.execution["timeout_s"],
                                  "timeout_enforced": True,
                                  "max_concurrency": setup.max_concurrency}
    if inv.get("mode") == "http":
        invocation["url"] = str(inv.get("base_url") or "").rstrip("/") + str(inv.get("endpoint") or "").split(None, 1)[-1]
        invocation["endpoint"] = inv.get("endpoint")
    elif inv.get("mode") in ("cli", "agent"):
        invocation.update(setup.invoker.manifest())
    else:
        invocation["entrypoint"] = inv.get("entrypoint")
    identity_headers = sorted({str(v) for v in (inv.get("identity_map") or {}).values()})
    auth = inv.get("auth") or {}
    auth_headers = sorted(str(h) for h in (auth.get("headers") or {})) if auth.get("type") == "headers" else []
    baseline = None
    if setup.baseline:
        baseline = {k: v for k, v in setup.baseline.items() if k not in BASELINE_CASE_KEYS}
    from ..suite.version import CompactVersion, manifest_cases, manifest_rows, suite_version
    # an agent run's invoker names each fixture's digest in its requests: the case hashes read it once with it
    digests = getattr(setup.invoker, "fixture_digests", None)
    compact = CompactVersion.of(plan, digests)   # a run's plan: its rows streamed to disk by write_manifest
    if compact is not None:
        version: dict[str, Any] = {"suite_sha256": compact.suite_sha256, "suite_parts_sha256": compact.suite_parts_sha256}
        rows: Any = manifest_rows(plan.cases, case_set, compact)
    else:
        version = suite_version(plan, digests=digests)
        rows = manifest_cases(plan, case_set, version)
    return {
        "run_id": plan.run_id, "mode": plan.mode, "gate": plan.gate,
        "selecting_split": plan.selecting_split, "k": plan.k, "app": plan_app(plan),
        "plan_sha256": setup.plan_sha256, "harness_version": HARNESS_VERSION,
        "dataset_version": plan.dataset_version, "started_at": started_at,
        "cases": rows,
        "suite_sha256": version["suite_sha256"], "suite_parts_sha256": version["suite_parts_sha256"],
        "invocation": invocation, "identity_headers": identity_headers,
        "auth": {"type": auth.get("type", "none"), "header_names": auth_headers},
        "traces": setup.trace.manifest(), "capability_matrix": plan.capability_matrix,
        "scoring": setup.scoring, "execution": setup.execution, "baseline_verdicts": baseline,
        "max_concurrency": setup.max_concurrency, "safety": setup.safety, "health_check": setup.health,
        "data": {"may_contain_pii": (plan.adapter.get("data") or {}).get("may_contain_pii") is True},
        "manifest_extra": plan.manifest_extra,
        "conversation": setup.conversation.manifest() if setup.conversation is not None else None,
        **({"shard": setup.shard} if setup.shard else {}),
        "judge": judge_manifest(setup),
        **({"replay": setup.replay.manifest(), "replayed_from": setup.replay.source} if setup.replay else {}),
        **_simulator_manifest(setup),
        **({"stale_plan": setup.stale_plan} if setup.stale_plan else {}),
    }


def plan_app(plan: RunPlan) -> str | None:
    """The app the run is of, recorded as `app` in manifest.yaml and results.json (adapter.yaml
    `app.name` as make_plan.py records it in manifest_extra, else the plan's adapter; null when
    unnamed): `--baseline auto` never takes another app's run as the base (§20.4)."""
    from ..core.runapp import app_name
    return app_name({"manifest_extra": plan.manifest_extra, "adapter": plan.adapter})


def same_revision(manifest: dict[str, Any], health: Mapping[str, Any] | None) -> dict[str, Any]:
    """--resume: the app must serve what the run started against (invocation.health_check.revision_from,
    the manifest's health_check.revision). An app restarted on an edited prompt since would make one run
    of two apps' answers: exit 3, before anything is written. Returns the manifest."""
    was = (manifest.get("health_check") or {}).get("revision")
    now = (health or {}).get("revision")
    if was is not None and now != was:
        raise AssayError(f"--resume: the app now reports revision {now!r} (invocation.health_check.revision_from), "
                         f"but run {manifest.get('run_id')} started against {was!r}: its finished cases measured "
                         f"that app, the rest would measure this one. Serve revision {was!r} again to finish it, "
                         "or start a new run", 3, key="invocation.health_check.revision_from")
    return manifest


def write_manifest(out: Path, manifest: Mapping[str, Any]) -> None:
    """manifest.yaml (JSON text, valid YAML), its `cases` rows streamed (build_manifest may give
    them as an iterator): the same bytes as atomic_write_json of the whole document."""
    from ..core.json_rows import write_json_with_rows
    write_json_with_rows(out / "manifest.yaml", {k: v for k, v in manifest.items() if k != "cases"}, "cases",
                         manifest.get("cases") or ())


def _simulator_manifest(setup: RunSetup) -> dict[str, Any]:
    from ..core.casekind import any_simulated
    if setup.simulator is None and not any_simulated(setup.plan.get("cases")):
        return {}   # (simulator_manifest's None: no case is simulated)
    from ..simulate.build import simulator_manifest
    block = simulator_manifest(setup.plan, setup.simulator)
    return {"simulator": block} if block is not None else {}


def judge_manifest(setup: RunSetup) -> dict[str, Any]:
    """The manifest's `judge` block: the config as written (never a key) and each rubric's gating status."""
    if setup.judge is not None:
        return setup.judge.manifest()
    block = setup.plan.judge_block
    reason = block.get("reason") if block is not None else None
    return {"enabled": False, "reason": reason or judged_reason_fn(setup.plan, setup.state)({})}


def prepare(plan: Mapping[str, Any], out: Path, *, environ: Mapping[str, str], baseline: dict | None,
            replay: Any = None) -> RunSetup:
    """Steps 1-5 (no writes): env, invoker, traces, safety. The health check is the caller's.
    `plan`: load_plan's RunPlan (a validated plan dict is made one here)."""
    plan = run_plan(plan)
    execution = dict(plan.execution)
    scoring = dict(plan.scoring)
    state = state_dir_of(plan)
    ledger = ledger_path(plan)
    check_adapter(plan.adapter)
    if replay is not None and (replay.app == "record" or replay.live_cases):   # what every case will write
        replay.cache.check_writable()
    replaying = replay is not None and not replay.calls_app   # every answer from the cache
    # replayed: the app's address and credentials are never read (docs/runner-contract.md §22)
    env = resolve_env(plan, environ, replaying=replaying)
    register_run_secrets(plan, env)
    mc = max_concurrency(plan)
    invoker = build_invoker(plan, placeholders(plan, env) if replaying else env, state, out=out, environ=environ,
                            replaying=replaying)
    conv = None
    if plan.invocation.get("mode") == "agent":   # a conversation continues the first turn's session
        from ..invoke.conversation import ConversationConfig
        conv = ConversationConfig("server-id", {"body": "session_id"}, 0.0, "session")
    elif plan.invocation.get("conversation") is not None:   # the conversation code: only for an adapter with one
        from ..invoke.conversation import conversation_config
        conv = conversation_config(plan.invocation,
                                   getattr(invoker, "conversation_template", getattr(invoker, "body_recorded", None)))
    trace = trace_branch(plan.adapter, state, env)
    judge = None
    if (plan.judge_block or {}).get("enabled"):   # (build_runtime's own test; imported only for a judged run)
        from ..judge.runtime import build_runtime
        judge = build_runtime(plan, env, state, execution, environ, probe=not replaying)
    simulator = None
    if (plan.get("simulator") or {}).get("enabled"):   # (imported only when the plan enables a simulated user)
        from ..simulate.build import build_simulator
        simulator = build_simulator(plan, env, state, execution, environ, probe=not replaying)
    if replay is not None:   # the one hook of every app request (and of the judge's calls)
        from ..invoke.approot import app_root
        invoker = replay.invoker(invoker, plan.invocation, env, app_root(plan.adapter, state))
        if judge is not None:
            judge.cache = replay
    return RunSetup(judge=judge, simulator=simulator, plan=plan, plan_sha256=plan.sha256, out=out,
                    state=state, execution=execution,
                    scoring=scoring, env=env, invoker=invoker, trace=trace, safety=safety_gates(plan.adapter),
                    baseline=baseline, ledger=ledger, max_concurrency=mc, conversation=conv, replay=replay,
                    calls_app=not replaying)


def write_running_results(out: Path, plan: RunPlan, started_at: str, summary: dict) -> None:
    atomic_write_json(out / "results.json", {
        "run_id": plan.run_id, "mode": plan.mode, "gate": plan.gate,
        "selecting_split": plan.selecting_split, "k": plan.k, "app": plan_app(plan),
        "harness_version": HARNESS_VERSION, "dataset_version": plan.dataset_version, "exit_code": None, "started_at": started_at,
        "finished_at": None, "summary": summary, "cases": []})
