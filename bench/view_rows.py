#!/usr/bin/env python3
"""Viewer rows: what the run page's rows cost on the request, in process (no browser).

Writes a --cases run (tests/rundir_util.make_run; every --fail-every-th case fails on its
tool_selection layer) and, unless --no-datasets, one case file per case under the state dir's
datasets/ (`<id>.yaml`, the usual name, with the failing expectation on line 6). Then, --reps
times in a fresh process: the first page of 100 rows cold (`assay.view.cases.page`: the index and
the shown rows' verdicts), the same page warm, the failing rows only, and then the request the page
makes once it has painted them: their case files and failing lines (`cases.sources`). Prints the
medians and the load average. `--one STATE RUN_ID` times an existing state (to run two checkouts'
code on the same files).

Usage: `bench/view_rows.py [--cases 10000] [--fail-every 5] [--reps 3] [--no-datasets]`.
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

CASE = "id: {cid}\ntitle: restart {cid}\ninput:\n  messages: [{{role: user, content: restart web-1}}]\nexpect:\n  args: {{restart_service: {{timeout_s: 300}}}}\n"
CHECK = {"tool": "restart_service", "arg": "timeout_s", "calls": "any", "status": "fail", "reason": "expected 300, got 300000"}


def one(state: str, run_id: str) -> dict:
    """In a fresh process: the first page cold, warm, and the failing rows."""
    from assay.view import cases
    reports = Path(state) / "reports"
    out = {}
    for name, q in (("first_page_cold_s", {}), ("first_page_warm_s", {}), ("failing_s", {"verdict": ["fail"]})):
        t = time.perf_counter()
        doc = cases.page(reports, run_id, q)
        out[name] = round(time.perf_counter() - t, 4)
    if hasattr(cases, "sources"):  # the failing rows' case file:line, asked by the page after it painted them
        t = time.perf_counter()
        got = cases.sources(reports, run_id, {"ids": [",".join(r["case_id"] for r in doc["cases"])]})["sources"]
        out["sources_of_failing_page_s"] = round(time.perf_counter() - t, 4)
        out["rows_with_source"] = len(got)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--fail-every", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-datasets", action="store_true")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(*a.one)))
        return 0
    from rundir_util import make_run
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        run_id = "smoke-20261130T101500Z"
        specs = [{"id": f"c-{i:05d}", "verdict": "fail" if i % a.fail_every == 0 else "pass",
                  "layers": {"tool_selection": {"verdict": "fail", "checks": [CHECK]}} if i % a.fail_every == 0 else {}}
                 for i in range(a.cases)]
        make_run(Path(tmp) / "reports", specs, run_id=run_id)
        if not a.no_datasets:
            ds = Path(tmp) / "datasets"
            ds.mkdir()
            for s in specs:
                (ds / f"{s['id']}.yaml").write_text(CASE.format(cid=s["id"]), encoding="utf-8")
        reps = [json.loads(subprocess.run([sys.executable, __file__, "--one", tmp, run_id], check=True,
                                          capture_output=True, text=True).stdout) for _ in range(a.reps)]
    med = {k: statistics.median(r[k] for r in reps) for k in reps[0]}
    print(json.dumps({"cases": a.cases, "datasets": not a.no_datasets, "load_before": load, "load_after": os.getloadavg(),
                      "reps": reps, "median": med}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
