#!/usr/bin/env python3
"""CPU of the example's pipeline scripts that meet a user's expect.format.json_schema.

    .venv/bin/python bench/user_schema.py --scripts OLD/scripts --scripts scripts --rounds 5

For each scripts dir (a checkout's `scripts/`; default this one's): a copy of
examples/helpdesk/.assay is converted once, then `validate_cases.py` and `make_plan.py --mode
smoke` run `--rounds` times, and `run_cases.py` runs the smoke plan `--rounds` times against the
example app (demo.py's App, not broken), each run with a fresh run id. Every child is timed
alone (measure.timed_child, os.wait4): user+sys CPU seconds, medians over rounds, with the load
average before and after. `imports_jsonschema` says whether the child imported it (-X importtime).
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
sys.path.insert(0, str(ROOT / "examples" / "helpdesk"))

from demo import App, place_judge_standin, run_step  # noqa: E402
from measure import emit_json, summarize, timed_child  # noqa: E402


def timed(argv: list[str], env: dict, log: Path) -> dict:
    run = timed_child([sys.executable, "-X", "importtime", *argv], env=env, cwd=str(ROOT), log_dir=log)
    if run.rc not in (0, 1):
        raise SystemExit(f"{Path(argv[0]).name} exit {run.rc}: {run.stdout[-800:]} {run.stderr[-1500:]}")
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("import time:")]
    return {"cpu_s": run.cpu_s, "imports_jsonschema": any(ln.rstrip().endswith("| jsonschema") for ln in lines)}


def measure(scripts: Path, rounds: int, root: Path, n: int) -> dict:
    state = root / f"tree{n}" / "app" / ".assay"
    shutil.copytree(ROOT / "examples" / "helpdesk" / ".assay", state, ignore=shutil.ignore_patterns("reports", "work"))
    (state / "work").mkdir()
    place_judge_standin(state)
    app = App(state / "work", broken=False, flaky=False)
    rows: dict[str, list[dict]] = {"validate_cases": [], "make_plan": [], "run_cases": []}
    try:
        url = app.start()
        env = dict(os.environ, HELPDESK_BASE_URL=url, HELPDESK_OTLP_FILE=str(app.otlp_file))
        env.pop("PYTHONPATH", None)
        work = state / "work"
        converted, split = work / "converted.json", work / "split"
        run_step("convert_suite", [str(scripts / "convert_suite.py"), str(state), "-o", str(converted),
                                   "--split-dir", str(split)], env)
        plan_file = work / "plan.json"
        for i in range(rounds):
            rows["validate_cases"].append(timed(
                [str(scripts / "validate_cases.py"), "--cases", str(converted), "--capabilities",
                 str(split / "capabilities.json"), "--adapter", str(split / "adapter.json")], env, work / f"v{i}"))
            rows["make_plan"].append(timed(
                [str(scripts / "make_plan.py"), str(converted), "--mode", "smoke", "--state-dir", str(state),
                 "-o", str(plan_file), "--run-id", f"smoke-20260101T00{i:02d}00Z"], env, work / f"p{i}"))
        plan = json.loads(plan_file.read_text(encoding="utf-8"))
        for i in range(rounds):
            plan["run_id"] = f"smoke-20260102T00{i:02d}00Z"
            plan_file.write_text(json.dumps(plan), encoding="utf-8")
            rows["run_cases"].append(timed(
                [str(scripts / "run_cases.py"), "--plan", str(plan_file), "--out", str(state / "reports" / plan["run_id"])],
                env, work / f"r{i}"))
    finally:
        app.stop()
    return {name: {"cpu_s": summarize([r["cpu_s"] for r in runs]),
                   "imports_jsonschema": sorted({r["imports_jsonschema"] for r in runs})}
            for name, runs in rows.items()} | {"cases": len(plan["cases"])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scripts", type=Path, action="append", help="a checkout's scripts/ (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="assay-user-schema-"))
    out = {"what": "CPU (user+sys s) of validate_cases / make_plan / run_cases on examples/helpdesk (smoke)",
           "rounds": args.rounds, "cpus": os.cpu_count(), "load_avg_before": [round(x, 2) for x in os.getloadavg()]}
    for n, scripts in enumerate(args.scripts or [ROOT / "scripts"]):
        out[str(scripts)] = measure(scripts.resolve(), args.rounds, root, n)
    out["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    shutil.rmtree(root, ignore_errors=True)
    emit_json(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
