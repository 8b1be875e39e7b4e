#!/usr/bin/env python3
"""make_plan.py: build plan.json (the runner's whole input) from converted.json (contracts §8).

It only selects and assembles: the mode decides the split, k and gate; flags narrow the
selection or fill `execution`; `${VAR}` stays unresolved; nothing is run. With -o it
prints a summary holding the exact runner command; without, the plan goes to stdout.
"""

import sys

from assay.core.cli import make_parser, run_command

EXAMPLE = ("python3 scripts/make_plan.py examples/helpdesk/.assay/work/converted.json --mode smoke "
           "--state-dir examples/helpdesk/.assay -o examples/helpdesk/.assay/work/plan.json")


def build_parser():
    p = make_parser("make_plan.py", "build plan.json (the runner's whole input) from converted.json (contracts §8).",
                    EXAMPLE)
    p.add_argument("converted", help="converted.json from convert_suite.py")
    p.add_argument("--mode", default="regression",
                   help="smoke | regression (default) | targeted | holdout  (full is refused: run regression, then holdout)")
    p.add_argument("--state-dir", required=True, help="the app's state dir (reports/ and the ledger live under it)")
    p.add_argument("-o", "--output", help="write the plan here and print a summary (default: plan on stdout)")
    p.add_argument("--run-id", help="default <mode>-<UTC YYYYMMDDTHHMMSSZ>")
    p.add_argument("--k", type=int, help="repeats per case (refused under smoke)")
    p.add_argument("--tag", help="targeted: keep cases whose unit or expect.route is this")
    p.add_argument("--case", action="append", metavar="ID",
                   help="targeted: keep exactly this case id (repeatable; with or without --tag)")
    p.add_argument("--split", help="targeted: full (default) or smoke")
    p.add_argument("--failing-in", help="targeted: keep only tagged cases that failed in this comparable run dir")
    p.add_argument("--layer", help="score only this layer (matrix key, or answer/rules/judged); the rest read unscorable")
    p.add_argument("--oos-route", help="route label of out-of-scope input ('' for none); default from profile oos_handling")
    p.add_argument("--timeout-s", type=float, help="seconds per attempt (overrides adapter invocation.timeout_s)")
    p.add_argument("--max-attempts", type=int, help="attempts per repeat (runner default 3)")
    p.add_argument("--backoff-s", help="waits between attempts, comma-separated, exactly max_attempts-1 (default 1,4)")
    p.add_argument("--insecure-tls", action="store_true", help="accept a self-signed local dev host")
    p.add_argument("--fixed-concurrency", action="store_true",
                   help="keep exactly invocation.max_concurrency requests in flight (no adaptive limit; a 429 "
                        "retry then spends --max-attempts like any failure)")
    p.add_argument("--start-concurrency", type=int,
                   help="adaptive runs: the in-flight limit to start at (default invocation.max_concurrency)")
    p.add_argument("--rate-limit-wait-s", type=float,
                   help="adaptive runs: seconds of 429 / Retry-After waiting one request may spend before it is "
                        "infra_error (default 300)")
    p.add_argument("--max-turns", type=int, help="cap on conversation turns (default 12; only with input.turns cases)")
    p.add_argument("--arm", metavar="NAME",
                   help="agent apps: plan the run under this arm of the adapter's `arms:` (recorded in the manifest; "
                        "compare_runs.py between two arms' runs reads as lift)")
    p.add_argument("--manifest-extra", help="JSON object merged into manifest_extra (models, prompt hashes, ...)")
    p.add_argument("--allow-invalid", action="store_true",
                   help="plan a suite with linter ERRORs anyway (refused by default; recorded in manifest_extra.validation)")
    p.add_argument("--judge", action="store_true",
                   help="run the judge (judge/judge.yaml) in smoke or targeted mode too; regression and holdout judge by default")
    p.add_argument("--shards", type=int, metavar="N",
                   help="split the plan into N shards for N machines (run_cases.py --shard I, then merge_runs.py)")
    p.add_argument("--durations", metavar="RUN_DIR",
                   help="with --shards: pack shards by this previous run's per-case latency (default round-robin)")
    p.add_argument("--changed-since", metavar="RUN_DIR",
                   help="a run recorded with run_cases.py --record: only the cases whose case_sha256 changed since "
                        "(or that are new) go to the app; run the plan with run_cases.py --replay, which answers "
                        "the rest from that run's recording")
    return p


def run(args):
    from assay.core.errors import AssayError
    from assay.plan.modes import resolve_mode

    mode = resolve_mode(args.mode)  # --mode full is refused before anything is read
    try:
        return _plan(args)
    except AssayError as err:   # this run never starts: gate.py --latest must not gate an older one
        _mark_not_started(args, mode.name, err)
        raise


def _mark_not_started(args, mode: str, err) -> None:
    """Leave `<state>/reports/.<run-id>.not-started.json` for a refused plan, as the runner does at
    pre-flight (contract §10.4a): a CI script that goes on without `set -e` then gets exit 2 from
    `gate.py --latest`, never yesterday's green run gated in place of today's refused one."""
    from pathlib import Path

    from assay.core.ids import new_run_id, parse_run_id, utc_now_iso
    from assay.rundir import not_started
    reports = Path(args.state_dir) / "reports"
    parsed = parse_run_id(args.run_id)
    if not reports.is_dir() or (args.run_id is not None and (not parsed or parsed[0] != mode)):
        return   # no earlier run to mistake for this one, or no run id this run could have had
    run_id = args.run_id or new_run_id(mode)
    not_started.mark(reports / run_id, run_id=run_id, mode=mode, exit_code=err.code, error=err.message,
                     at=utc_now_iso(), by="make_plan.py", command=_plan_again(args, mode))


def _plan_again(args, mode: str) -> str:
    """The make_plan.py command that plans this again once the refusal is fixed (the gate names it):
    the user's converted suite when it is a file, else the state dir's `work/converted.json` (what
    convert_suite.py -o writes in the documented layout), and the user's -o, else `work/plan.json`."""
    from pathlib import Path

    from assay.core.commands import SCRIPTS_DIR
    state = Path(args.state_dir)
    converted = Path(args.converted) if Path(args.converted).is_file() else state / "work" / "converted.json"
    output = Path(args.output) if args.output else state / "work" / "plan.json"
    return (f'python3 "{SCRIPTS_DIR / "make_plan.py"}" "{converted}" --mode {mode} --state-dir "{state}" '
            f'-o "{output}"')


def _plan(args):
    from pathlib import Path

    from assay.core import jsonio
    from assay.core.errors import AssayError
    from assay.plan.build import (PlanOptions, build_plan, merge_command_line, parse_backoff, run_command_line,
                                  shard_command_line)
    from assay.schemas import validate
    from assay.stats.counts import cases_phrase

    if args.durations is not None and args.shards is None:
        raise AssayError("--durations only applies with --shards N (it packs the shards by recorded latency)", 2,
                         key="--durations")
    try:
        converted = jsonio.read_json(args.converted)
    except OSError as exc:
        raise AssayError(f"cannot read {args.converted}: {exc.strerror or exc}; run convert_suite.py first", 2) from None
    except (ValueError, RecursionError) as exc:
        raise AssayError(f"{args.converted} is not a converted suite ({type(exc).__name__}); re-run "
                         "convert_suite.py", 2) from None
    validate(converted, "converted", source=args.converted, what="converted suite")
    from assay.suite.freshness import check_fresh
    check_fresh(converted, args.converted, Path(args.state_dir))   # an edited case is never planned from its old copy
    extra = None
    if args.manifest_extra:
        try:
            extra = jsonio.read_json(args.manifest_extra)
        except (OSError, ValueError) as exc:
            raise AssayError(f"--manifest-extra {args.manifest_extra}: cannot read a JSON object ({exc})", 2) from None
        if not isinstance(extra, dict):
            raise AssayError(f"--manifest-extra {args.manifest_extra}: must hold a JSON object", 2)
    opts = PlanOptions(
        state_dir=Path(args.state_dir), mode=args.mode, run_id=args.run_id, k=args.k, tag=args.tag, cases=args.case,
        split=args.split, failing_in=Path(args.failing_in) if args.failing_in else None, layer=args.layer,
        oos_route=args.oos_route, timeout_s=args.timeout_s, max_attempts=args.max_attempts,
        backoff_s=parse_backoff(args.backoff_s) if args.backoff_s is not None else None,
        insecure_tls=args.insecure_tls, max_turns=args.max_turns, manifest_extra=extra,
        allow_invalid=args.allow_invalid, fixed_concurrency=args.fixed_concurrency,
        start_concurrency=args.start_concurrency, rate_limit_wait_s=args.rate_limit_wait_s,
        judge=args.judge, arm=args.arm,
    )
    result = build_plan(converted, opts)
    from assay.suite.freshness import plan_source
    source = plan_source(converted)   # run_cases.py refuses the plan once the suite changes
    if source is not None:
        result.plan["source"] = source
    for line in result.warnings:
        print(f"make_plan: {line}", file=sys.stderr)
    plan = result.plan
    if args.changed_since:
        from assay.suite.changed_since import changed_since
        plan["replay"] = changed_since(plan, Path(args.changed_since))
        print(f"make_plan: {len(plan['replay']['live'])} case(s) changed since {plan['replay']['changed_since']} "
              f"go live; {plan['replay']['replayed']} are replayed from its recording", file=sys.stderr)
    shard_rows = None
    if args.shards is not None:
        from assay.shard.assign import add_shards, shard_summary
        add_shards(plan, args.shards, Path(args.durations) if args.durations else None)
        shard_rows = shard_summary(plan)
        for row in shard_rows:
            wall = "unknown (no --durations)" if row["predicted_wall_s"] is None else f"{row['predicted_wall_s']:.1f}s"
            print(f"make_plan: shard {row['shard']}/{plan['shards']['count']}: {row['cases']} case(s) + "
                  f"{row['canaries']} canary(ies), predicted wall {wall}, CI timeout {row['timeout_minutes']} min",
                  file=sys.stderr)
    if not args.output:
        sys.stdout.write(jsonio.dumps(plan) + "\n")
        return 0, None
    out_path = Path(args.output).resolve()
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        jsonio.atomic_write_json(out_path, plan)
    except OSError as exc:
        raise AssayError(f"cannot write {out_path}: {exc.strerror or exc}", 2) from None
    out_dir = Path(plan["paths"]["state_dir"]) / "reports" / plan["run_id"]
    n_canaries = sum(1 for c in plan["cases"] if "canary" in (c.get("split") or []))
    counts = cases_phrase(len(plan["cases"]) - n_canaries, n_canaries)
    from assay.core.casekind import app_calls   # one per turn: what the run costs in app calls, at most
    calls = sum(app_calls(c) for c in plan["cases"]) * plan["k"]
    summary = {
        "plan": str(out_path), "run_id": plan["run_id"], "mode": plan["mode"],
        "selecting_split": plan["selecting_split"], "k": plan["k"], "gate": plan["gate"],
        "cases": len(plan["cases"]), "counts": counts, "app_calls": calls, "out": str(out_dir), "notes": result.notes,
        # the lines stderr carries too (each linter WARN located): a reader of the JSON alone saw only a count
        "warnings": list(result.warnings),
        "validation": plan["manifest_extra"].get("validation"),
        "run": run_command_line(out_path, out_dir) + (" --replay" if plan.get("replay") else ""),
    }
    if plan.get("replay"):
        summary["changed_since"] = {k: plan["replay"][k] for k in ("changed_since", "replayed")}
        summary["changed_since"]["live"] = len(plan["replay"]["live"])
    if shard_rows is not None:
        summary["shards"] = shard_rows
        summary["timeout_minutes"] = max(row["timeout_minutes"] for row in shard_rows)
        summary["run_shard"] = shard_command_line(out_path, out_dir)
        summary["merge"] = merge_command_line(out_path, out_dir)
        if plan["selecting_split"] == "holdout":   # each look must reach a ledger that outlives the machine
            note = HOLDOUT_SHARDS_NOTE
            summary["notes"] = list(summary["notes"] or []) + [note]
            print(f"note: {note}", file=sys.stderr)
    print(f"plan {plan['run_id']}: {counts}, k={plan['k']}, gate {plan['gate']}", file=sys.stderr)
    return 0, summary



# Said with a sharded holdout plan (runner contract section 19): a shard records the look in its own
# state dir's ledger, and a merge refuses shards whose look its ledger does not hold.
HOLDOUT_SHARDS_NOTE = ("a holdout plan's shards on other machines (a CI matrix, a cluster) must run with --publish "
                       "s3://BUCKET/PREFIX and be merged from the store: the store records each look, while a "
                       "machine's own ledger goes with it (merge_runs.py refuses shards whose look its ledger "
                       "does not hold); shards run here, against this state dir, count their look here")

if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("jsonschema",), script=__file__))
