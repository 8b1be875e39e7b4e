#!/usr/bin/env python3
"""mine_traces.py SPANS... --state-dir S [--listen HOST:PORT --for S]: cases from production traces.

One case per distinct user request in the OTLP span files (near-duplicates of existing
cases or of each other dropped), the observed route, tools, arguments and stated facts
proposed as expectations, PII and secrets redacted, each `gating: false`, `review: pending`,
`source: trace:<trace_id>`, under S/datasets/mined/. Exit 0 done; 2 bad input.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "mine_traces.py",
        "Propose cases from production traces (OTLP JSON files, or a capture of the otlp-http listener): "
        "deduplicated, sampled, redacted, never gating until a person accepts them. Exit 0 done, 2 bad input.",
        "python3 scripts/mine_traces.py helpdesk.otlp.jsonl --state-dir examples/helpdesk/.assay --sample 20 --seed 7\n"
        "  python3 scripts/mine_traces.py --listen 127.0.0.1:4318 --for 300 --state-dir .assay --sample 30",
    )
    p.add_argument("spans", nargs="*", help="OTLP JSON span files (JSON lines or one document)")
    p.add_argument("--listen", metavar="HOST:PORT",
                   help="also receive OTLP/HTTP exports here (POST /v1/traces, JSON or protobuf; port 0 picks one, "
                        "printed on stderr) for --for seconds, then mine them")
    p.add_argument("--for", dest="seconds", type=float, default=60.0, metavar="S",
                   help="with --listen: how long to listen (default 60)")
    p.add_argument("--capture", metavar="FILE",
                   help="with --listen: also write what was received as OTLP JSON lines (unredacted)")
    p.add_argument("--state-dir", required=True, help="the app's state dir (.assay/): cases go to datasets/mined/")
    p.add_argument("--sample", type=int, metavar="N", help="keep at most N distinct requests, drawn at random")
    p.add_argument("--seed", type=int, default=0, help="the seed of the draw (default 0: the same draw every time)")
    p.add_argument("--holdout-share", type=float, default=0.0, metavar="F",
                   help="route this share of the proposed cases to the sealed holdout (split: [holdout])")
    return p


def run(args):
    from assay.mine.propose import check_args, mine

    import json

    from assay.core.errors import AssayError

    check_args(args.sample, args.holdout_share)
    if not args.spans and not args.listen:
        raise AssayError("give span files, or --listen HOST:PORT to receive OTLP/HTTP exports (see --help)", 2)
    if (args.capture or args.seconds != 60.0) and not args.listen:
        raise AssayError("--for and --capture apply to --listen only (see --help)", 2)
    if args.listen and not args.seconds > 0:
        raise AssayError(f"--for {args.seconds:g} must be a positive number of seconds", 2)
    listen = None
    if args.listen:
        def announce(address):
            print(json.dumps({"listening": address, "seconds": args.seconds}), file=sys.stderr, flush=True)
        listen = {"address": args.listen, "seconds": args.seconds, "capture": args.capture, "announce": announce}
    return 0, mine(args.spans, args.state_dir, sample=args.sample, seed=args.seed, holdout_share=args.holdout_share,
                   listen=listen)


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("yaml", "jsonschema"), script=__file__))
