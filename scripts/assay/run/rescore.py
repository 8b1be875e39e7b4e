"""Rescore a finished run without calling the app (`rescore.py RUN_DIR --out NEW_RUN_DIR`).

Every layer is re-scored from the source run's stored responses and traces with the CURRENT
suite (expectations, adapter, capability matrix), rubrics, judge and calibration, by the
runner itself: a replay invoker answers each request with the stored `response.json`, a
replay trace source gives back the stored trajectory, and the engine writes a normal run
directory (verifiable with `run_cases.py --verify`). The new manifest records
`manifest_extra.rescored_from`. The current suite is linted as make_plan.py lints it (an ERROR is
exit 2; `--allow-invalid` records it in `manifest_extra.validation` and the gate closes on it). A
source run that was judged is judged again (so is any run `--judge` or the mode table judges). Judge
calls are skipped for unchanged (case, answer, rubric version, prompt version) under the same judge
(the calibration binding's identity, `assay.judge.binding.judge_identity`, as the source manifest
recorded it): the source run's `judge.json` verdicts are reused (`reused_from`) and their calibration
status re-read from the current sidecar.

Exactness: the run stores what rescore needs to score what it scored - a JSON body as JSON
(secrets redacted value by value), every repeat's request, response and trace (k > 1:
`repeats/<n>/`), an agent's workdir.json (answered by `rescore_source`: the agent is not run
again) - and rescore registers the secrets a run of the same plan registers, so
nothing a judge echoes reaches disk. It calls no app, so it never stops on
`execution.infra_rate_abort` (exit 5): cases it cannot replay are counted and gated.

A request is answered only if it is the one the source run sent: a case whose rendered request
differs now (its input, identity or the adapter's request shape edited since; http and function
modes) is a replay miss naming where, and so is a case the source run's split gained since (a
smoke, regression or holdout source); never the old answer scored as if it were the new one's.
The same request text under other values of the `${NAME}`s it names (a model, a region) is a miss
too: the digest its request.json kept (`assay.replay.key.Binding`) is compared with the real env's.

Limits: a case the source run never sent has no stored response (its rescore is
`infra_error`, "not sent in the source run"); conversations, scripted or with a simulated user,
are not replayed (`infra_error`, the reason says which and what to do; the simulator is never
called);
a run dir written before every repeat's trace was stored gives the other repeats'
trace-fed layers `infra_incomplete`; a check whose verdict turned on a secret's own text
sees `<redacted>` (the secret is never stored).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from ..core import casestore
from ..core.errors import AssayError
from ..core.ids import RUN_ID_RE, parse_run_id
from ..plan.validate import run_plan, validate_plan
from . import holdout_ledger, preflight, preflight_env, run_paths
from ..traces.collect import TraceConfig

from ..replay.key import Binding
from ..replay.miss import RESCORE_NOT_REPLAYED
from .rescore_source import ReplayInvoker, ReplayTraceSource, load_source, parse_json

NOT_REPLAYED_SIMULATED = (
    f"a simulated-user conversation (input.simulated_user): {RESCORE_NOT_REPLAYED}, "
    "so its end state and its rubric (judged over the whole transcript) were not re-scored and the simulator "
    "was not called; the source run {run_id}'s verdict for it stands in that run's case record; to "
    "score it with the current suite run it again (run_cases.py), or replay the source run if it was recorded "
    "(run_cases.py --replay <state>/{run_dir})")


class NotReplayedSimulator:
    """Rescore's simulator: it is never called. Asked for a simulated case's first user turn, it
    refuses the whole case (infra_error, NOT_REPLAYED_SIMULATED: counted and gated, never a pass)."""

    scrub = None
    on_retry = None

    def __init__(self, run_id: Any, run_dir: str, block: Any) -> None:
        self.reason = NOT_REPLAYED_SIMULATED.format(run_id=run_id, run_dir=run_dir)
        self.identity = block.get("identity") if isinstance(block, Mapping) else None

    def manifest(self) -> dict[str, Any]:
        return {"enabled": False, "reason": "rescore: simulated-user conversations are not replayed (infra_error); "
                                            "the simulator was not called"}

    def next_turn(self, scenario: Any, transcript: Any, ref: Any = None, through: Any = None) -> Any:
        from ..replay.miss import ReplayMiss
        raise ReplayMiss(self.reason,
                         not_scored="rescore: a simulated-user conversation is not replayed: not scored")


def _reuse_map(run_dir: Path, verdicts: dict[str, dict]) -> dict[tuple, dict]:
    reuse: dict[tuple, dict] = {}
    for cid, v in verdicts.items():
        if not v.get("judged"):
            continue
        doc = parse_json(casestore.open_store(run_dir).read(cid, "judge.json"))
        if not isinstance(doc, dict):
            continue
        pv = doc.get("prompt_version")
        reps = doc.get("repeats")   # a list of judged repeats when k > 1; else the judge's asks (a number)
        for block in [doc] + ([r for r in reps if isinstance(r, dict)] if isinstance(reps, list) else []):
            sha = block.get("answer_sha256")
            for res in block.get("rubrics") or []:
                if isinstance(res, dict) and sha and res.get("nodes"):
                    reuse[(cid, sha, res.get("pin"), pv)] = res
    return reuse


def source_judged(manifest: Mapping[str, Any]) -> bool:
    """The source run ran the judge: its rescore judges too, whatever the mode table says (a rescore
    without it would read a calibrated rubric's fail as a pass)."""
    block = manifest.get("judge")
    return isinstance(block, Mapping) and block.get("enabled") is True


def build_rescore_plan(source: Path, out: Path, state: Path, manifest: dict, *, judge: bool,
                       allow_invalid: bool = False) -> dict[str, Any]:
    from ..plan.build import PlanOptions, id_pattern_of, judge_block_of, oos_route_of
    from ..plan.lint_gate import lint_converted
    from ..plan.modes import JUDGE_CALIBRATION, HOLDOUT_LEDGER, resolve_mode
    from ..plan.select import case_splits
    from ..suite.convert import convert_state_dir

    run_id = out.name
    parsed = parse_run_id(run_id)
    if parsed is None or parsed[0] != manifest.get("mode"):
        raise AssayError(f"--out {out}: its last path component is the new run id and must look like "
                         f"{manifest.get('mode')}-YYYYMMDDTHHMMSSZ (pattern {RUN_ID_RE.pattern})", 2, key="--out")
    converted = convert_state_dir(state)
    # the current suite is linted as make_plan.py lints it: a hollow case (no_graded_layer) or any other
    # linter ERROR is refused (exit 2), or with --allow-invalid recorded, and the gate closes on it
    validation = lint_converted(converted, state, allow_invalid=allow_invalid)
    by_id = {c.get("id"): c for c in converted["cases"]}
    ids = [c.get("id") for c in manifest["cases"] if isinstance(c, dict)]
    gone = [cid for cid in ids if cid not in by_id]
    if gone:
        held = set(ids)
        split = manifest.get("selecting_split")
        # the ones a run of the same split would select (a holdout case's id is never said here: sealed)
        new = [str(c.get("id")) for c in converted["cases"] if c.get("id") not in held
               and split in case_splits(c) and "holdout" not in case_splits(c)]
        renamed = (f"; the suite has case(s) the source run does not ({', '.join(new[:5])}): a renamed case has "
                   "no stored answer under its new id" if new else "")
        raise AssayError(f"rescore: {len(gone)} case(s) of the source run {manifest.get('run_id')} are no longer "
                         f"in the suite ({', '.join(map(str, gone[:5]))}){renamed}; rescore needs every case it "
                         "re-scores: restore them under <state>/datasets/ (their ids as the source run ran them), "
                         "or measure the current suite live (make_plan.py, then run_cases.py)", 2,
                         missing_cases=gone)
    split = manifest.get("selecting_split")
    left = [cid for cid in ids if split not in case_splits(by_id[cid])]
    if left:
        sources = converted.get("sources") if isinstance(converted.get("sources"), dict) else {}
        named = ", ".join(f"{cid} ({sources.get(cid, 'datasets/')}: split {case_splits(by_id[cid])})"
                          for cid in left[:5])
        raise AssayError(f"rescore: {len(left)} case(s) of the source run {manifest.get('run_id')} left its "
                         f"{split!r} split since: {named}; a rescore re-scores the cases the source run ran: put "
                         f"{split!r} back in their split, or measure the current suite live (make_plan.py, then "
                         "run_cases.py)", 2, key="split", cases=left)
    cases = [by_id[cid] for cid in ids]
    mode = resolve_mode(manifest["mode"])
    added = added_cases(converted["cases"], manifest, set(ids))
    cases += added
    opts = PlanOptions(state_dir=state, mode=mode.name, judge=judge or source_judged(manifest))
    notes: list[str] = []
    extra = dict(manifest.get("manifest_extra") or {}, validation=validation)
    extra["rescored_from"] = {"run_id": manifest.get("run_id"), "run_dir": os.path.relpath(source, state),
                              "plan_sha256": manifest.get("plan_sha256")}
    plan: dict[str, Any] = {
        "plan_version": 1, "run_id": run_id, "mode": mode.name, "k": manifest["k"], "gate": manifest["gate"],
        "selecting_split": manifest["selecting_split"],
        "paths": {"scripts_dir": None, "state_dir": str(state),
                  "holdout_ledger": HOLDOUT_LEDGER if manifest["selecting_split"] == "holdout" else None,
                  "judge_calibration": JUDGE_CALIBRATION if (state / JUDGE_CALIBRATION).is_file() else None},
        "adapter": converted["adapter"], "capability_matrix": converted["capability_matrix"], "cases": cases,
        "scoring": {"oos_route": oos_route_of(opts, converted), "id_pattern": id_pattern_of(converted)},
        # the stored response is the final attempt: replaying it never waits or retries
        "execution": {"max_attempts": 1, "backoff_s": []},
        "manifest_extra": extra,
        "judge": judge_block_of(converted, cases, mode, opts, notes),
    }
    validate_plan(plan, source="the rescore plan")
    return plan


def added_cases(suite: list[dict[str, Any]], manifest: Mapping[str, Any], held: set) -> list[dict[str, Any]]:
    """The cases of the source run's selecting split that the suite gained since (a smoke, regression
    or holdout run selects its whole split, so they belong to its rescore: each a replay miss, never
    left out of a gate that says it covered the split). A targeted run or one shard selected fewer."""
    from ..plan.select import case_splits
    split = manifest.get("selecting_split")
    if manifest.get("mode") not in ("smoke", "regression", "holdout") or manifest.get("shard"):
        return []
    return [c for c in suite if split in case_splits(c) and c.get("id") not in held]


def _added_ids(plan: Any, manifest: Mapping[str, Any]) -> dict[str, str]:
    held = {c.get("id") for c in manifest["cases"] if isinstance(c, dict)}
    return {c["id"]: manifest["selecting_split"] for c in plan["cases"] if c["id"] not in held}


def _render(plan: Any, env: Mapping[str, str], state: Path, environ: Mapping[str, str]) -> tuple[Any, Any]:
    """((case, uuid, extra_headers) -> the request a run of this plan would record now (its invoker's own
    `prepare`, nothing sent): http and function as the wire's record, cli and agent their argv, stdin
    mode, cwd and the child's variable names, as the runner writes them to request.json; an agent's
    fixture digests (None for another mode), which the rescore's case hashes share)."""
    from ..core import secrets
    from ..invoke.preflight import build_invoker
    # no app is called: an app variable unset here only shapes the wire, never the recorded request
    filled = dict(env)
    for name in secrets.env_refs(plan.invocation) | secrets.auth_env_names(plan.adapter) | plan.cases.env_names:
        filled.setdefault(name, "http://rescore.invalid")
    inner = build_invoker(plan, filled, state, environ=environ, replaying=True, render_only=True)
    def render(case: Any, uuid: str, headers: Any) -> Any:
        return inner.prepare(case, uuid, headers)[1]
    return render, getattr(inner, "fixture_digests", None)


def _pairwise_baseline(spec: str | None, plan: Mapping[str, Any], source: Path, out: Path) -> Any:
    """--baseline RUN_DIR|auto -> the baseline's answers for pairwise rubrics, as run_cases.py's (None
    without it). `auto` is chosen as for a run of this plan made when the source run was (before it,
    never the source: its answers are the ones rescored)."""
    if not spec:
        return None
    from .command import pairwise_baseline
    if spec == "auto":
        from ..compare.baseline import baseline_for_plan
        from ..verdict import gate_open
        parsed = parse_run_id(source.name)
        spec = str(baseline_for_plan(plan, exclude=source.name, before=parsed[1] if parsed else None,
                                     is_open=gate_open))
    if Path(spec).resolve() == source:
        raise AssayError(f"--baseline {spec}: that is the source run; its answers are the ones rescored (a "
                         "pairwise rubric would compare them with themselves): pass an earlier run", 2,
                         key="--baseline")
    return pairwise_baseline(spec, out)


def rescore(source: Path, out_arg: str, *, state_dir: str | None, judge: bool, environ: Mapping[str, str],
            progress: str = "never", judge_cache: bool = False, baseline: str | None = None,
            allow_invalid: bool = False) -> tuple[int, dict]:
    from .engine import Run
    from .lock import RunLock
    from ..core.ids import utc_now_iso

    source = Path(source).resolve()
    manifest, verdicts, stored = load_source(source)
    state = Path(state_dir).resolve() if state_dir else source.parent.parent
    if not (state / "adapter.yaml").is_file():
        raise AssayError(f"rescore: {state} is not the state dir (no adapter.yaml); pass --state-dir <app>/.assay",
                         2, key="--state-dir")
    plan = run_plan(build_rescore_plan(source, Path(os.path.abspath(out_arg)), state, manifest, judge=judge,
                                       allow_invalid=allow_invalid))
    wanted = Path(os.path.abspath(out_arg))
    if wanted.resolve() == source:
        raise AssayError(f"rescore: --out {out_arg} is the source run; rescore writes a new run directory: "
                         f"--out <state>/reports/{manifest.get('mode')}-YYYYMMDDTHHMMSSZ", 2, key="--out")
    if wanted.is_dir() and any(wanted.iterdir()):
        raise AssayError(f"rescore: --out {out_arg} already exists and is not empty; rescore writes a new run "
                         f"directory: use a new run id ({manifest.get('mode')}-YYYYMMDDTHHMMSSZ)", 2, key="--out")
    out = run_paths.check_out(plan, out_arg, resume=False)
    answers = _pairwise_baseline(baseline, plan, source, out)
    from ..judge.runtime import build_runtime
    # The same secrets a run of this plan registers (the app's too: a judge may echo what the app
    # put in its answer or tool results); an app variable missing here is no error (no app call).
    env = preflight_env.resolve_env(plan, environ, app_required=False)
    preflight_env.register_run_secrets(plan, env)
    execution = dict(plan.execution)
    src_traces = manifest.get("traces") if isinstance(manifest.get("traces"), dict) else {}
    trace_source = ReplayTraceSource(stored)
    if src_traces.get("collected"):
        trace = TraceConfig(True, None, source=src_traces.get("source"), convention=src_traces.get("convention"),
                            correlation=src_traces.get("correlation"), source_obj=trace_source)
        field = (src_traces.get("correlation") or "")
        if field.startswith("response-field:"):
            trace.response_field = field.split(":", 1)[1]
    else:
        trace = TraceConfig(False, src_traces.get("reason") or "the source run collected no traces",
                            source=src_traces.get("source"), correlation=src_traces.get("correlation"))
    mode = ((manifest.get("invocation") or {}).get("mode")) or "http"
    from ..invoke.conversation import ConversationConfig, is_conversation
    render, digests = _render(plan, env, state, environ)
    invoker = ReplayInvoker(mode, stored, trace_source,
                            frozenset(str(c.get("id")) for c in plan["cases"] if is_conversation(c)),
                            invocation=manifest.get("invocation") if isinstance(manifest.get("invocation"), dict) else None,
                            render=render, source_run=manifest.get("run_id"),
                            added=_added_ids(plan, manifest), binding=Binding.of(plan.invocation, env),
                            fixture_digests=digests)
    # A conversation is sent (its first turn is refused by the replay: infra_error, NOT_REPLAYED), not
    # skipped as if the adapter declared no conversation: a rescore that left it out must not read green.
    block = plan.invocation.get("conversation")
    conversation = (ConversationConfig(style=block["style"], session_from=block.get("session_from"), turn_delay_s=0.0,
                                       memory=block.get("memory"))
                    if isinstance(block, Mapping) and isinstance(block.get("style"), str) else None)
    judge_rt = build_runtime(plan, env, state, execution, environ)
    if judge_rt is not None:
        # the source run's verdicts are reused only under the same judge identity: its suite part, and the
        # judge as the calibration binding reads it (base_url, served_model, a command's scripts by content,
        # the values of ${VAR}s): another judge's verdicts must not be re-read as the calibrated judge's
        from ..judge.binding import identity_sha256
        from ..suite.version import suite_version
        measured = (manifest.get("judge") or {}).get("identity") if isinstance(manifest.get("judge"), Mapping) else None
        same_judge = ((manifest.get("suite_parts_sha256") or {}).get("judge")
                      == suite_version(plan, digests=digests)["suite_parts_sha256"]["judge"]
                      and isinstance(measured, Mapping) and identity_sha256(measured) == identity_sha256(judge_rt.identity))
        judge_rt.reuse = _reuse_map(source, verdicts) if same_judge else {}
        judge_rt.reused_from = manifest.get("run_id")
        judge_rt.baseline = answers
        if judge_cache:   # --judge-cache: the verdict cache of record/replay (assay.replay)
            from ..replay.session import ReplaySession
            from ..replay.store import Cache, cache_dir
            judge_rt.cache = ReplaySession(Cache(cache_dir(state)), calls="cache")
    setup = preflight.RunSetup(
        plan=plan, plan_sha256=plan.sha256, out=out, state=state, execution=execution,
        scoring=dict(plan.scoring), env=env, invoker=invoker, trace=trace,
        safety=preflight.safety_gates(plan.adapter), baseline=None, ledger=holdout_ledger.ledger_path(plan),
        max_concurrency=max(1, min(8, int(manifest.get("max_concurrency") or 1))),
        health={"checked": False, "reason": f"rescore of {manifest.get('run_id')}: the app is not called"},
        judge=judge_rt, conversation=conversation, simulator=NotReplayedSimulator(
            manifest.get("run_id"), plan["manifest_extra"]["rescored_from"]["run_dir"], manifest.get("simulator")),
        # no app is called: a case with nothing to replay (or no stored trace) is counted and gated,
        # never a reason to abort as if the app were unhealthy
        calls_app=False)
    lock = RunLock(out, {"pid": os.getpid(), "run_id": plan.run_id, "out": str(out), "plan": "rescore",
                         "started_at": utc_now_iso()})
    lock.acquire()
    try:
        code, result = Run(setup, resume=False, progress=progress).execute()
    finally:
        lock.release()
    return code, dict(result, rescored_from=manifest.get("run_id"))
