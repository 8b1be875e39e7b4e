#!/usr/bin/env python3
"""cluster_failures.py: group a finished run's failing non-holdout cases by (layer, normalized
reason), with counts and two exemplars each (input, expected, what the layer saw, the answer).
"""

import sys
from pathlib import Path

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "cluster_failures.py",
        "Group the failing non-holdout cases of a finished run by (layer, normalized reason): counts, case "
        "ids and two exemplars per cluster, largest first, as one JSON object. A case failing on two layers "
        "is in two clusters. Holdout failures are counted, never named. Exit 0 written, 2 bad input.",
        "python3 scripts/cluster_failures.py examples/helpdesk/.assay/reports/smoke-20261129T103920Z",
    )
    p.add_argument("run_dir", help="the finished run directory, reports/<run-id>")
    p.add_argument("--top", type=int, help="keep only the N largest clusters")
    return p


def run(args):
    from assay.core.errors import AssayError
    from assay.report.clusters import cluster_failures

    if args.top is not None and args.top < 1:
        raise AssayError(f"--top {args.top}: use a positive number of clusters", 2)
    doc = cluster_failures(Path(args.run_dir))
    if args.top is not None:
        doc["clusters"] = doc["clusters"][: args.top]
    print(f"{doc['failing_cases']} failing case(s) in {len(doc['clusters'])} cluster(s)"
          + (f"; not a whole run: {doc['incomplete']}" if doc.get("incomplete") else ""), file=sys.stderr)
    return 0, doc


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("jsonschema",), script=__file__))
