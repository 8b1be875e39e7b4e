"""bench/scale.py (make bench's last step) runs end to end on tiny sizes: the disk/tmpfs pair, c=16 @ 50 ms
as the whole process, the curve and the readers on its largest run (the figures are for bench/RESULTS.md)."""

import json
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.bench_smoke]   # run by make bench-check, not make test


def test_scale_bench_quick(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--quick", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "scale.json").read_text())
    assert doc["pair"]["disk"]["invalid"] == 0 and doc["pair"]["tmpfs"]["invalid"] == 0
    assert doc["pair"]["disk_over_tmpfs"] > 0
    assert doc["conc16"]["invalid"] == 0 and 0 < doc["conc16"]["pct_of_ideal"]
    points = doc["curve"]["points"]
    assert [p["n"] for p in points] == [20, 60]
    assert all(p["invalid"] == 0 and p["files_in_run_dir"] == 8 for p in points), points   # flat: a journal, not a dir a case
    largest = doc["curve"]["largest"]
    for reader in ("verify", "gate", "resume_nothing_left", "compare_runs"):
        assert largest[reader]["rc"] == 0, (reader, largest[reader])
    assert '"complete": true' in largest["verify"]["stdout_head"]
    assert largest["viewer"]["first_page_s"] > 0
    assert not (tmp_path / "work").exists() or not list((tmp_path / "work").iterdir())   # removed without --keep
