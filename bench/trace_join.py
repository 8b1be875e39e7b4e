#!/usr/bin/env python3
"""Trace joining cost as the span file grows: is it flat per case?

The runner's `otlp-file` source (scripts/assay/traces/otlp_file.py) indexes the span file
incrementally and joins a case's spans by trace id. This measures, for span files of
1,000 / 10,000 / 100,000 GenAI spans (5 spans per trace: invoke_agent, chat, three
execute_tool calls, one OTLP TracesData line per trace, written with the production
writer `assay.traces.otlp_writer`):

- ingest: the first `poll()` of the whole file (one-off per run), and µs per span;
- collect: `collect(trace_id)` for randomly chosen traces (poll + load + normalize: the
  per-case cost the runner pays), median and spread in ms per case;
- tail poll: a `poll()` after 100 more traces are appended to the big file (what every
  case's collect pays while the app keeps writing): it must not grow with the file;
- memory: the traced Python allocation peak of the source while ingesting (tracemalloc).

Flat means the collect median at 100,000 spans stays within a small factor of the one
at 1,000. Usage: `bench/trace_join.py [--quick] [--reps 5] [--json OUT]`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from assay.traces.otlp_writer import new_span_id, span, traces_data  # noqa: E402
from assay.traces.otlp_file import OtlpFileSource  # noqa: E402

SPANS_PER_TRACE = 5


def trace_spans(n: int, t0: int) -> tuple[str, list[dict]]:
    trace_id = f"{n + 1:032x}"  # an all-zero trace id is invalid (W3C)
    root_id = new_span_id()
    spans = [span(trace_id=trace_id, span_id=root_id, operation="invoke_agent", agent="billing",
                  start_ns=t0, end_ns=t0 + 9_000_000)]
    spans.append(span(trace_id=trace_id, parent_span_id=root_id, operation="chat", model="m",
                      input_tokens=10, output_tokens=5, start_ns=t0 + 1_000_000, end_ns=t0 + 2_000_000))
    for i, tool in enumerate(("lookup_invoice", "search_kb", "issue_refund")):
        t = t0 + (3 + 2 * i) * 1_000_000
        spans.append(span(trace_id=trace_id, parent_span_id=root_id, operation="execute_tool", tool=tool,
                          arguments={"invoice_id": f"INV-{n}"}, result={"total": n % 997, "id": f"INV-{n}"},
                          start_ns=t, end_ns=t + 500_000))
    return trace_id, spans


def write_file(path: Path, first: int, traces: int) -> list[str]:
    ids = []
    with open(path, "a", encoding="utf-8") as fh:
        for n in range(first, first + traces):
            tid, spans = trace_spans(n, 1_700_000_000_000_000_000 + n * 10_000_000)
            fh.write(json.dumps(traces_data(spans), separators=(",", ":")) + "\n")
            ids.append(tid)
    return ids


def measure(spans: int, reps: int, samples: int, workdir: Path) -> dict:
    traces = spans // SPANS_PER_TRACE
    path = workdir / f"spans-{spans}.jsonl"
    path.unlink(missing_ok=True)
    ids = write_file(path, 0, traces)
    ingest, per_case, tail, peaks = [], [], [], []
    rng = random.Random(spans)
    # Memory once, on its own (tracemalloc slows everything it watches): the ingest peak.
    tracemalloc.start()
    OtlpFileSource(path, "gen_ai", quiescence_ms=0, max_wait_s=5).poll()
    peaks.append(tracemalloc.get_traced_memory()[1])
    tracemalloc.stop()
    for _ in range(reps):
        src = OtlpFileSource(path, "gen_ai", quiescence_ms=0, max_wait_s=5)
        t = time.perf_counter()
        got = src.poll()
        ingest.append(time.perf_counter() - t)
        assert got == (traces + 100 * len(tail)) * SPANS_PER_TRACE, (got, traces, len(tail))
        chosen = [rng.choice(ids) for _ in range(samples)]
        t = time.perf_counter()
        for tid in chosen:
            out = src.collect(tid)
            assert out.status == "ok" and len(out.trajectory["tool_calls"]) == 3, out.reason
        per_case.append((time.perf_counter() - t) / samples)
        before = path.stat().st_size
        write_file(path, traces + 10_000_000 * (len(tail) + 1), 100)  # the app keeps writing
        t = time.perf_counter()
        new = src.poll()
        tail.append(time.perf_counter() - t)
        assert new == 100 * SPANS_PER_TRACE and path.stat().st_size > before
    path.unlink(missing_ok=True)
    med = statistics.median
    return {
        "spans": spans, "traces": traces, "reps": reps, "samples_per_rep": samples,
        "ingest_s": med(ingest), "ingest_us_per_span": med(ingest) / spans * 1e6,
        "collect_ms_median": med(per_case) * 1000,
        "collect_ms_min": min(per_case) * 1000, "collect_ms_max": max(per_case) * 1000,
        "tail_poll_ms_median": med(tail) * 1000,
        "ingest_peak_mb": peaks[0] / 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition (the test suite's smoke run)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--samples", type=int, default=200, help="collects timed per repetition")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    sizes = (100, 1_000) if args.quick else (1_000, 10_000, 100_000)
    reps, samples = (1, 20) if args.quick else (args.reps, args.samples)
    rows = []
    with tempfile.TemporaryDirectory(prefix="assay-trace-join-") as tmp:
        for n in sizes:
            print(f"trace join: {n:,} spans ...", file=sys.stderr, flush=True)
            rows.append(measure(n, reps, samples, Path(tmp)))
    ratio = rows[-1]["collect_ms_median"] / rows[0]["collect_ms_median"]
    result = {"rows": rows, "collect_ratio_largest_vs_smallest": ratio}
    print("| spans in file | ingest once | per span | collect per case, median (min-max) | tail poll (+100 traces) | ingest peak |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['spans']:,} | {r['ingest_s'] * 1000:.0f} ms | {r['ingest_us_per_span']:.1f} µs "
              f"| {r['collect_ms_median']:.3f} ms ({r['collect_ms_min']:.3f}-{r['collect_ms_max']:.3f}) "
              f"| {r['tail_poll_ms_median']:.2f} ms | {r['ingest_peak_mb']:.1f} MB |")
    print(f"\ncollect per case at {rows[-1]['spans']:,} spans / at {rows[0]['spans']:,}: {ratio:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
