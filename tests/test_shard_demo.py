"""`make demo SHARDS=3`: three run_cases.py --shard processes at once against the example app,
merged by merge_runs.py, then gated, as a user runs it (on a copy of the example state dir)."""

from __future__ import annotations

import json
import re

import pytest

from helpers import run_script
from test_demo_e2e import copy_state, run_demo

pytestmark = pytest.mark.slow


def test_demo_with_three_shards_runs_them_in_parallel_merges_and_gates(tmp_path):
    state = copy_state(tmp_path)
    proc = run_demo(state, "--shards", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for i in (1, 2, 3):
        assert re.search(rf"run_cases +shard {i}/3: exit 0 \(complete\)", proc.stdout), proc.stdout
    assert "merge_runs      exit 0 (complete)" in proc.stdout
    m = re.search(r"^(smoke-\d{8}T\d{6}Z): PASS", proc.stdout, re.M)
    assert m, proc.stdout
    reports = state / "reports"
    assert sorted(p.name for p in reports.iterdir() if p.is_dir()) == \
        [m.group(1)] + [f"{m.group(1)}.shard-{i}" for i in (1, 2, 3)]
    merged = reports / m.group(1)
    log = [json.loads(line) for line in (merged / "run.log").read_text().splitlines()]
    assert {e.get("shard") for e in log if e["event"] == "case_done"} == {1, 2, 3}
    assert log[-1]["event"] == "finalize" and [s["shard"] for s in log[-1]["merged_from"]] == [1, 2, 3]
    verify = run_script("run_cases", "--verify", merged)
    assert verify.rc == 0, verify.stdout
