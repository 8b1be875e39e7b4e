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
    from assay.verdict.flags import add_decision_flags

    p = make_parser(
        "gate.py",
        "Decide whether a finished run passes the gate. The runner exits 0 even on a red suite; "
        "this decides. Exit 0 open, 1 closed, 2 bad input.",
        "python3 scripts/gate.py .assay/reports --latest --mode regression --max-infra-rate 0.05",
    )
    p.add_argument("path", help="a run dir (reports/<run-id>), or the reports dir with --latest")
    p.add_argument("--latest", action="store_true", help="gate the newest run by run-id timestamp (never mtime)")
    p.add_argument("--mode", help="with --latest: only runs of this mode")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text summary")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML (one testcase per non-holdout case)")
    p.add_argument("--github-summary", action="store_true", help="append a Markdown summary to $GITHUB_STEP_SUMMARY")
    p.add_argument("--baseline", metavar="RUN|auto",
                   help="compare with this run (or `auto`: reports/baseline.json's pin, else the newest complete run "
                        "of the same series whose gate was open) and also close on any gating case newly failing, named "
                        "first; the run's own reasons all stand (an edited case or a judge flip that fails still "
                        "closes it, said beside the case)")
    add_decision_flags(p)
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
    from assay.verdict import decide
    from assay.verdict.flags import decision_options
    from assay.report.rundir import latest_started_run

    if args.mode and not args.latest:
        raise AssayError("--mode only applies with --latest (it filters the runs --latest chooses from)", 2)
    if args.mode is not None:
        from assay.plan.modes import check_gate_mode
        check_gate_mode(args.mode)
    if args.github_summary and not os.environ.get("GITHUB_STEP_SUMMARY"):
        raise AssayError("--github-summary: $GITHUB_STEP_SUMMARY is not set (GitHub Actions sets it in a "
                         "job step); drop the flag outside Actions", 2)
    options = decision_options(args, baseline=args.baseline)
    skipped: list[str] = []
    run_dir = latest_started_run(Path(args.path), args.mode, skipped) if args.latest else Path(args.path)
    for name in skipped:
        sys.stderr.write(f"gate: --latest skipped {name}\n")
    if args.latest and not args.mode:
        from assay.report.rundir import other_modes_note
        note = other_modes_note(Path(args.path), run_dir)
        if note:
            sys.stderr.write(f"gate: {note}\n")
    result = decide(run_dir, options)
    # their writers (xml.etree, the report's sections) are imported only when asked for
    if args.junit:
        from assay.report.gate_outputs import write_junit
        write_junit(result, args.junit)
        wrote.append(args.junit)
    if args.github_summary:
        from assay.report.gate_outputs import append_github_summary
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
