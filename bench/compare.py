#!/usr/bin/env python3
"""Compare: `compare_runs.py` on a 10,000-case pair of real runs.

Two runs of the bench suite (bench/suite.py: every case asserts http, routing, answer and
execution) against the bench app at 0 ms, `max_concurrency` 16, in one state dir:

- the base run, as the app answers;
- the candidate run, with every 50th case's answer changed by the app (its must_contain
  fails: newly failing) and every 70th case's expectation edited in the plan (a new
  must_not_contain: expectation_changed, its case_sha256 differs).

Then `compare_runs.py BASE CAND -o compare.json --html compare.html` is timed alone, as a
subprocess (wall, CPU, peak RSS), `--reps` times. A timing counts only when compare exits 0
and its buckets are exactly what the two runs must give (the counts are checked).

Usage: `bench/compare.py [--cases 10000] [--reps 3] [--json OUT]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts"))

import app as bench_app  # noqa: E402
from app import BenchApp  # noqa: E402
from measure import summarize, timed_child  # noqa: E402
from suite import BASE_URL_ENV, make_plan, write_plan  # noqa: E402

RUNNER = ROOT / "scripts" / "run_cases.py"
COMPARE = ROOT / "scripts" / "compare_runs.py"
BREAK_EVERY = 50
EDIT_EVERY = 70


def log(msg: str) -> None:
    print(f"[compare] {msg}", file=sys.stderr, flush=True)


def load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def expected_counts(n: int) -> dict[str, int]:
    edited = {i for i in range(n) if i % EDIT_EVERY == 0}
    broken = {i for i in range(n) if i % BREAK_EVERY == 0} - edited
    return {"expectation_changed": len(edited), "newly_failing": len(broken),
            "still_passing": n - len(edited) - len(broken)}


def run_suite(state: Path, plan: dict, url: str) -> Path:
    path = write_plan(state / "work" / f"{plan['run_id']}.json", plan)
    out = state / "reports" / plan["run_id"]
    env = dict(os.environ, **{BASE_URL_ENV: url})
    env.pop("PYTHONPATH", None)
    child = timed_child([sys.executable, str(RUNNER), "--plan", str(path), "--out", str(out), "--progress", "never"],
                        env=env)
    if child.rc != 0:
        raise SystemExit(f"run_cases exit {child.rc}: {child.stdout[-300:]}")
    log(f"{plan['run_id']}: {len(plan['cases'])} cases in {child.wall_s:.1f}s")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=10_000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", help="write the result here")
    args = p.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="assay-bench-compare-"))
    state = root / ".assay"
    (state / "reports").mkdir(parents=True)
    original = bench_app.expected_for
    server = BenchApp(0)
    url = server.start()
    load_start = load()
    try:
        base = run_suite(state, make_plan(args.cases, state_dir=str(state), max_concurrency=16,
                                          run_id="smoke-20260101T000000Z"), url)

        def broken(n: int) -> dict:
            reply = original(n)
            if n % BREAK_EVERY == 0:
                reply = dict(reply, answer=f"Case {n}: something else entirely.")
            return reply
        bench_app.expected_for = broken
        plan = make_plan(args.cases, state_dir=str(state), max_concurrency=16, run_id="smoke-20260101T000100Z")
        for i, case in enumerate(plan["cases"]):
            if i % EDIT_EVERY == 0:
                case["expect"]["answer"]["must_not_contain"] = list(case["expect"]["answer"].get("must_not_contain")
                                                                    or []) + ["an edited expectation"]
        cand = run_suite(state, plan, url)
    finally:
        bench_app.expected_for = original
        server.stop()
    want = expected_counts(args.cases)
    walls, cpus, rss, valid = [], [], [], True
    for rep in range(args.reps):
        out = root / f"compare-{rep}.json"
        child = timed_child([sys.executable, str(COMPARE), str(base), str(cand), "-o", str(out),
                             "--html", str(root / f"compare-{rep}.html")])
        counts = json.loads(out.read_text())["counts"] if child.rc == 0 else {}
        ok = child.rc == 0 and all(counts.get(k) == v for k, v in want.items()) \
            and sum(counts.values()) == args.cases
        valid &= ok
        walls.append(child.wall_s)
        cpus.append(child.user_s + child.sys_s)
        rss.append(child.maxrss_mb)
        log(f"rep {rep + 1}: {child.wall_s:.2f}s wall, {child.user_s + child.sys_s:.2f}s cpu, "
            f"{child.maxrss_mb:.0f} MB{'' if ok else ' INVALID: ' + json.dumps(counts)}")
    html_mb = (root / "compare-0.html").stat().st_size / 1e6 if (root / "compare-0.html").exists() else None
    result = {"cases": args.cases, "expected_counts": want, "valid": valid, "wall_s": summarize(walls),
              "cpu_s": summarize(cpus), "max_rss_mb": max(rss) if rss else None, "html_mb": html_mb,
              "load_start": load_start, "load_end": load()}
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(root, ignore_errors=True)
    return 0 if valid else 1


if __name__ == "__main__":
    sys.exit(main())
