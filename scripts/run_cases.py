#!/usr/bin/env python3
"""run_cases.py: execute a plan against the app, score every layer, write the run directory.

The whole contract is docs/runner-contract.md. Exit codes: 0 complete (says nothing about
pass/fail), 1 internal, 2 bad plan/usage (nothing written), 3 pre-flight, 4 canary failed,
5 infra abort, 6 incomplete, 7 scorer error.
"""

import sys

from assay.core.cli import exit_now, make_parser, run_command


def build_parser():
    from assay.run.command import EXAMPLE, add_arguments
    parser = make_parser("run_cases.py", "Run every case of a plan against the app, score it layer by layer, "
                         "and write the run directory (docs/runner-contract.md).", EXAMPLE)
    add_arguments(parser)
    return parser


def run(args):
    from assay.run.command import run as run_cases
    said: list[str] = []   # runs of another app passed over; a base whose app could not be checked by name
    if args.baseline_verdicts == "auto":  # the run this plan's series compares with (assay.compare.baseline)
        from assay.compare.baseline import resolve_for_plan
        from assay.verdict import gate_open
        args.baseline_verdicts = resolve_for_plan(args.plan, is_open=gate_open, said=said)
    if getattr(args, "baseline", None) == "auto":  # pairwise rubrics: the same choice, its run dir
        from pathlib import Path

        from assay.compare.baseline import resolve_for_plan
        from assay.verdict import gate_open
        args.baseline = str(Path(resolve_for_plan(args.plan, is_open=gate_open, said=said)).parent)
    for words in dict.fromkeys(said):   # prose on stderr (stdout is JSON only)
        sys.stderr.write(f"assay: note: {words}\n")
    return run_cases(args)


if __name__ == "__main__":
    # exit_now: the same exit code and output, without tearing a large run's objects down one by one
    exit_now(run_command(build_parser, run, needs=("yaml", "jsonschema"), script=__file__))
