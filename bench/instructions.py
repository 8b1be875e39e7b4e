#!/usr/bin/env python3
"""The runner's cost in instructions: start-up and per case, a figure other load cannot move.

    .venv/bin/python bench/instructions.py                          # this checkout
    .venv/bin/python bench/instructions.py --runner OLD/scripts/run_cases.py --runner scripts/run_cases.py
    .venv/bin/python bench/instructions.py --cases 201 --reps 2 --json out.json

On a shared machine wall time and even CPU seconds move with the load (the CPU time of the same
work grows when other processes share the cores and caches). The number of instructions the
runner's process executes does not: each runner is run under valgrind's cachegrind (no cache
simulation: it only counts instructions, `Ir`) on a 1-case plan and on an N-case plan (the bench
plan of bench/run.py, a 0 ms app, max_concurrency 8, run dirs on tmpfs when there is one).
Start-up = the 1-case run (interpreter, imports, plan, manifest, the one case, finalize);
per case = (Ir(N) - Ir(1)) / (N - 1). Child processes (the regex workers) are not counted.
Under valgrind the runner is ~30x slower, so N is small (default 201): a few minutes per run.
Every run must be valid (exit 0, every case passed, the app served every case). Needs `valgrind`.

The environment counts: with PYTHONDONTWRITEBYTECODE=1 and no __pycache__ beside the scripts, every
start compiles every module it imports (the start-up figure then includes it; see bench/RESULTS.md).
The result records whether it was set and whether the runner's package had compiled bytecode.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "scripts"))

from app import BenchApp  # noqa: E402
from measure import emit_json, timed_child  # noqa: E402
from scenarios import RUNNER, Bench  # noqa: E402
from suite import RUN_ID  # noqa: E402


def instructions(bench: Bench, app: BenchApp, root: Path, n: int, tag: str) -> int:
    plan, state = bench.plan_for(root, f"{tag}-{n}", n, 8)
    out = state / "reports" / "r" / RUN_ID
    cg_out = root / f"{tag}-{n}.cachegrind"
    argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={cg_out}",
            *bench.runner_argv("--plan", str(plan), "--out", str(out), *bench.extra_flags)]
    app.reset_counters()
    run = timed_child(argv, env=bench.env(app.base_url), log_dir=root / f"{tag}-{n}-logs", timeout_s=3600)
    from scenarios import check_run
    problems = check_run(run, out, n, app.counters(), n)
    if problems:
        raise SystemExit(f"bench: invalid run ({bench.runner}, {n} cases): {problems}")
    for line in cg_out.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise SystemExit(f"bench: no cachegrind summary in {cg_out}")


def has_bytecode(runner: Path) -> bool:
    return any((runner.parent / "assay").rglob("*.pyc"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", action="append", type=Path, help="a run_cases.py (repeatable; default this checkout's)")
    ap.add_argument("--cases", type=int, default=201)
    ap.add_argument("--reps", type=int, default=1, help="runs of each size per runner (the median is reported)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("bench: valgrind is not installed (apt-get install valgrind)")
    runners = [r.resolve() for r in (args.runner or [RUNNER])]
    root = Path(tempfile.mkdtemp(prefix="assay-instr-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    app = BenchApp(0.0)
    app.start()
    result: dict = {"cases": args.cases, "reps": args.reps, "what": "instructions (valgrind cachegrind Ir) of the "
                    "runner process: start-up = a 1-case run, per case = (Ir(N) - Ir(1)) / (N - 1)",
                    "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE"), "runners": []}
    try:
        for i, runner in enumerate(runners):
            bench = Bench(lambda m: print(m, file=sys.stderr, flush=True), runner=runner)
            bench.probe_flags(root / f"r{i}")
            ones, many = [], []
            for rep in range(args.reps):   # alternate sizes so a drift in the app hits both alike
                ones.append(instructions(bench, app, root, 1, f"r{i}x{rep}"))
                many.append(instructions(bench, app, root, args.cases, f"r{i}x{rep}"))
            one, big = statistics.median(ones), statistics.median(many)
            row = {"runner": str(runner), "bytecode_present": has_bytecode(runner), "start_up_Ir": one,
                   "per_case_Ir": (big - one) / (args.cases - 1), "runs_1": ones, f"runs_{args.cases}": many}
            print(f"{runner}: start-up {one / 1e6:.0f} M instructions, per case {row['per_case_Ir'] / 1e6:.2f} M",
                  file=sys.stderr, flush=True)
            result["runners"].append(row)
    finally:
        app.stop()
        shutil.rmtree(root, ignore_errors=True)
    emit_json(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
