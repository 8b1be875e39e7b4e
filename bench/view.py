#!/usr/bin/env python3
"""Viewer: open a 10,000-case run in view.py, in Debian's headless Chromium (Playwright).

Writes a state dir with one run of --cases cases (crafted per runner contract §10 by
tests/rundir_util.make_run: every 50th case fails) plus --runs small runs, then, --reps times:
starts `view.py STATE` as a subprocess (time until it prints its URL = start-up), opens
`#/run/<id>` in a fresh page and times until the run page has painted its first 100 cases
(the gate's decision, the counts and the first page of cases: `data-ready` set), then the
same with a verdict filter, then a free-text search (`?q=`, --search: the first text query of the
server reads every case's input and answer). The first paint shows the gate's decision or "checking…" (the gate is
evaluated off the request); `gate_known_s` is until the decision is painted. Server memory is the
view.py process's peak RSS (VmHWM). With --bundle: `view.py --bundle` of the big run, opened from
file:// (first paint, a verdict filter, the index's file sizes). The load average is printed, and
with --ref-loop the machine's speed (a fixed pure-Python loop, before and after). With --before
DIR, that scripts/ dir's view.py is timed too, in turn with --scripts rep by rep on the same state
(before and after alternated). `gate_worker_rss_mb` is the peak RSS of view.py's child process
(the gate decisions' worker, when the code has one).

Usage: `bench/view.py [--cases 10000] [--runs 200] [--reps 3] [--layout journal|dirs] [--search TEXT] [--bundle]
[--before SCRIPTS_DIR] [--ref-loop]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from rundir_util import make_run  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]


def to_journal(run_dir: Path) -> None:
    """The crafted run's case dirs as the runner writes them today: one cases.jsonl line per case
    (core.casestore.record_line), in plan order, and no cases/ dir."""
    import shutil

    from assay.core import casestore
    cases = run_dir / "cases"
    with open(run_dir / casestore.JOURNAL, "wb") as journal:
        for cdir in sorted(cases.iterdir()):
            verdict = json.loads((cdir / "verdict.json").read_text("utf-8"))
            files = {p.name: p.read_bytes() for p in sorted(cdir.iterdir()) if p.name != "verdict.json"}
            journal.write(casestore.record_line(cdir.name, verdict, files))
    shutil.rmtree(cases)


def hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bundle_timings(browser, state: Path, big: str, reps: int) -> dict:
    """`view.py --bundle` of the big run, then its first paint and a verdict filter from file://."""
    out = state.parent / "bundle"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "scripts" / "view.py"), str(state), "--bundle", str(out),
                    "--run", big], check=True, stdout=subprocess.DEVNULL)
    write_s = time.perf_counter() - t0
    rows = []
    for _ in range(reps):
        page = browser.new_page()
        t1 = time.perf_counter()
        page.goto((out / "index.html").as_uri() + f"#/run/{big}")
        page.wait_for_function("() => (document.body.getAttribute('data-ready') || '').startsWith('/run/')",
                               timeout=120000)
        first = time.perf_counter() - t1
        t2 = time.perf_counter()
        page.goto((out / "index.html").as_uri() + f"#/run/{big}?verdict=fail")
        page.wait_for_function("() => (document.body.getAttribute('data-ready') || '').includes('verdict=fail')",
                               timeout=120000)
        rows.append({"first_paint_s": first, "filter_s": time.perf_counter() - t2,
                     "rows": page.locator("tr.case-row").count()})
        page.close()
    index_files = sorted((out / "data").glob(f"run__{big}__cases*.js"))
    return {"write_s": round(write_s, 2), "index_files": len(index_files),
            "largest_index_file_kb": round(max(f.stat().st_size for f in index_files) / 1024, 1),
            "reps": rows, "median": {k: round(statistics.median(r[k] for r in rows), 3) for k in ("first_paint_s", "filter_s")}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bundle", action="store_true", help="also time a --bundle of the big run opened from file://")
    ap.add_argument("--scripts", type=Path, default=ROOT / "scripts",
                    help="the scripts/ dir whose view.py to time (default this checkout's; another one for 'before')")
    ap.add_argument("--layout", choices=("journal", "dirs"), default="journal",
                    help="the big run's cases as a case journal (cases.jsonl, what the runner writes) or as an "
                         "older run's case dirs (what the earlier figures measured)")
    ap.add_argument("--search", default="c-0777", help="the free-text query timed on the big run (cold: the first "
                                                        "text query reads every case's input and answer)")
    ap.add_argument("--before", type=Path, help="another scripts/ dir timed in turn with --scripts, rep by rep on the "
                                                "same state (before and after alternated); its figures under `before`")
    ap.add_argument("--ref-loop", action="store_true", help="time a fixed pure-Python loop before and after (the "
                                                           "machine's speed; 1.2 s on a quiet day)")
    a = ap.parse_args(argv)
    load_before = os.getloadavg()
    ref_before = ref_loop() if a.ref_loop else None
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as tmp:
        reports = Path(tmp) / "reports"
        big = "smoke-20261130T101500Z"
        make_run(reports, [{"id": f"c-{i:05d}", "verdict": "fail" if i % 50 == 0 else "pass"}
                           for i in range(a.cases)], run_id=big)
        if a.layout == "journal":
            to_journal(reports / big)
        for r in range(a.runs - 1):
            make_run(reports, [{"id": f"c-{i}"} for i in range(5)], run_id=f"smoke-2026110{1 + r // 100}T{r % 100:02d}0000Z")
        sides = [("before", a.before, [])] if a.before else []
        sides.append(("after", a.scripts, []))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS, headless=True)
            for _ in range(a.reps):
                for _side, scripts, rows in sides:   # --before then --scripts, rep by rep
                    rows.append(time_once(browser, scripts, tmp, big, a.search))
            bundle = bundle_timings(browser, Path(tmp), big, a.reps) if a.bundle else None
            browser.close()
    out = {"cases": a.cases, "runs": a.runs, "layout": a.layout, "load_before": load_before,
           "ref_loop_before_s": ref_before, "load_after": os.getloadavg(),
           "ref_loop_after_s": ref_loop() if a.ref_loop else None}
    for side, scripts, rows in sides:
        doc = {"scripts": str(scripts), "reps": rows, "median": medians(rows)}
        if side == "after":
            out.update(doc)
        else:
            out["before"] = doc
    out["bundle"] = bundle
    print(json.dumps(out, indent=2))
    return 0


def medians(rows: list[dict]) -> dict:
    return {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]
            if isinstance(rows[0][k], float) and all(isinstance(r[k], float) for r in rows)}


def ref_loop() -> float:
    """The machine's speed now: a fixed pure-Python loop in a fresh interpreter (1.2 s on a quiet day)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "x = 0\nfor i in range(20_000_000):\n    x += i"], check=True)
    return round(time.perf_counter() - t0, 2)


def children_hwm_mb(pid: int) -> float | None:
    """The peak RSS of the process's children (the viewer's gate worker), the largest; None when none."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    peaks = []
    for kid in kids:
        try:
            peaks.append(hwm_mb(int(kid)))
        except OSError:
            pass
    return max(peaks) if peaks else None


def time_once(browser, scripts: Path, tmp: str, big: str, search: str) -> dict:
    """One fresh `view.py` of `scripts`: start-up, first paint, gate decided, a filter, a search."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(scripts / "view.py"), tmp,
                             "--serve-seconds", "120"], stdout=subprocess.PIPE, text=True)
    url = json.loads(proc.stdout.readline())["url"]
    start = time.perf_counter() - t0
    page = browser.new_page()
    t1 = time.perf_counter()
    page.goto(url + f"#/run/{big}")
    page.wait_for_function("() => (document.body.getAttribute('data-ready') || '').startsWith('/run/')",
                           timeout=120000)
    first = time.perf_counter() - t1
    shown = page.locator("tr.case-row").count()
    at_paint = page.get_attribute("#gate", "data-gate")
    page.wait_for_selector("#gate:not([data-gate=checking])", timeout=120000)
    gate_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    page.goto(url + f"#/run/{big}?verdict=fail")
    page.wait_for_function("() => (document.body.getAttribute('data-ready') || '').includes('verdict=fail')",
                           timeout=120000)
    filt = time.perf_counter() - t2
    # free text over every case's input and answer (the first text query reads them all)
    t3 = time.perf_counter()
    page.goto(url + f"#/run/{big}?q={search}")
    page.wait_for_function("() => (document.body.getAttribute('data-ready') || '').includes('q=')",
                           timeout=300000)
    search_s = time.perf_counter() - t3
    found = page.locator("tr.case-row").count()
    row = {"start_s": start, "first_paint_s": first, "gate_known_s": gate_s, "filter_s": filt,
           "search_s": search_s, "search_rows": found, "rows": shown, "gate_at_paint": at_paint,
           "rss_mb": hwm_mb(proc.pid), "gate_worker_rss_mb": children_hwm_mb(proc.pid)}
    page.close()
    proc.terminate()
    proc.wait(10)
    return row


if __name__ == "__main__":
    sys.exit(main())
