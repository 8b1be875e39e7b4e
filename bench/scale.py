#!/usr/bin/env python3
"""The run directory's cost and the 100,000-case curve (issue: performance round 3).

    .venv/bin/python bench/scale.py [--out DIR] [--quick] [--keep] [--pair-reps 3] [--conc-reps 3]
                                    [--sizes 1000,10000,100000] [--curve-reps 3,2,1]

1. **disk vs tmpfs**: the same 2,000-case run (0 ms app, c=8) on this VM's disk (OUT/work)
   and on /dev/shm, interleaved; the ratio of median net walls (target: disk within 15 %).
2. **c=16 @ 50 ms on disk**: 2,000 cases, the whole `run_cases.py` process from start to exit;
   % of ideal = (2,000 x 0.05 / 16) / wall (target >= 90 %).
3. **the curve**: 1,000 / 10,000 / 100,000 cases on disk (0 ms, c=8): net ms per case, the
   runner's peak RSS (wait4), the run dir's file count; on the largest run the time of
   `--verify`, a `--resume` that has nothing left to do, `gate.py`, `compare_runs.py` of the
   run with itself, and the viewer's first case page and a case's detail.

Every run counts only if it is right (bench/scenarios.check_run). Results: OUT/scale.json
and OUT/scale.md, with `uptime`'s load before and after each measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "scripts"))

from app import BenchApp  # noqa: E402
from measure import summarize, timed_child  # noqa: E402
from scenarios import Bench  # noqa: E402

SCRIPTS = HERE.parent / "scripts"


def log(msg: str, _t0=[time.perf_counter()]) -> None:
    print(f"[scale {time.perf_counter() - _t0[0]:7.1f}s] {msg}", file=sys.stderr, flush=True)


def file_count(run_dir: Path) -> int:
    return sum(len(files) for _r, _d, files in os.walk(run_dir))


def timed(argv: list[str], log_dir: Path, env: dict | None = None) -> dict[str, Any]:
    run = timed_child(argv, log_dir=log_dir, env=env)
    return {"rc": run.rc, "wall_s": run.wall_s, "maxrss_mb": run.maxrss_mb,
            "stdout_head": run.stdout[:300]}


def pair(bench: Bench, app: BenchApp, roots: dict[str, Path], n: int, reps: int) -> dict[str, Any]:
    specs = []
    for storage, root in roots.items():
        plan, state = bench.plan_for(root, f"pair-{storage}", n, 8)
        specs.append({"key": storage, "label": f"pair {storage}", "app": app, "plan": plan, "state": state,
                      "n": n, "reps": reps})
    recs = bench.interleaved(specs, reps)
    out: dict[str, Any] = {}
    for storage, rows in recs.items():
        ok = [r for r in rows if r["valid"]]
        out[storage] = {"wall_s": summarize([r["wall_s"] for r in ok]),
                        "net_ms_per_case": summarize([r["net_ms_per_case"] for r in ok]),
                        "loadavg_1m": [r["loadavg_1m"] for r in rows], "invalid": len(rows) - len(ok)}
    for s in specs:
        if s.get("last_out"):
            out[s["key"]]["files_in_run_dir"] = file_count(s["last_out"])
    if out.get("disk", {}).get("wall_s", {}).get("median") and out.get("tmpfs", {}).get("wall_s", {}).get("median"):
        out["disk_over_tmpfs"] = out["disk"]["wall_s"]["median"] / out["tmpfs"]["wall_s"]["median"]
    return out


def concurrency(bench: Bench, app: BenchApp, root: Path, n: int, reps: int, latency_ms: float) -> dict[str, Any]:
    plan, state = bench.plan_for(root, "conc16", n, 16)
    spec = {"key": "disk", "label": "c=16 @ 50 ms disk", "app": app, "plan": plan, "state": state, "n": n,
            "reps": reps}
    rows = bench.interleaved([spec], reps)["disk"]
    ok = [r for r in rows if r["valid"]]
    ideal = n * latency_ms / 1000.0 / 16
    walls = summarize([r["wall_s"] for r in ok])
    return {"n": n, "ideal_s": ideal, "wall_s": walls, "pct_of_ideal": 100.0 * ideal / walls["median"] if ok else None,
            "loadavg_1m": [r["loadavg_1m"] for r in rows], "invalid": len(rows) - len(ok)}


def curve(bench: Bench, app: BenchApp, root: Path, sizes: list[int], reps: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {"points": []}
    last = None
    for n, r in zip(sizes, reps):
        plan, state = bench.plan_for(root, f"curve-{n}", n, 8)
        spec = {"key": "disk", "label": f"curve {n}", "app": app, "plan": plan, "state": state, "n": n, "reps": r}
        rows = bench.interleaved([spec], r)["disk"]
        ok = [x for x in rows if x["valid"]]
        point = {"n": n, "reps": len(rows), "invalid": len(rows) - len(ok),
                 "net_ms_per_case": summarize([x["net_ms_per_case"] for x in ok]),
                 "wall_s": summarize([x["wall_s"] for x in ok]),
                 "maxrss_mb": summarize([x["maxrss_mb"] for x in ok]),
                 "files_in_run_dir": file_count(spec["last_out"]) if spec.get("last_out") else None,
                 "journal_mb": (spec["last_out"] / "cases.jsonl").stat().st_size / 1e6
                 if spec.get("last_out") and (spec["last_out"] / "cases.jsonl").exists() else None,
                 "loadavg_1m": [x["loadavg_1m"] for x in rows]}
        out["points"].append(point)
        last = (spec, plan, n)
    if last is not None and last[0].get("last_out"):
        out["largest"] = readers(bench, app, *last)
    return out


def readers(bench: Bench, app: BenchApp, spec: dict, plan: Path, n: int) -> dict[str, Any]:
    """The tools a user runs after a run, on the largest run dir (each once; wall of the process)."""
    run_dir = spec["last_out"]
    logs = run_dir.parent / "reader-logs"
    env = bench.env(app.base_url)
    py = sys.executable
    res: dict[str, Any] = {"n": n, "load_before": os.getloadavg()}
    res["verify"] = timed([py, str(SCRIPTS / "run_cases.py"), "--verify", str(run_dir)], logs / "verify")
    res["resume_nothing_left"] = timed([py, str(SCRIPTS / "run_cases.py"), "--plan", str(plan), "--out",
                                        str(run_dir), "--resume", "--progress", "never"], logs / "resume", env)
    res["gate"] = timed([py, str(SCRIPTS / "gate.py"), str(run_dir)], logs / "gate")
    from twin import later_twin   # a later copy of the run: compare wants two runs (bench/twin.py)
    twin = later_twin(run_dir, run_dir.parent.parent / "twin" / run_dir.name)
    res["compare_runs"] = timed([py, str(SCRIPTS / "compare_runs.py"), str(run_dir), str(twin)], logs / "compare")
    res["viewer"] = viewer_times(run_dir)
    res["load_after"] = os.getloadavg()
    return res


def viewer_times(run_dir: Path) -> dict[str, Any]:
    """In-process: the viewer's case index (first page) and one case's detail, cold."""
    from assay.view import api
    reports = run_dir.parent
    t0 = time.perf_counter()
    page = api.route(reports, f"/api/run/{run_dir.name}/cases", {})
    t1 = time.perf_counter()
    cid = (page.get("cases") or [{}])[-1].get("case_id")
    if cid:
        api.route(reports, f"/api/case/{run_dir.name}/{cid}", {})
    t2 = time.perf_counter()
    api.route(reports, f"/api/run/{run_dir.name}/cases", {"sort": ["unit"]})   # waits for every case's verdict
    t3 = time.perf_counter()
    return {"first_page_s": t1 - t0, "case_detail_s": t2 - t1, "sorted_by_unit_page_s": t3 - t2, "case": cid}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/scale.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pair-reps", type=int, default=3)
    ap.add_argument("--conc-reps", type=int, default=3)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--curve-reps", default="3,2,1")
    ap.add_argument("--only", default="pair,conc,curve")
    ap.add_argument("--keep", action="store_true", help="keep the run directories (OUT/work; 0.5 GB at 100,000 cases)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    work = out / "work" / f"scale-{os.getpid()}"
    shm = Path("/dev/shm") / f"assay-scale-{os.getpid()}"
    sizes = [int(x) for x in args.sizes.split(",")]
    reps = [int(x) for x in args.curve_reps.split(",")]
    pair_n, conc_n = (40, 64) if args.quick else (2000, 2000)
    if args.quick:
        sizes, reps = [20, 60], [1, 1]
        args.pair_reps = args.conc_reps = 1
    bench = Bench(log)
    work.mkdir(parents=True, exist_ok=True)
    bench.probe_flags(work)
    results: dict[str, Any] = {"uptime_start": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
                               "startup": bench.startup(work / "startup", 3)}
    fast, slow = BenchApp(0.0), BenchApp(50.0)
    fast.start()
    slow.start()
    only = set(args.only.split(","))
    try:
        if "pair" in only:
            results["pair"] = pair(bench, fast, {"disk": work / "disk", "tmpfs": shm}, pair_n, args.pair_reps)
        if "conc" in only:
            results["conc16"] = concurrency(bench, slow, work / "disk", conc_n, args.conc_reps, 50.0)
        if "curve" in only:
            results["curve"] = curve(bench, fast, work / "disk", sizes, reps)
    finally:
        fast.stop()
        slow.stop()
        shutil.rmtree(shm, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    results["uptime_end"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(results, indent=2, sort_keys=True, default=str) + "\n")
    print(json.dumps(results, indent=2, sort_keys=True, default=str))
    if args.keep:
        log(f"run dirs kept under {work} (remove with rm -rf when done)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
