"""A run dir edited while the viewer is open, in headless Chromium: the page decides its gate again.

A team shares one viewer; a run's page read "Gate: open"; someone then edited the run's
verdicts.jsonl by hand (results.json untouched). gate.py closed it ("run_cases.py --verify exit 6:
... verdicts.jsonl (cases/<id> disagrees with its verdict.json)"), while the viewer kept the
decision it had made for results.json's mtime and still read open on a reload, on the runs page too."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from fakeapp import FakeApp, case, make_plan, make_state, write_plan
from helpers import SCRIPTS, run_script

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")


def _gate_on_first_screen(page, url: str, route: str) -> str:
    page.goto("about:blank")   # a fresh load of the page, as a person's reload
    page.goto(url + "#" + route)
    page.wait_for_function("p => (document.body.getAttribute('data-ready') || '') === p", arg=route)
    page.wait_for_selector("#gate:not([data-gate=checking])", timeout=60000)
    return page.evaluate("""() => { const g = document.getElementById('gate');
        return g.getBoundingClientRect().top < 800 ? g.getAttribute('data-gate') + '\\n' + g.innerText : ''; }""")


def test_a_run_edited_after_the_page_decided_it_reads_closed_as_gate_py_says(tmp_path):
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = make_plan(state, [case(f"c-{i:08d}", "hello") for i in range(3)], app_url=app.url)
        out = state / "reports" / plan["run_id"]
        r = run_script("run_cases", "--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert r.rc == 0, r.stderr
    route = f"/run/{plan['run_id']}"
    viewer = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = json.loads(viewer.stdout.readline())["url"]
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            before = _gate_on_first_screen(page, url, route)
            assert before.startswith("open\n"), before
            rows = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
            rows[0]["verdict"] = "fail"   # a hand edit; results.json is not touched
            (out / "verdicts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
            gate = run_script("gate", out, "--json")
            assert gate.rc == 1, gate.stdout
            why = [x for x in gate.json["reasons"] if x.startswith("run_cases.py --verify exit 6")]
            assert why and "verdicts.jsonl" in why[0], gate.json["reasons"]
            after = _gate_on_first_screen(page, url, route)
            page.screenshot(path=str(tmp_path / "edited-run.png"))
            assert after.startswith("closed\n") and why[0] in after, after
            page.goto(url)
            page.wait_for_function("() => (document.body.getAttribute('data-ready') || '') === '/'")
            page.wait_for_function("() => !document.getElementById('runs').innerText.includes('checking')",
                                   timeout=60000)
            row = page.inner_text(f"tr.run-row:has(a:text-is('{plan['run_id']}'))")
            assert "closed" in row and "open" not in row, row
            browser.close()
    finally:
        viewer.terminate()
        viewer.wait(30)
