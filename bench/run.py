#!/usr/bin/env python3
"""Benchmark the runner (scripts/run_cases.py): its own cost, concurrency, scaling, resume,
verify, and the same suite through promptfoo when Node.js is present.

    make bench                                   # the full benchmark (< 15 min on 2 cores)
    .venv/bin/python bench/run.py --quick        # a tiny smoke version (seconds)
    .venv/bin/python bench/run.py --out DIR      # results in DIR (default bench/out/)
    .venv/bin/python bench/run.py --profile      # where the runner's time goes (all threads)

Each measurement runs on two storages: `tmpfs` (/dev/shm: the runner's own cost, free of
the disk) and `disk` (the run dirs under OUT/work: what a user on this machine gets).
Writes OUT/results.json (every repetition, medians, spreads, the machine, the targets)
and OUT/summary.md (the tables bench/RESULTS.md quotes); prints the summary on stdout and
progress on stderr. What each number means: bench/RESULTS.md.
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

import promptfoo  # noqa: E402
from app import BenchApp  # noqa: E402
from measure import machine_info, summarize, timed_child  # noqa: E402
from report import judge_targets, render_summary  # noqa: E402
from scenarios import (RUNNER, Bench, aggregate, count_finished, determinism, fs_floor,  # noqa: E402
                       pristine_copy, strip_derived)
from suite import RUN_ID  # noqa: E402

SIZES_FULL = {"overhead_cases": 2000, "conc_cases": 2000, "conc_latency_ms": 50, "conc_concurrency": 16,
              "flat_small": 1000, "flat_large": 10000, "resume_remaining": 200, "fs_floor_cases": 1000}
SIZES_QUICK = {"overhead_cases": 20, "conc_cases": 32, "conc_latency_ms": 50, "conc_concurrency": 16,
               "flat_small": 10, "flat_large": 40, "resume_remaining": 5, "fs_floor_cases": 20}
REPS_FULL = {
    "tmpfs": {"overhead_c1": 3, "overhead_c8": 5, "concurrency": 3, "flat_small": 3, "flat_large": 3,
              "verify": 2, "resume_killed": 3, "resume_derived_lost": 2, "pf_overhead_c8": 0,
              "pf_concurrency": 0, "min": 2},
    "disk": {"overhead_c1": 2, "overhead_c8": 3, "concurrency": 2, "flat_small": 2, "flat_large": 2,
             "verify": 2, "resume_killed": 2, "resume_derived_lost": 1, "pf_overhead_c8": 3,
             "pf_concurrency": 2, "min": 1},
}
# promptfoo runs on one storage only (it writes one sqlite DB, not per-case files, so the
# storage barely matters to it): the disk, where a user's run dirs live.
REPS_QUICK = {s: {k: 1 for k in REPS_FULL["tmpfs"]} for s in ("tmpfs", "disk")}
REPS_QUICK["tmpfs"].update(pf_overhead_c8=0, pf_concurrency=0)
BUDGET_S = 780            # past this, remaining scenarios run their minimum repetitions only


def log(msg: str, _t0=[time.perf_counter()]) -> None:
    print(f"[bench {time.perf_counter() - _t0[0]:7.1f}s] {msg}", file=sys.stderr, flush=True)


def tmpfs_root() -> Path | None:
    """/dev/shm when it is a writable tmpfs, else None (the tmpfs set is then skipped)."""
    shm = Path("/dev/shm")
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:
            is_tmpfs = any(line.split()[1] == "/dev/shm" and line.split()[2] == "tmpfs" for line in fh)
    except OSError:
        is_tmpfs = False
    if not (is_tmpfs and os.access(shm, os.W_OK)):
        return None
    return shm / f"assay-bench-{os.getpid()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/run.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny suites, one repetition: a smoke test")
    ap.add_argument("--out", default=str(HERE / "out"), help="results directory (default bench/out/)")
    ap.add_argument("--storage", choices=("both", "tmpfs", "disk"), default="both",
                    help="where the run dirs live (default both)")
    ap.add_argument("--no-promptfoo", action="store_true", help="skip the promptfoo side-by-side")
    ap.add_argument("--install-promptfoo", action="store_true",
                    help=f"npm install promptfoo@{promptfoo.PROMPTFOO_VERSION} into bench/.node, then exit")
    ap.add_argument("--runner", default=str(RUNNER),
                    help="the run_cases.py to measure (default: this checkout's scripts/run_cases.py)")
    ap.add_argument("--profile", action="store_true",
                    help="instead of timing: profile one overhead run (all threads) into OUT/profile.txt")
    ap.add_argument("--profile-concurrency", type=int, default=8, metavar="N",
                    help="max_concurrency of the profiled run (default 8; 1 attributes CPU without GIL contention)")
    ap.add_argument("--keep", action="store_true", help="keep the run directories (OUT/work, /dev/shm)")
    args = ap.parse_args(argv)

    if args.install_promptfoo:
        return promptfoo.install()
    runner = Path(args.runner).resolve()
    if not runner.exists():
        print(json.dumps({"error": f"the runner is missing: {args.runner} (bench measures scripts/run_cases.py)"}))
        return 2

    sizes = SIZES_QUICK if args.quick else SIZES_FULL
    reps = REPS_QUICK if args.quick else REPS_FULL
    out = Path(args.out).resolve()
    work = out / "work"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    roots: dict[str, Path] = {}
    if args.storage in ("both", "tmpfs"):
        shm = tmpfs_root()
        if shm is not None:
            roots["tmpfs"] = shm
        else:
            log("no writable tmpfs at /dev/shm: the tmpfs set is skipped")
    if args.storage in ("both", "disk"):
        roots["disk"] = work / "disk"
    bench = Bench(log, runner, budget_s=BUDGET_S)
    log(f"{'quick' if args.quick else 'full'} benchmark of {runner.name}; storages {list(roots)}; results -> {out}")
    bench.probe_flags(work)
    if args.profile:
        return profile(bench, sizes, out, roots.get("tmpfs", work), args.profile_concurrency)

    results: dict[str, Any] = {
        "quick": args.quick, "sizes": sizes, "reps": reps, "machine": machine_info(promptfoo.node_version()),
        "runner": _display(runner), "runner_flags": bench.extra_flags, "run_id": RUN_ID,
        "storages": {name: str(root) if name == "tmpfs" else "OUT/work/disk" for name, root in roots.items()},
        "loadavg_at_start": os.getloadavg(), "git": _git_state(),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    results["startup"] = bench.startup(work, 1 if args.quick else 5)
    pf_ok, pf_why = (False, "--no-promptfoo") if args.no_promptfoo else promptfoo.availability()
    if not pf_ok and not args.no_promptfoo and shutil.which("node") and shutil.which("npm"):
        # Node is here but the bench-local promptfoo is not: install the pinned version once
        # (into bench/.node, gitignored) rather than let npx fetch it on every eval.
        log(f"installing promptfoo@{promptfoo.PROMPTFOO_VERSION} into bench/.node (once; ~1 min)")
        rc = promptfoo.install(quiet=True)
        pf_ok, pf_why = promptfoo.availability()
        if not pf_ok:
            pf_why = f"npm install of promptfoo@{promptfoo.PROMPTFOO_VERSION} failed (exit {rc}); side-by-side skipped"
    if not pf_ok:
        log(f"promptfoo: {pf_why}")
    else:
        starts = [promptfoo.startup(work / "promptfoo-startup") for _ in range(1 if args.quick else 3)]
        results["promptfoo_startup"] = {"version": promptfoo.PROMPTFOO_VERSION,
                                        "wall_s": summarize([r.wall_s for r in starts if r.rc == 0])}
        log(f"promptfoo start-up (--version): median {results['promptfoo_startup']['wall_s']['median'] * 1000:.0f} ms")

    fast, slow = BenchApp(0.0), BenchApp(sizes["conc_latency_ms"])
    fast.start()
    slow.start()
    try:
        results["measurements"] = {}
        for storage, root in roots.items():
            root.mkdir(parents=True, exist_ok=True)
            log(f"== storage {storage}: {root}")
            res = measure_storage(bench, root, fast, slow, sizes, reps[storage])
            if not pf_ok:
                res["promptfoo"] = {"skipped": pf_why}
            elif reps[storage]["pf_overhead_c8"] + reps[storage]["pf_concurrency"] == 0:
                res["promptfoo"] = {"skipped": "promptfoo runs on the other storage only"}
            else:
                res["promptfoo"] = measure_promptfoo(bench, root, fast, slow, sizes, reps[storage], res)
            results["measurements"][storage] = res
    finally:
        fast.stop()
        slow.stop()

    results["targets"] = judge_targets(results)
    results["loadavg_at_end"] = os.getloadavg()
    results["measure_wall_s"] = bench.elapsed()
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    summary = render_summary(results)
    (out / "summary.md").write_text(summary, encoding="utf-8")
    print(summary)
    if not args.keep:
        cleanup(roots, work)
    log(f"done in {bench.elapsed():.0f} s; {out / 'results.json'}")
    return 0


def measure_storage(bench: Bench, root: Path, fast: BenchApp, slow: BenchApp, sizes: dict[str, Any],
                    reps: dict[str, int]) -> dict[str, Any]:
    m: dict[str, Any] = {}
    m["fs_floor"] = fs_floor(root, sizes["fs_floor_cases"])
    log(f"file-system floor: {m['fs_floor']['ms_per_case']:.2f} ms/case (mkdir + 6 atomic writes)")

    n = sizes["overhead_cases"]
    specs = []
    for conc in (1, 8):
        plan, state = bench.plan_for(root, f"overhead_c{conc}", n, conc)
        specs.append({"key": f"overhead_c{conc}", "label": f"overhead c={conc}", "app": fast, "plan": plan,
                      "state": state, "n": n, "reps": reps[f"overhead_c{conc}"]})
    recs = bench.interleaved(specs, reps["min"])
    m["determinism"] = determinism(specs[0].get("last_out"), specs[1].get("last_out"))
    log(f"determinism c=1 vs c=8: {m['determinism'].get('files_compared')} files compared, "
        f"{m['determinism'].get('differing_count')} differ {m['determinism'].get('differing', [])[:3]}")
    for conc in (1, 8):
        m[f"overhead_c{conc}"] = aggregate(recs[f"overhead_c{conc}"],
                                           f"{n} cases, app latency 0 ms, k=1, max_concurrency {conc}",
                                           cases=n, concurrency=conc, latency_ms=0)

    n, conc, lat = sizes["conc_cases"], sizes["conc_concurrency"], sizes["conc_latency_ms"]
    plan, state = bench.plan_for(root, "concurrency", n, conc)
    recs = bench.interleaved([{"key": "c", "label": f"concurrency c={conc} @{lat}ms", "app": slow, "plan": plan,
                               "state": state, "n": n, "reps": reps["concurrency"]}], reps["min"])["c"]
    ideal = n * lat / 1000.0 / conc
    valid = [r for r in recs if r["valid"]]
    m["concurrency"] = aggregate(
        recs, f"{n} cases, app latency {lat} ms, max_concurrency {conc}", cases=n, concurrency=conc,
        latency_ms=lat, ideal_s=ideal,
        excess_pct=summarize([100.0 * (r["wall_s"] / ideal - 1) for r in valid]),
        excess_net_pct=summarize([100.0 * ((r["wall_s"] - bench.startup_s) / ideal - 1) for r in valid]))

    small, large = sizes["flat_small"], sizes["flat_large"]
    specs = []
    for key, size in (("flat_small", small), ("flat_large", large)):
        plan, state = bench.plan_for(root, key, size, 8)
        specs.append({"key": key, "label": f"flat {size}", "app": fast, "plan": plan, "state": state, "n": size,
                      "reps": reps[key]})
    recs = bench.interleaved(specs, reps["min"])
    for spec in specs:
        m[spec["key"]] = aggregate(recs[spec["key"]], f"{spec['n']} cases, 0 ms, max_concurrency 8",
                                   cases=spec["n"], concurrency=8)
    large_spec = specs[1]
    complete = large_spec.get("last_out") if recs["flat_large"] and recs["flat_large"][-1]["valid"] else None

    m["verify"] = measure_verify(bench, complete, large, reps["verify"] if not bench.over_budget() else 1)
    m["resume"] = measure_resume(bench, fast, large_spec["plan"], large_spec["state"], complete, large,
                                 sizes, reps)
    return m


def measure_verify(bench: Bench, complete: Path | None, n: int, reps: int) -> dict[str, Any]:
    if complete is None:
        return {"skipped": "no valid complete run to verify"}
    runs = []
    for i in range(reps):
        run = timed_child(bench.runner_argv("--verify", str(complete)),
                          log_dir=complete.parent / "verify-logs" / f"rep{i + 1}")
        runs.append({"rc": run.rc, "wall_s": run.wall_s, "cpu_s": run.cpu_s, "maxrss_mb": run.maxrss_mb,
                     "valid": run.rc == 0, "problems": [] if run.rc == 0 else [run.stdout.strip()[:300]]})
        log(f"verify rep {i + 1}/{reps}: {n} cases in {run.wall_s:.2f} s (exit {run.rc})")
    return {"what": f"`run_cases.py --verify` on a complete {n}-case run (no app calls, no writes)",
            "cases": n, "wall_s": summarize([r["wall_s"] for r in runs if r["valid"]]), "runs": runs}


def measure_resume(bench: Bench, app: BenchApp, plan: Path, state: Path, complete: Path | None,
                   n: int, sizes: dict[str, Any], reps: dict[str, int]) -> dict[str, Any]:
    """Two interruptions of an n-case run, each resumed from a pristine copy:
    killed: SIGKILL while `resume_remaining` requests were still to come (the real crash);
    derived_lost: a complete run whose run-level derived files were deleted (pure adoption)."""
    res: dict[str, Any] = {"what": f"`run_cases.py --resume` adopting an interrupted {n}-case run", "cases": n}
    killed = bench.killed_run(app, plan, state, n, sizes["resume_remaining"])
    res["killed_source"] = {k: v for k, v in killed.items() if k != "out"}
    sources = {"killed": (killed["out"], reps["resume_killed"])}
    if complete is not None:
        lost = state / "reports" / "derived_lost-src" / RUN_ID
        pristine_copy(complete, lost)
        strip_derived(lost)
        sources["derived_lost"] = (lost, reps["resume_derived_lost"])
    for variant, (src, count) in sources.items():
        adopted = count_finished(src)
        if bench.over_budget():
            count = 1
        recs = []
        for i in range(count):
            out = state / "reports" / f"resume-{variant}-{i + 1}" / RUN_ID
            pristine_copy(src, out)
            _run, rec = bench.one_run(app, plan, out, n, resume=True, expect_requests=n - adopted)
            rec["adopted_cases"] = adopted
            recs.append(rec)
            flag = "" if rec["valid"] else f"  INVALID: {'; '.join(rec['problems'])[:300]}"
            log(f"resume ({variant}) rep {i + 1}/{count}: adopted {adopted}, ran {rec['app_requests']}, "
                f"{rec['wall_s']:.2f} s{flag}")
        res[variant] = {"adopted_cases": adopted, "runs": recs,
                        "wall_s": summarize([r["wall_s"] for r in recs if r["valid"]]),
                        "maxrss_mb": summarize([r["maxrss_mb"] for r in recs if r["valid"]])}
    return res


def measure_promptfoo(bench: Bench, root: Path, fast: BenchApp, slow: BenchApp, sizes: dict[str, Any],
                      reps: dict[str, int], m: dict[str, Any]) -> dict[str, Any]:
    """The same suite through promptfoo, its work dir (config, sqlite DB, output) on the same storage."""
    res: dict[str, Any] = {"version": promptfoo.PROMPTFOO_VERSION}
    pf_work = root / "promptfoo"
    pairs = (("overhead_c8", fast, sizes["overhead_cases"], 8, reps["pf_overhead_c8"]),
             ("concurrency", slow, sizes["conc_cases"], sizes["conc_concurrency"], reps["pf_concurrency"]))
    for name, app, n, conc, count in pairs:
        if count == 0:
            continue
        if bench.over_budget():
            count = min(count, 1)
        recs = []
        for i in range(count):
            app.reset_counters()
            load0 = os.getloadavg()[0]
            run, stats = promptfoo.run_eval(pf_work / f"{name}-{i + 1}", n, app.base_url, conc)
            counters = app.counters()
            problems = []
            if stats.get("successes") != n:
                problems.append(f"promptfoo stats {stats}, exit {run.rc}")
            if counters["requests"] != n:
                problems.append(f"app served {counters['requests']} of {n}")
            recs.append({"rc": run.rc, "wall_s": run.wall_s, "cpu_s": run.cpu_s, "maxrss_mb": run.maxrss_mb,
                         "cpu_ms_per_case": 1000.0 * run.cpu_s / n, "stats": stats, "loadavg_1m": load0,
                         "valid": not problems, "problems": problems})
            log(f"promptfoo {name} rep {i + 1}/{count}: {n} cases -j {conc} in {run.wall_s:.2f} s "
                f"(cpu {run.cpu_s:.1f} s, rss {run.maxrss_mb:.0f} MB)"
                f"{'' if not problems else '  INVALID: ' + '; '.join(problems)}")
        valid = [r for r in recs if r["valid"]]
        pf_wall = summarize([r["wall_s"] for r in valid])
        ours = (m.get(name) or {}).get("wall_s", {}).get("median")
        res[name] = {
            "cases": n, "concurrency": conc, "latency_ms": 0 if name == "overhead_c8" else sizes["conc_latency_ms"],
            "wall_s": pf_wall, "cpu_ms_per_case": summarize([r["cpu_ms_per_case"] for r in valid]),
            "maxrss_mb": summarize([r["maxrss_mb"] for r in valid]),
            "assay_wall_s_median": ours,
            "assay_cpu_ms_per_case_median": (m.get(name) or {}).get("cpu_ms_per_case", {}).get("median"),
            "ratio_wall": (pf_wall["median"] / ours) if (pf_wall["median"] and ours) else None,
            "runs": recs,
        }
        if res[name]["ratio_wall"]:
            log(f"promptfoo / assay wall ({name}): {res[name]['ratio_wall']:.2f}x")
    return res


def cleanup(roots: dict[str, Path], work: Path) -> None:
    """tmpfs goes at once; the disk run dirs (hundreds of thousands of files) are renamed aside and
    removed by a detached `rm -rf`, so the benchmark's own clock does not pay for the unlink storm."""
    for name, root in roots.items():
        if name == "tmpfs":
            shutil.rmtree(root, ignore_errors=True)
    if work.exists():
        trash = work.parent / f".trash-{int(time.time())}"
        work.rename(trash)
        proc = subprocess.Popen(["rm", "-rf", str(trash)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        log(f"removing the disk run dirs in the background (pid {proc.pid}): {trash}")


def profile(bench: Bench, sizes: dict[str, Any], out: Path, root: Path, concurrency: int) -> int:
    """One overhead run (0 ms app) under bench/profile_runner.py."""
    n = sizes["overhead_cases"]
    app = BenchApp(0.0)
    app.start()
    out.mkdir(parents=True, exist_ok=True)
    try:
        plan, state = bench.plan_for(root, "profile", n, concurrency)
        run_dir = state / "reports" / "prof" / RUN_ID
        argv = [sys.executable, str(HERE / "profile_runner.py"), "--stats", str(out / "profile.prof"),
                "--text", str(out / "profile.txt"), "--top", "45", str(bench.runner), "--",
                "--plan", str(plan), "--out", str(run_dir), *bench.extra_flags]
        run = timed_child(argv, env=bench.env(app.base_url), log_dir=out / "profile-logs")
    finally:
        app.stop()
        if root.name.startswith("assay-bench-"):
            shutil.rmtree(root, ignore_errors=True)
    log(f"profiled {n} cases at c={concurrency}: exit {run.rc}, {run.wall_s:.1f} s under the profiler; {out / 'profile.txt'}")
    print((out / "profile.txt").read_text("utf-8") if (out / "profile.txt").exists() else run.stderr[-3000:])
    return 0 if run.rc == 0 else 1


def _git_state() -> dict[str, Any]:
    """The commit measured, and whether the runner's sources had uncommitted edits."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=str(HERE.parent), capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None
    dirty = git("status", "--porcelain", "--", "scripts")
    return {"commit": git("rev-parse", "--short", "HEAD"), "scripts_dirty": bool(dirty) if dirty is not None else None}


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(HERE.parent))
    except ValueError:
        return path.name


if __name__ == "__main__":
    sys.exit(main())
