"""bench/first_bars.py runs end to end, A/B included (a tiny size: the numbers are for bench/RESULTS.md)."""

import json
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.bench_smoke   # run by make bench-check, not make test


def test_first_bars_smoke_ab(tmp_path):
    out = tmp_path / "bars.json"
    runner = str(ROOT / "scripts" / "run_cases.py")
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "first_bars.py"), "--quick", "--only", "overhead_c8",
                        "--runner", runner, "--runner", runner, "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["cases"] == 40 and doc["rounds"] == 1 and len(doc["runners"]) == 2
    assert set(doc["medians"]) == {"0", "1"} and doc["medians"]["0"]["overhead_c8"] > 0
    assert doc["ratio_b_over_a"]["overhead_c8"] > 0 and "c16_wall" not in doc["ratio_b_over_a"]
