#!/usr/bin/env python3
"""Shards: the wall of one suite run as 1, 2 and 4 shards, and the merge's own cost.

- **Scaling.** A 2,000-case smoke suite against the bench app at 50 ms per answer
  (bench/app.py, one threaded loopback server), planned with `--shards S` (round-robin)
  for S in 1, 2, 4. The S shard runs start at once, each its own `run_cases.py --shard I`
  process at the same `max_concurrency` (as S CI machines would); `shards_s` is the time
  from the first start to the last exit, `merge_s` the `merge_runs.py` that follows.
  The ideal is the app's own time: cases × latency ÷ (max_concurrency × S).
- **Merge cost.** A 10,000-case suite at 0 ms in 4 shards, run once; then `merge_runs.py`
  timed alone (the merged dir removed between repetitions, outside the timing).

Every merged run is checked before its time counts: merge exit 0, `status: ok`, every
case `pass`, and the app served exactly one request per case. One machine plays every
"CI machine" here, so the shards share its cores with each other and with the app: on a
machine with fewer cores than shards the scaling is CPU-bound, not the design's limit.

Usage: `bench/shards.py [--quick] [--reps 2] [--json OUT]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
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

from assay.shard.assign import add_shards  # noqa: E402

RUNNER = ROOT / "scripts" / "run_cases.py"
MERGE = ROOT / "scripts" / "merge_runs.py"


def log(msg: str) -> None:
    print(f"[shards] {msg}", file=sys.stderr, flush=True)


def env_for(url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env[BASE_URL_ENV] = url
    return env


def run_shards(plan_path: Path, run_id: str, state: Path, count: int, env: dict[str, str]) -> tuple[float, list]:
    """Start every shard at once; (seconds from the first start to the last exit, [(rc, stdout)])."""
    t0 = time.perf_counter()
    procs = []
    for i in range(1, count + 1):
        out = state / "reports" / f"{run_id}.shard-{i}"
        procs.append(subprocess.Popen([sys.executable, str(RUNNER), "--plan", str(plan_path), "--shard", str(i),
                                       "--out", str(out), "--progress", "never"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env))
    results = [(p.wait(), p.stdout.read()) for p in procs]
    for p in procs:
        p.stdout.close()
    return time.perf_counter() - t0, results


def check_merged(out: Path, n: int, requests: int | None) -> list[str]:
    problems = []
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    s = results["summary"]
    if s["status"] != "ok" or results["exit_code"] != 0:
        problems.append(f"status {s['status']} exit {results['exit_code']}")
    if s["passes"] != n:
        problems.append(f"{s['passes']} of {n} cases pass")
    if requests is not None and requests != n:
        problems.append(f"the app served {requests} requests for {n} cases")
    return problems


def one_scaling_run(root: Path, app: BenchApp, n: int, concurrency: int, count: int, rep: int) -> dict:
    state = root / f"scale-{count}-{rep}" / ".assay"
    (state / "reports").mkdir(parents=True)
    run_id = f"smoke-2026010{count}T00{rep:02d}00Z"
    plan = add_shards(make_plan(n, state_dir=str(state), max_concurrency=concurrency, run_id=run_id), count)
    plan_path = write_plan(state / "work" / "plan.json", plan)
    env = env_for(app.base_url)
    app.reset_counters()
    shards_s, results = run_shards(plan_path, run_id, state, count, env)
    requests = app.counters()["requests"]
    problems = [f"shard {i} exit {rc}: {out.strip()[:200]}" for i, (rc, out) in enumerate(results, 1) if rc != 0]
    dirs = [str(state / "reports" / f"{run_id}.shard-{i}") for i in range(1, count + 1)]
    merge = timed_child([sys.executable, str(MERGE), "--plan", str(plan_path), "--out",
                         str(state / "reports" / run_id), *dirs], env=env)
    if merge.rc != 0:
        problems.append(f"merge exit {merge.rc}: {merge.stdout.strip()[:200]}")
    else:
        problems += check_merged(state / "reports" / run_id, n, requests)
    return {"shards": count, "rep": rep, "shards_s": round(shards_s, 3), "merge_s": round(merge.wall_s, 3),
            "total_s": round(shards_s + merge.wall_s, 3), "valid": not problems, "problems": problems}


def scaling(root: Path, n: int, latency_ms: float, concurrency: int, counts: list[int], reps: int) -> list[dict]:
    app = BenchApp(latency_ms)
    app.start()
    rows = []
    try:
        for count in counts:
            runs = []
            for rep in range(reps):
                run = one_scaling_run(root, app, n, concurrency, count, rep)
                log(f"{n} cases @ {latency_ms:g} ms, {count} shard(s), rep {rep + 1}: shards {run['shards_s']:.2f}s "
                    f"+ merge {run['merge_s']:.2f}s{'' if run['valid'] else ' INVALID ' + '; '.join(run['problems'])}")
                runs.append(run)
            valid = [r for r in runs if r["valid"]]
            ideal = n * latency_ms / 1000.0 / (concurrency * count)
            row = {"shards": count, "cases": n, "latency_ms": latency_ms, "max_concurrency": concurrency,
                   "ideal_s": round(ideal, 3), "runs": runs, "valid_runs": len(valid)}
            if valid:
                row["shards_s"] = summarize([r["shards_s"] for r in valid])
                row["merge_s"] = summarize([r["merge_s"] for r in valid])
                row["total_s"] = summarize([r["total_s"] for r in valid])
                row["over_ideal_pct"] = round((row["shards_s"]["median"] / ideal - 1) * 100, 1)
            rows.append(row)
    finally:
        app.stop()
    return rows


def merge_cost(root: Path, n: int, count: int, concurrency: int, reps: int) -> dict:
    app = BenchApp(0.0)
    app.start()
    try:
        state = root / "merge" / ".assay"
        (state / "reports").mkdir(parents=True)
        run_id = "smoke-20260109T000000Z"
        plan = add_shards(make_plan(n, state_dir=str(state), max_concurrency=concurrency, run_id=run_id), count)
        plan_path = write_plan(state / "work" / "plan.json", plan)
        env = env_for(app.base_url)
        shards_s, results = run_shards(plan_path, run_id, state, count, env)
        requests = app.counters()["requests"]
    finally:
        app.stop()
    bad = [f"shard {i} exit {rc}" for i, (rc, _) in enumerate(results, 1) if rc != 0]
    dirs = [str(state / "reports" / f"{run_id}.shard-{i}") for i in range(1, count + 1)]
    out = state / "reports" / run_id
    runs = []
    for rep in range(reps):
        if out.exists():
            shutil.rmtree(out)   # outside the timing: each repetition builds the merged dir from nothing
        merge = timed_child([sys.executable, str(MERGE), "--plan", str(plan_path), "--out", str(out), *dirs], env=env)
        problems = bad + ([f"merge exit {merge.rc}: {merge.stdout.strip()[:200]}"] if merge.rc != 0
                          else check_merged(out, n, requests))
        runs.append({"wall_s": round(merge.wall_s, 3), "cpu_s": round(merge.cpu_s, 3),
                     "maxrss_mb": round(merge.maxrss_mb, 1), "valid": not problems, "problems": problems})
        log(f"merge of {n} cases from {count} shards, rep {rep + 1}: {merge.wall_s:.2f}s wall, {merge.cpu_s:.2f}s cpu"
            f"{'' if not problems else ' INVALID ' + '; '.join(problems)}")
    valid = [r for r in runs if r["valid"]]
    row = {"cases": n, "shards": count, "shards_run_s": round(shards_s, 3), "runs": runs, "valid_runs": len(valid)}
    if valid:
        row["wall_s"] = summarize([r["wall_s"] for r in valid])
        row["cpu_s"] = summarize([r["cpu_s"] for r in valid])
        row["us_per_case"] = round(row["wall_s"]["median"] / n * 1e6, 1)
    return row


def markdown(doc: dict) -> str:
    lines = ["| shards | cases | latency | max_concurrency | ideal s | shards s (median) | over ideal | merge s | total s |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in doc["scaling"]:
        if not row.get("valid_runs"):
            lines.append(f"| {row['shards']} | {row['cases']} | — | — | — | no valid run | | | |")
            continue
        lines.append(f"| {row['shards']} | {row['cases']} | {row['latency_ms']:g} ms | {row['max_concurrency']} | "
                     f"{row['ideal_s']:.2f} | {row['shards_s']['median']:.2f} | {row['over_ideal_pct']:+.1f} % | "
                     f"{row['merge_s']['median']:.2f} | {row['total_s']['median']:.2f} |")
    m = doc["merge"]
    lines += ["", "| merge: cases | shards | wall s (median) | cpu s | µs per case |", "|---:|---:|---:|---:|---:|"]
    if m.get("valid_runs"):
        lines.append(f"| {m['cases']} | {m['shards']} | {m['wall_s']['median']:.2f} | {m['cpu_s']['median']:.2f} | "
                     f"{m['us_per_case']:.0f} |")
    else:
        lines.append(f"| {m['cases']} | {m['shards']} | no valid run | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/shards.py", description=__doc__.split("\n\n")[0],
                                 epilog="example: python3 bench/shards.py --reps 2 --json bench/out/shards.json")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repetition: a smoke test")
    ap.add_argument("--reps", type=int, default=2, help="repetitions per point (default 2)")
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--merge-cases", type=int, default=10_000)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    counts = [1, 2, 4]
    if args.quick:
        args.reps, args.cases, args.latency_ms, args.merge_cases, counts = 1, 40, 5.0, 100, [2]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="assay-bench-shards-") as tmp:
        root = Path(tmp)
        doc = {"started_at": started, "cpu_count": os.cpu_count(), "load_avg_at_start": os.getloadavg(),
               "scaling": scaling(root, args.cases, args.latency_ms, args.concurrency, counts, args.reps),
               "merge": merge_cost(root, args.merge_cases, 4 if not args.quick else 2, args.concurrency, args.reps)}
    doc["load_avg_at_end"] = os.getloadavg()
    print(markdown(doc))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2, sort_keys=True), encoding="utf-8")
    valid = all(r.get("valid_runs") for r in doc["scaling"]) and doc["merge"].get("valid_runs")
    return 0 if valid else 1


if __name__ == "__main__":
    sys.exit(main())
