"""run_cases.py's library side: argv namespace in, (exit code, JSON) out.

`run(args)` dispatches --verify, --dry-run and a real (or resumed) run. Every refusal
is an AssayError carrying its exit code; the script itself stays thin.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.jsonio import read_json
from ..core.vocab import is_holdout

# Runs after make_plan.py's own --help example (with HELPDESK_BASE_URL / HELPDESK_OTLP_FILE
# exported; without them it is the honest exit 3 naming them). A real run adds
# --out examples/helpdesk/.assay/reports/<the run_id make_plan.py printed>.
EXAMPLE = "python3 scripts/run_cases.py --plan examples/helpdesk/.assay/work/plan.json --dry-run"


def add_arguments(parser) -> None:
    parser.add_argument("--plan", help="plan.json from make_plan.py ('-' reads stdin)")
    parser.add_argument("--out", help="the run directory: <state>/reports/<run_id>")
    parser.add_argument("--resume", action="store_true", help="finish an interrupted run under the same run id")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate the plan and pre-flight (no health check); print the case list; write nothing")
    parser.add_argument("--baseline-verdicts", metavar="FILE",
                        help="<baseline-run>/verdicts_for_stats.jsonl, or `auto` (reports/baseline.json's pin, else "
                             "the newest complete run of this plan's series whose gate was open): write comparison.json")
    parser.add_argument("--baseline", metavar="RUN_DIR|auto",
                        help="the run whose answers pairwise rubrics (kind: pairwise) compare this run's with, case by "
                             "case, in both orders; `auto` as --baseline-verdicts auto. Without it a pairwise pin is "
                             "unscored (never pass)")
    parser.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                        help="progress on stderr (default auto: live line on a TTY, a line every ~10 s otherwise)")
    parser.add_argument("--verify", metavar="RUN_DIR", help="re-check a run directory: no app calls, no writes")
    parser.add_argument("--order", choices=("history", "plan"), default=None,
                        help="the order cases are sent in: history (recent failures and flips first; the default when "
                             "reports/ holds an earlier run) or plan; reports stay in plan order either way")
    parser.add_argument("--fail-fast", type=int, metavar="N", default=None,
                        help="smoke or targeted runs: stop after N confirmed gating failures; the cases not started "
                             "are not run (never passed) and the gate says the run stopped early")
    parser.add_argument("--shard", metavar="I|auto",
                        help="run only shard I (1-based) of a plan built with make_plan.py --shards N; `auto`: I from "
                             "JOB_COMPLETION_INDEX (0-based, a Kubernetes Indexed Job's) else ASSAY_SHARD_INDEX "
                             "(1-based); --out <state>/reports/<run_id>.shard-<I> (the default with --shard); merge "
                             "the shards with merge_runs.py")
    parser.add_argument("--publish", metavar="s3://BUCKET/PREFIX",
                        help="after the run finished and passed its completeness check, upload the run dir to "
                             "<prefix>/<run_id>/ (a shard: <prefix>/<run_id>/shard-<I>-of-<N>/), manifest.yaml last; "
                             "needs pip install 'assay[s3]'; credentials and endpoint from the AWS variables")
    parser.add_argument("--record", action="store_true",
                        help="keep every exchange with the app (and its trace) and every judge call in <state>/cache/")
    parser.add_argument("--replay", nargs="?", const="cache", metavar="SOURCE",
                        help="answer every request from a recorded cache (default <state>/cache) or a recorded run "
                             "dir, never calling the app; a request it cannot answer is infra_error `replay miss`")
    parser.add_argument("--stale-plan", action="store_true",
                        help="run a plan although its state dir's suite changed since make_plan.py wrote it (a case "
                             "edited, added or removed; by default exit 2 naming what changed)")
    parser.add_argument("--judge-cache", action="store_true",
                        help="reuse a cached judge verdict for the same judge, prompt version, rubric and material "
                             "(a miss is judged and cached)")


def run(args, environ=None) -> tuple[int, Any]:
    environ = os.environ if environ is None else environ
    shard_index = _shard_arg(getattr(args, "shard", None))
    if args.verify:
        if args.plan or args.out or args.resume or args.dry_run or shard_index is not None:
            raise AssayError("--verify takes only a run directory (no --plan/--out/--resume/--dry-run/--shard)", 2)
        return verify(Path(args.verify))
    from ..plan.shards import SHARD_ENV, SHARD_ENV_K8S
    in_a_slot = any((environ.get(name) or "").strip() for name in (SHARD_ENV_K8S, SHARD_ENV))
    if not args.plan or (not args.out and not args.dry_run and shard_index is None and not in_a_slot):
        raise AssayError("run_cases.py needs --plan and --out (or --verify RUN_DIR); see --help", 2)
    from . import holdout_ledger, preflight, run_paths
    from ..invoke.preflight import health_check
    from .order import check_fail_fast
    publish = getattr(args, "publish", None)
    if publish:   # a bad URL or a missing extra is said before the first case, not after the last
        from ..store.client import Store
        from ..store.url import parse
        Store(parse(publish, "--publish"))
    plan = preflight.load_plan(args.plan)
    whole = plan
    if shard_index is None:   # a pod without --shard auto runs the whole plan: said before anything runs
        from ..plan.shards import whole_plan_in_a_shard_slot
        try:
            whole_plan_in_a_shard_slot(plan, environ)
        except AssayError:
            if publish and not args.dry_run:   # the slot's shard is not this Job's either: never an earlier Job's
                _claim_slot(publish, plan, environ)
            raise
        if not args.out and not args.dry_run:
            raise AssayError("run_cases.py needs --plan and --out (or --verify RUN_DIR); see --help", 2)
    from_job = shard_index == "auto" and bool((environ.get("JOB_COMPLETION_INDEX") or "").strip())
    if shard_index == "auto":
        from ..plan.shards import shard_from_env
        shard_index = shard_from_env(plan, environ)
    plan_sha256 = plan.sha256
    shard = None
    from ..plan.shards import shard_dir_name
    if shard_index is not None:
        from ..plan.shards import slice_plan
        from ..plan.validate import run_plan
        plan = run_plan(slice_plan(plan, shard_index))
        shard = {"index": shard_index, "count": plan["shards"]["count"]}
    name = shard_dir_name(plan["run_id"], shard_index) if shard else None
    out = None
    if not args.dry_run:
        if publish:
            # This attempt's prefix made unfinished before anything else can refuse the run (store.publish.claim):
            # a re-applied Job whose every pod stops below (a stale plan, an --out that is not the shard's run
            # dir, an argument a shard refuses) left the earlier Job's shards finished, and the merge took them
            # as this Job's (exit 0, the gate open).
            from ..store.publish import claim
            claim(publish, plan["run_id"], shard)
        out_arg = args.out or str(Path(plan["paths"]["state_dir"]) / "reports" / str(name))   # --shard's default
        out = run_paths.check_out(plan, out_arg, resume=args.resume, name=name)
    from ..suite.freshness import check_plan_fresh
    stale = check_plan_fresh(whole, args.plan, allow=getattr(args, "stale_plan", False),   # an edited case
                             resume=bool(args.resume))
    if stale:
        print(f"run_cases: {stale}", file=sys.stderr)
    fail_fast = getattr(args, "fail_fast", None)
    check_fail_fast(fail_fast, whole, shard_index)
    if shard is not None:
        attempt = _shard_attempt(environ, from_job)
        if attempt is not None:   # which attempt (Job) wrote the shard: the merge refuses two attempts' shards
            shard["attempt"] = attempt
        if args.baseline_verdicts:
            raise AssayError("--baseline-verdicts does not apply to one shard: pass it to merge_runs.py, which "
                             "writes comparison.json for the whole run", 2, key="--baseline-verdicts")
    if args.dry_run:
        return 0, dry_run(plan, environ)
    holdout_ledger.ledger_path(plan)
    baseline = preflight.check_baseline(args.baseline_verdicts, plan)
    answers = pairwise_baseline(getattr(args, "baseline", None), out)
    # A run killed before its manifest.yaml existed has nothing to resume: it starts over (below,
    # under the lock) instead of wedging its run id.
    # So does one killed before its run dir existed: --resume on no run dir is a fresh start.
    never_made = bool(args.resume) and not out.exists() and not out.is_symlink()
    start_over = bool(args.resume) and (never_made or run_paths.unstarted_debris(out) is not None)
    if args.resume and not start_over:
        try:
            manifest = read_json(out / "manifest.yaml")
        except (OSError, ValueError) as exc:
            raise AssayError(f"--resume: {out}/manifest.yaml is unreadable ({exc}); start a new run id", 2)
        if manifest.get("plan_sha256") != plan_sha256:
            raise AssayError(f"--resume: the plan differs from the one {out.name} was started with "
                             "(plan_sha256 mismatch); resume with the same plan.json, or run this plan under a new "
                             f"run id (make_plan.py plans one by default), or move {out} aside first (it holds "
                             "the other plan's results)", 2, key="--plan")
        _check_resumed_shard(out, manifest.get("shard"), shard)
    from ..replay.flags import from_args, resume_mismatch
    replay = from_args(plan, run_paths.state_dir_of(plan), record=bool(getattr(args, "record", False)),
                       replay=getattr(args, "replay", None), judge_cache=bool(getattr(args, "judge_cache", False)))
    if args.resume and not start_over:
        why = resume_mismatch(manifest.get("replay"), replay)
        if why:
            raise AssayError(f"--resume: {out.name} {why}", 2, key="--replay" if "--replay" in why else "--record")
    from .engine import Run
    from .lock import RunLock
    from ..core.ids import utc_now_iso
    from ..rundir import not_started
    lock = RunLock(out, {"pid": os.getpid(), "run_id": plan["run_id"], "out": str(out),
                         "plan": str(args.plan), "started_at": utc_now_iso()})
    from ..core.resources import is_runner_resource, resource_error
    try:
        lock.acquire()
    except OSError as exc:
        if is_runner_resource(exc):
            raise resource_error(exc, code=3, what="run_cases.py") from None
        raise
    setup = None
    restore_signals = None
    resume = bool(args.resume)
    try:
        try:   # pre-flight: a full disk or no descriptor left here is exit 3, before any case is sent
            if start_over and (never_made or run_paths.clear_unstarted(out)):
                resume = False
            if publish:   # the prefix was claimed above, before any refusal
                ledger = holdout_ledger.ledger_path(plan)
                if ledger is not None:   # the look in the store before any case: a pod's ledger is thrown away
                    from ..store.url import parse
                    holdout_ledger.fold_store_looks(ledger, plan, parse(publish, "--publish"), record=True)
            setup = preflight.prepare(plan, out, environ=environ, baseline=baseline, replay=replay)
            setup.stale_plan = stale   # recorded in the manifest: the gate says it, not only this stderr
            if setup.ledger is not None and not publish and holdout_ledger.in_ci(environ):
                setup.ledger_note = holdout_ledger.unpublished_note(setup.ledger, setup.state, plan["run_id"])
            if setup.judge is not None:
                setup.judge.baseline = answers
            if shard is not None:
                # A shard run names the whole plan's hash (the merge checks it). Its holdout results
                # are readable in its own run dir, merged or not: it appends the plan's one ledger line
                # (the run id the merge writes; never a second, whichever shard comes first).
                setup.plan_sha256, setup.shard = plan_sha256, shard
            if setup.invoker.mode in ("cli", "agent"):
                from ..invoke.cli import stop_on_signals
                restore_signals = stop_on_signals(setup.invoker)
            if replay is not None and not replay.calls_app:   # the app is never called, not even once
                setup.health = {"skipped": True, "reason": "replay: answered from the cache, the app is not called"}
            else:
                setup.health = health_check(setup.invoker, setup.plan.invocation,
                                            resume=resume)
        except OSError as exc:
            if is_runner_resource(exc):
                raise resource_error(exc, code=3, what="run_cases.py") from None
            raise
        except AssayError as err:   # the run never started: gate.py --latest must not gate an older one
            if shard is None:
                not_started.mark(out, run_id=plan["run_id"], mode=plan["mode"], exit_code=err.code,
                                 error=err.message, at=utc_now_iso())
            raise
        except KeyboardInterrupt:   # Ctrl-C in pre-flight (a slow health check): it never started either
            if shard is None:
                not_started.mark(out, run_id=plan["run_id"], mode=plan["mode"], exit_code=130,
                                 error="interrupted (SIGINT) in pre-flight, before any case was sent",
                                 at=utc_now_iso())
            raise
        not_started.clear(out)
        # from here a full disk or no descriptor left stops the run: exit 5 (core.cli), --resume finishes it
        execute = Run(setup, resume=resume, progress=args.progress, order=getattr(args, "order", None),
                      fail_fast=fail_fast).execute
        return published(execute, publish, out) if publish else execute()
    finally:
        if restore_signals is not None:
            restore_signals()
        if setup is not None:
            setup.invoker.close()
            setup.trace.close()
        lock.release()


def published(execute, target: str, out: Path) -> tuple[int, Any]:
    """Run, then --publish a run that finished (exit 0, 4, 5, 7: the merge names an abort; an
    incomplete run, exit 6, stays local). The result (or the error) says where it went."""
    from ..store.publish import FINISHED_CODES, publish_run
    try:
        code, result = execute()
    except AssayError as err:
        if err.code in FINISHED_CODES:
            err.fields["published"] = publish_run(out, target)["published"]
        raise
    result["published"] = publish_run(out, target)["published"]
    return code, result


def _claim_slot(publish: str, plan, environ) -> None:
    """A sharded plan's pod that refuses to run (no --shard in a shard's slot): the slot's shard prefix
    made unfinished all the same, so the merge names it instead of taking an earlier Job's shard there.
    A slot that is no shard of the plan has nothing to claim (its own refusal says so)."""
    from ..plan.shards import shard_from_env
    from ..store.publish import claim
    try:
        index = shard_from_env(plan, environ)
    except AssayError:
        return
    claim(publish, plan["run_id"], {"index": index, "count": plan["shards"]["count"]})


def _shard_attempt(environ, from_job: bool) -> str | None:
    from ..plan.shards import ATTEMPT_ENV, shard_attempt
    attempt = shard_attempt(environ)
    if attempt is None and from_job:
        # Every Job's shards would record the same "none": a Job re-applied with the same plan could not be
        # told from the earlier one, and a merge took the earlier Job's shard as this one's (the gate open).
        raise AssayError(f"{ATTEMPT_ENV} is not set (or empty) in this pod of an Indexed Job (JOB_COMPLETION_INDEX "
                         "is set): its shard would record no attempt, and the merge could not tell it from a shard "
                         "an earlier Job of the same plan published; set it in the Job's container env from the "
                         "Job's controller uid (valueFrom.fieldRef metadata.labels"
                         "['batch.kubernetes.io/controller-uid'], Kubernetes 1.27 or later; "
                         "skills/run/references/kubernetes.md)", 2, key=ATTEMPT_ENV, variable=ATTEMPT_ENV)
    return attempt


def _check_resumed_shard(out: Path, started: Any, shard: dict | None) -> None:
    """--resume: the same shard of the plan, and by the same attempt (ASSAY_SHARD_ATTEMPT): another
    attempt's resume would publish the earlier attempt's cases as its own."""
    def where(block: Any) -> Any:
        return {k: block.get(k) for k in ("index", "count")} if isinstance(block, dict) else block
    if where(started) != where(shard):
        raise AssayError(f"--resume: {out.name} was started as shard {where(started)} and this is "
                         f"shard {where(shard)}; resume it with the same --shard", 2, key="--shard")
    before = started.get("attempt") if isinstance(started, dict) else None
    now = shard.get("attempt") if isinstance(shard, dict) else None
    if before != now:
        from ..plan.shards import ATTEMPT_ENV
        raise AssayError(f"--resume: {out.name} was started by attempt {before or '(none recorded)'} and this is "
                         f"attempt {now or '(none: ' + ATTEMPT_ENV + ' unset)'} ({ATTEMPT_ENV}); its cases would be "
                         f"merged as this attempt's: resume with the same {ATTEMPT_ENV}, or move {out.name} aside "
                         "and run the shard afresh", 2, key=ATTEMPT_ENV)


def _shard_arg(value: Any) -> int | str | None:
    """--shard I (an integer) or `auto` (resolved once the plan is read)."""
    if value is None or value == "auto" or isinstance(value, int):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    raise AssayError(f"--shard {value}: give the shard's number I (1-based) or auto", 2, key="--shard")


def pairwise_baseline(spec: str | None, out: Path) -> Any:
    """--baseline RUN_DIR|auto -> the baseline's answers for pairwise rubrics (None without the flag)."""
    if not spec:
        return None
    from ..judge.pairwise import BaselineAnswers
    run_dir = Path(spec)   # `auto` is resolved by run_cases.py (assay.compare.baseline) before this
    if not (run_dir / "results.json").is_file():
        raise AssayError(f"--baseline {spec}: {run_dir} is not a finished run directory (no results.json); pass "
                         "<state>/reports/<run-id> or auto", 2, key="--baseline")
    if run_dir.resolve() == Path(out).resolve():
        raise AssayError(f"--baseline {spec}: that is this run's own directory; pass an earlier run", 2,
                         key="--baseline")
    return BaselineAnswers(run_dir)


def dry_run(plan: dict, environ) -> dict:
    from . import preflight
    from .case_skip import skip_reason
    out = Path(plan["paths"]["state_dir"]) / "reports" / plan["run_id"]
    setup = preflight.prepare(plan, out, environ=environ, baseline=None)
    setup.trace.close()  # a dry run sends nothing: no listener stays open
    from ..core.casekind import DEFAULT_MAX_TURNS, app_calls, is_conversation, is_simulated
    ex = setup.execution
    listed, holdout_n, sendable, calls, conversations = [], 0, 0, 0, 0
    for case in plan["cases"]:
        # the run's own simulator: without it every simulated user would read "no simulator configured"
        reason = skip_reason(case, plan["adapter"], setup.safety, setup.invoker.mode, conv=setup.conversation,
                             max_turns=int(ex.get("max_turns") or DEFAULT_MAX_TURNS), matrix=plan["capability_matrix"],
                             simulator=setup.simulator)
        # a conversation calls the app once per turn (at most: the stop rule may end it sooner)
        multi = is_conversation(case) or is_simulated(case)
        turns = app_calls(case) if multi and not reason else None
        sendable += 0 if reason else 1
        calls += 0 if reason else (turns or 1)
        conversations += 1 if turns else 0
        if is_holdout(case):
            holdout_n += 1
            continue
        row = {"id": case["id"], "set": preflight.case_set(case), "skip_reason": reason}
        if multi:
            row["app_calls"] = turns or 0
        listed.append(row)
    return {"dry_run": True, "run_id": plan["run_id"], "mode": plan["mode"], "k": plan["k"],
            "cases": listed, "holdout_cases": holdout_n,
            "cost_inputs": {"cases": len(plan["cases"]), "sendable_cases": sendable, "k": plan["k"],
                            "conversations": conversations,
                            "calls": calls * plan["k"], "max_calls": calls * plan["k"] * ex["max_attempts"],
                            "timeout_s": ex["timeout_s"], "max_concurrency": setup.max_concurrency},
            "traces": setup.trace.manifest(), "invocation_mode": setup.invoker.mode}


def verify(run_dir: Path) -> tuple[int, dict]:
    from ..core import casestore
    from ..rundir.completeness import RunDirError, check_run_dir
    status = None
    try:   # its top-level keys only (the case rows of a big one walked, not held), read before the
        # check so that the two never hold their memory at once
        from ..rundir.streamed import CasesFile
        status = ((CasesFile(run_dir / "results.json", None).head.get("summary")) or {}).get("status")
    except (OSError, ValueError, AttributeError, AssayError):  # a link there is a named problem already
        pass
    try:
        problems, records, manifest = check_run_dir(run_dir)
    except RunDirError as exc:
        raise AssayError(f"--verify: {exc}", 2)
    result = {"run_dir": str(run_dir), "run_id": manifest.get("run_id"), "status": status,
              "cases_finished": len(records), "missing_artifacts": problems, "complete": not problems,
              "files": casestore.CaseStore(run_dir).file_count()}   # the files listed: no journal index
    if problems:
        raise AssayError(f"--verify: {len(problems)} artifact problem(s) in {run_dir.resolve().name or run_dir}: "
                         + "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""), 6, **result)
    return 0, result
