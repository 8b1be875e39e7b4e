#!/usr/bin/env python3
"""dedupe_cases.py STATE_DIR: near-duplicate cases (ROUGE-L F1 of the user text >= 0.7).

Lists each flagged pair with its score, files and texts. Metamorphic pairs
(metamorphic_parent) and pairs with a different identity are deliberate and never
flagged; same-template pairs are flagged and marked. Exit 0 when done (the pairs are
findings, a person decides); 2 on bad input.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "dedupe_cases.py",
        "Flag near-duplicate cases: ROUGE-L F1 over the user messages' word tokens at or above --threshold. "
        "Prints the pairs; exit 0 when done, 2 on bad input.",
        "python3 scripts/dedupe_cases.py examples/helpdesk/.assay --threshold 0.7",
    )
    p.add_argument("state_dir", help="the app's state dir (.assay/)")
    p.add_argument("--threshold", type=float, default=0.7,
                   help="flag pairs whose ROUGE-L F1 is at least this, between 0 and 1 (default 0.7)")
    return p


def run(args):
    from assay.core.errors import AssayError
    from assay.suite.dedupe import dedupe_state_dir

    if not 0 < args.threshold <= 1:
        raise AssayError(f"--threshold {args.threshold:g} is out of range: use a value in (0, 1], e.g. 0.7", 2)
    return 0, dedupe_state_dir(args.state_dir, args.threshold)


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("yaml", "jsonschema"), script=__file__))
