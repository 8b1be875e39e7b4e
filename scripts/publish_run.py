#!/usr/bin/env python3
"""publish_run.py: upload a finished run dir (or one shard's) to an object store.

Checks the run dir with the runner's --verify first (an unfinished or incomplete run is exit 6,
nothing uploaded), then writes it to <prefix>/<run-id>/ (a shard: <prefix>/<run-id>/shard-<I>-of-<N>/),
manifest.yaml last, so a reader never sees half a run; publishing again replaces that prefix only.
The same step as run_cases.py --publish, for a run dir that exists. Needs pip install 'assay[s3]';
credentials and endpoint from the standard AWS variables (AWS_ENDPOINT_URL for MinIO, R2, GCS).
Exit 0 published, 2 bad input or the store refused (credentials, bucket), 5 the store unreachable
(retry), 6 the run is not finished and complete.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser("publish_run.py", "Upload a finished, verified run dir (or a shard's) to s3://bucket/prefix, "
                    "manifest.yaml last (docs/runner-contract.md: Shards on a cluster, runs in object storage).",
                    "python3 scripts/publish_run.py .assay/reports/regression-20261129T120000Z s3://my-bucket/assay")
    p.add_argument("run_dir", help="the run directory (<state>/reports/<run-id>, or a shard's <run-id>.shard-<I>)")
    p.add_argument("store", help="s3://bucket/prefix: the run goes to <prefix>/<run-id>/")
    return p


def run(args):
    from pathlib import Path

    from assay.store.publish import publish_run
    return 0, publish_run(Path(args.run_dir), args.store, "store")   # the positional, as the usage names it


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("jsonschema",), script=__file__))
