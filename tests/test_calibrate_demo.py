"""`make demo CALIBRATE=1` end to end, offline: run -> cluster -> label page -> scripted labels ->
score_agreement -> a calibrated rubric whose fail now gates. On a copy of the example state dir."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.slow

EXAMPLE = ROOT / "examples" / "helpdesk"


def test_calibration_loop_moves_the_judged_line_from_provisional_to_gating(tmp_path):
    state = tmp_path / ".assay"
    shutil.copytree(EXAMPLE / ".assay", state, ignore=shutil.ignore_patterns("work", "reports", "annotations"))
    proc = subprocess.run([sys.executable, str(EXAMPLE / "demo.py"), "--calibrate", "--state-dir", str(state)],
                          capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "judged (provisional, never gating)" in out and "judged (calibrated, gating)" in out
    assert out.index("judged (provisional") < out.index("judged (calibrated")
    # sitting 1 is short of the DEFAULT floors and says by how much, of which class
    assert "calibrated False; label 38 more: at least 18 that people fail" in out
    assert "112 pairs over 54 distinct answers (37 human fail, 75 human pass)" in out
    assert "below the defaults" not in out                       # calibrated at the default floors
    demo = state / "work" / "calibrate-demo" / ".assay"
    sidecar = json.loads((demo / "judge" / "calibration.json").read_text())
    entry = sidecar["rubrics"]["refund-eta-v1"]
    assert entry["calibrated"] is True and entry["pairs"] >= 100 and entry["fn"] == 3   # the judge's 3 misses
    assert sidecar["floors"] == {"min_pairs": 100, "min_per_class": 10, "min_tpr": 0.9, "min_tnr": 0.9,
                                 "min_kappa": 0.6}
    assert (demo / "work" / "label.html").read_text().startswith("<!DOCTYPE html>")
    lines = [json.loads(x) for f in (demo / "annotations").glob("*.jsonl") for x in f.read_text().splitlines()]
    counted = [x for x in lines if not x.get("canary")]
    # honest: every counted label is on its own (case, node, answer); none is a repeat of another
    keys = {(x["case_id"], x["node_id"], x["answer_sha256"]) for x in counted}
    assert len(keys) == len(counted) == entry["pairs"]
    assert len({x["answer_sha256"] for x in counted if x["case_id"] == "c-bd5404f8"}) == 2   # clean, broken
    assert not (state / "judge" / "calibration.json").exists()   # the state dir given is never calibrated
