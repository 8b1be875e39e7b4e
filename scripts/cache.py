#!/usr/bin/env python3
"""cache.py: the record/replay cache's size report and prune (run_cases.py --record writes it).

    cache.py stats [--state-dir DIR | --cache DIR]
    cache.py prune --older-than 30d [--dry-run] [--state-dir DIR | --cache DIR]

stats: entries and bytes per section (app exchanges, per-case indexes, judge and simulator
calls), oldest and newest entry. prune: deletes entries last written longer ago than the age
(a re-record refreshes an entry). Exit 0 done, 2 bad input."""

import sys
from pathlib import Path

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser("cache.py", "Size report and prune of the record/replay cache (<state>/cache). Exit 0 done, "
                    "2 bad input.", "python3 scripts/cache.py prune --older-than 30d --state-dir .assay")
    p.add_argument("action", choices=("stats", "prune"), help="stats: what the cache holds; prune: delete old entries")
    p.add_argument("--state-dir", metavar="DIR", default=".assay", help="the app's state dir (default .assay): "
                   "the cache is <state>/cache")
    p.add_argument("--cache", metavar="DIR", help="a cache directory elsewhere (instead of <state>/cache)")
    p.add_argument("--older-than", metavar="AGE", help="prune: entries older than AGE (e.g. 30d, 12h, 90m, 3600s)")
    p.add_argument("--dry-run", action="store_true", help="prune: count what would go, delete nothing")
    return p


def run(args):
    from assay.core.errors import AssayError
    from assay.replay.store import LAYOUT, Cache, cache_dir, parse_age
    root = Path(args.cache) if args.cache else cache_dir(Path(args.state_dir))
    if not root.is_dir():
        raise AssayError(f"{root}: no cache there (run_cases.py --record writes <state>/cache); pass --state-dir "
                         "or --cache", 2, key="--cache" if args.cache else "--state-dir")
    if not (root / LAYOUT).is_dir():   # a state dir or a run dir given as --cache read as an empty cache
        inner = root / "cache" / LAYOUT
        hint = (f"; the cache of that state dir is {root / 'cache'}: pass --state-dir {root} or --cache "
                f"{root / 'cache'}" if inner.is_dir() else "; pass the directory run_cases.py --record wrote "
                "(<state>/cache), or --state-dir <state>")
        raise AssayError(f"{root}: not a record/replay cache (no {LAYOUT}/ in it){hint}; nothing was read or deleted",
                         2, key="--cache" if args.cache else "--state-dir")
    cache = Cache(root)
    if args.action == "stats":
        if args.older_than or args.dry_run:
            raise AssayError("--older-than / --dry-run apply to prune only", 2, key="--older-than")
        return 0, cache.stats()
    if not args.older_than:
        raise AssayError("prune needs --older-than AGE (e.g. 30d); nothing was deleted", 2, key="--older-than")
    return 0, cache.prune(parse_age(args.older_than), dry_run=args.dry_run)


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, script=__file__))
