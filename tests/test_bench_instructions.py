"""bench/instructions.py runs end to end (a tiny size: the numbers are for bench/RESULTS.md)."""

import json
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.bench_smoke]   # run by make bench-check, not make test


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_instructions_smoke(tmp_path):
    out = tmp_path / "instr.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "instructions.py"), "--cases", "3", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    row, = doc["runners"]
    assert doc["cases"] == 3 and row["runner"].endswith("run_cases.py")
    # a run of 3 cases executes more instructions than a run of 1; start-up is hundreds of millions
    assert row["runs_3"][0] > row["runs_1"][0] > 10 ** 8 and row["per_case_Ir"] > 10 ** 5
