"""The runner measurements: one method per benchmark, each returning a JSON-able dict.

Every runner run is checked before its time counts: exit 0, ``summary.status: ok``,
every case ``pass`` (so every layer really had evidence and was scored), and the app
served exactly the requests the run needed. A run that fails a check is kept in the
results with ``valid: false`` and its problems, and no target is judged on it.

Nothing is deleted while timings are taken: on some disks (this VM's ext4 among them)
a large unlink leaves the file system slow for a minute or more, which would be charged
to whichever run came next. Run directories are removed at the very end.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

from app import BenchApp
from measure import ChildRun, summarize, timed_child
from suite import BASE_URL_ENV, RUN_ID, make_plan, write_plan

HERE = Path(__file__).resolve().parent
RUNNER = HERE.parent / "scripts" / "run_cases.py"
SCORED_LAYERS = ("http", "routing", "answer", "execution")
DERIVED_FILES = ("results.json", "verdicts.jsonl", "verdicts_for_stats.jsonl",
                 "routing_results.jsonl", "routing_report.json")
CASE_FILES = ("request.json", "response.json", "expect.json", "answer.txt", "actual.json", "verdict.json")


class Bench:
    """Shared state of one benchmark session: runner, progress clock, budget, start-up cost."""

    def __init__(self, log: Callable[[str], None], runner: Path = RUNNER, budget_s: float = 1e9):
        self.log = log
        self.runner = runner
        self.t0 = time.perf_counter()
        self.budget_s = budget_s
        self.extra_flags: list[str] = []
        self.startup_s = 0.0

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def over_budget(self) -> bool:
        return self.elapsed() > self.budget_s

    def runner_argv(self, *args: str) -> list[str]:
        return [sys.executable, str(self.runner), *args]

    def env(self, base_url: str) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env[BASE_URL_ENV] = base_url
        return env

    # -- probes -------------------------------------------------------------------------------
    def probe_flags(self, work: Path) -> None:
        """Use `--progress never` when the runner has it (stderr noise is not what we measure)."""
        probe = timed_child(self.runner_argv("--help"), log_dir=work / "probe-help")
        if probe.rc != 0:
            raise SystemExit(f"bench: `run_cases.py --help` failed (exit {probe.rc}): {probe.stdout}{probe.stderr}")
        if "--progress" in probe.stdout:
            self.extra_flags = ["--progress", "never"]

    def startup(self, work: Path, reps: int) -> dict[str, Any]:
        """`run_cases.py --version`: interpreter start-up + the script's imports, the fixed cost."""
        runs = [timed_child(self.runner_argv("--version"), log_dir=work / "startup") for _ in range(reps)]
        bad = [r for r in runs if r.rc != 0]
        if bad:
            raise SystemExit(f"bench: `run_cases.py --version` failed: {bad[0].stdout}{bad[0].stderr}")
        s = summarize([r.wall_s for r in runs])
        self.startup_s = s["median"]
        self.log(f"runner start-up (--version): median {s['median'] * 1000:.0f} ms over {reps}")
        return {"what": "wall of `run_cases.py --version` (interpreter start + imports)", "wall_s": s,
                "version": runs[0].stdout.strip()}

    # -- one measured run -----------------------------------------------------------------------
    def plan_for(self, root: Path, name: str, n: int, concurrency: int) -> tuple[Path, Path]:
        state = root / name / "state"
        (state / "reports").mkdir(parents=True, exist_ok=True)   # the runner wants an existing state dir
        plan_path = write_plan(root / name / "plan.json",
                               make_plan(n, state_dir=str(state), max_concurrency=concurrency))
        return plan_path, state

    def one_run(self, app: BenchApp, plan_path: Path, out: Path, n: int, *, resume: bool = False,
                expect_requests: int | None = None,
                on_start: Callable[[Any], None] | None = None) -> tuple[ChildRun, dict[str, Any]]:
        out.parent.mkdir(parents=True, exist_ok=True)
        args = ["--plan", str(plan_path), "--out", str(out), *self.extra_flags]
        if resume:
            args.append("--resume")
        app.reset_counters()
        load0 = os.getloadavg()[0]
        # This process does nothing but serve the app while the runner runs (the main thread
        # blocks in wait4), so its CPU delta is the app's share of the machine's two cores.
        self_cpu0 = _self_cpu()
        t_start = time.perf_counter()
        run = timed_child(self.runner_argv(*args), env=self.env(app.base_url), log_dir=out.parent / "logs",
                          on_start=on_start)
        t_end = time.perf_counter()
        app_cpu = _self_cpu() - self_cpu0
        counters = app.counters()
        record = run_record(run, counters, n, self.startup_s)
        # The app's clock is this process's: how long the runner took before its first request
        # (start-up, plan validation, pre-flight) and after the last answer (the last cases'
        # scoring and writes, the end-of-run check, finalize).
        if counters.get("first_t") is not None:
            record["before_first_request_s"] = counters["first_t"] - t_start
            record["after_last_answer_s"] = t_end - counters["last_t"]
        record["app_cpu_ms_per_case"] = 1000.0 * app_cpu / n
        record["loadavg_1m"] = [load0, os.getloadavg()[0]]
        record["problems"] = check_run(run, out, n, counters, expect_requests)
        record["valid"] = not record["problems"]
        return run, record

    def interleaved(self, specs: list[dict[str, Any]], min_reps: int) -> dict[str, list[dict[str, Any]]]:
        """Run each spec's repetitions round-robin (A1 B1 A2 B2 ...), so drift in the machine's
        state hits every spec alike. Past the budget, stop after `min_reps` repetitions."""
        records: dict[str, list[dict[str, Any]]] = {s["key"]: [] for s in specs}
        for i in range(max(s["reps"] for s in specs)):
            if i >= min_reps and self.over_budget():
                self.log(f"over the time budget: stopping after {i} repetition(s)")
                break
            for s in specs:
                if i >= s["reps"]:
                    continue
                out = s["state"] / "reports" / f"rep{i + 1}" / RUN_ID
                _run, rec = self.one_run(s["app"], s["plan"], out, s["n"], expect_requests=s["n"])
                records[s["key"]].append(rec)
                s["last_out"] = out
                flag = "" if rec["valid"] else f"  INVALID: {'; '.join(rec['problems'])[:300]}"
                self.log(f"{s['label']} rep {i + 1}/{s['reps']}: {s['n']} cases in {rec['wall_s']:.2f} s "
                         f"({rec['net_ms_per_case']:.2f} ms/case net, cpu {rec['cpu_ms_per_case']:.2f} ms/case, "
                         f"rss {rec['maxrss_mb']:.0f} MB, load {rec['loadavg_1m'][0]:.1f}){flag}")
        return records

    # -- the resume benchmark --------------------------------------------------------------------
    def killed_run(self, app: BenchApp, plan_path: Path, state: Path, n: int, remaining: int) -> dict[str, Any]:
        """Run the n-case plan and SIGKILL the runner once the app has answered n - remaining requests."""
        out = state / "reports" / "killed" / RUN_ID
        holder: dict[str, Any] = {}

        def on_start(proc: Any) -> None:
            holder["pid"] = proc.pid

        def hook(count: int) -> None:
            if count == n - remaining and "pid" in holder and not holder.get("killed"):
                holder["killed"] = True
                os.kill(holder["pid"], signal.SIGKILL)

        app.on_request = hook
        try:
            run, _rec = self.one_run(app, plan_path, out, n, on_start=on_start)
        finally:
            app.on_request = None
        finished = count_finished(out)
        self.log(f"killed run: SIGKILL after {n - remaining} answers (exit {run.rc}); {finished} cases "
                 f"committed in cases.jsonl")
        return {"out": out, "killed": bool(holder.get("killed")), "rc": run.rc, "finished_cases": finished}


def _self_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def count_finished(run_dir: Path) -> int:
    from assay.core.casestore import scan
    return len(scan(run_dir).ids())


def pristine_copy(src: Path, dst: Path) -> None:
    """A copy of a run dir to resume: top-level files copied (run.log is appended to in place),
    case files hard-linked (the runner only reads an adopted case's files, and replaces, never
    edits, a file it rewrites), so a 10,000-case copy takes seconds even on a slow disk."""
    dst.mkdir(parents=True)
    for entry in src.iterdir():
        if entry.is_dir():
            shutil.copytree(entry, dst / entry.name, copy_function=os.link)
        else:
            shutil.copy2(entry, dst / entry.name)


def run_record(run: ChildRun, counters: dict[str, Any], n: int, startup_s: float) -> dict[str, Any]:
    rec = run.brief()
    rec.pop("argv")
    rec["cases"] = n
    rec["wall_ms_per_case"] = 1000.0 * run.wall_s / n
    rec["net_ms_per_case"] = 1000.0 * max(0.0, run.wall_s - startup_s) / n
    rec["cpu_ms_per_case"] = 1000.0 * run.cpu_s / n
    rec["app_requests"] = counters["requests"]
    rec["app_busy_s"] = counters["busy_s"]
    rec["app_errors"] = counters["errors"]
    rec["app_inflight_max"] = counters.get("inflight_max")
    rec["app_inflight_mean"] = counters.get("inflight_mean")
    return rec


def check_run(run: ChildRun, out: Path, n: int, counters: dict[str, Any], expect_requests: int | None) -> list[str]:
    """Why this run's time must not count (empty: it counts)."""
    problems = []
    if run.rc != 0:
        problems.append(f"exit {run.rc}: {run.stdout.strip()[:300]}")
    if expect_requests is not None and counters["requests"] != expect_requests:
        problems.append(f"app served {counters['requests']} requests, expected {expect_requests}")
    results = read_json(out / "results.json")
    if results is None:
        problems.append("results.json missing or unreadable")
        return problems
    summary = results.get("summary") or {}
    if summary.get("status") != "ok":
        problems.append(f"summary.status {summary.get('status')!r}")
    if summary.get("passes") != n:
        problems.append(f"summary.passes {summary.get('passes')!r} of {n} cases (failures "
                        f"{summary.get('failures')!r}, unscored {summary.get('unscored')!r}, infra "
                        f"{summary.get('infra_errors')!r})")
    layers = summary.get("layers")
    if isinstance(layers, dict):
        for layer in SCORED_LAYERS:
            got = (layers.get(layer) or {}).get("pass")
            if got != n:
                problems.append(f"summary.layers.{layer}.pass {got!r} of {n}")
    return problems


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def strip_derived(run_dir: Path) -> None:
    """Remove the derived run-level files: only the case dirs, manifest and run.log remain."""
    for name in DERIVED_FILES:
        p = run_dir / name
        if p.exists():
            p.unlink()


def fs_floor(root: Path, n: int) -> dict[str, Any]:
    """What the file system alone charges per case: one directory plus the six per-case files
    the contract requires, each written as the runner writes them (assay.core.jsonio's
    temp file + os.replace), single-threaded, no scoring, no HTTP."""
    from assay.core.jsonio import atomic_write_json

    base = root / "fs-floor"
    base.mkdir(parents=True, exist_ok=True)
    doc = {"case_id": "b-000000", "verdict": "pass", "layers": {k: {"verdict": "pass"} for k in SCORED_LAYERS}}
    t = time.perf_counter()
    for i in range(n):
        d = base / f"b-{i:06d}"
        d.mkdir()
        for name in CASE_FILES:
            atomic_write_json(d / name, doc)
    wall = time.perf_counter() - t
    return {"what": f"mkdir + {len(CASE_FILES)} atomic JSON writes per case, {n} cases, one thread",
            "cases": n, "ms_per_case": 1000.0 * wall / n}


def aggregate(records: list[dict[str, Any]], what: str, **extra: Any) -> dict[str, Any]:
    valid = [r for r in records if r["valid"]]
    return {
        "what": what,
        "valid_reps": len(valid),
        "reps": len(records),
        "wall_s": summarize([r["wall_s"] for r in valid]),
        "net_ms_per_case": summarize([r["net_ms_per_case"] for r in valid]),
        "wall_ms_per_case": summarize([r["wall_ms_per_case"] for r in valid]),
        "cpu_ms_per_case": summarize([r["cpu_ms_per_case"] for r in valid]),
        "maxrss_mb": summarize([r["maxrss_mb"] for r in valid]),
        "app_busy_ms_per_case": summarize([1000.0 * r["app_busy_s"] / r["cases"] for r in valid]),
        "app_cpu_ms_per_case": summarize([r["app_cpu_ms_per_case"] for r in valid]),
        "app_inflight_mean": summarize([r["app_inflight_mean"] for r in valid]),
        "app_inflight_max": summarize([r["app_inflight_max"] for r in valid]),
        "before_first_request_s": summarize([r["before_first_request_s"] for r in valid
                                             if r.get("before_first_request_s") is not None]),
        "after_last_answer_s": summarize([r["after_last_answer_s"] for r in valid
                                          if r.get("after_last_answer_s") is not None]),
        "loadavg_1m": summarize([r["loadavg_1m"][0] for r in records]),
        "runs": records,
        **extra,
    }


# -- determinism under concurrency (quality.md): a c=8 run's artifacts equal a c=1 run's -------
MASKED_KEYS = frozenset({"latency_ms", "started_at", "finished_at", "ts", "plan_sha256", "max_concurrency",
                         "artifact_sha256", "out", "plan", "pid"})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<masked>" if k in MASKED_KEYS else _mask(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    if isinstance(value, str):
        return _UUID.sub("<uuid>", value)
    return value


def _masked_file(rel: str, data: bytes) -> Any:
    if rel.endswith((".json", ".yaml")):
        return _mask(json.loads(data))
    if rel.endswith(".jsonl"):
        return [_mask(json.loads(line)) for line in data.splitlines() if line.strip()]
    return _UUID.sub("<uuid>", data.decode("utf-8", "replace"))


def _run_files(run: Path) -> dict[str, bytes]:
    """Every file of a run dir by relative path, its case journal expanded into one
    `cases/<id>/<artifact>` entry per artifact (the journal's line order follows completion)."""
    from assay.core import casestore
    files = {str(p.relative_to(run)): p.read_bytes() for p in run.rglob("*")
             if p.is_file() and p.name != casestore.JOURNAL}
    for rec in casestore.scan(run).records():
        files.update({f"cases/{rec.case_id}/{name}": rec.read(name) or b"" for name in rec.names()})
    return files


def determinism(run_a: Path | None, run_b: Path | None) -> dict[str, Any]:
    """Every file of two runs of one suite (c=1 and c=8) compared after masking timestamps,
    latencies, request uuids and the keys that name the concurrency itself; each case record's
    artifacts compared one by one. run.log is left out: its event order (like the journal's line
    order) legitimately follows completion order."""
    if run_a is None or run_b is None:
        return {"skipped": "no pair of runs to compare"}
    files_a, files_b = _run_files(run_a), _run_files(run_b)
    differing = sorted(set(files_a) ^ set(files_b))
    compared = 0
    for rel in sorted(set(files_a) & set(files_b)):
        if rel == "run.log":
            continue
        compared += 1
        try:
            same = _masked_file(rel, files_a[rel]) == _masked_file(rel, files_b[rel])
        except ValueError:
            same = files_a[rel] == files_b[rel]
        if not same:
            differing.append(rel)
    return {"what": "files of the c=1 and c=8 overhead runs, equal after masking "
                    + ", ".join(sorted(MASKED_KEYS)) + " and uuids (run.log excluded)",
            "files_compared": compared, "differing_count": len(differing), "differing": differing[:20]}
