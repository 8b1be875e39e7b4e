#!/usr/bin/env python3
"""Time to first failure: a regression run of the helpdesk example against its broken app.

    .venv/bin/python bench/first_failure.py                 # 5 rounds, prints JSON
    .venv/bin/python bench/first_failure.py --rounds 3 --json bench/out/first_failure.json

A copy of examples/helpdesk/.assay (in a temp dir) is converted and planned once in
regression mode (the judge stand-in judges, as in `make demo`); the example app runs with its
planted regressions (demo.py's App, `--break`). One run first, in plan order, gives the state
dir its history. Then each round runs the same plan twice, round-robin: `--order plan` and
`--order history` (each with a fresh run id, history = the runs before it, so every history
round reads the same kind of past), and times, from the run_cases process start, the first
`assay: FAIL` line on its stderr and the process's exit. Medians over rounds, the load
average before and after, and the failing cases' plan positions are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(ROOT / "examples" / "helpdesk"))

from demo import App, place_judge_standin, run_step  # noqa: E402
from measure import emit_json  # noqa: E402 (bench/ is the script's own directory)


def timed_run(plan: dict, plan_file: Path, state: Path, env: dict, order: str) -> dict:
    out = state / "reports" / plan["run_id"]
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(plan_file), "--out",
                             str(out), "--progress", "always", "--order", order],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    first, first_case = None, None
    for line in proc.stderr:
        if first is None and line.startswith("assay: FAIL "):
            first, first_case = time.monotonic() - t0, line.split()[2]
    stdout = proc.stdout.read()
    proc.wait()
    total = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"run_cases exit {proc.returncode}: {stdout[-2000:]}")
    return {"order": order, "run_id": plan["run_id"], "first_failure_s": first, "first_failure_case": first_case,
            "total_s": total, "order_used": json.loads(stdout)["order"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    load_before = os.getloadavg()
    root = Path(tempfile.mkdtemp(prefix="assay-ttff-"))
    state = root / "app" / ".assay"
    shutil.copytree(ROOT / "examples" / "helpdesk" / ".assay", state,
                    ignore=shutil.ignore_patterns("reports", "work"))
    (state / "work").mkdir()
    place_judge_standin(state)
    app = App(state / "work", broken=True, flaky=False)
    try:
        url = app.start()
        env = dict(os.environ, HELPDESK_BASE_URL=url, HELPDESK_OTLP_FILE=str(app.otlp_file))
        env.pop("PYTHONPATH", None)
        converted, split = state / "work" / "converted.json", state / "work" / "split"
        run_step("convert_suite", [str(SCRIPTS / "convert_suite.py"), str(state), "-o", str(converted),
                                   "--split-dir", str(split)], env)
        plan_file = state / "work" / "plan.json"
        run_step("make_plan", [str(SCRIPTS / "make_plan.py"), str(converted), "--mode", "regression",
                               "--state-dir", str(state), "-o", str(plan_file)], env)
        plan = json.loads(plan_file.read_text(encoding="utf-8"))
        stamp = [20260101, 0]

        def fresh() -> dict:
            stamp[1] += 1   # run ids one minute apart, in the past: each run's history is the runs before it
            return dict(plan, run_id=f"regression-{stamp[0]}T{stamp[1] // 60:02d}{stamp[1] % 60:02d}00Z")
        seed = timed_run(fresh(), plan_file, state, env, "plan")
        rows = []
        for _ in range(args.rounds):
            for order in ("plan", "history"):
                rows.append(timed_run(fresh(), plan_file, state, env, order))
        results = json.loads((state / "reports" / seed["run_id"] / "results.json").read_text(encoding="utf-8"))
    finally:
        app.stop()
    positions = [i for i, row in enumerate(results.get("cases") or []) if row.get("verdict") == "fail"]
    out = {"what": "regression run of examples/helpdesk against its broken app (BREAK=1), run_cases process",
           "cases": results["summary"]["n"], "failures": results["summary"]["failures"],
           "failing_plan_positions": positions, "rounds": args.rounds,
           "load_avg_before": [round(x, 2) for x in load_before],
           "load_avg_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(), "runs": rows}
    for order in ("plan", "history"):
        mine = [r for r in rows if r["order"] == order]
        out[order] = {"first_failure_s_median": round(statistics.median(r["first_failure_s"] for r in mine), 3),
                      "total_s_median": round(statistics.median(r["total_s"] for r in mine), 3),
                      "first_failure_case": sorted({r["first_failure_case"] for r in mine})}
    shutil.rmtree(root, ignore_errors=True)
    emit_json(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
