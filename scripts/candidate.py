#!/usr/bin/env python3
"""candidate.py new|revert|keep STATE_DIR: the optimize loop's bookkeeping.

`new` records each surface's git blob before any edit (a dirty file is refused);
`revert` verifies every surface against the recorded blob first (refusing, with nothing
touched, otherwise), then writes that blob back; `keep` reads the training run's comparison.json (the stats keep rule), and only after a training win the holdout run's,
and on two passes pins reports/baseline.json; a run whose own gate (gate.py's decision) closes for a
reason its champion's run does not is rejected. Every decision is appended to
<state>/candidates/log.jsonl.
Exit: 0 done (keep: kept); 1 keep: rejected, or a revert refused or not verified;
3 keep: training won, a holdout run is needed; 2 bad input.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "candidate.py",
        "Record, revert or keep one optimize candidate. keep exits 0 kept, 1 rejected, 3 needs a holdout run; "
        "2 on bad input.",
        "python3 scripts/candidate.py new examples/helpdesk/.assay --id tool-desc-1 --surface desk.py "
        "--cluster \"search_kb picked for refunds\"\n"
        "  python3 scripts/candidate.py keep examples/helpdesk/.assay --id tool-desc-1 "
        "--training .assay/reports/regression-20261130T101500Z-1a2b",
    )
    p.add_argument("action", choices=("new", "revert", "keep"), help="what to do")
    p.add_argument("state_dir", help="the app's state dir (.assay/)")
    p.add_argument("--id", dest="cid", help="the candidate id (new: default cand-<utc stamp>; required otherwise)")
    p.add_argument("--surface", action="append", default=[], metavar="PATH",
                   help="new: a file the candidate edits, relative to --app (repeatable)")
    p.add_argument("--app", help="new: the app's git checkout (default: the state dir's parent)")
    p.add_argument("--cluster", help="new: the failure cluster this candidate targets")
    p.add_argument("--reflection", help="new: failure <- cause <- fix, in one or two sentences")
    p.add_argument("--training", metavar="RUN_DIR",
                   help="keep: the candidate's training run (a regression run, with --baseline-verdicts)")
    p.add_argument("--holdout", metavar="RUN_DIR",
                   help="keep: the candidate's holdout run (only after a training win)")
    return p


def run(args):
    from assay.core.errors import AssayError
    from assay.optimize import candidate

    allowed = {"new": {"surface", "app", "cluster", "reflection"}, "revert": set(), "keep": {"training", "holdout"}}
    given = {name for name in ("surface", "app", "cluster", "reflection", "training", "holdout") if getattr(args, name)}
    stray = sorted(given - allowed[args.action])
    if stray:
        raise AssayError(f"{', '.join('--' + s for s in stray)} do(es) not apply to `{args.action}` (see --help)", 2)
    if args.action == "new":
        return 0, candidate.new(args.state_dir, surfaces=args.surface, app=args.app, cid=args.cid,
                                cluster=args.cluster, reflection=args.reflection)
    if not args.cid:
        raise AssayError(f"--id is required for `{args.action}` (see <state>/candidates/log.jsonl)", 2)
    if args.action == "revert":
        return 0, candidate.revert(args.state_dir, args.cid)
    if not args.training:
        raise AssayError("keep needs --training RUN_DIR (the training comparison decides first)", 2)
    decision, out = candidate.keep(args.state_dir, args.cid, training=args.training, holdout=args.holdout)
    return {"kept": 0, "rejected": 1, "needs_holdout": 3}[decision], out


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, script=__file__))
