"""bench/rate_limits.py runs end to end (a tiny size: the numbers themselves are for bench/RESULTS.md)."""

import json
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.bench_smoke   # run by make bench-check, not make test


def test_rate_limit_bench_smoke(tmp_path):
    out = tmp_path / "rl.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "rate_limits.py"), "--quick", "--cases", "12",
                        "--only", "nagle", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = json.loads(out.read_text())["nagle"]["runs"]
    assert [x["server_nagle"] for x in runs] == [True, False]
    assert all(x["rc"] == 0 and x["passes"] == 12 and x["infra_errors"] == 0 for x in runs)
    assert all(x["throughput"]["adaptive"] is True for x in runs)
