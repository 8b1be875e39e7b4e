#!/usr/bin/env python3
"""gate.py: the tokenless CI gate. Reads results.json, prints a one-screen summary, exits
0 open / 1 closed (every reason listed) / 2 bad input. No model is ever in this path.
Cost and latency budgets come from the flags, else from the state dir's profile.yaml
(`budgets:`); each budget line names where its budget came from.
"""

import os
import sys
from pathlib import Path

from assay.core.cli import make_parser, run_command
from assay.core.errors import AssayError


def build_parser():
    p = make_parser(
        "gate.py",
        "Decide whether a finished run passes the gate. The runner exits 0 even on a red suite; "
        "this decides. Exit 0 open, 1 closed, 2 bad input.",
        "python3 scripts/gate.py .assay/reports --latest --mode regression --max-infra-rate 0.05",
    )
    p.add_argument("path", help="a run dir (reports/<run-id>), or the reports dir with --latest")
    p.add_argument("--latest", action="store_true", help="gate the newest run by run-id timestamp (never mtime)")
    p.add_argument("--mode", help="with --latest: only runs of this mode")
    p.add_argument("--max-infra-rate", type=float, default=0.05, help="close above this infra rate (0-1, default 0.05)")
    p.add_argument("--require-canaries", action="store_true", help="close unless every canary passed (and there is one)")
    p.add_argument("--no-verify", action="store_true", help="skip `run_cases.py --verify` (the completeness re-check)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text summary")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML (one testcase per non-holdout case)")
    p.add_argument("--github-summary", action="store_true", help="append a Markdown summary to $GITHUB_STEP_SUMMARY")
    p.add_argument("--max-cost-per-case", type=float, metavar="X",
                   help="close when the mean cost per case (score_cost.py) is above X in the prices file's "
                        "currency, or cannot be computed (no traces, no prices file, an unpriced model); "
                        "overrides profile.yaml's budgets.max_cost_per_case")
    p.add_argument("--max-p95-latency-s", type=float, metavar="Y",
                   help="close when the p95 end-to-end case latency is above Y seconds; overrides "
                        "profile.yaml's budgets.max_p95_latency_s")
    p.add_argument("--prices", help="prices file for the cost budget (default: <state>/prices.yaml)")
    p.add_argument("--no-judge-cost", action="store_true",
                   help="leave the judge's tokens out of --max-cost-per-case (by default the budget is the app's "
                        "cost per case plus the judge's, each priced with the prices file)")
    p.add_argument("--baseline", metavar="RUN|auto",
                   help="compare with this run (or `auto`: reports/baseline.json's pin, else the newest complete run "
                        "of the same series whose gate was open) and also close on any gating case newly failing, named "
                        "first; the run's own reasons all stand (an edited case or a judge flip that fails still "
                        "closes it, said beside the case)")
    p.add_argument("--state-dir", metavar="DIR",
                   help="the app's state dir, for profile.yaml's budgets and prices.yaml (default: the one "
                        "holding the run dir, <state>/reports/<run-id>)")
    return p


def run(args):
    wrote: list[str] = []   # the decision's own JUnit file, once written (a later error keeps it)
    try:
        return _run(args, wrote)
    except Exception as exc:   # not decided: a --junit file still says so (never an older run's file)
        if args.junit and not wrote:
            from assay.report.gate_outputs import write_junit_error
            write_junit_error(args.junit, exc.message if isinstance(exc, AssayError) else f"{type(exc).__name__}: {exc}")
        raise


def _run(args, wrote: list[str]):
    from assay.report.gate import to_json
    from assay.verdict import GateOptions, decide
    from assay.report.gate_outputs import append_github_summary, write_junit
    from assay.report.rundir import latest_started_run

    if not 0 <= args.max_infra_rate <= 1:
        raise AssayError(f"--max-infra-rate {args.max_infra_rate:g} is out of range: use 0-1 (0.05 = 5%)", 2)
    if args.mode and not args.latest:
        raise AssayError("--mode only applies with --latest (it filters the runs --latest chooses from)", 2)
    if args.github_summary and not os.environ.get("GITHUB_STEP_SUMMARY"):
        raise AssayError("--github-summary: $GITHUB_STEP_SUMMARY is not set (GitHub Actions sets it in a "
                         "job step); drop the flag outside Actions", 2)
    for flag, value in (("--max-cost-per-case", args.max_cost_per_case), ("--max-p95-latency-s", args.max_p95_latency_s)):
        if value is not None and not (value >= 0 and value < float("inf")):
            raise AssayError(f"{flag} {value:g} is out of range: use a number >= 0", 2)
    skipped: list[str] = []
    run_dir = latest_started_run(Path(args.path), args.mode, skipped) if args.latest else Path(args.path)
    for name in skipped:
        sys.stderr.write(f"gate: --latest skipped {name}\n")
    if args.state_dir and not (Path(args.state_dir) / "profile.yaml").is_file():
        raise AssayError(f"--state-dir {args.state_dir}: no profile.yaml there; pass the app's state dir "
                         "(the directory holding adapter.yaml and profile.yaml, e.g. .assay)", 2, key="--state-dir")
    result = decide(run_dir, GateOptions(
        max_infra_rate=args.max_infra_rate, require_canaries=args.require_canaries, verify=not args.no_verify,
        max_cost_per_case=args.max_cost_per_case, max_p95_latency_s=args.max_p95_latency_s, prices=args.prices,
        state_dir=args.state_dir, include_judge=not args.no_judge_cost, baseline=args.baseline))
    if args.junit:
        write_junit(result, args.junit)
        wrote.append(args.junit)
    if args.github_summary:
        append_github_summary(result)
    code = 0 if result.open else 1
    if args.json:
        return code, to_json(result)
    # app-derived text (case titles, reasons quoting answers) never drives the terminal: controls shown
    from assay.core.visible import show_controls
    sys.stdout.write("\n".join(show_controls(line).replace("\n", "\\n") for line in result.lines) + "\n")
    return code, None


if __name__ == "__main__":
    # PyYAML: the state dir's profile.yaml (its `budgets`) is read on every gate
    sys.exit(run_command(build_parser, run, needs=("yaml",), script=__file__))
