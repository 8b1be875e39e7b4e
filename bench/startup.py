#!/usr/bin/env python3
"""The CPU one invocation of each much-spawned command costs (start-up: interpreter, imports, regex compiles,
and its own small work), and A/B between two checkouts' scripts on the same machine.

    .venv/bin/python bench/startup.py                                  # this checkout, 30 runs per command
    .venv/bin/python bench/startup.py --scripts OLD/scripts --scripts scripts --reps 30 --json out.json
    .venv/bin/python bench/startup.py --quick                          # a smoke version (seconds)

Set-up, once: a copy of the example helpdesk's state dir in a temp dir, its app on a free port, and
convert_suite.py, make_plan.py (smoke) and one real run_cases.py run, so that every command below has
real input. Then each command runs --reps times per scripts tree, round-robin (A B A B ...), so the
machine's drift hits every tree alike. A figure is the median of the child's own user+sys CPU
(os.wait4's rusage, microseconds; not wall, which the load moves far more). `run` is a whole real run
of the example's smoke plan (20 cases, the judge stand-in included): its start-up is a small part of it.
The result says whether each tree had compiled bytecode: with PYTHONDONTWRITEBYTECODE=1 and no
__pycache__, every invocation also compiles every module it imports (bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HELPDESK = ROOT / "examples" / "helpdesk"
sys.path.insert(0, str(HERE))

from measure import emit_json  # noqa: E402


def commands(state: Path, run_dir: Path) -> dict[str, list[str]]:
    """name -> argv after the script dir's path is put in front of the first item."""
    work = state / "work"
    return {
        "gate": ["gate.py", str(run_dir)],
        "gate_json": ["gate.py", str(run_dir), "--json"],
        "wait_run": ["wait_run.py", str(run_dir), "--timeout-s", "0"],
        "convert_suite": ["convert_suite.py", str(state), "-o", str(work / "converted-again.json")],
        "validate_cases": ["validate_cases.py", "--cases", str(work / "converted.json"),
                           "--capabilities", str(work / "split" / "capabilities.json"),
                           "--adapter", str(work / "split" / "adapter.json")],
        "make_plan": ["make_plan.py", str(work / "converted.json"), "--mode", "smoke", "--state-dir", str(state),
                      "-o", str(work / "plan-again.json")],
        "run_dry_run": ["run_cases.py", "--plan", str(work / "plan.json"), "--dry-run"],
        "run_verify": ["run_cases.py", "--verify", str(run_dir)],
        "run": ["run_cases.py", "--plan", str(work / "plan.json"), "--out", str(run_dir), "--progress", "never"],
    }


def child_cpu_ms(argv: list[str], env: dict[str, str], ok: set[int]) -> float:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        raise SystemExit(f"bench: {' '.join(argv)} exited {code}:\n{out.decode(errors='replace')[-2000:]}")
    return (usage.ru_utime + usage.ru_stime) * 1000


def app_class():
    spec = importlib.util.spec_from_file_location("helpdesk_demo", HELPDESK / "demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.App


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scripts", action="append", help="a scripts/ dir (twice for A/B; default this checkout's)")
    ap.add_argument("--reps", type=int, default=30, help="runs per command and tree (default 30)")
    ap.add_argument("--only", action="append", help="only this command (repeatable)")
    ap.add_argument("--quick", action="store_true", help="2 runs per command: a smoke test")
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args(argv)
    trees = [str(Path(s).resolve()) for s in (args.scripts or [str(ROOT / "scripts")])]
    reps = 2 if args.quick else args.reps
    root = Path(tempfile.mkdtemp(prefix="assay-startup-"))
    app = None
    try:
        state = root / ".assay"
        shutil.copytree(HELPDESK / ".assay", state, ignore=shutil.ignore_patterns("work", "reports"))
        shutil.copy2(HELPDESK / "judge_standin.py", root / "judge_standin.py")   # judge.yaml runs it from there
        (state / "work").mkdir()
        (root / "app").mkdir()
        app = app_class()(root / "app", broken=False, flaky=False)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BREAK", "FLAKY")}
        env.update(HELPDESK_BASE_URL=app.start(), HELPDESK_OTLP_FILE=str(app.otlp_file))
        first, py = trees[0], sys.executable
        work = state / "work"
        child_cpu_ms([py, f"{first}/convert_suite.py", str(state), "-o", str(work / "converted.json"),
                      "--split-dir", str(work / "split")], env, {0})
        child_cpu_ms([py, f"{first}/make_plan.py", str(work / "converted.json"), "--mode", "smoke",
                      "--state-dir", str(state), "-o", str(work / "plan.json")], env, {0})
        run_dir = state / "reports" / json.loads((work / "plan.json").read_text(encoding="utf-8"))["run_id"]
        cmds = commands(state, run_dir)
        child_cpu_ms([py, f"{first}/{cmds['run'][0]}", *cmds["run"][1:]], env, {0})
        names = args.only or list(cmds)
        samples: dict[str, dict[str, list[float]]] = {name: {t: [] for t in trees} for name in names}
        loads = []
        for name in names:
            for _ in range(reps):
                for tree in trees:
                    if name == "run":   # the same plan again: its run dir goes first
                        shutil.rmtree(run_dir)
                    ok = {0, 1} if name.startswith("gate") else {0}   # a closed gate is a result
                    samples[name][tree].append(child_cpu_ms([py, f"{tree}/{cmds[name][0]}", *cmds[name][1:]], env, ok))
                loads.append(os.getloadavg()[0])
            line = "  ".join(f"{statistics.median(samples[name][t]):7.1f}" for t in trees)
            print(f"{name:15s} {line}  ms CPU (median of {reps})", file=sys.stderr, flush=True)
        doc = {
            "reps": reps, "trees": trees, "unit": "ms CPU (user+sys) per invocation, median",
            "bytecode": {t: (Path(t) / "assay" / "__pycache__").is_dir() for t in trees},
            "dont_write_bytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
            "load_1min": [min(loads), max(loads)] if loads else None, "cpus": os.cpu_count(),
            "medians": {name: [round(statistics.median(samples[name][t]), 1) for t in trees] for name in names},
        }
        if len(trees) == 2:
            doc["change_pct"] = {name: round((b - a) / a * 100, 1) for name, (a, b) in doc["medians"].items()}
        emit_json(doc, args.json)
        return 0
    finally:
        if app is not None:
            app.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
