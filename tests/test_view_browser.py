"""The viewer driven in a real headless Chromium (Playwright) as a person would: runs page, a run,
filter to failing cases, a case's trajectory and judge evidence, compare two runs, a bundle opened
from disk; a hostile answer never executes. Screenshots go to the test's tmp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from helpers import SCRIPTS
from rundir_util import make_run

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
HOSTILE = ('<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
           '<a href="javascript:window.__pwned=3">click</a></textarea></pre>\u202egnp.exe\u202c')
TRAJ = {"trace_id": "t1", "agents": [{"name": "triage"}, {"name": "billing"}],
        "llm_calls": [{"operation": "chat", "agent": "triage", "model": "gpt-x", "input_tokens": 12,
                       "output_tokens": 7, "start_ns": 1}],
        "tool_calls": [{"name": "lookup_invoice", "agent": "billing", "arguments": {"invoice": "INV-42"},
                        "result": {"amount": 99}, "start_ns": 3}],
        "handoffs": [{"from": "triage", "to": "billing", "start_ns": 2}], "usage": {"total": {"input_tokens": 12}}}
JUDGE = {"rubrics": [{"rubric_id": "tone-v1", "verdict": "fail", "nodes": [
    {"node_id": "n1", "criterion": "states the refund window", "verdict": "fail",
     "evidence": ["the answer never mentions 30 days"], "reason": "no refund window given", "calls": []}]}]}

# a simulated user's case: simulator.json (how it ended) and turns/<n>/simulator.json (what it said)
SIM_CALL = {"attempts": 1, "status": 200, "raw_reply": HOSTILE, "parsed": {"message": HOSTILE}}
SIMULATED = {
    "turns/1/answer.txt": "which invoice?", "turns/1/verdict.json": {"turn": 1, "verdict": "pass", "layers": {}},
    "turns/1/simulator.json": {"turn": {"message": HOSTILE, "stop": False, "closing": ""}, "outcome": None,
                               "reason": None, "calls": [SIM_CALL]},
    "turns/2/answer.txt": "refunded INV-2", "turns/2/verdict.json": {"turn": 2, "verdict": "pass", "layers": {}},
    "turns/2/simulator.json": {"turn": {"message": "refund INV-2 please", "stop": False, "closing": ""},
                               "outcome": None, "reason": None, "calls": [SIM_CALL]},
    "simulator.json": {"outcome": "goal_reached", "reason": "the user sent the stop token", "seed": 7,
                       "identity": {"provider": "anthropic", "model": "sim-x"}, "scenario": {"goal": "a refund"},
                       "final": {"turn": {"message": "thanks, bye", "stop": True, "closing": "goal met"},
                                 "outcome": "goal_reached", "reason": "stop token", "calls": [SIM_CALL]}}}


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewstate")
    reports = root / "reports"
    base = [{"id": f"c-{i:03d}", "verdict": "pass"} for i in range(30)]
    make_run(reports, base + [{"id": "secret-holdout-1", "verdict": "pass", "holdout": True}],
             run_id="smoke-20261129T101500Z")
    cand = [{"id": f"c-{i:03d}", "verdict": "fail" if i in (3, 7) else "pass"} for i in range(30)]
    cand[3]["answer"] = HOSTILE
    run = make_run(reports, cand + [{"id": "secret-holdout-1", "verdict": "fail", "holdout": True}],
                   run_id="smoke-20261130T101500Z")
    (run / "cases" / "c-003" / "trajectory.json").write_text(json.dumps(TRAJ), encoding="utf-8")
    (run / "cases" / "c-003" / "judge.json").write_text(json.dumps(JUDGE), encoding="utf-8")
    sim = run / "cases" / "c-005"  # a simulated user's conversation, as the runner stores it
    for name, doc in SIMULATED.items():
        (sim / name).parent.mkdir(parents=True, exist_ok=True)
        (sim / name).write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def server(state):
    # the crafted runs (rundir_util) are not complete for run_cases.py --verify; the viewer checks a small
    # run itself, so it is told to treat them as big ones (only a kept answer), the pages' subject here
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, ASSAY_CHECK_KEEP_ABOVE="0"))
    url = json.loads(proc.stdout.readline())["url"]
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield b
        b.close()


def _ready(page, route_prefix):
    page.wait_for_function("p => (document.body.getAttribute('data-ready') || '').startsWith(p)", arg=route_prefix)


def test_a_person_browses_runs_a_run_a_case_and_compares(state, server, browser, tmp_path):
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server)
    _ready(page, "/")
    assert page.locator("tr.run-row").count() == 2
    # a gate the server has not evaluated yet reads "checking…" and fills in (the page asks again
    # each second): wait for it as a person would, never read it as a verdict
    page.wait_for_function("() => !document.getElementById('runs').innerText.includes('checking')", timeout=30000)
    text = page.inner_text("#runs")
    assert "smoke-20261130T101500Z" in text and "closed" in text and "open" in text
    page.screenshot(path=str(tmp_path / "1-runs.png"), full_page=True)

    page.click("text=smoke-20261130T101500Z")
    _ready(page, "/run/")
    page.wait_for_selector("#gate:not([data-gate=checking])")  # "checking…" until the gate is evaluated
    assert "gating" in page.inner_text("#gate")  # the gate's reasons come first
    assert "showing 30 of 30 matching, 30 cases" in page.inner_text("#counts")
    assert "holdout: 1" in page.inner_text("#counts")
    assert "secret-holdout-1" not in page.content()
    page.select_option("select[name=verdict]", "fail")
    page.click("#filters button[type=submit]")
    page.wait_for_function("() => document.querySelectorAll('tr.case-row').length === 2")
    assert "2 matching" in page.inner_text("#counts")
    page.screenshot(path=str(tmp_path / "2-run-failing.png"), full_page=True)

    page.click("#cases a:text-is('c-003')")
    _ready(page, "/case/")
    timeline = page.inner_text("#timeline")
    assert "lookup_invoice" in timeline and "INV-42" in timeline and "triage → billing" in timeline
    judge = page.inner_text("#judge")
    assert "states the refund window" in judge and "the answer never mentions 30 days" in judge
    answer = page.inner_text("pre.answer")
    assert "<script>window.__pwned=1</script>" in answer  # shown as text
    assert "\u27e8U+202E\u27e9" in answer and "\u202e" not in answer  # a bidi override is shown, not obeyed
    assert page.evaluate("window.__pwned") is None
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.locator("main img").count() == 0
    page.screenshot(path=str(tmp_path / "3-case.png"), full_page=True)

    page.goto(server)
    _ready(page, "/")
    page.check("input[data-run='smoke-20261129T101500Z']")
    page.check("input[data-run='smoke-20261130T101500Z']")
    page.click("#compare-btn")
    _ready(page, "/compare/")
    assert "newly_failing (2)" in page.inner_text("main")
    assert "secret-holdout-1" not in page.content()
    page.screenshot(path=str(tmp_path / "4-compare.png"), full_page=True)
    assert not errors, errors
    page.close()


def test_api_serves_no_holdout_id_no_symlink_and_sends_csp(state, server):
    import urllib.error
    import urllib.request
    with urllib.request.urlopen(server + "api/run/smoke-20261130T101500Z/cases?size=500") as r:
        assert "default-src 'self'" in r.headers["Content-Security-Policy"]
        body = r.read().decode()
    assert "secret-holdout-1" not in body and '"n": 1' in body
    with urllib.request.urlopen(server + "api/history") as r:
        history = r.read().decode()
    assert "c-003" in history and "secret-holdout-1" not in history  # sealed by run_history and again by the viewer
    outside = state.parent / "outside.txt"
    outside.write_text("SECRET", encoding="utf-8")
    link = state / "reports" / "smoke-20261130T101500Z" / "cases" / "c-001" / "leak.txt"
    link.symlink_to(outside)
    # a run's own files are served raw, but not one that names a holdout case (manifest.yaml lists
    # every case of the plan by id: it was served with secret-holdout-1 in it)
    with urllib.request.urlopen(server + "raw/smoke-20261130T101500Z/results.json") as r:
        assert b"c-003" in r.read()
    for path in ("raw/smoke-20261130T101500Z/manifest.yaml",
                 "raw/smoke-20261130T101500Z/cases/c-001/leak.txt",
                 "raw/smoke-20261130T101500Z/cases/secret-holdout-1/answer.txt",
                 "api/case/smoke-20261130T101500Z/secret-holdout-1", "raw/../../etc/passwd"):
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(server + path)
        assert exc.value.code == 404
    link.unlink()


def test_bundle_opens_from_disk(state, browser, tmp_path):
    before = sorted(str(p) for p in state.rglob("*"))
    out = tmp_path / "bundle"
    proc = subprocess.run([sys.executable, str(SCRIPTS / "view.py"), str(state), "--bundle", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert sorted(str(p) for p in state.rglob("*")) == before  # nothing written into the state dir
    assert "secret-holdout-1" not in "".join(p.read_text() for p in out.rglob("*.js"))
    page = browser.new_page()
    page.goto((out / "index.html").as_uri())
    _ready(page, "/")
    page.click("text=smoke-20261130T101500Z")
    _ready(page, "/run/")
    page.select_option("select[name=verdict]", "fail")
    page.click("#filters button[type=submit]")
    page.wait_for_function("() => document.querySelectorAll('tr.case-row').length === 2")
    page.click("#cases a:text-is('c-003')")
    _ready(page, "/case/")
    assert "lookup_invoice" in page.inner_text("#timeline")
    assert page.evaluate("window.__pwned") is None
    page.screenshot(path=str(tmp_path / "5-bundle-case.png"), full_page=True)
    # a simulated user's notes: what it said at each turn, how it ended; its hostile message is text
    page.goto((out / "index.html").as_uri() + "#/case/smoke-20261130T101500Z/c-005")
    _ready(page, "/case/smoke-20261130T101500Z/c-005")
    for n in (1, 2):  # passing turns are folded: open them as a person would
        assert page.locator(f"#turn-{n}").get_attribute("open") is None
        page.click(f"#turn-{n} > summary")
    said = page.inner_text("#simulator-turn-1")
    assert "<script>window.__pwned=1</script>" in said and "</textarea>" in said and "1 simulator call(s)" in said
    assert "\u27e8U+202E\u27e9" in said and "\u202e" not in said
    assert "refund INV-2 please" in page.inner_text("#turn-2 .sim-message")
    ending = page.inner_text("#simulator")
    assert "goal_reached" in ending and "seed 7" in ending and "thanks, bye" in ending and "goal met" in ending
    page.click("#simulator-turn-1 details summary")  # the raw call opens, still text
    assert page.evaluate("window.__pwned") is None
    assert page.locator("a[href^='javascript']").count() == 0 and page.locator("main img").count() == 0
    page.locator("#simulator-turn-1").screenshot(path=str(tmp_path / "7-bundle-simulator.png"))
    page.close()


def test_remote_bind_needs_the_flag(state):
    proc = subprocess.run([sys.executable, str(SCRIPTS / "view.py"), str(state), "--bind", "0.0.0.0"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "--allow-remote" in proc.stdout


def test_a_big_bundle_is_paged_from_disk(tmp_path, browser):
    """The bundle's case index is chunked: the first page loads one chunk, paging and a filter
    work from file:// (in process with a small chunk; the subprocess bundle is tested above)."""
    from assay.view.bundle import write_bundle
    reports = tmp_path / "state" / "reports"
    make_run(reports, [{"id": f"c-{i:03d}", "verdict": "fail" if i % 7 == 0 else "pass"} for i in range(150)],
             run_id="smoke-20261130T101500Z")
    out = tmp_path / "bundle"
    write_bundle(reports, out, chunk=40)
    head = (out / "data" / "run__smoke-20261130T101500Z__cases.js").read_text()
    assert '"chunks": 4' in head and "c-001" not in head  # the head holds counts, not rows
    page = browser.new_page()
    page.goto((out / "index.html").as_uri() + "#/run/smoke-20261130T101500Z")
    _ready(page, "/run/")
    assert page.locator("tr.case-row").count() == 100 and "page 1 of 2" in page.inner_text(".pager")
    assert page.locator("script[src*='__cases__']").count() == 3  # rows 0-119: the chunks it shows, not the 4th
    page.screenshot(path=str(tmp_path / "6-bundle-run.png"), full_page=False)
    page.click("#next")
    page.wait_for_function("() => (document.body.getAttribute('data-ready') || '').includes('page=1')")
    assert page.locator("tr.case-row").first.inner_text().startswith("c-100") and "page 2 of 2" in page.inner_text(".pager")
    page.select_option("select[name=verdict]", "fail")
    page.click("#filters button[type=submit]")
    page.wait_for_function("() => (document.body.getAttribute('data-ready') || '').includes('verdict=fail')")
    assert "showing 22 of 22 matching, 150 cases" in page.inner_text("#counts")
    assert page.locator("#gate").get_attribute("data-gate") == "closed"  # computed when the bundle was written
    page.close()
