#!/usr/bin/env python3
"""holdout.py looks|unseal|reseal STATE_DIR: the sealed holdout's ledger, a logged unseal, a reseal.

`looks` counts the ledger (datasets/holdout-looks.jsonl; 5 looks by default, then a
reseal is due); with `--store s3://BUCKET/PREFIX` (or $ASSAY_STORE) it first folds into the
ledger the looks the store holds (`<prefix>/holdout-looks/`, what `run_cases.py --publish`
records), as the merge from the store does. `unseal --reason` appends one ledger line and names the cases it opens.
`reseal` moves viewed holdout cases to `full`, draws fresh ones into holdout
(deterministic with --seed), bumps dataset_version and leaves a suite that validates
clean. Exit 0 done; 2 bad input; 1 if the resealed suite does not validate.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "holdout.py",
        "The sealed holdout: count its looks, unseal it with a logged reason, or reseal it "
        "(viewed cases to full, fresh cases drawn into holdout, dataset_version bumped).",
        "python3 scripts/holdout.py looks examples/helpdesk/.assay\n"
        "  python3 scripts/holdout.py unseal examples/helpdesk/.assay --reason \"5 looks spent; read the misses\"\n"
        "  python3 scripts/holdout.py reseal examples/helpdesk/.assay --seed 7 --dry-run",
    )
    p.add_argument("action", choices=("looks", "unseal", "reseal"), help="what to do")
    p.add_argument("state_dir", help="the app's state dir (.assay/)")
    p.add_argument("--store", metavar="s3://BUCKET/PREFIX",
                   help="looks: first fold into the ledger the holdout looks published there (default $ASSAY_STORE; "
                        "<prefix>/holdout-looks/, what run_cases.py --publish records), as the merge from the "
                        "store does")
    p.add_argument("--budget", type=int, default=5, help="looks before a reseal is due (looks; default 5)")
    p.add_argument("--reason", help="unseal: why the holdout is opened (required; logged in the ledger)")
    p.add_argument("--case", action="append", default=[], metavar="ID",
                   help="unseal: open only this holdout case (repeatable; default all holdout cases)")
    p.add_argument("--seed", type=int, help="reseal: seed of the draw (default: the new dataset_version)")
    p.add_argument("--count", type=int,
                   help="reseal: how many fresh cases to draw (default: as many as are moved out)")
    p.add_argument("--dry-run", action="store_true", help="reseal: print what would change, write nothing")
    return p


def run(args):
    from assay.core.errors import AssayError
    from assay.suite import holdout

    misplaced = [flag for flag, on, ok in (("--store", args.store is not None, "looks"),
                                           ("--reason", args.reason is not None, "unseal"),
                                           ("--case", bool(args.case), "unseal"),
                                           ("--seed", args.seed is not None, "reseal"),
                                           ("--count", args.count is not None, "reseal"),
                                           ("--dry-run", args.dry_run, "reseal")) if on and args.action != ok]
    if misplaced:
        raise AssayError(f"{', '.join(misplaced)} do(es) not apply to `{args.action}` (see --help)", 2)
    if args.action == "looks":
        return 0, _looks(args)
    if args.action == "unseal":
        return 0, holdout.unseal(args.state_dir, args.reason or "", args.case or None)
    return 0, holdout.reseal(args.state_dir, seed=args.seed, count=args.count, dry_run=args.dry_run)


def _looks(args):
    """The ledger's looks; with a store, after the store's looks of the suite's dataset_version are
    folded in (assay.run.holdout_ledger.fold_looks, the merge's rule)."""
    from pathlib import Path

    from assay.plan.build import dataset_version
    from assay.plan.modes import HOLDOUT_LEDGER
    from assay.store.url import configured
    from assay.suite import holdout
    from assay.suite.convert import convert_state_dir

    doc = holdout.looks(args.state_dir, args.budget)   # a bad state dir or --budget is refused before the store
    base = configured(args.store)
    if base is None:
        return doc
    from assay.run.holdout_ledger import fold_looks
    version = dataset_version(convert_state_dir(args.state_dir))
    added = fold_looks(Path(args.state_dir) / HOLDOUT_LEDGER, base, version)
    return dict(holdout.looks(args.state_dir, args.budget), store=str(base), dataset_version=version,
                folded=added)


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("yaml", "jsonschema"), script=__file__))
