#!/usr/bin/env python3
"""The statistics at scale: Fisher's exact (run_history's drift test), Wilson, Clopper-Pearson
and the paired comparison's exact tests, in milliseconds; before/after between checkouts.

    .venv/bin/python bench/stats.py                          # this checkout
    .venv/bin/python bench/stats.py --scripts OLD/scripts    # another checkout's assay (before)
    .venv/bin/python bench/stats.py --json bench/out/stats.json --timeout 120

Each figure runs in its own child process (so one that takes minutes is cut at --timeout
and reported as such, not waited for), `--repeat` times inside it; the median is reported,
with the machine's load average before and after. The inputs are fixed:

- fisher_60k:   the last run 1,860/2,000 against 57,000/60,000 pooled earlier cases
- fisher_200k:  94,000/100,000 against 94,300/100,000
- wilson_100k:  95,000 of 100,000
- clopper_pearson_100k: 95,000 of 100,000, and 1 of 100,000
- paired_tests_100k: P(candidate better), the sign test and McNemar over 100,000 paired
  cases with 10,000 fixed and 5,000 broken
- paired_mde_100k: the minimum detectable improvement and worsening at n = 100,000 (compare()
  computes both): a baseline of 20,000 failing and 80,000 passing, 10,000 fixed and 5,000 broken
- paired_mde_100k_one_way: the same for compare_runs' bench shape (bench/compare.py at 100,000): a
  baseline all passing, 2,000 newly failing (every 50th case)
- paired_compare_100k: the whole comparison.json (paired.compare()) over 100,000 paired rows with
  10,000 fixed and 5,000 broken: the tests, both effects, the "half of it" and advice searches
- paired_compare_100k_one_way: the same for compare_runs' bench shape (every 50th case newly failing
  against an all-passing baseline): the statistics compare_runs.py computes at 100,000
- stats_py_100k (process): `scripts/stats.py BASE CAND` on two 100,000-line verdicts_for_stats.jsonl
  files (the same split), through bench/measure.py's launcher: wall and peak RSS of that process

The first repeat in each child is cold (the critical-count table is built then); `times_ms` lists
every repeat, so cold and warm are both there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from measure import emit_json  # noqa: E402 (bench/ is the script's own directory)

HERE = Path(__file__).resolve().parent

FIGURES = {
    "fisher_60k": ("from assay.stats.proportions import fisher_exact_two_sided as f", "f(1860, 140, 57000, 3000)"),
    "fisher_200k": ("from assay.stats.proportions import fisher_exact_two_sided as f", "f(94000, 6000, 94300, 5700)"),
    "wilson_100k": ("from assay.stats.proportions import wilson_interval as f", "f(95000, 100000)"),
    "clopper_pearson_100k": ("from assay.calibrate.intervals import clopper_pearson as f",
                             "(f(95000, 100000), f(1, 100000))"),
    "paired_tests_100k": ("from assay.stats import paired as p",
                          "(p.posterior_better(10000, 5000), p.posterior_better(5000, 10000), "
                          "p.sign_test_one_sided(10000, 5000), p.mcnemar_exact_two_sided(10000, 5000))"),
    "paired_mde_100k": ("from assay.stats import power as w\nb = w.Baseline(20000, 80000, 10000, 5000)",
                        "(b.mde(True, 0.05), b.mde(False, 0.05))"),
    "paired_mde_100k_one_way": ("from assay.stats import power as w\nb = w.Baseline(0, 100000, 0, 2000)",
                                "(b.mde(True, 0.05), b.mde(False, 0.05))"),
    "paired_compare_100k": ("from assay.stats import paired as p\n" + "\n".join([
        "base = [{'case_id': f'c{i:06d}', 'verdict': 'fail' if i < 20000 else 'pass'} for i in range(100000)]",
        "cand = [{'case_id': f'c{i:06d}', 'verdict': ('pass' if i < 10000 else 'fail') if i < 20000 else",
        "        ('fail' if i < 25000 else 'pass')} for i in range(100000)]"]),
                            "{k: v for k, v in p.compare(base, cand).items() if k.startswith(('min_', 'verdict'))}"),
    "paired_compare_100k_one_way": ("from assay.stats import paired as p\n" + "\n".join([
        "base = [{'case_id': f'c{i:06d}', 'verdict': 'pass'} for i in range(100000)]",
        "cand = [{'case_id': f'c{i:06d}', 'verdict': 'fail' if i % 50 == 0 else 'pass'} for i in range(100000)]"]),
                                    "{k: v for k, v in p.compare(base, cand).items() if k.startswith(('min_', 'verdict'))}"),
}
PROCESS = ("stats_py_100k",)

CHILD = """
import sys, time, json
sys.path.insert(0, {scripts!r})
{setup}
times = []
for _ in range({repeat}):
    t0 = time.perf_counter(); value = {call}; times.append(time.perf_counter() - t0)
print(json.dumps({{"times_ms": [round(t * 1000, 3) for t in times], "value": repr(value)[:200]}}))
"""


def measure(name: str, scripts: Path, repeat: int, timeout: float) -> dict:
    setup, call = FIGURES[name]
    code = CHILD.format(scripts=str(scripts), setup=setup, call=call, repeat=repeat)
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timed_out_after_s": timeout}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    doc = json.loads(proc.stdout)
    return {"median_ms": statistics.median(doc["times_ms"]), "times_ms": doc["times_ms"], "value": doc["value"]}


def stats_process(scripts: Path, repeat: int, timeout: float) -> dict:
    """scripts/stats.py on two 100,000-line files, as a user runs it: wall and peak RSS per repeat."""
    import tempfile
    from measure import timed_child
    runs = []
    with tempfile.TemporaryDirectory(prefix="assay-bench-stats-") as tmp:
        base, cand = Path(tmp) / "base.jsonl", Path(tmp) / "cand.jsonl"
        with open(base, "w") as b, open(cand, "w") as c:
            for i in range(100_000):
                b.write(json.dumps({"case_id": f"c{i:06d}", "verdict": "fail" if i < 20_000 else "pass"}) + "\n")
                verdict = ("pass" if i < 10_000 else "fail") if i < 20_000 else ("fail" if i < 25_000 else "pass")
                c.write(json.dumps({"case_id": f"c{i:06d}", "verdict": verdict}) + "\n")
        for _ in range(repeat):
            run = timed_child([sys.executable, str(scripts / "stats.py"), str(base), str(cand)], timeout_s=timeout,
                              log_dir=Path(tmp) / "log")
            if run.rc != 0:
                return {"error": run.stderr.strip()[-300:] or f"exit {run.rc}"}
            runs.append({"wall_s": round(run.wall_s, 3), "cpu_s": round(run.cpu_s, 3),
                         "maxrss_mb": round(run.maxrss_mb, 1)})
            value = json.loads(run.stdout)
    return {"median_wall_s": statistics.median(r["wall_s"] for r in runs),
            "max_maxrss_mb": max(r["maxrss_mb"] for r in runs), "runs": runs,
            "value": value.get("verdict_phrase")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scripts", type=Path, default=HERE.parent / "scripts",
                    help="the scripts/ dir whose assay package to measure (default this checkout's)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per figure (all its repeats)")
    ap.add_argument("--only", action="append", choices=sorted(FIGURES) + list(PROCESS))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = {"scripts": str(args.scripts), "repeat": args.repeat, "cpus": os.cpu_count(),
           "load_avg_before": [round(x, 2) for x in os.getloadavg()], "figures": {}}
    for name in args.only or [*FIGURES, *PROCESS]:
        out["figures"][name] = (stats_process(args.scripts.resolve(), args.repeat, args.timeout) if name in PROCESS
                                else measure(name, args.scripts.resolve(), args.repeat, args.timeout))
        print(f"{name}: {out['figures'][name]}", file=sys.stderr, flush=True)
    out["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    emit_json(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
