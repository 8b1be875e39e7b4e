#!/usr/bin/env python3
"""The two first bars alone, and A/B between runner versions on the same machine.

    .venv/bin/python bench/first_bars.py                       # this checkout, 7 rounds
    .venv/bin/python bench/first_bars.py --runner OLD/scripts/run_cases.py --runner scripts/run_cases.py
    .venv/bin/python bench/first_bars.py --quick               # a smoke version (seconds)

Bars (quality.md): the runner's own cost at max_concurrency 8 against a 0 ms app is at
most 2 ms per case (net of start-up), and 2,000 cases against a 50 ms app at
max_concurrency 16 finish within 10 % of the ideal (cases x latency / concurrency).
Each round runs every runner once on each scenario, round-robin (A B A B ...), so the
machine's drift hits every runner alike; the result is the median over rounds, and, with
two runners, the median of the per-round ratios (B / A), which is what to trust on a
shared machine. Run dirs live on tmpfs (/dev/shm) when it exists: the runner's own cost,
free of the disk (bench/run.py measures the disk too). Prints JSON; --json FILE writes it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "scripts"))

from app import BenchApp  # noqa: E402
from scenarios import RUNNER, Bench  # noqa: E402
from suite import RUN_ID  # noqa: E402
from measure import emit_json  # noqa: E402 (bench/ is the script's own directory)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", action="append", type=Path,
                    help="a run_cases.py to measure (repeatable; default this checkout's)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="40 cases, 1 round: a smoke test")
    ap.add_argument("--only", choices=("overhead_c8", "c16_at_50ms"), help="measure one of the two bars")
    ap.add_argument("--json", type=Path, help="also write the result here")
    args = ap.parse_args()
    runners = [r.resolve() for r in (args.runner or [RUNNER])]
    rounds, n = (1, 40) if args.quick else (args.rounds, args.cases)
    root = Path(tempfile.mkdtemp(prefix="assay-bars-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    fast, slow = BenchApp(0.0), BenchApp(50.0)
    fast.start()
    slow.start()
    benches = [Bench(log, runner=r) for r in runners]
    scen = {"overhead_c8": (fast, 8), "c16_at_50ms": (slow, 16)}
    if args.only:
        scen = {args.only: scen[args.only]}
    rows: dict[str, dict[str, list[float]]] = {str(i): {k: [] for k in scen} for i in range(len(runners))}
    ideal_s = n * 0.050 / 16
    try:
        for i, b in enumerate(benches):
            b.probe_flags(root / f"r{i}")
            b.startup(root / f"r{i}", 5)
        for rnd in range(rounds):
            for key, (app, conc) in scen.items():
                for i, b in enumerate(benches):
                    plan, state = b.plan_for(root / f"r{i}", key, n, conc)
                    out = state / "reports" / f"round{rnd}" / RUN_ID
                    _run, rec = b.one_run(app, plan, out, n, expect_requests=n)
                    if not rec["valid"]:
                        raise SystemExit(f"invalid run ({runners[i]}): {rec['problems']}")
                    value = rec["net_ms_per_case"] if key == "overhead_c8" else 100.0 * (rec["wall_s"] / ideal_s - 1)
                    rows[str(i)][key].append(value)
                    log(f"round {rnd + 1}/{rounds} {key} runner {i}: {value:.2f} "
                        f"({'ms/case net' if key == 'overhead_c8' else '% over ideal'}, load {rec['loadavg_1m'][0]:.1f})")
    finally:
        fast.stop()
        slow.stop()
    result: dict = {"cases": n, "rounds": rounds, "ideal_s_c16": ideal_s, "runners": [str(r) for r in runners],
                    "bars": {"overhead_c8_ms_per_case": 2.0, "c16_at_50ms_pct_over_ideal": 10.0},
                    "medians": {}, "machine_loadavg_end": os.getloadavg()[0]}
    for i in rows:
        result["medians"][i] = {k: round(statistics.median(v), 3) for k, v in rows[i].items() if v}
        result["medians"][i]["all"] = {k: [round(x, 3) for x in v] for k, v in rows[i].items()}
    if len(runners) == 2:
        a, b = rows["0"], rows["1"]
        result["ratio_b_over_a"] = {}
        if a.get("overhead_c8"):
            result["ratio_b_over_a"]["overhead_c8"] = round(statistics.median(
                y / x for x, y in zip(a["overhead_c8"], b["overhead_c8"])), 3)
        if a.get("c16_at_50ms"):
            result["ratio_b_over_a"]["c16_wall"] = round(statistics.median(
                (100 + y) / (100 + x) for x, y in zip(a["c16_at_50ms"], b["c16_at_50ms"])), 3)
    emit_json(result, args.json)
    os.system(f"rm -rf '{root}' &")
    return 0


if __name__ == "__main__":
    sys.exit(main())
