"""bench/startup.py runs end to end, A/B included (a tiny size: the numbers are for bench/RESULTS.md)."""

import json
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.bench_smoke   # run by make bench-check, not make test


def test_startup_bench_smoke_ab(tmp_path):
    out = tmp_path / "startup.json"
    scripts = str(ROOT / "scripts")
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "startup.py"), "--quick", "--only", "gate",
                        "--only", "wait_run", "--scripts", scripts, "--scripts", scripts, "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["reps"] == 2 and len(doc["trees"]) == 2 and set(doc["medians"]) == {"gate", "wait_run"}
    assert all(v > 0 for pair in doc["medians"].values() for v in pair) and set(doc["change_pct"]) == {"gate", "wait_run"}
