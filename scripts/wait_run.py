#!/usr/bin/env python3
"""wait_run.py: wait, read-only, for a run to finish, in slices a 10-minute Bash call can afford.

Exit 0: final (prints status, the runner's exit code, the last run.log event); 3: still
running (call again); 4: `running` but the runner is gone (prints the exact --resume
command); 5: stalled, the runner holds its lock but no case has finished for --stall-s
(prints how long, the last run.log event and the --resume command); 2: bad input.
Liveness comes from the runner's lock, not from `ps`.
"""

import sys

from assay.core.cli import make_parser, run_command
from assay.core.errors import AssayError


def build_parser():
    p = make_parser(
        "wait_run.py",
        "Wait for a run directory to leave summary.status `running`. Exit 0 final, 3 still running "
        "(call again), 4 the runner is gone (resume it), 5 stalled (the runner is alive but no case has "
        "finished for --stall-s), 2 bad input.",
        "python3 scripts/wait_run.py .assay/reports/smoke-20261129T101500Z --timeout-s 540",
    )
    p.add_argument("run_dir", help="the run directory, reports/<run-id>")
    p.add_argument("--timeout-s", type=float, default=540.0, help="stop waiting after this long (0-600, default 540)")
    p.add_argument("--interval-s", type=float, default=5.0, help="poll interval (0.1-60, default 5)")
    p.add_argument("--stall-s", default="auto", metavar="SECONDS|auto",
                   help="exit 5 when the runner is alive but no case has finished for this long (0: never; default "
                        "auto: the longest one case may take by the run's own limits, at least 1800)")
    return p


def run(args):
    from assay.report.wait import wait_for_run

    if not 0 <= args.timeout_s <= 600:
        raise AssayError(f"--timeout-s {args.timeout_s:g} is out of range: use 0-600 (a Bash call is capped at 10 minutes)", 2)
    if not 0.1 <= args.interval_s <= 60:
        raise AssayError(f"--interval-s {args.interval_s:g} is out of range: use 0.1-60", 2)
    stall = None
    if args.stall_s != "auto":
        try:
            stall = float(args.stall_s)
        except ValueError:
            stall = -1.0
        if not 0 <= stall < float("inf"):
            raise AssayError(f"--stall-s {args.stall_s}: use a number of seconds >= 0 (0: never report a stall), or "
                             "auto", 2, key="--stall-s")
    return wait_for_run(args.run_dir, timeout_s=args.timeout_s, interval_s=args.interval_s, stall_s=stall)


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, script=__file__))
