#!/usr/bin/env python3
"""merge_runs.py: merge the shard runs of one plan into one run directory, fail-closed.

The shards are local dirs, or one s3://bucket/prefix/<run_id>/ they were published to
(run_cases.py --publish; a shard there without its manifest.yaml is unfinished: refused).
Checks every shard dir is from this plan (exit 2 otherwise), that no shard is missing or
given twice, that each is complete (the --verify check), that together they hold every
planned case exactly once and that one attempt wrote them (ASSAY_SHARD_ATTEMPT, a Kubernetes
Job's uid), with --attempt UID the one given (exit 6 naming each problem); shards that record an
attempt merged without --attempt are exit 2 (nothing says the Job just run wrote them); then builds <state>/reports/<run_id>
beside and renames it into place, every derived file recomputed by the runner's own code.
Exit codes as run_cases.py: 0 complete, 4/5 a shard aborted (canary / infra), 6 refused,
7 scorer errors, 2 bad plan or usage. Re-running it gives the same bytes.
"""

import sys

from assay.core.cli import make_parser, run_command

EXAMPLE = ("python3 scripts/merge_runs.py --plan .assay/work/plan.json --out .assay/reports/regression-20261129T120000Z "
           ".assay/reports/regression-20261129T120000Z.shard-1 .assay/reports/regression-20261129T120000Z.shard-2")


def build_parser():
    p = make_parser("merge_runs.py", "Merge the shard run dirs of one plan (make_plan.py --shards N; run_cases.py "
                    "--shard I) into one run directory, fail-closed (docs/runner-contract.md: "
                    "Shards across machines).", EXAMPLE)
    p.add_argument("--plan", required=True, help="the plan.json every shard ran from")
    p.add_argument("--out", required=True, help="the merged run directory: <state>/reports/<run_id>")
    p.add_argument("--attempt", metavar="UID",
                   help="the attempt whose shards to merge: the shards Job's uid (kubectl get job NAME -o "
                        "jsonpath='{.metadata.uid}'), the ASSAY_SHARD_ATTEMPT its pods recorded; a shard of any "
                        "other attempt is refused. Required when the shards record an attempt")
    p.add_argument("--baseline-verdicts", metavar="FILE",
                   help="<baseline-run>/verdicts_for_stats.jsonl: write comparison.json for the merged run")
    p.add_argument("shard_dirs", nargs="*", metavar="SHARD_DIR",
                   help="every shard's run directory (<state>/reports/<run_id>.shard-<I>), or one "
                        "s3://bucket/prefix/<run_id>/ where the shards were published (pip install 'assay[s3]')")
    return p


def run(args):
    from assay.shard.from_store import merge
    return merge(args.plan, args.out, args.shard_dirs, args.baseline_verdicts, args.attempt)


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("jsonschema",), script=__file__))
