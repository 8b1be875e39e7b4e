"""How the gate (and the viewer's run page, which shows its reasons) names the failing cases, on
real runs of a loopback app: run_cases.py, gate.py and view.py as subprocesses.

- a run whose runner was killed said "7 gating failure(s)" and named none (its results.json held the
  runner's first batch, no row): the finished cases' rows now stand in for it, so they are named as a
  finished run's are ("c-1 (answer), … and 2 more"); a holdout run's ids stay sealed;
- a title of 800 characters was quoted whole in the reason, filling the gate's screen: it is clipped
  to one line's worth ("…"), the id whole; the run files (and `run_cases.py --verify`) keep it whole;
- the viewer's run page row of a conversation said "answer …" where the gate said "turn 2: answer":
  the row says the turn.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan
from helpers import SCRIPTS, run_script, view_server
from rundir_util import cases_view
from test_run_conversation import convo

FINISHED, KILLED, SEALED = "smoke-20261205T000000Z", "smoke-20261206T000000Z", "holdout-20261207T000000Z"
LONG = ("Refund the open invoice once the customer has said which one is open, " * 11).strip()   # ~800 characters
HANG = "hang here"


def handler(hanging: threading.Event):
    """Echo "ok: <message>" (a wrong answer to a case that asks for "refunded"); hold HANG's request."""
    def reply(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = req.json["message"]
        if msg == HANG:
            hanging.set()
            return Reply(200, {"message": f"re: {msg}"}, delay=30)
        return Reply(200, {"message": f"ok: {msg}"})
    return reply


def killed_run(state, plan: dict, hanging: threading.Event):
    """Run `plan` one case at a time until the app holds its last case, then SIGKILL the runner."""
    plan["adapter"]["invocation"]["max_concurrency"] = 1
    out = state / "reports" / plan["run_id"]
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(write_plan(state, plan, f"{plan['run_id']}.json")),
                             "--out", str(out), "--progress", "never"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert hanging.wait(60), "the runner never reached the held case"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    hanging.clear()
    assert json.loads((out / "results.json").read_text())["summary"]["status"] == "running"
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """FINISHED: a conversation with a long title failing at turn 2; KILLED: 7 failing cases finished,
    the runner killed on the 8th; SEALED: a holdout run killed the same way after 2 failing cases."""
    state = make_state(tmp_path_factory.mktemp("named"))
    hanging = threading.Event()
    conv = convo("c-conv", {"user": "which invoice is open?", "expect": {"answer": {"must_contain": ["ok"]}}},
                 {"user": "refund it", "expect": {"answer": {"must_contain": ["refunded"]}}}, "thanks",
                 expect={"answer": {"must_contain": ["ok"]}}, title=LONG)
    with FakeApp(handler(hanging)) as app:
        plan = make_plan(state, [conv, case("c-plain", "hello", expect={"answer": {"must_contain": ["hello"]}})],
                         app_url=app.url, run_id=FINISHED)
        plan["adapter"]["invocation"]["conversation"] = {"style": "client-id"}
        r = run_script("run_cases", "--plan", write_plan(state, plan, "finished.json"), "--out",
                       state / "reports" / FINISHED, "--progress", "never")
        assert r.rc == 0, r.stdout + r.stderr
        failing = [case(f"c-{i}", f"hello {i}", expect={"answer": {"must_contain": ["refunded"]}}) for i in range(1, 8)]
        killed_run(state, make_plan(state, failing + [case("c-8", HANG)], app_url=app.url, run_id=KILLED), hanging)
        sealed = [case(f"h-{i}", f"hello h{i}", split=("holdout",), expect={"answer": {"must_contain": ["refunded"]}})
                  for i in (1, 2)] + [case("h-3", HANG, split=("holdout",))]
        killed_run(state, make_plan(state, sealed, app_url=app.url, run_id=SEALED, mode="holdout",
                                    selecting_split="holdout"), hanging)
    return state


def test_a_killed_runs_gate_names_its_failing_cases_as_a_finished_ones_does(runs):
    reports = runs / "reports"
    g = run_script("gate", reports / KILLED)
    assert g.rc == 1, g.stdout + g.stderr
    assert "run interrupted: status is still 'running' but no runner holds its lock (killed?); 7 cases" in g.stdout
    named = ", ".join(f"c-{i} (answer)" for i in range(1, 6)) + " and 2 more"
    assert f"  gate closed: 7 gating failure(s): {named}" in g.stdout.splitlines(), g.stdout
    j = run_script("gate", reports / KILLED, "--json")
    assert f"7 gating failure(s): {named}" in j.json["reasons"], j.json["reasons"]
    # a holdout run killed midway: its failures counted, their ids sealed as ever
    h = run_script("gate", reports / SEALED, "--json")
    assert h.rc == 1 and "2 gating failure(s) (2 of them holdout, aggregate only: ids sealed)" in h.json["reasons"], h.json
    assert "h-1" not in h.stdout and "h-2" not in h.stdout


def test_a_long_title_is_clipped_in_the_gates_reason_and_kept_whole_in_the_run(runs):
    out = runs / "reports" / FINISHED
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout + g.stderr
    clipped = LONG[:79] + "…"
    closed = [line for line in g.stdout.splitlines() if line.startswith("  gate closed:")]
    assert closed == [f'  gate closed: 1 gating failure(s): c-conv "{clipped}" (turn 2: answer)'], g.stdout
    assert LONG[:100] not in g.stdout
    # what the run recorded is the runner's, whole, and checks as it was written
    assert json.loads((cases_view(out) / "c-conv" / "verdict.json").read_text())["title"] == LONG
    assert run_script("run_cases", "--verify", out).rc == 0


@pytest.mark.slow
@NEEDS_CHROMIUM
def test_the_viewers_run_page_says_the_turn_and_the_clipped_title(runs, tmp_path):
    """The run page's row of the conversation said "answer …" where the gate said "turn 2: answer", and
    its gate box quoted the 800-character title whole; the killed run's gate box named no case."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    with view_server(runs) as url, playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})

        def run_page(run_id: str) -> str:
            route = f"/run/{run_id}?verdict=fail"
            page.goto(url + "#" + route)
            page.wait_for_function("p => (document.body.getAttribute('data-ready') || '') === p", arg=route)
            page.wait_for_selector("#gate:not([data-gate=checking])", timeout=60000)
            page.screenshot(path=str(tmp_path / f"{run_id}.png"))
            return page.inner_text("#gate")

        gate = run_page(FINISHED)
        row = page.locator("tr.case-row:has(a[href='#/case/" + FINISHED + "/c-conv'])")
        assert row.locator("td.why .reason").inner_text().startswith("turn 2: "), row.inner_text()
        assert f'c-conv "{LONG[:79]}…" (turn 2: answer)' in gate and LONG[:100] not in gate, gate
        assert "c-1 (answer), c-2 (answer)" in run_page(KILLED)
        browser.close()

