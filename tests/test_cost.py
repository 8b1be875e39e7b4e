"""Cost and latency from traces (score_cost.py), budgets in the gate, and the history of real runs.

Three smoke runs of the bundled example app (its spans carry made-up but fixed token
counts) in a copy of its state dir; everything below reads those run directories.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT, run_script

EXAMPLE = ROOT / "examples" / "helpdesk"


def _demo_module():
    spec = importlib.util.spec_from_file_location("helpdesk_demo_cost", EXAMPLE / "demo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cost")
    state = base / "app" / ".assay"
    shutil.copytree(EXAMPLE / ".assay", state, ignore=shutil.ignore_patterns("work", "reports", "holdout-looks.jsonl"))
    app = _demo_module().App(base, broken=False, flaky=False)
    url = app.start()
    env = {"HELPDESK_BASE_URL": url, "HELPDESK_OTLP_FILE": str(app.otlp_file)}
    try:
        conv = run_script("convert_suite", state, "-o", base / "converted.json")
        assert conv.rc == 0, conv.stdout
        out = []
        for i in range(3):
            run_id = f"smoke-202611{28 + i}T120000Z"
            plan = run_script("make_plan", base / "converted.json", "--mode", "smoke", "--state-dir", state,
                              "-o", base / f"plan{i}.json", "--run-id", run_id)
            assert plan.rc == 0, plan.stdout
            r = run_script("run_cases", "--plan", base / f"plan{i}.json", "--out", state / "reports" / run_id,
                           "--progress", "never", env=env)
            assert r.rc == 0, r.stdout + r.stderr
            out.append(state / "reports" / run_id)
    finally:
        app.stop()
    return state, out


def _trajectory_tokens(run_dir: Path) -> tuple[int, int]:
    """Every model call the run stored: a case's trajectory.json, or for a conversation every
    sent turn's turns/<n>/trajectory.json (the case-level one is a copy of the deciding turn's)."""
    tin = tout = 0
    files = []
    for cdir in run_dir.glob("cases/*"):
        turns = list(cdir.glob("turns/*/trajectory.json"))
        files += turns or list(cdir.glob("trajectory.json"))
    for t in files:
        for call in json.loads(t.read_text())["llm_calls"]:
            tin += call.get("input_tokens", 0)
            tout += call.get("output_tokens", 0)
    return tin, tout


def test_cost_is_priced_from_the_traces(runs):
    state, dirs = runs
    r = run_script("score_cost", dirs[0])
    assert r.rc == 0, r.stdout
    doc = r.json
    assert doc["capability"] == {"enabled": True, "blocked_by": None}
    t = doc["totals"]
    assert (t["input_tokens"], t["output_tokens"]) == _trajectory_tokens(dirs[0])
    assert t["input_tokens"] > 0 and t["complete"] is True and doc["unpriced_models"] == []
    # helpdesk-rules-1: 0.40 / 1.60 per million tokens (the example's prices.yaml)
    expected = t["input_tokens"] * 0.40 / 1e6 + t["output_tokens"] * 1.60 / 1e6
    assert t["cost"]["total"] == pytest.approx(expected, rel=1e-6)
    assert t["latency_ms"]["p95"] >= t["latency_ms"]["p50"] > 0
    assert doc["currency"] == "USD"


def test_unknown_model_is_named_never_priced_at_zero(runs, tmp_path):
    _, dirs = runs
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\nper: 1000\nmodels:\n  some-other-model: {input: 1, output: 2}\n")
    doc = run_script("score_cost", dirs[0], "--prices", prices).json
    assert doc["unpriced_models"] == ["helpdesk-rules-1"]
    assert doc["totals"]["complete"] is False and doc["totals"]["cost"]["total"] is None
    priced_models = [c for c in doc["cases"] if c["model_calls"]]
    assert priced_models and all(c["cost"] is None for c in priced_models)


@pytest.mark.parametrize("text, complaint", [
    ("currency: USD\nmodels: {}\n", "`models` must map"),
    ("models:\n  m: {input: -1, output: 2}\n", "models.m.input must be a price"),
    ("models:\n  m: {input: 1}\n", "models.m must be {input"),
    ("modles:\n  m: {input: 1, output: 1}\n", "unknown key"),
    ("per: 0\nmodels:\n  m: {input: 1, output: 1}\n", "`per` must be"),
])
def test_bad_prices_file_is_exit_2_naming_the_key(runs, tmp_path, text, complaint):
    _, dirs = runs
    prices = tmp_path / "p.yaml"
    prices.write_text(text)
    r = run_script("score_cost", dirs[0], "--prices", prices)
    assert r.rc == 2 and complaint in r.json["error"] and "p.yaml" in r.json["error"]


def test_baseline_split_by_verdict_change(runs):
    _, dirs = runs
    doc = run_script("score_cost", dirs[1], "--baseline", dirs[0]).json
    groups = doc["baseline"]["by_verdict_change"]
    assert groups["unchanged"]["cases"] == len(doc["cases"]) and groups["broken"]["cases"] == 0
    assert groups["unchanged"]["cost_delta"] == pytest.approx(0, abs=1e-9)  # deterministic app, same tokens


def test_budgets_close_and_open_the_gate_with_the_margin(runs, tmp_path):
    _, dirs = runs
    closed = run_script("gate", dirs[0], "--max-cost-per-case", "0.00001")
    assert closed.rc == 1
    assert "is over the budget 1e-05 by" in closed.stdout
    opened = run_script("gate", dirs[0], "--max-cost-per-case", "1", "--max-p95-latency-s", "30")
    assert opened.rc == 0, opened.stdout
    assert "budget 1: margin" in opened.stdout and "budget 30s: margin" in opened.stdout
    slow = run_script("gate", dirs[0], "--max-p95-latency-s", "0")
    assert slow.rc == 1 and "p95 latency" in slow.stdout and "over the budget 0s" in slow.stdout
    # a budget that cannot be checked is not a pass
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  nope: {input: 1, output: 1}\n")
    blind = run_script("gate", dirs[0], "--max-cost-per-case", "1", "--prices", prices)
    assert blind.rc == 1 and "cannot be checked" in blind.stdout and "helpdesk-rules-1" in blind.stdout
    bad = run_script("gate", dirs[0], "--max-cost-per-case", "-1")
    assert bad.rc == 2


def test_report_has_the_cost_section(runs):
    _, dirs = runs
    r = run_script("draft_report", dirs[2], "-o", dirs[2] / "report.md", "--force")
    assert r.rc == 0, r.stdout
    text = (dirs[2] / "report.md").read_text()
    assert "## Cost and latency" in text and "USD in all" in text


def test_history_of_real_runs_verifies_and_renders_in_chromium(runs, tmp_path):
    state, dirs = runs
    page = tmp_path / "history.html"
    r = run_script("run_history", state, "--html", page)
    assert r.rc == 0, r.stdout + r.stderr
    out = r.json
    assert out["runs_used"] == 3 and out["excluded_runs"] == 0 and len(out["series"]) == 1
    html = page.read_text()
    assert html.count("<circle") == 3 and "<script" not in html.lower()
    from test_md_to_html import CHROMIUM_FLAGS, chromium_path
    shot = tmp_path / "history.png"
    proc = subprocess.run([chromium_path(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                           f"--screenshot={shot}", "--window-size=900,900", page.as_uri()],
                          capture_output=True, text=True, timeout=90)
    assert shot.exists() and shot.stat().st_size > 5000, proc.stderr[-2000:]
    if os.environ.get("ASSAY_KEEP_SCREENSHOTS"):
        shutil.copy(shot, os.environ["ASSAY_KEEP_SCREENSHOTS"])
