#!/usr/bin/env python3
"""The memory curve: peak RSS of one `run_cases.py` process at 1,000 / 10,000 / 100,000 cases.

Same suite, app and timing as bench/run.py (bench/suite.py's plan, bench/app.py at 0 ms,
`os.wait4` on the runner child alone), one size after another, each run checked before it
counts (exit 0, every case `pass`, the app served exactly one request per case). Prints and
writes (OUT/scale.json) per size: wall s, CPU s, peak RSS MB, RSS KB per case above the
1,000-case run, the run dir's file count, and the load average around the run.

    python3 bench/memory.py --sizes 1000,10000,100000 --concurrency 8 [--runner PATH] [--storage disk|tmpfs]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "scripts"))

from app import BenchApp  # noqa: E402
from measure import timed_child  # noqa: E402
from scenarios import check_run  # noqa: E402
from suite import BASE_URL_ENV, RUN_ID, make_plan, write_plan  # noqa: E402

RUNNER = HERE.parent / "scripts" / "run_cases.py"


def file_count(root: Path) -> int:
    return sum(len(files) for _d, _s, files in os.walk(root))


def measure(n: int, *, root: Path, app: BenchApp, runner: str, concurrency: int) -> dict:
    state = root / f"state-{n}"
    (state / "reports").mkdir(parents=True, exist_ok=True)
    plan = write_plan(root / f"plan-{n}.json", make_plan(n, state_dir=str(state), max_concurrency=concurrency))
    out = state / "reports" / RUN_ID
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env[BASE_URL_ENV] = app.base_url
    app.reset_counters()
    load_before = os.getloadavg()[0]
    child = timed_child([sys.executable, runner, "--plan", str(plan), "--out", str(out), "--progress", "never"],
                        env=env, log_dir=root / f"log-{n}", timeout_s=3600)
    load_after = os.getloadavg()[0]
    counters = app.counters()
    row = {"cases": n, "wall_s": round(child.wall_s, 2), "cpu_s": round(child.cpu_s, 2),
           "peak_rss_mb": round(child.maxrss_mb, 1), "files": file_count(out),
           "load_1min_before": round(load_before, 2), "load_1min_after": round(load_after, 2),
           "problems": check_run(child, out, n, counters, n)}
    if row["problems"]:
        row["stderr_tail"] = child.stderr[-2000:]
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/memory.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated case counts")
    ap.add_argument("--concurrency", type=int, default=8, help="invocation.max_concurrency (default 8)")
    ap.add_argument("--runner", default=str(RUNNER), help="the run_cases.py to measure (default this checkout's)")
    ap.add_argument("--storage", choices=("disk", "tmpfs"), default="disk",
                    help="run dirs under OUT/work (disk, default) or /dev/shm (tmpfs)")
    ap.add_argument("--out", default=str(HERE / "out"), help="results directory (default bench/out/)")
    ap.add_argument("--keep", action="store_true", help="keep the run directories")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = Path("/dev/shm") if args.storage == "tmpfs" else out / "work"
    root = base / f"assay-scale-{os.getpid()}-{int(time.time())}"
    root.mkdir(parents=True)
    app = BenchApp(latency_ms=0)
    app.start()
    rows = []
    try:
        for n in sizes:
            row = measure(n, root=root, app=app, runner=args.runner, concurrency=args.concurrency)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        app.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    first = rows[0] if rows else None
    for row in rows[1:]:
        extra = row["cases"] - first["cases"]
        row["kb_per_case_above_first"] = round((row["peak_rss_mb"] - first["peak_rss_mb"]) * 1024 / extra, 3)
    result = {"runner": args.runner, "storage": args.storage, "concurrency": args.concurrency,
              "cpus": os.cpu_count(), "rows": rows}
    (out / "scale.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0 if all(not r["problems"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
