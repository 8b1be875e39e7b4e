"""bench/memory.py runs end to end (tiny sizes: the memory curve itself is for bench/RESULTS.md)."""

import json
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.bench_smoke   # run by make bench-check, not make test


def test_scale_bench_smoke(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "memory.py"), "--sizes", "10,30", "--concurrency", "2",
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "scale.json").read_text())
    rows = doc["rows"]
    assert [row["cases"] for row in rows] == [10, 30]
    assert all(not row["problems"] and row["peak_rss_mb"] > 0 and row["files"] > 0 for row in rows)
    assert "kb_per_case_above_first" in rows[1]
    assert not list((tmp_path / "work").iterdir())   # the run dirs are removed without --keep
