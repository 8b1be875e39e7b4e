#!/usr/bin/env python3
"""Replay: a 2,000-case run answered from its recording vs the same run live.

A 2,000-case smoke suite (bench/suite.py: every case asserts http, routing, answer and
execution) against the bench app (bench/app.py) at 50 ms per answer, `max_concurrency` 16.
Per repetition, in a fresh state dir: the plain live run, the same run with `--record` (live
plus writing the cache), then `--replay` of that cache under a new run id. Each run is its own
`run_cases.py` process, timed from start to exit (wall and CPU).

A run counts only when it exits 0 with `status: ok` and all cases `pass`, the app served one
request per case for the live and recording runs and **none** for the replay, and every
replayed case's verdict equals the recorded one.

Usage: `bench/replay.py [--quick] [--reps 3] [--cases 2000] [--latency-ms 50] [--json OUT]`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts"))

from app import BenchApp  # noqa: E402
from measure import summarize, timed_child  # noqa: E402
from suite import BASE_URL_ENV, make_plan, write_plan  # noqa: E402

RUNNER = ROOT / "scripts" / "run_cases.py"
KINDS = ("live", "record", "replay")


def log(msg: str) -> None:
    print(f"[replay] {msg}", file=sys.stderr, flush=True)


def verdicts(out: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return {r["case_id"]: r["verdict"] for r in rows}


def one_run(app: BenchApp, state: Path, n: int, concurrency: int, kind: str, rep: int) -> dict:
    run_id = f"smoke-2026020{KINDS.index(kind) + 1}T00{rep:02d}00Z"
    plan_path = write_plan(state / "work" / f"{run_id}.json",
                           make_plan(n, state_dir=str(state), max_concurrency=concurrency, run_id=run_id))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env[BASE_URL_ENV] = app.base_url
    out = state / "reports" / run_id
    flags = {"live": [], "record": ["--record"], "replay": ["--replay"]}[kind]
    app.reset_counters()
    child = timed_child([sys.executable, str(RUNNER), "--plan", str(plan_path), "--out", str(out),
                         "--progress", "never", *flags], env=env, log_dir=state / "logs" / run_id)
    requests = app.counters()["requests"]
    problems = []
    if child.rc != 0:
        problems.append(f"exit {child.rc}: {(child.stdout.strip() or child.stderr.strip())[-400:]}")
    else:
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        if results["summary"]["status"] != "ok" or results["summary"]["passes"] != n:
            problems.append(f"status {results['summary']['status']}, {results['summary']['passes']} of {n} pass")
    want = 0 if kind == "replay" else n
    if requests != want:
        problems.append(f"the app served {requests} requests (expected {want})")
    return {"kind": kind, "rep": rep, "out": out, "wall_s": round(child.wall_s, 3), "cpu_s": round(child.cpu_s, 3),
            "maxrss_mb": round(child.maxrss_mb, 1), "requests": requests, "problems": problems}


def bench(root: Path, n: int, latency_ms: float, concurrency: int, reps: int) -> dict:
    app = BenchApp(latency_ms)
    app.start()
    runs = []
    try:
        for rep in range(reps):
            state = root / f"rep-{rep}" / ".assay"
            (state / "reports").mkdir(parents=True)
            got = {kind: one_run(app, state, n, concurrency, kind, rep) for kind in KINDS}
            if not got["record"]["problems"] and not got["replay"]["problems"]:
                if verdicts(got["replay"]["out"]) != verdicts(got["record"]["out"]):
                    got["replay"]["problems"].append("a replayed verdict differs from the recorded one")
            cache_bytes = sum(p.stat().st_size for p in (state / "cache").rglob("*") if p.is_file())
            for run in got.values():
                run["out"] = str(run["out"])
                run["valid"] = not run["problems"]
                runs.append(run)
            log(f"rep {rep + 1}: " + ", ".join(f"{k} {got[k]['wall_s']:.2f}s" + ("" if got[k]["valid"] else " INVALID "
                                                + "; ".join(got[k]["problems"])) for k in KINDS)
                + f"; cache {cache_bytes / 1e6:.1f} MB")
            runs[-1]["cache_bytes"] = cache_bytes
    finally:
        app.stop()
    rows = {}
    for kind in KINDS:
        valid = [r for r in runs if r["kind"] == kind and r["valid"]]
        rows[kind] = {"valid_runs": len(valid), "wall_s": summarize([r["wall_s"] for r in valid]),
                      "cpu_s": summarize([r["cpu_s"] for r in valid])}
    return {"cases": n, "latency_ms": latency_ms, "max_concurrency": concurrency,
            "ideal_live_s": round(n * latency_ms / 1000.0 / concurrency, 3), "rows": rows, "runs": runs,
            "cache_bytes": [r["cache_bytes"] for r in runs if "cache_bytes" in r]}


def markdown(doc: dict) -> str:
    lines = ["| run | cases | app latency | max_concurrency | valid | wall s (median) | cpu s (median) | ms per case |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for kind, row in doc["rows"].items():
        if not row["valid_runs"]:
            lines.append(f"| {kind} | {doc['cases']} | | | 0 | no valid run | | |")
            continue
        wall = row["wall_s"]["median"]
        lines.append(f"| {kind} | {doc['cases']} | {doc['latency_ms']:g} ms | {doc['max_concurrency']} | "
                     f"{row['valid_runs']} | {wall:.2f} | {row['cpu_s']['median']:.2f} | "
                     f"{wall / doc['cases'] * 1000:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/replay.py", description=__doc__.split("\n\n")[0],
                                 epilog="example: python3 bench/replay.py --reps 3 --json bench/out/replay.json")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repetition: a smoke test")
    ap.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    if args.quick:
        args.reps, args.cases, args.latency_ms = 1, 40, 5.0
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="assay-bench-replay-") as tmp:
        doc = bench(Path(tmp), args.cases, args.latency_ms, args.concurrency, args.reps)
    doc.update(started_at=started, cpu_count=os.cpu_count(), load_avg_at_start=load_start,
               load_avg_at_end=os.getloadavg())
    print(markdown(doc))
    print(f"load average {load_start[0]:.1f} at the start, {doc['load_avg_at_end'][0]:.1f} at the end; "
          f"{os.cpu_count()} cores; cache {max(doc['cache_bytes'] or [0]) / 1e6:.1f} MB")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2, sort_keys=True), encoding="utf-8")
    return 0 if all(row["valid_runs"] for row in doc["rows"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
