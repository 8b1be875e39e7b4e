"""The runs page's "Compare the two picked runs" takes the older run as the base, whatever the order
the boxes were ticked in (headless Chromium, view.py as a subprocess).

A newcomer ticked the top row (the newest run: the list is newest first) and then the one below it,
and pressed the button: the page compared the newest run as the base and the older one as the
candidate. A regression read "1 newly passing — the base run started after the candidate: are the
arguments swapped?" and the "got better" box counted it, on a page the user had given no arguments to.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan
from helpers import SCRIPTS, run_script

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")

OLDER, NEWER = "smoke-20261129T101500Z", "smoke-20261130T101500Z"


def _broken(req):
    return Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, {"message": "sorry, no idea"})


def _run(state, run_id: str, handler=None) -> None:
    with FakeApp(handler) as app:
        plan = make_plan(state, [case("c-00000001", "hello"), case("c-00000002", "world")], app_url=app.url,
                         run_id=run_id)
        r = run_script("run_cases", "--plan", write_plan(state, plan), "--out", state / "reports" / run_id,
                       "--progress", "never")
    assert r.rc == 0, r.stderr


def _ready(page, prefix: str) -> None:
    page.wait_for_function("p => (document.body.getAttribute('data-ready') || '').startsWith(p)", arg=prefix,
                           timeout=60000)


def test_the_picked_runs_are_compared_older_as_base_whichever_was_ticked_first(tmp_path):
    state = make_state(tmp_path)
    _run(state, OLDER)             # both cases pass
    _run(state, NEWER, _broken)    # both fail: two regressions
    cli = run_script("compare_runs", state / "reports" / OLDER, state / "reports" / NEWER)
    assert cli.rc == 0 and cli.json["headline"].startswith("2 newly failing"), cli.stdout
    viewer = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = json.loads(viewer.stdout.readline())["url"]
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url)
            _ready(page, "/")
            page.check(f"input[data-run='{NEWER}']")   # the top row first, as a person reads the list
            page.check(f"input[data-run='{OLDER}']")
            page.click("#compare-btn")
            _ready(page, "/compare/")
            page.wait_for_selector("#headline", timeout=60000)
            assert page.evaluate("location.hash") == f"#/compare/{OLDER}/{NEWER}"
            headline = page.inner_text("#headline")
            assert headline.startswith(cli.json["headline"]) and "swapped" not in headline, headline
            assert page.inner_text("#summary .box.worse .big") == "2"
            browser.close()
    finally:
        viewer.terminate()
        viewer.wait(30)


def test_vs_previous_skips_a_shard_dir_and_a_shard_row_has_none(tmp_path):
    """A merged run's shard dirs sit beside it in reports/ and are listed (marked "shard"): the merged
    run's "vs previous" went to the row below it, a shard's dir, and compared the run with a slice of
    the plan (its other cases read as removed). It goes to the older run; a shard's row has no link."""
    from assay.shard.assign import add_shards
    state = make_state(tmp_path)
    _run(state, OLDER)
    with FakeApp() as app:
        plan = add_shards(make_plan(state, [case("c-00000001", "hello"), case("c-00000002", "world")],
                                    app_url=app.url, run_id=NEWER), 2)
        plan_file = write_plan(state, plan)
        shards = [state / "reports" / f"{NEWER}.shard-{i}" for i in (1, 2)]
        for i, d in enumerate(shards, 1):
            r = run_script("run_cases", "--plan", plan_file, "--shard", i, "--out", d, "--progress", "never")
            assert r.rc == 0, r.stderr
    r = run_script("merge_runs", "--plan", plan_file, "--out", state / "reports" / NEWER, *shards)
    assert r.rc == 0, r.stderr
    viewer = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = json.loads(viewer.stdout.readline())["url"]
        listed = [x["run_id"] for x in json.loads(subprocess.run(
            [sys.executable, "-c", "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], "
             "timeout=60).read().decode())", url + "api/runs"], capture_output=True, text=True, check=True).stdout)["runs"]]
        assert set(listed) == {OLDER, NEWER, *(d.name for d in shards)}, listed
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url)
            _ready(page, "/")
            links = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('tr.run-row')].map(tr =>
                [tr.querySelector('input[data-run]').getAttribute('data-run'),
                 (tr.querySelector('a.vs-prev') || {}).hash || null]))""")
            assert links[NEWER] == f"#/compare/{OLDER}/{NEWER}", links
            assert all(links[d.name] is None for d in shards), links
            assert links[OLDER] is None, links
            browser.close()
    finally:
        viewer.terminate()
        viewer.wait(30)
