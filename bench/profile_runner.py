#!/usr/bin/env python3
"""Profile the runner across ALL its threads (plain cProfile sees only the main thread).

    BENCH_BASE_URL=http://127.0.0.1:PORT .venv/bin/python bench/profile_runner.py \
        --stats OUT.prof --top 40 -- scripts/run_cases.py --plan plan.json --out DIR

or, simpler, `bench/run.py --profile` which starts the app, builds a 2,000-case plan at
max_concurrency 8 and runs this wrapper on it. Every thread started after this wrapper
gets its own cProfile.Profile; at exit they are merged and printed sorted by own time
and by cumulative time. Profiling slows the runner: use it to find where the time goes,
never for the timings themselves.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import runpy
import sys
import threading
from pathlib import Path

_PROFILES: list[cProfile.Profile] = []
_LOCK = threading.Lock()


def _start_thread_profile(frame, event, arg):  # installed through threading.setprofile
    prof = cProfile.Profile()
    with _LOCK:
        _PROFILES.append(prof)
    sys.setprofile(None)
    prof.enable()


def render(stats: pstats.Stats, top: int) -> str:
    buf = io.StringIO()
    stats.stream = buf
    buf.write("== by own time (tottime) ==\n")
    stats.sort_stats("tottime").print_stats(top)
    buf.write("\n== by cumulative time ==\n")
    stats.sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stats", required=True, help="write the merged pstats here")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--text", help="also write the printed report here")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    ns = ap.parse_args()
    script = str(Path(ns.script).resolve())
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    sys.argv = [script, *args]
    sys.path.insert(0, str(Path(script).parent))
    threading.setprofile(_start_thread_profile)
    main_prof = cProfile.Profile()
    code = 0
    main_prof.enable()
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        main_prof.disable()
        threading.setprofile(None)
    stats = pstats.Stats(main_prof)
    with _LOCK:
        for prof in _PROFILES:
            stats.add(prof)
    stats.dump_stats(ns.stats)
    text = render(stats, ns.top)
    if ns.text:
        Path(ns.text).write_text(text, encoding="utf-8")
    print(text, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
