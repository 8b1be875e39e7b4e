#!/usr/bin/env python3
"""Viewer: GET /api/history over a state dir of --runs real runs, cold and warm.

Writes (or reuses, --state DIR) a state dir of --runs real runs: run_cases.py against a local fake app
(tests/fakeapp), --cases cases each (one suite: one series), the app answering each of the first two cases
wrong one time in three (seeded: flaky cases, regressions and fixes to find); one run in the middle with a
failing case is then edited to read pass (its results.json and verdict files: what a hand "fix" of a red run
looks like; its completeness check fails). Then, --reps times and for each scripts dir (this tree's,
and --before's when given, alternated): starts `view.py STATE` as a subprocess, times the first
GET /api/history (cold: every run's gate decision is computed, the viewer's own check of a small run
included) and a second one (warm: every decision known). Prints JSON: per scripts dir the cold and warm
times (each rep, and the median), runs_used, excluded_runs and the load average.

Usage: `bench/view_history.py [--runs 200] [--cases 5] [--reps 3] [--state DIR] [--before SCRIPTS_DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan  # noqa: E402


def run_id(i: int) -> str:
    day, hour = divmod(i, 24)
    return f"regression-2026{1 + day // 28:02d}{1 + day % 28:02d}T{hour:02d}0000Z"


def build(root: Path, runs: int, n_cases: int) -> Path:
    state = make_state(root)

    rng, lock = random.Random(7), threading.Lock()

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = str((req.json or {}).get("message", ""))
        with lock:
            wrong = msg in ("hello 0", "hello 1") and rng.random() < 1 / 3
        return Reply(200, {"message": "sorry" if wrong else f"echo: {msg}"})

    def one(i: int) -> None:
        cases = [case(f"c-{j:03d}", f"hello {j}", expect={"answer": {"must_contain": [f"hello {j}"]}})
                 for j in range(n_cases)]
        plan = make_plan(state, cases, app_url=app.url, run_id=run_id(i), mode="regression",
                         selecting_split="smoke")
        path = write_plan(state, plan, name=f"plan-{i}.json")
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_cases.py"), "--plan", str(path),
                            "--out", str(state / "reports" / run_id(i)), "--progress", "never"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode not in (0, 1):
            raise SystemExit(f"run_cases.py exit {r.returncode}: {r.stdout}{r.stderr}")

    with FakeApp(handler) as app, ThreadPoolExecutor(2) as pool:
        list(pool.map(one, range(runs)))
    for i in range(runs // 2, runs):
        if '"verdict": "fail"' in (state / "reports" / run_id(i) / "verdicts.jsonl").read_text(encoding="utf-8"):
            tamper(state / "reports" / run_id(i))
            break
    return state


def tamper(run_dir: Path) -> None:
    """Every fail reads pass in results.json and the verdict files (the case records left as they are)."""
    for name in ("verdicts.jsonl", "verdicts_for_stats.jsonl"):
        p = run_dir / name
        p.write_text(p.read_text(encoding="utf-8").replace('"verdict": "fail"', '"verdict": "pass"'), encoding="utf-8")
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    s = doc["summary"]
    s["passes"], s["failures"], s["gating_failures"] = s["passes"] + s["failures"], 0, 0
    (run_dir / "results.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")


def measure(scripts: Path, state: Path) -> dict:
    proc = subprocess.Popen([sys.executable, str(scripts / "view.py"), str(state), "--port", "0",
                             "--serve-seconds", "900"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = json.loads(proc.stdout.readline())["url"]
        times, doc = [], None
        for _ in range(2):
            t0 = time.perf_counter()
            with urllib.request.urlopen(url + "api/history", timeout=900) as resp:
                doc = json.loads(resp.read())
            times.append(time.perf_counter() - t0)
        return {"cold_s": round(times[0], 3), "warm_s": round(times[1], 3), "runs_used": doc.get("runs_used"),
                "excluded_runs": len(doc.get("excluded_runs") or []),
                "runs_verified": doc.get("runs_verified"), "flaky_cases": len(doc.get("flaky_cases") or []),
                "changed_cases": len(doc.get("changed_cases") or []),
                "drift_last": [((s.get("drift") or {}).get("last") or {}).get("run_id") for s in doc.get("series") or []]}
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--cases", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--state", help="a state dir this script wrote before (reused), or where to write one")
    ap.add_argument("--before", help="another tree's scripts/ dir to time in turn")
    args = ap.parse_args()
    written = [d for d in (Path(args.state), Path(args.state) / "app" / ".assay") if (d / "reports").is_dir()] \
        if args.state else []
    if written:
        state = written[0]
    else:
        root = Path(args.state) if args.state else Path(tempfile.mkdtemp(prefix="assay-bench-history-"))
        t0 = time.perf_counter()
        state = build(root, args.runs, args.cases)
        print(f"built {args.runs} runs in {time.perf_counter() - t0:.0f} s: {state}", file=sys.stderr)
    trees = {"after": ROOT / "scripts"}
    if args.before:
        trees = {"before": Path(args.before), **trees}
    out: dict = {name: [] for name in trees}
    for _ in range(args.reps):
        for name, scripts in trees.items():
            out[name].append(measure(scripts, state))
    summary = {name: {"cold_median_s": statistics.median(r["cold_s"] for r in reps),
                      "warm_median_s": statistics.median(r["warm_s"] for r in reps), "reps": reps}
               for name, reps in out.items()}
    print(json.dumps({"state": str(state), "runs": len(list((state / "reports").glob("regression-*"))),
                      "loadavg": os.getloadavg(), **summary}, indent=2))


if __name__ == "__main__":
    main()
