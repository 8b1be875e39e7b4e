#!/usr/bin/env python3
"""Throughput under rate limits, long tails and Nagle: the runner against apps that push back.

Three scenarios, each against a real loopback app, each run as a real `run_cases.py`
process (promptfoo beside it when bench/.node has it, see bench/promptfoo.py):

1. **Rate limit.** A token bucket (default 40 requests/s, one second of burst) answers 429 with an
   integer `Retry-After` beyond it; accepted requests take a lognormal latency (median
   300 ms, p99 3 s), drawn per case number from a seeded generator so every client sees
   the same latencies. 2,000 cases. Reported: wall against the ideal (cases / rate), the
   429s the app sent, infra errors (must be 0), for assay adaptive (max_concurrency 32),
   assay fixed at 8, 16, 32 (`execution.adaptive: false`), and promptfoo at -j 8, 16, 32.
2. **Concurrency efficiency.** 2,000 cases at a fixed 200 ms latency, c=64 and c=128:
   ideal = cases x 0.2 s / c.
3. **Nagle.** 2,000 cases at c=8 against an app that writes headers and body apart with
   Nagle on (like Python's http.server), and against the same app with TCP_NODELAY.

    python bench/rate_limits.py                      # the full run (~8 min), JSON in bench/out/
    python bench/rate_limits.py --quick              # a small smoke run (seconds)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "scripts"))

from app import _CASE_NO, BenchApp, _Server, expected_for  # noqa: E402
from measure import timed_child  # noqa: E402
import promptfoo  # noqa: E402
from suite import make_plan, write_plan  # noqa: E402

RUNNER = Path(os.environ.get("ASSAY_BENCH_RUNNER") or HERE.parent / "scripts" / "run_cases.py")
Z99 = 2.3263478740408408


class ThrottledApp:
    """Token bucket + lognormal latency. 429 + Retry-After (whole seconds) beyond the rate."""

    def __init__(self, rate: float, burst: float, median_ms: float, p99_ms: float, seed: int,
                 nagle: bool = False, fixed_ms: float | None = None) -> None:
        self.rate, self.burst, self.seed = rate, burst, seed
        self.median_s, self.sigma = median_ms / 1000.0, math.log(p99_ms / median_ms) / Z99
        self.fixed_s = None if fixed_ms is None else fixed_ms / 1000.0
        self.tokens, self.last = burst, time.monotonic()
        self.lock = threading.Lock()
        self.accepted = self.limited = self.in_flight = self.in_flight_max = 0
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = not nagle

            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, obj: object, headers: dict | None = None) -> None:
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(200, {"ok": True})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    n = int(_CASE_NO.search(json.loads(raw).get("message", "")).group(1))
                except (ValueError, AttributeError, TypeError):
                    self._send(400, {"error": "no #<n>"})
                    return
                wait = app.take()
                if wait is not None:
                    self._send(429, {"error": "rate limited"}, {"Retry-After": str(max(1, math.ceil(wait)))})
                    return
                with app.lock:
                    app.in_flight += 1
                    app.in_flight_max = max(app.in_flight_max, app.in_flight)
                try:
                    time.sleep(app.latency_for(n))
                    self._send(200, expected_for(n))
                finally:
                    with app.lock:
                        app.in_flight -= 1

        self.server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self) -> float | None:
        """None when a token was taken; else seconds until one is there."""
        if self.rate <= 0:
            with self.lock:
                self.accepted += 1
            return None
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens >= 1:
                self.tokens -= 1
                self.accepted += 1
                return None
            self.limited += 1
            return (1 - self.tokens) / self.rate

    def latency_for(self, n: int) -> float:
        if self.fixed_s is not None:
            return self.fixed_s
        return self.median_s * math.exp(self.sigma * random.Random(self.seed * 1_000_003 + n).gauss(0, 1))

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_assay(work: Path, url: str, n: int, concurrency: int, *, adaptive: bool, name: str,
              timeout_s: float = 30) -> dict[str, Any]:
    root = work / name
    state = root / "state"
    (state / "reports").mkdir(parents=True, exist_ok=True)
    plan = make_plan(n, state_dir=str(state), max_concurrency=concurrency, timeout_s=timeout_s)
    plan["adapter"]["invocation"]["base_url"] = url
    plan["execution"] = {"timeout_s": timeout_s, "max_attempts": 3, "backoff_s": [1, 4], "adaptive": adaptive}
    path = write_plan(root / "plan.json", plan)
    out = state / "reports" / plan["run_id"]
    child = timed_child([sys.executable, str(RUNNER), "--plan", str(path), "--out", str(out), "--progress", "never"],
                        log_dir=root / "logs", timeout_s=1800)
    results = json.loads((out / "results.json").read_text())
    s = results["summary"]
    throughput = [json.loads(line) for line in (out / "run.log").read_text().splitlines()
                  if '"event": "throughput"' in line]
    return {"tool": "assay", "mode": "adaptive" if adaptive else "fixed", "concurrency": concurrency,
            "rc": child.rc, "wall_s": round(child.wall_s, 3), "cpu_s": round(child.cpu_s, 3),
            "passes": s["passes"], "infra_errors": s["infra_errors"], "rate_limited_retries": s.get("rate_limited_retries"),
            "throughput": throughput[-1] if throughput else None}


def run_promptfoo(work: Path, url: str, n: int, concurrency: int) -> dict[str, Any]:
    child, stats = promptfoo.run_eval(work / f"promptfoo-j{concurrency}", n, url, concurrency)
    return {"tool": "promptfoo", "mode": "fixed", "concurrency": concurrency, "rc": child.rc,
            "wall_s": round(child.wall_s, 3), "cpu_s": round(child.cpu_s, 3), **stats}


def scenario_rate_limit(work: Path, a: argparse.Namespace, log) -> dict[str, Any]:
    rows = []
    ideal = a.cases / a.rate
    specs = [("assay", True, a.max_concurrency)]
    if not a.adaptive_only:
        specs += [("assay", False, c) for c in (8, 16, 32)]
    pf_ok, pf_why = promptfoo.availability()
    if pf_ok and not a.no_promptfoo and not a.adaptive_only:
        specs += [("promptfoo", False, c) for c in (8, 16, 32)]
    for tool, adaptive, c in specs:
        app = ThrottledApp(a.rate, a.rate, a.median_ms, a.p99_ms, a.seed)   # a bucket of one second
        try:
            if tool == "assay":
                row = run_assay(work, app.url, a.cases, c, adaptive=adaptive,
                                name=f"rl-{'adaptive' if adaptive else 'fixed'}-{c}")
            else:
                row = run_promptfoo(work, app.url, a.cases, c)
        finally:
            app.stop()
        row.update(app_429s=app.limited, app_accepted=app.accepted, app_in_flight_max=app.in_flight_max,
                   ideal_s=round(ideal, 3), efficiency=round(ideal / row["wall_s"], 3) if row["wall_s"] else None)
        log(f"rate limit {tool} {row['mode']} c={c}: {row['wall_s']:.1f}s (ideal {ideal:.1f}s, "
            f"{row['efficiency']:.0%}), 429s {app.limited}, infra {row.get('infra_errors', row.get('errors'))}")
        rows.append(row)
    return {"rate_per_s": a.rate, "cases": a.cases, "median_ms": a.median_ms, "p99_ms": a.p99_ms, "seed": a.seed,
            "ideal_s": round(ideal, 3), "promptfoo": None if pf_ok else pf_why, "runs": rows}


def scenario_efficiency(work: Path, a: argparse.Namespace, log) -> dict[str, Any]:
    rows = []
    for c in (64, 128):
        app = ThrottledApp(0, 0, 1, 2, a.seed, fixed_ms=200)
        try:
            row = run_assay(work, app.url, a.cases, c, adaptive=True, name=f"eff-{c}")
        finally:
            app.stop()
        ideal = a.cases * 0.2 / c
        row.update(ideal_s=round(ideal, 3), efficiency=round(ideal / row["wall_s"], 3),
                   app_in_flight_max=app.in_flight_max)
        log(f"efficiency c={c}: {row['wall_s']:.2f}s vs ideal {ideal:.2f}s = {row['efficiency']:.0%}")
        rows.append(row)
    return {"latency_ms": 200, "cases": a.cases, "runs": rows}


def scenario_nagle(work: Path, a: argparse.Namespace, log) -> dict[str, Any]:
    rows = []
    for nagle in (True, False):
        app = ThrottledApp(0, 0, 1, 2, a.seed, nagle=nagle, fixed_ms=0)
        try:
            row = run_assay(work, app.url, a.cases, 8, adaptive=True, name=f"nagle-{nagle}")
        finally:
            app.stop()
        row.update(server_nagle=nagle, ms_per_case=round(row["wall_s"] / a.cases * 1000, 3))
        log(f"nagle={nagle}: {row['wall_s']:.2f}s = {row['ms_per_case']:.2f} ms/case")
        rows.append(row)
    return {"cases": a.cases, "concurrency": 8, "runs": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run of every scenario")
    p.add_argument("--cases", type=int, help="cases per run (default 2000; --quick 60)")
    p.add_argument("--rate", type=float, default=40.0, help="token bucket rate, requests/s")
    p.add_argument("--median-ms", type=float, default=300.0)
    p.add_argument("--p99-ms", type=float, default=3000.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--max-concurrency", type=int, default=32, help="assay adaptive: the ceiling")
    p.add_argument("--no-promptfoo", action="store_true")
    p.add_argument("--adaptive-only", action="store_true", help="rate limit scenario: assay adaptive only")
    p.add_argument("--only", choices=("rate_limit", "efficiency", "nagle"), action="append")
    p.add_argument("--json", default=str(HERE / "out" / "rate_limits.json"))
    p.add_argument("--tmpfs", action="store_true",
                   help="run dirs on /dev/shm (the runner's own cost, free of the disk's writeback from the "
                        "previous run); default: the system temp dir, what a user gets")
    a = p.parse_args(argv)
    if a.quick:
        a.rate, a.median_ms, a.p99_ms, a.no_promptfoo = 100.0, 20.0, 200.0, True
    a.cases = a.cases or (60 if a.quick else 2000)

    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", flush=True)

    out: dict[str, Any] = {"started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "quick": a.quick}
    where = "/dev/shm" if a.tmpfs and Path("/dev/shm").is_dir() else None
    out["storage"] = "tmpfs" if where else "temp dir"
    with tempfile.TemporaryDirectory(prefix="assay-bench-rl-", dir=where) as tmp:
        work = Path(tmp)
        for name, fn in (("rate_limit", scenario_rate_limit), ("efficiency", scenario_efficiency),
                         ("nagle", scenario_nagle)):
            if a.only and name not in a.only:
                continue
            out[name] = fn(work, a, log)
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(out, indent=2, sort_keys=True))
    log(f"written {a.json}")
    bad = [r for s in ("rate_limit", "efficiency", "nagle") for r in (out.get(s) or {}).get("runs", [])
           if r["tool"] == "assay" and r["mode"] == "adaptive" and (r["rc"] != 0 or r["infra_errors"])]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
