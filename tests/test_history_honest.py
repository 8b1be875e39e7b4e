"""History as a newcomer reads it in 30 seconds: a run that did not call the app (run_cases.py --replay)
is no point of the app's trend, and the page says so on its first screen; a chart never draws a line
or a band through a run that has no figure (no scored case, no cost, no latency)."""

from __future__ import annotations

import json
import os

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from helpers import run_script, view_server
from rundir_util import make_run

LIVE = [f"regression-2026113{i}T100000Z" for i in range(3)]
# crafted runs (rundir_util) are not complete for run_cases.py --verify: the viewer, checking a small run itself,
# leaves them out of every trend (tests/test_history_checked.py); here it reads only a kept answer (none), the
# page's drawing being the subject
CRAFTED = dict(os.environ, ASSAY_CHECK_KEEP_ABOVE="0")
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
    with view_server(state, env=CRAFTED) as url, playwright_api.sync_playwright() as p:
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


GAPS = [f"regression-2026110{i}T100000Z" for i in range(1, 6)]


def _gap_state(tmp_path):
    """Five runs: the 2nd and 3rd could not price or time their cases, the 3rd scored none (all infra)."""
    reports = tmp_path / "reports"
    infra = [{"id": c, "verdict": "infra_error"} for c in ("a", "b", "c")]
    specs = [([{"id": "a"}, {"id": "b"}, {"id": "c"}], 0.001, 20),
             ([{"id": "a"}, {"id": "b"}, {"id": "c", "verdict": "fail"}], None, None),
             (infra, None, None),
             ([{"id": "a"}], 0.002, 30),
             ([{"id": "a"}, {"id": "b"}, {"id": "c", "verdict": "fail"}], 0.0015, 25)]
    for run_id, (cases, cost, p95) in zip(GAPS, specs):
        block = {"cost": {"mean_per_case": cost, "currency": "USD"} if cost else {}, "latency_ms": {"p95": p95} if p95 else {}}
        make_run(reports, cases, run_id=run_id, results={"cost_latency": block})
    return tmp_path


def test_history_html_keeps_a_run_with_no_scored_case_as_a_gap_in_its_line(tmp_path):
    state = _gap_state(tmp_path)
    res = run_script("run_history", state, "--no-verify", "--html", tmp_path / "h.html")
    assert res.rc == 0, res.stdout + res.stderr
    svg = (tmp_path / "h.html").read_text().split("<svg", 1)[1].split("</svg>", 1)[0]
    # runs 1-2 and 4-5 are joined; nothing is drawn through run 3, which scored no case
    assert svg.count("<polyline") == 2 and svg.count("<circle") == 4, svg
    xs = [float(pt.split(",")[0]) for line in svg.split('<polyline points="')[1:] for pt in line.split('"')[0].split()]
    assert xs[1] < xs[2] and xs[2] - xs[1] > 2 * (xs[1] - xs[0]) - 1, xs   # run 3 keeps its place on the axis


@pytest.mark.slow
@NEEDS_CHROMIUM
def test_the_history_charts_draw_nothing_through_a_run_without_a_figure(tmp_path):
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    state = _gap_state(tmp_path)
    with view_server(state, env=CRAFTED) as url, playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url + "#/history")
        page.wait_for_function("() => (document.body.getAttribute('data-ready') || '') === '/history'", timeout=120000)
        page.screenshot(path=str(tmp_path / "history-gaps.png"))
        rate, cost = page.locator("svg.chart.rate"), page.locator("svg.chart.cost")
        assert rate.bounding_box()["y"] < 800 and cost.bounding_box()["y"] < 800   # on the first screen
        # pass rate: runs 1-2 and 4-5 joined, run 3 (no scored case) a gap in the line and in the band
        assert rate.locator("polyline").count() == 2 and rate.locator("polygon.band").count() == 2
        assert rate.locator("circle").count() == 4
        # cost: runs 2 and 3 are unknown, never 0 and never bridged: run 1 stands alone, runs 4-5 joined
        assert cost.locator("circle").count() == 3 and cost.locator("polyline").count() == 1
        assert len(cost.locator("polyline").get_attribute("points").split()) == 2
        browser.close()


def test_a_run_whose_results_json_is_not_json_is_excluded_naming_the_file_and_line(tmp_path):
    reports = tmp_path / "reports"
    make_run(reports, _cases(3), run_id=LIVE[0])
    (make_run(reports, _cases(3), run_id=LIVE[1]) / "results.json").write_text("{not json")
    (reports / "notes").mkdir()   # a folder of the user's own: named, not a run
    res = run_script("run_history", tmp_path, "--no-verify")
    assert res.rc == 0, res.stdout + res.stderr
    excluded = {e["run_id"]: e["reason"] for e in json.loads((reports / "history.json").read_text())["excluded_runs"]}
    assert excluded[LIVE[1]].startswith("results.json is unreadable (JSONDecodeError: ") and "line 1 column 2" in excluded[LIVE[1]]
    assert excluded["notes"] == "directory name is not a run id (<mode>-<UTC stamp>)"
