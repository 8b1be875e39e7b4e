"""Smoke run of bench/trace_join.py so the trace-joining benchmark cannot rot."""

import json
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.bench_smoke   # run by make bench-check, not make test


def test_trace_join_quick_measures_every_size(tmp_path):
    out = tmp_path / "tj.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "trace_join.py"), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert [r["spans"] for r in doc["rows"]] == [100, 1000]
    for row in doc["rows"]:
        assert row["collect_ms_median"] > 0 and row["ingest_s"] > 0 and row["tail_poll_ms_median"] > 0
        assert row["traces"] * 5 == row["spans"]
    assert "| spans in file |" in proc.stdout
