"""History as a newcomer reads it in 30 seconds: a run that did not call the app (run_cases.py --replay)
is no point of the app's trend, and the page says so on its first screen; a chart never draws a line
or a band through a run that has no figure (no scored case, no cost, no latency)."""

from __future__ import annotations

import json

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from helpers import run_script, view_server
from rundir_util import make_run

LIVE = [f"regression-2026113{i}T100000Z" for i in range(3)]
REPLAY = "regression-20261201T100000Z"


def _cases(passes, fails=0):
    return [{"id": f"c-p{i}"} for i in range(passes)] + [{"id": f"c-f{i}", "verdict": "fail"} for i in range(fails)]


def _replay_of(run_id):
    source = {"source": "run", "run_id": run_id, "run_dir": f"reports/{run_id}", "cache": "cache"}
    return {"replay": {"app": "replay", "calls": "cache", "cache": "cache", "replayed_from": source},
            "replayed_from": source}


def _state(tmp_path):
    reports = tmp_path / "reports"
    for run_id in LIVE:
        make_run(reports, _cases(20), run_id=run_id)
    # a replay of the first run after the rubric tightened: answers from the recording, the app was not called
    make_run(reports, _cases(4, 16), run_id=REPLAY, manifest=_replay_of(LIVE[0]))
    return tmp_path


def test_a_replayed_run_is_no_point_of_the_trend_and_is_named_apart(tmp_path):
    state = _state(tmp_path)
    res = run_script("run_history", state, "--no-verify", "--html", tmp_path / "h.html")
    assert res.rc == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert out["runs_used"] == 3 and out["replayed_runs"] == 1 and out["drift_flagged"] == [], out
    doc = json.loads((state / "reports" / "history.json").read_text())
    (series,) = doc["series"]
    assert [r["run_id"] for r in series["runs"]] == LIVE and series["drift"]["flagged"] is False
    assert series["changed"] == [] and series["flaky"] == []   # the replay's 16 fails are no regression
    assert doc["replayed_runs"] == [{"run_id": REPLAY, "pass_rate": 0.2, "scored": 20, "series": series["name"],
                                     "replayed": f"REPLAYED from run {LIVE[0]}: the app was not called"}]
    html = (tmp_path / "h.html").read_text()
    assert "Replayed runs (1): the app was not called" in html
    assert f"REPLAYED from run {LIVE[0]}: the app was not called" in html
    # the gate's first line says it in the same words (one definition: assay.replay.source.replayed_words)
    gate = run_script("gate", state / "reports" / REPLAY, "--no-verify")
    assert f"[REPLAYED from run {LIVE[0]}: the app was not called]" in gate.stdout, gate.stdout


@pytest.mark.slow
@NEEDS_CHROMIUM
def test_the_history_page_names_a_replayed_run_on_its_first_screen(tmp_path):
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    state = _state(tmp_path)
    with view_server(state) as url, playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url + "#/history")
        page.wait_for_function("() => (document.body.getAttribute('data-ready') || '') === '/history'", timeout=120000)
        page.screenshot(path=str(tmp_path / "history.png"))
        first = page.locator("#excluded-runs li").first
        assert first.is_visible() and first.bounding_box()["y"] < 800
        assert first.inner_text() == (f"{REPLAY}: REPLAYED from run {LIVE[0]}: the app was not called "
                                      "(not a point of the app's trend)")
        assert page.locator("svg.chart.rate circle").count() == 3   # the three live runs only
        assert "runs used: 3 (not verified) · excluded: 1" in page.inner_text("main")
        browser.close()
