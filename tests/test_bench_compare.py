"""Smoke run of bench/compare.py (compare_runs.py on a pair of real runs) so the benchmark cannot rot."""

import json
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.bench_smoke   # run by make bench-check, not make test


def test_compare_bench_quick_produces_a_valid_measurement(tmp_path):
    out = tmp_path / "compare.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "compare.py"), "--cases", "150", "--reps", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["valid"] and doc["cases"] == 150 and doc["wall_s"]["median"] > 0
    assert doc["expected_counts"] == {"expectation_changed": 3, "newly_failing": 2, "still_passing": 145}
