"""The bundled helpdesk example, broken (--break), as a person meets it in the viewer in headless
Chromium: a smoke run whose failing case carries a title of HTML, 40 lines long, and a regression
run whose runner was killed midway (SIGKILL: results.json keeps the runner's first batch, "0 cases").
One set of runs and one browser for the module; screenshots go to the test's tmp dir."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from helpdesk_util import HoldingProxy, copy_state, helpdesk
from helpers import SCRIPTS, run_script, view_server

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
LONG = '<b>bold</b><img src=x onerror="window.__pwned=1"> ' + "a very long title " * 150
TITLED = "c-0f1bfb2c"   # fails on the broken app (routing)


def _plan(state, env, mode: str) -> tuple[str, object]:
    converted, plan = state / "work" / "converted.json", state / "work" / f"plan-{mode}.json"
    assert run_script("convert_suite", state, "-o", converted, env=env).rc == 0
    made = run_script("make_plan", converted, "--mode", mode, "--state-dir", state, "-o", plan, env=env)
    assert made.rc == 0, made.stdout + made.stderr
    run_id = json.loads(plan.read_text(encoding="utf-8"))["run_id"]
    return run_id, plan


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("unfinished")
    state = copy_state(root)
    case = state / "datasets" / f"{TITLED}.yaml"
    case.write_text(case.read_text(encoding="utf-8").replace(f"id: {TITLED}\n", f"id: {TITLED}\ntitle: {json.dumps(LONG)}\n"),
                    encoding="utf-8")
    with helpdesk(state, broken=True) as env:
        smoke, plan = _plan(state, env, "smoke")
        done = run_script("run_cases", "--plan", plan, "--out", state / "reports" / smoke, "--progress", "never", env=env)
        assert done.rc == 0, done.stderr
        time.sleep(1.1)   # run ids have one-second resolution
        killed, plan = _plan(state, env, "regression")
        out = state / "reports" / killed
        proxy = HoldingProxy(env["HELPDESK_BASE_URL"], pass_chats=40)
        try:
            runner = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(plan), "--out", str(out),
                                       "--progress", "never"], env=dict(env, HELPDESK_BASE_URL=proxy.url),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while not proxy.held and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)   # the answered cases land in the journal
            runner.send_signal(signal.SIGKILL)
            runner.wait(30)
        finally:
            proxy.close()
    assert json.loads((out / "results.json").read_text())["summary"]["status"] == "running"
    gate = run_script("gate", out, "--json")
    assert gate.rc == 1
    failing = next(int(m.group(1)) for r in gate.json["reasons"] if (m := re.match(r"(\d+) gating failure\(s\)", r)))
    assert failing > 0, gate.json["reasons"]   # the broken app failed some of the finished cases
    return {"state": state, "smoke": smoke, "killed": killed, "failing": failing, "gate": gate.json}


@pytest.fixture(scope="module")
def page(runs):
    with view_server(runs["state"]) as url, playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        pg = b.new_page(viewport={"width": 1280, "height": 800})
        pg.url_base = url
        yield pg
        b.close()


def _open(page, route: str, tmp_path, shot: str) -> None:
    page.goto(page.url_base + "#" + route)
    page.wait_for_function("p => (document.body.getAttribute('data-ready') || '') === p", arg=route)
    page.screenshot(path=str(tmp_path / f"{shot}.png"))
    assert page.evaluate("window.__pwned") is None and page.locator("main img").count() == 0


def test_runs_page_counts_a_killed_run_as_its_gate_does_never_the_stale_0(runs, page, tmp_path):
    """The runs page read "gating failures 0, infra rate 0.0 %" off results.json's first batch for a
    run gate.py closed on "7 gating failure(s)" of the cases that finished before the kill."""
    _open(page, "/", tmp_path, "runs")
    page.wait_for_function("() => !document.getElementById('runs').innerText.includes('checking')", timeout=60000)
    row = page.locator(f"tr.run-row:has(a[href='#/run/{runs['killed']}'])")
    assert "interrupted" in row.inner_text()
    cells = row.locator("td")   # run, mode, started, pass rate, gate, gating failures, infra rate
    assert cells.nth(6).inner_text() == str(runs["failing"]), row.inner_text()
    assert cells.nth(4).inner_text() != "–"   # the finished cases' pass rate


def test_run_page_lists_the_cases_a_killed_run_finished(runs, page, tmp_path):
    """The run page of the killed run said "showing 0 of 0 matching, 0 cases" under a gate closed on
    N gating failures: the rows came from verdicts.jsonl, which the runner had not written yet. The
    rows are now the finished cases (the journal the gate recounts), the failing ones with why; and
    the note no longer says the check was "too long to run here on a run this size"."""
    _open(page, f"/run/{runs['killed']}?verdict=fail", tmp_path, "killed-run")
    page.wait_for_selector("#gate:not([data-gate=checking])", timeout=60000)
    rows = page.locator("tr.case-row")
    assert rows.count() == runs["failing"], page.inner_text("#cases")
    assert all(rows.nth(i).locator("td.why .reason").inner_text() for i in range(rows.count()))
    note = page.inner_text("#gate-verified")
    assert "too long to run here" not in note and "the run did not finish" in note, note


def test_a_long_html_title_leaves_the_other_failures_on_the_first_screen(runs, page, tmp_path):
    """A case title 2,700 characters long filled the run page's first screen (one row 40 lines high)
    and the case page's heading: the other failing cases, and the case's failure, went below it."""
    _open(page, f"/run/{runs['smoke']}?verdict=fail", tmp_path, "long-title-run")
    titled = page.locator(f"tr.case-row:has(a[href='#/case/{runs['smoke']}/{TITLED}'])")
    assert titled.locator("td.what a").inner_text().startswith("<b>bold</b><img")   # shown, not obeyed
    assert titled.bounding_box()["height"] < 120, titled.bounding_box()
    assert titled.locator("td.what a").get_attribute("title") == LONG.strip()   # the whole of it on hover
    _open(page, f"/case/{runs['smoke']}/{TITLED}", tmp_path, "long-title-case")
    assert page.locator("h1").bounding_box()["height"] < 140
    assert page.locator("#failures .failure").first.bounding_box()["y"] < 800   # the failure on the first screen
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
