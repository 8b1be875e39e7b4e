#!/usr/bin/env python3
"""coverage.py STATE_DIR: the suite's coverage grid and its split sizes against the targets.

Counts cases per unit x category x test_type, lists the empty cells (a unit with no case
of a category or of a test type), and compares smoke, holdout, canary and INV+DIR sizes
with the case-format targets. Exit 0 when done; 2 on bad input.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "coverage.py",
        "Print the suite's unit x category x test_type grid, its empty cells and its split sizes against the "
        "targets (smoke ~1/3 at least 5; holdout 20% from 25 cases; canary ~10% at least 2; INV+DIR <= 25%).",
        "python3 scripts/coverage.py examples/helpdesk/.assay",
    )
    p.add_argument("state_dir", help="the app's state dir (.assay/)")
    return p


def run(args):
    from assay.suite.coverage import coverage

    return 0, coverage(args.state_dir)


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("yaml", "jsonschema"), script=__file__))
