"""`make demo CALIBRATE=1` end to end, offline: run -> cluster -> label page -> scripted labels ->
score_agreement -> a calibrated rubric whose fail now gates. On a copy of the example state dir."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from helpers import ROOT

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
    assert "at the real floors: calibrated False; unlock: label 98 more" in out
    demo = state / "work" / "calibrate-demo" / ".assay"
    sidecar = json.loads((demo / "judge" / "calibration.json").read_text())
    assert sidecar["rubrics"]["refund-eta-v1"]["calibrated"] is True
    assert (demo / "work" / "label.html").read_text().startswith("<!DOCTYPE html>")
    lines = [json.loads(x) for f in (demo / "annotations").glob("*.jsonl") for x in f.read_text().splitlines()]
    assert {(x["node_id"], x["label"]) for x in lines} == {("states-amount", "pass"), ("states-arrival", "fail")}
    assert not (state / "judge" / "calibration.json").exists()   # the state dir given is never calibrated
