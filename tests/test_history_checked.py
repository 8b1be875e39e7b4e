"""A red run edited to read pass is no point of the viewer's History once its check's answer is known.

Five real runs of one suite against a local app: the first two answer all twelve cases, the next two
answer six wrong, the last answers six wrong and is then edited by hand to read pass (its verdict
files and results.json). gate.py closes it ("run_cases.py --verify exit 6") and keeps that answer
beside it. run_history.py excluded it; the viewer's History (unverified, for speed) drew it as the
series' last point, red, and counted its edited verdicts: six "flaky" cases (pass fail fail pass) and
the drift test's last run. Now a run whose decision the viewer holds says its check failed (the kept
answer, or the viewer's own check of a small run) is excluded from every trend figure and named with
the gate's words on the first screen, as run_history.py names it; a run never checked stays, and the
page says it is not verified.
"""

from __future__ import annotations

import json
import os

import pytest

from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan
from helpers import run_script, view_server

pytestmark = pytest.mark.slow   # real runs, gate.py, run_history.py and a viewer as subprocesses

UNCHECKED = "smoke-20261130T100000Z"                       # never gated: no check answer kept
GOOD, RED1, RED2, EDITED = (f"smoke-2026120{i}T100000Z" for i in range(1, 5))
BROKEN = {f"hello {j}" for j in range(6)}
KEPT_ONLY = {"ASSAY_CHECK_KEEP_ABOVE": "0"}                 # every run's answer is kept, and only a kept one is read


def _get(url: str) -> dict:
    import urllib.request
    with urllib.request.urlopen(url, timeout=300) as resp:
        return json.loads(resp.read())


def _edit_to_pass(run_dir) -> None:
    """Every fail reads pass in the verdict files and in results.json's counts (the case records untouched)."""
    for name in ("verdicts.jsonl", "verdicts_for_stats.jsonl"):
        p = run_dir / name
        text = p.read_text(encoding="utf-8")
        assert text.count('"verdict": "fail"') == 6, text
        p.write_text(text.replace('"verdict": "fail"', '"verdict": "pass"'), encoding="utf-8")
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    s = doc["summary"]
    s["passes"], s["failures"], s["gating_failures"] = s["passes"] + s["failures"], 0, 0
    (run_dir / "results.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    state = make_state(tmp_path_factory.mktemp("edited"))
    broken = [False]

    def app(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = str((req.json or {}).get("message"))
        return Reply(200, {"message": "sorry, no" if broken[0] and msg in BROKEN else f"echo: {msg}"})

    cases = [case(f"c-{j:02d}", f"hello {j}") for j in range(12)]
    with FakeApp(app) as fake:
        for run_id in (UNCHECKED, GOOD, RED1, RED2, EDITED):
            broken[0] = run_id in (RED1, RED2, EDITED)
            plan = write_plan(state, make_plan(state, cases, app_url=fake.url, run_id=run_id), f"{run_id}.json")
            r = run_script("run_cases", "--plan", plan, "--out", state / "reports" / run_id, "--progress", "never")
            assert r.rc == 0, r.stdout + r.stderr
    _edit_to_pass(state / "reports" / EDITED)
    for run_id, rc in ((GOOD, 0), (RED1, 1), (RED2, 1), (EDITED, 1)):
        g = run_script("gate", state / "reports" / run_id, "--json", env=KEPT_ONLY)
        assert g.rc == rc, g.stdout
        assert (state / "reports" / f".{run_id}.checked.json").is_file()   # the gate kept its check's answer
    return state


def _gate_words(state) -> str:
    g = run_script("gate", state / "reports" / EDITED, "--json", env=KEPT_ONLY)
    (words,) = [x for x in g.json["reasons"] if x.startswith("run_cases.py --verify exit 6: ")]
    return words


def _trend_runs(doc: dict) -> list[str]:
    return [r["run_id"] for s in doc["series"] for r in s["runs"]]


def test_the_viewer_history_excludes_a_run_whose_kept_check_failed_as_run_history_does(state):
    words = _gate_words(state)
    with view_server(state, env=dict(os.environ, **KEPT_ONLY)) as url:
        doc = _get(url + "api/history")
    excluded = {e["run_id"]: e["reason"] for e in doc["excluded_runs"]}
    assert excluded == {EDITED: words}, excluded                # named, in the gate's words
    (series,) = doc["series"]
    assert _trend_runs(doc) == [UNCHECKED, GOOD, RED1, RED2]    # no point
    assert series["flaky"] == [] and doc["flaky_cases"] == []   # its edited passes made six "flaky" cases
    assert {c["case_id"]: (c["kind"], c["since_run"]) for c in series["changed"]} == \
        {f"c-{j:02d}": ("regression", RED1) for j in range(6)}  # no "fix" in run EDITED
    assert series["drift"]["last"]["run_id"] == RED2 and series["drift"]["earlier"]["runs"] == 3
    # checked: the three the gate kept a clean answer for; the first was never checked, and says so
    assert doc["runs_used"] == 4 and doc["runs_verified"] == 3
    assert [r["verified"] for r in series["runs"]] == [False, True, True, True]
    # run_history.py (it runs the check) excludes it in the same words: one rule, one reason
    h = run_script("run_history", state, "-o", state / "h.json")
    assert h.rc == 0, h.stdout + h.stderr
    hist = json.loads((state / "h.json").read_text(encoding="utf-8"))
    assert {e["run_id"]: e["reason"] for e in hist["excluded_runs"]} == {EDITED: words}
    assert _trend_runs(hist) == _trend_runs(doc) and hist["runs_verified"] == 4
    assert hist["series"][0]["flaky"] == [] and hist["series"][0]["changed"] == series["changed"]


def test_the_viewer_excludes_a_small_run_it_checked_itself(state):
    """No kept answer read (the default viewer checks a run too small to keep one itself): the same."""
    with view_server(state) as url:
        doc = _get(url + "api/history")
    assert [e["run_id"] for e in doc["excluded_runs"]] == [EDITED], doc["excluded_runs"]
    assert doc["excluded_runs"][0]["reason"].startswith("run_cases.py --verify exit 6: missing or inconsistent: ")
    assert _trend_runs(doc) == [UNCHECKED, GOOD, RED1, RED2] and doc["flaky_cases"] == []
    assert doc["runs_verified"] == 4


def test_the_history_page_names_the_edited_run_on_its_first_screen_and_draws_no_point_for_it(state, tmp_path):
    from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
    if NEEDS_CHROMIUM.args[0]:
        pytest.skip(NEEDS_CHROMIUM.kwargs.get("reason", "no chromium"))
    playwright = pytest.importorskip("playwright.sync_api")
    words = _gate_words(state)
    with view_server(state, env=dict(os.environ, **KEPT_ONLY)) as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url + "#/history")
        page.wait_for_function("() => (document.body.getAttribute('data-ready') || '') === '/history'", timeout=120000)
        page.screenshot(path=str(tmp_path / "history-edited.png"))
        first = page.locator("#excluded-runs li").first
        assert first.is_visible() and first.bounding_box()["y"] < 800
        assert first.inner_text() == f"{EDITED}: {words}"
        main = page.inner_text("main")
        assert "runs used: 4 (3 checked by run_cases.py --verify, 1 not verified) · excluded: 1" in main
        assert page.locator("svg.chart.rate circle").count() == 4
        assert page.locator("ul.flaky").count() == 0 and page.locator("#flaky li").count() == 0
        assert "Flaky (repeats disagreed in a run, or flipped back and forth): 0" in main
        assert EDITED not in page.inner_text("section.series")
        # the run never checked is marked where a person looks: a hollow point saying so, and its row
        unchecked = page.locator("svg.chart.rate circle.unverified")
        assert unchecked.count() == 1 and unchecked.locator("title").text_content().startswith(UNCHECKED + ": ")
        assert "not verified (run_cases.py --verify not run on it)" in unchecked.locator("title").text_content()
        assert page.locator("svg.chart.rate circle:not(.unverified)").count() == 3
        page.locator("section.series details summary").first.click()
        rows = {r.locator("td").first.inner_text(): r.locator("td.checked").inner_text()
                for r in page.locator("section.series table tr").all() if r.locator("td.checked").count()}
        assert rows == {UNCHECKED: "not verified (run_cases.py --verify not run on it)", GOOD: "--verify clean",
                        RED1: "--verify clean", RED2: "--verify clean"}, rows
        page.screenshot(path=str(tmp_path / "history-unchecked.png"), full_page=True)
        browser.close()


def test_run_history_no_verify_still_excludes_a_run_whose_kept_check_failed(state, tmp_path):
    """`run_history.py --no-verify` skipped the check and the answer gate.py kept for these bytes with it: the
    edited run was a series point (its edited passes a "fix" of six cases), and the page drew every run alike.
    Now the kept answer excludes it in the gate's words, a kept clean answer makes a run checked, and the run
    never checked is a hollow point and a row marked "not verified" in history.html."""
    import html
    import re
    words = _gate_words(state)
    out, page_path = tmp_path / "h.json", tmp_path / "h.html"
    h = run_script("run_history", state, "--no-verify", "-o", out, "--html", page_path, env=KEPT_ONLY)
    assert h.rc == 0, h.stdout + h.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert {e["run_id"]: e["reason"] for e in doc["excluded_runs"]} == {EDITED: words}
    (series,) = doc["series"]
    assert _trend_runs(doc) == [UNCHECKED, GOOD, RED1, RED2]
    assert {c["case_id"]: (c["kind"], c["since_run"]) for c in series["changed"]} == \
        {f"c-{j:02d}": ("regression", RED1) for j in range(6)}
    assert [r["verified"] for r in series["runs"]] == [False, True, True, True] and doc["runs_verified"] == 3
    page = page_path.read_text(encoding="utf-8")
    assert EDITED in page[:page.index("<h2>smoke")]   # named among the excluded runs, never in the series
    assert EDITED not in page[page.index("<h2>smoke"):]
    assert "Runs used: 4 (3 checked by run_cases.py --verify, 1 not verified" in page
    hollow = re.findall(r'<circle [^>]*fill="#fff"[^>]*><title>([^<]*)</title>', page)
    assert len(hollow) == 1 and hollow[0].startswith(UNCHECKED + ": ") and "not verified" in hollow[0], hollow
    for run_id, mark in ((UNCHECKED, "not verified (run_cases.py --verify not run on it)"), (GOOD, "--verify clean")):
        row = re.search(r"<tr><td><code>" + re.escape(run_id) + r"</code></td>.*?</tr>", page, re.S).group(0)
        assert html.unescape(row).endswith(f"<td>{mark}</td></tr>"), row
    # without a kept answer to read (the default keep size: these runs are too small to keep one), nothing
    # was checked, and every run says so
    h = run_script("run_history", state, "--no-verify", "-o", out, "--html", page_path)
    assert h.rc == 0, h.stdout + h.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["runs_verified"] == 0 and all(r["verified"] is False for s in doc["series"] for r in s["runs"])
    assert page_path.read_text(encoding="utf-8").count('fill="#fff"') == doc["runs_used"]
