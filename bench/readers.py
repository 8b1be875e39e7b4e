#!/usr/bin/env python3
"""The readers of a finished run at scale: wall, CPU and peak RSS of each, as a user runs it.

    .venv/bin/python bench/readers.py --run RUN_DIR [--reps 3] [--scripts DIR] [--only verify,gate,...]
                                      [--json OUT]

RUN_DIR is a finished run dir, e.g. the 100,000-case run `bench/memory.py --sizes 100000 --keep
--out DIR` leaves under DIR/work/assay-scale-*/state-100000/reports/<run-id> (made once, reused).
A byte copy of it (`<state>/twin/<run-id>`, made on the first use) is the other side of a
comparison. Figures (each a child process started through bench/measure.py's launcher, so its
`ru_maxrss` is its own peak, not this process's; `tree_pss_mb` is the launcher's sampled peak of
what the command and every process it forked held at once (Pss, shared pages counted once): the
completeness check forks above 32 MiB of journal, rundir/parallel.py):

- verify:       `run_cases.py --verify RUN`                       (exit 0, complete)
- gate:         `gate.py RUN --json` (it runs the same check)      (exit 0, gate open)
- gate_kept:    the same, after a gate kept the check's answer for the run's bytes
- compare:      `compare_runs.py RUN TWIN -o FILE` (it verifies both sides; the candidate TWIN was gated
                before, as a run is when it is made: the figure is a first read of the base)
- compare_kept: the same, the base's check kept by a gate before too
- api_compare:  `assay.api.compare(RUN, TWIN)` in a fresh interpreter (the document returned)
- stats:        `stats.py RUN/verdicts_for_stats.jsonl TWIN/verdicts_for_stats.jsonl`

A check's answer kept beside the run (`<reports>/.<run-id>.checked.json`, runner contract §12a)
is removed before every figure but the `_kept` ones, which run an untimed `gate.py RUN` first
(with the measured scripts, so the answer is theirs): the first read after a run and a later one.
A comparison's candidate (TWIN) is gated, untimed, before each comparison figure.

Every repetition is checked before it counts (exit code and the document's answer). The figures
are interleaved (rep 1 of each, then rep 2, ...) so a change in the machine's load spreads over
all of them; the 1-minute load average (`os.getloadavg`, what `uptime` prints) is recorded before
each measurement, and before each round of figures the CPU time of a reference loop (how fast this
shared machine is at that moment: on a busy day every figure, CPU seconds included, is several
times its quiet value). Medians over the valid repetitions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import emit_json, summarize, timed_child  # noqa: E402

FIGURES = ("verify", "gate", "gate_kept", "compare", "compare_kept", "api_compare", "stats")

API_CHILD = ("import json, sys\nsys.path.insert(0, sys.argv[1])\nfrom assay import api\n"
             "doc = api.compare(sys.argv[2], sys.argv[3])\n"
             "print(json.dumps({'counts': doc['counts'], 'headline': doc['headline'], 'pairs': "
             "sum(len(v) for v in doc['buckets'].values())}))\n")


def twin_of(run_dir: Path) -> Path:
    """A later twin of the run (compare wants two runs: bench/twin.py), made once beside it."""
    from twin import later_twin
    return later_twin(run_dir, run_dir.parent.parent / "twin" / run_dir.name)


def argv_of(name: str, scripts: Path, run: Path, twin: Path, tmp: Path) -> list[str]:
    py = sys.executable
    if name == "verify":
        return [py, str(scripts / "run_cases.py"), "--verify", str(run)]
    if name in ("gate", "gate_kept"):
        return [py, str(scripts / "gate.py"), str(run), "--json"]
    if name in ("compare", "compare_kept"):
        return [py, str(scripts / "compare_runs.py"), str(run), str(twin), "-o", str(tmp / "compare.json")]
    if name == "api_compare":
        return [py, "-c", API_CHILD, str(scripts), str(run), str(twin)]
    if name == "stats":
        return [py, str(scripts / "stats.py"), str(run / "verdicts_for_stats.jsonl"),
                str(twin / "verdicts_for_stats.jsonl")]
    raise ValueError(name)


def problem(name: str, rc: int, stdout: str, n: int) -> str | None:
    """Why this repetition does not count (None: it answered what a complete run must answer)."""
    if rc != 0:
        return f"exit {rc}"
    try:
        doc = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "no JSON document on stdout"
    if name == "verify" and not (doc.get("complete") is True and doc.get("cases_finished") == n):
        return f"not complete: {str(doc)[:200]}"
    if name.startswith("gate") and doc.get("gate") != "open":
        return f"gate {doc.get('gate')}: {doc.get('reasons')}"
    if name in ("compare", "compare_kept", "api_compare") and (doc.get("counts") or {}).get("still_passing", 0) + \
            (doc.get("counts") or {}).get("still_failing", 0) != n:
        return f"counts {doc.get('counts')}"
    if name == "stats" and doc.get("n") != n and doc.get("pairs") != n:
        return f"stats over {doc.get('n')} pairs"
    return None


def prepare(name: str, scripts: Path, run: Path, twin: Path, env: dict) -> None:
    """Each side's kept check (runner contract §12a) removed, or made by an untimed gate. The
    candidate of a comparison (the twin) is always gated first, as a run is gated when it is made:
    compare_runs.py checks both sides, and the figures measure the base's check (`compare`,
    `api_compare`: never checked; `compare_kept`: gated before)."""
    def gate(side: Path) -> None:
        subprocess.run([sys.executable, str(scripts / "gate.py"), str(side)], env=env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def forget(side: Path) -> None:
        kept = side.parent / f".{side.name}.checked.json"
        if kept.exists():
            kept.unlink()
    if name in ("compare", "compare_kept", "api_compare"):
        gate(twin)
    if name.endswith("_kept"):
        gate(run)
    else:
        forget(run)


def reference_loop() -> float:
    """CPU seconds of `for i in range(20_000_000): x += i` in a fresh interpreter: how fast this
    shared machine is right now (1.18-1.31 s on a quiet day, bench/RESULTS.md)."""
    code = "import time\nt = time.process_time()\nx = 0\nfor i in range(20_000_000):\n    x += i\nprint(time.process_time() - t)"
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True).stdout
    return round(float(out), 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/readers.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, type=Path, help="a finished run dir (reports/<run-id>)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--scripts", type=Path, default=HERE.parent / "scripts",
                    help="the scripts/ dir to measure (default this checkout's; another checkout's for 'before')")
    ap.add_argument("--only", default=",".join(FIGURES), help=f"comma-separated, of {', '.join(FIGURES)}")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per repetition")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    names = [s for s in args.only.split(",") if s]
    for name in names:
        if name not in FIGURES:
            ap.error(f"--only {name}: not one of {', '.join(FIGURES)}")
    run = args.run.resolve()
    with open(run / "verdicts.jsonl", "rb") as fh:   # one row per finished case (canaries included)
        n = sum(1 for line in fh if line.strip())
    twin = twin_of(run)
    scripts = args.scripts.resolve()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    speed: list[float] = []
    with tempfile.TemporaryDirectory(prefix="assay-bench-readers-") as tmp:
        for rep in range(args.reps):
            speed.append(reference_loop())
            for name in names:
                prepare(name, scripts, run, twin, env)
                load = os.getloadavg()[0]
                t0 = time.time()
                child = timed_child(argv_of(name, scripts, run, twin, Path(tmp)), env=env, timeout_s=args.timeout,
                                    log_dir=Path(tmp) / f"{name}-{rep}")
                row = {"rep": rep + 1, "wall_s": round(child.wall_s, 2), "cpu_s": round(child.cpu_s, 2),
                       "maxrss_mb": round(child.maxrss_mb, 1),
                       "tree_pss_mb": round(child.tree_pss_mb, 1) if child.tree_pss_mb is not None else None,
                       "load_1min_before": round(load, 2),
                       "load_1min_after": round(os.getloadavg()[0], 2),
                       "started": time.strftime("%H:%M:%S", time.gmtime(t0)),
                       "problem": problem(name, child.rc, child.stdout, n)}
                if row["problem"]:
                    row["stderr_tail"] = child.stderr[-600:]
                rows[name].append(row)
                print(json.dumps({"figure": name, **row}), file=sys.stderr, flush=True)
    out: dict[str, Any] = {"run": str(run), "cases": n, "scripts": str(scripts), "cpus": os.cpu_count(),
                           "reps": args.reps, "reference_loop_cpu_s": speed, "figures": {}}
    for name, got in rows.items():
        ok = [r for r in got if not r["problem"]]
        out["figures"][name] = {"wall_s": summarize([r["wall_s"] for r in ok]),
                                "cpu_s": summarize([r["cpu_s"] for r in ok]),
                                "maxrss_mb": summarize([r["maxrss_mb"] for r in ok]),
                                "tree_pss_mb": summarize([r["tree_pss_mb"] for r in ok if r["tree_pss_mb"] is not None]),
                                "invalid": len(got) - len(ok), "runs": got}
    emit_json(out, args.json)
    return 0 if all(not f["invalid"] for f in out["figures"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
