"""Smoke run of bench/shards.py (sharded wall and merge cost) so the benchmark cannot rot."""

import json
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.bench_smoke   # run by make bench-check, not make test


def test_shards_bench_quick_produces_valid_measurements(tmp_path):
    out = tmp_path / "shards.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "shards.py"), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    (row,) = doc["scaling"]
    assert row["shards"] == 2 and row["valid_runs"] == 1 and row["ideal_s"] > 0
    assert row["shards_s"]["median"] > row["ideal_s"]
    assert doc["merge"]["valid_runs"] == 1 and doc["merge"]["us_per_case"] > 0
    assert "| shards | cases |" in proc.stdout and "| merge: cases |" in proc.stdout
