#!/usr/bin/env python3
"""rescore.py: re-score a finished run from its stored responses and traces, without calling the app.

Every layer (the judge included) is scored again with the current suite, rubrics, judge and
calibration; the new run directory records `rescored_from` and passes run_cases.py --verify.
Judge calls are reused for unchanged (case, answer, rubric version). Exit codes as run_cases.py
(docs/runner-contract.md, "Rescore").
"""

import sys

from assay.core.cli import make_parser, run_command

EXAMPLE = ("python3 scripts/rescore.py examples/helpdesk/.assay/reports/smoke-20261129T101500Z "
           "--out examples/helpdesk/.assay/reports/smoke-20261129T111500Z")


def build_parser():
    p = make_parser("rescore.py", "Re-score a finished run from its stored responses and traces with the current "
                    "suite, rubrics and judge; no app call (docs/runner-contract.md, section Rescore).", EXAMPLE)
    p.add_argument("run_dir", help="the source run directory, <state>/reports/<run-id>")
    p.add_argument("--out", required=True, help="the new run directory, <state>/reports/<new-run-id> (same mode)")
    p.add_argument("--state-dir", help="the app's state dir (default: the source run's <state>, two levels up)")
    p.add_argument("--judge", action="store_true",
                   help="judge in smoke/targeted too (as make_plan.py --judge); a source run that was judged is "
                        "judged again without it")
    p.add_argument("--allow-invalid", action="store_true",
                   help="rescore a suite with linter ERRORs anyway (refused by default, as make_plan.py refuses "
                        "it; recorded in the manifest, and the gate closes on it)")
    p.add_argument("--judge-cache", action="store_true",
                   help="reuse a judge call from <state>/cache (run_cases.py --record / --judge-cache) for the same "
                        "judge, prompt version, rubric content and material; a miss is judged and cached")
    p.add_argument("--baseline", metavar="RUN_DIR|auto",
                   help="the run whose answers pairwise rubrics (kind: pairwise) compare the rescored answers with, "
                        "as run_cases.py --baseline; `auto`: reports/baseline.json's pin, else the newest complete "
                        "run of the series with an open gate started before the source run (never the source "
                        "itself). Without it a pairwise pin is unscored (never pass)")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="never",
                   help="progress on stderr (default never)")
    return p


def run(args):
    import os
    from pathlib import Path

    from assay.run.rescore import rescore
    return rescore(Path(args.run_dir), args.out, state_dir=args.state_dir, judge=args.judge, environ=os.environ,
                   progress=args.progress, judge_cache=args.judge_cache, baseline=args.baseline,
                   allow_invalid=args.allow_invalid)


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("yaml", "jsonschema"), script=__file__))
