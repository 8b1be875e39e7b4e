"""The viewer's pages as a person meets them, in headless Chromium: what is on the FIRST screen
(1280x800) of the run page (which cases failed and why, in words, with their file:line), the
case page (the failure first, expected beside actual; the conversation's failing turn open beside
the baseline's answer), the compare page (what got worse, what got better, what it cost) and
history (trend charts; a regression is not "flaky"). App-derived text stays inert. Screenshots go
to the test's tmp dir (ASSAY_KEEP_SCREENSHOTS=<dir> copies them there)."""

from __future__ import annotations

import re

import json
import os
import shutil
from pathlib import Path

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from helpers import view_server
from rundir_util import make_run

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\u202egnp.exe'
BASE, MID, CAND = "smoke-20261201T100000Z", "smoke-20261202T100000Z", "smoke-20261203T100000Z"
NEVER = "smoke-20261204T100000Z"
TITLE = "Restart the web service with the right timeout"
TOOL_YAML = """id: c-tool
title: Restart the web service with the right timeout
input:
  messages:
    - role: user
      content: Please restart web-1
expect:
  args:
    restart_service:
      timeout_s: 300
"""
TOOL_CHECK = {"tool": "restart_service", "arg": "timeout_s", "calls": "any", "status": "fail",
              "reason": "expected 300, got 300000"}
RUBRIC = {"verdict": "fail", "provisional": True, "rubrics": [{"pin": "tone-v1", "verdict": "fail", "provisional": True}]}


def _traj(tokens: int, timeout: int | None = None) -> dict:
    calls = [{"name": "restart_service", "arguments": {"host": "web-1", "timeout_s": timeout}, "start_ns": 2}] if timeout else []
    return {"agents": [{"name": "ops"}], "tool_calls": calls,
            "llm_calls": [{"model": "gpt-x", "input_tokens": tokens, "output_tokens": tokens // 10, "start_ns": 1}]}


def _specs(run: str) -> list[dict]:
    fail = run == CAND
    specs = [{"id": f"c-{i:03d}"} for i in range(12)]
    specs.append({"id": "c-tool", "verdict": "fail" if fail else "pass", "answer": "restarted web-1",
                  "expect": {"args": {"restart_service": {"timeout_s": 300}}},
                  "layers": {"tool_selection": {"verdict": "fail", "checks": [TOOL_CHECK]}} if fail else {}})
    specs.append({"id": "c-hostile", "verdict": "fail" if fail else "pass", "answer": HOSTILE})
    specs.append({"id": "c-conv", "verdict": "fail" if fail else "pass"})
    specs.append({"id": "c-rubric", "verdict": "fail" if fail else "pass", "answer": "same answer",
                  "layers": {"answer": {"verdict": "pass", "checks": []}, "judged": RUBRIC if fail else
                             {"verdict": "pass", "provisional": True}}})
    specs.append({"id": "c-flaky", "verdict": "fail" if run == MID else "pass"})
    return specs


def _edit_verdict(case_dir: Path, **keys) -> None:
    doc = json.loads((case_dir / "verdict.json").read_text())
    doc.update(keys)
    (case_dir / "verdict.json").write_text(json.dumps(doc))


def _write(path: Path, doc) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    reports = root / "reports"
    _write(root / "datasets" / "c-tool.yaml", TOOL_YAML)  # the usual name
    _write(root / "datasets" / "support" / "odd-name.yaml", "id: c-conv\ninput: {turns: [{user: hi}, {user: refund}]}\n")
    _write(root / "prices.yaml", "currency: USD\nper: 1000000\nmodels:\n  gpt-x: {input: 1.0, output: 2.0}\n")
    for n, run in enumerate((BASE, MID, CAND)):
        fail = run == CAND
        d = make_run(reports, _specs(run), run_id=run, results={"cost_latency": {
            "cost": {"currency": "USD", "mean_per_case": 0.001 * (n + 1)}, "latency_ms": {"p50": 10, "p95": 100 * (n + 1)}}})
        cases = d / "cases"
        # 16.02 ms then 15.99 ms: a change that rounds to nothing as shown (it read "16 ms → 16 ms (−0 ms)")
        _edit_verdict(cases / "c-tool", title=TITLE, input_text="Please restart web-1\nit is down since noon",
                      latency_ms={BASE: 16.02, CAND: 15.99}.get(run, 16.0))
        _edit_verdict(cases / "c-hostile", title=HOSTILE, input_text=HOSTILE)
        _edit_verdict(cases / "c-conv", multi_turn=True, failed_turn=2 if fail else None,
                      turns=[{"n": 1, "verdict": "pass", "user": "hi"}, {"n": 2, "verdict": "fail" if fail else "pass", "user": "refund"}])
        for t in (1, 2):
            _write(cases / "c-conv" / "turns" / str(t) / "request.json", {"body": {"message": ["hi", "refund INV-7"][t - 1]}})
            _write(cases / "c-conv" / "turns" / str(t) / "verdict.json", {"turn": t, "verdict": "fail" if fail and t == 2 else "pass", "layers": {}})
            _write(cases / "c-conv" / "turns" / str(t) / "answer.txt",
                   f"turn {t} answer" if t == 1 else ("no idea, sorry" if fail else "refunded INV-7 (baseline)"))
        for cid in ("c-tool", "c-000", "c-rubric"):  # c-rubric: the same calls, so its judged flip is the judge's
            _write(cases / cid / "trajectory.json", _traj(1000 * (n + 1), 300000 if fail and cid == "c-tool" else None))
    # a newer smoke run stopped at pre-flight (no run dir, run_cases.py's never-started file)
    _write(reports / f".{NEVER}.not-started.json", {"run_id": NEVER, "mode": "smoke", "exit_code": 3,
                                                    "error": "pre-flight: health check failed", "at": "x"})
    return root


@pytest.fixture(scope="module")
def server(state):
    # the fixture ends the server; 900 s only bounds an orphan (120 s ran out on a loaded worker)
    # crafted runs, incomplete for --verify: the viewer takes only a kept answer (none), so Compare
    # draws them with its "no check answer here" note (a run that fails its check: test_view_tampered)
    with view_server(state, env=dict(os.environ, ASSAY_CHECK_KEEP_ABOVE="0")) as url:
        yield url


@pytest.fixture(scope="module")
def page(server):
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        pg = b.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.errors = errors
        yield pg
        b.close()


def _open(page, server, route: str, tmp_path: Path, shot: str) -> None:
    page.goto(server + "#" + route)
    page.wait_for_function("p => (document.body.getAttribute('data-ready') || '') === p", arg=route)
    page.screenshot(path=str(tmp_path / f"{shot}.png"))  # the first screen, as a person sees it
    page.screenshot(path=str(tmp_path / f"{shot}-full.png"), full_page=True)
    if os.environ.get("ASSAY_KEEP_SCREENSHOTS"):
        for name in (f"{shot}.png", f"{shot}-full.png"):
            shutil.copy(tmp_path / name, Path(os.environ["ASSAY_KEEP_SCREENSHOTS"]) / name)
    assert page.evaluate("window.__pwned") is None and page.locator("main img").count() == 0
    assert not page.errors, page.errors


def _first_screen(page, selector: str) -> str:
    """The text of `selector`'s elements whose top is inside the first 800 pixels."""
    return page.evaluate("""s => [...document.querySelectorAll(s)].filter(e => e.getBoundingClientRect().top < 800)
                              .map(e => e.innerText).join('\\n')""", selector)


def _gate_line_is_the_runs(page) -> None:
    """The candidate run's gate, as its run page shows it (view.gates), on this page too."""
    page.wait_for_selector(".gate-line:not([data-gate=checking])", timeout=60000)
    line = page.inner_text(".gate-line")
    assert f"run {CAND}" in line and "closed" in line and "4 gating failure(s)" in line


def test_run_page_first_screen_says_which_cases_failed_and_why(page, server, tmp_path):
    _open(page, server, f"/run/{CAND}?verdict=fail", tmp_path, "run-failing")
    page.wait_for_selector("#cases[data-sources=ready]")  # the case files fill in after the rows paint
    page.screenshot(path=str(tmp_path / "run-failing.png"))
    if os.environ.get("ASSAY_KEEP_SCREENSHOTS"):
        shutil.copy(tmp_path / "run-failing.png", Path(os.environ["ASSAY_KEEP_SCREENSHOTS"]) / "run-failing.png")
    rows = _first_screen(page, "tr.case-row")
    # the title, the input's first line (not the second), the reason in words, the file:line of the
    # failing expectation (datasets/c-tool.yaml line 10: timeout_s)
    assert TITLE in rows and "Please restart web-1" in rows and "down since noon" not in rows
    assert "tool_selection" in rows and "restart_service.timeout_s: expected 300, got 300000" in rows
    assert "datasets/c-tool.yaml:10" in rows
    assert "datasets/support/odd-name.yaml" in page.inner_text("#cases")  # found by its id: line, any name
    assert "<script>window.__pwned=1</script>" in rows and "\u27e8U+202E\u27e9" in rows  # shown, not obeyed
    assert "closed" in page.inner_text("#gate") or page.get_attribute("#gate", "data-gate") == "checking"
    # the headers sort: by "why it failed" groups the failures by layer
    page.click("th[data-sort=failure] a")
    page.wait_for_function("() => (document.body.getAttribute('data-ready') || '').includes('sort=failure')")
    assert page.locator("tr.case-row").count() == 4


def test_case_page_leads_with_the_failure_expected_beside_actual(page, server, tmp_path):
    _open(page, server, f"/case/{CAND}/c-tool", tmp_path, "case-tool")
    top = _first_screen(page, "#failures .failure")
    assert "restart_service.timeout_s: expected 300, got 300000" in top
    assert 'args: {"restart_service": {"timeout_s": 300}}' in top  # expected, from expect.json
    assert 'restart_service {"host": "web-1", "timeout_s": 300000}' in top  # actual: the call's arguments
    assert "datasets/c-tool.yaml:10" in page.inner_text("#case-facts")
    _gate_line_is_the_runs(page)
    assert "restart_service" in page.inner_text("#timeline") and "300000" in page.inner_text("#timeline")
    assert page.locator("#layers details[open]").count() == 0  # every layer's JSON folded
    page.click("details.fold:has(#source) > summary")
    assert "timeout_s: 300" in page.inner_text("#source")


def test_conversation_opens_the_failing_turn_beside_the_baseline(page, server, tmp_path):
    _open(page, server, f"/case/{CAND}/c-conv?baseline={BASE}", tmp_path, "case-conversation")
    assert page.locator("#turn-1").get_attribute("open") is None  # the passing turn folded
    assert page.locator("#turn-2").get_attribute("open") is not None  # the failing one open
    turn = _first_screen(page, "#turn-2")
    assert "failed here" in turn and "no idea, sorry" in turn and "refunded INV-7 (baseline)" in turn
    assert f"baseline {BASE}".lower() in turn.lower()


def test_compare_page_says_what_got_worse_better_and_what_it_cost(page, server, tmp_path):
    _open(page, server, f"/compare/{BASE}/{CAND}", tmp_path, "compare")
    top = _first_screen(page, "#headline, #summary, details.fold .pair")
    assert "got worse" in top and "got better" in top and "app cost per traced case" in top
    assert re.search(r"[+\u2212\u00b1][0-9][0-9.e-]* USD\s*app cost per traced case", page.inner_text("#summary")), \
        page.inner_text("#summary")   # the delta signed, its currency after it (as the gate words a cost)
    summary = page.inner_text("#summary")
    assert summary.startswith("4") or "\n4\n" in "\n" + summary  # c-tool, c-hostile, c-conv, c-rubric
    tool = page.inner_text(".pair[data-case='c-tool']")
    assert "pass" in tool and "fail" in tool and "latency" in tool and "cost" in tool
    assert "+" in tool  # the case's cost delta, signed
    assert "latency 16 ms \u2192 16 ms (\u00b10.0 ms)" in tool and "\u22120" not in tool, tool
    rubric = page.inner_text(".pair[data-case='c-rubric']")
    assert "only a rubric sees it" in rubric and "provisional rubric: not gating" in rubric
    _gate_line_is_the_runs(page)
    assert " is red: " not in page.inner_text("main")   # the base's own gate was open: no red-baseline note
    unchecked = page.inner_text("#compare-unchecked")   # neither side's check answered here: said, not hidden
    assert f"the base {BASE} has no check answer here" in unchecked and f"the candidate {CAND}" in unchecked
    cost = page.inner_text("#cost")
    assert "app cost per traced case" in cost and "USD" in cost and "latency (end to end) p95" in cost
    stats = page.inner_text("#stats")
    assert "paired cases" in stats
    assert "<script>" not in page.content().split("<main")[1].split("</main>")[0].replace("&lt;script&gt;", "")


def test_history_draws_trends_and_names_a_regression_apart_from_flaky(page, server, tmp_path):
    _open(page, server, "/history", tmp_path, "history")
    charts = page.locator("section.series svg.chart")
    assert charts.count() == 3 and page.locator("svg.chart.rate polygon.band").count() == 1
    assert page.locator("svg.chart.rate circle").count() == 3 and page.locator("svg.chart.latency circle").count() == 3
    changed = page.inner_text("ul.changed")
    assert "regression" in changed and "c-tool" in changed and "c-flaky" not in changed
    assert "c-flaky" in page.inner_text("ul.flaky") and "2 flips" in page.inner_text("ul.flaky")


def test_runs_page_compares_a_run_with_the_previous_in_one_click(page, server, tmp_path):
    _open(page, server, "/", tmp_path, "runs")
    page.wait_for_function("() => !document.getElementById('runs').innerText.includes('checking')", timeout=60000)
    # above the rows: the newest run never started, so the top row (an older run) is not its result
    assert (f"{NEVER}: the newest smoke run, {NEVER}, never started (run_cases.py exit 3: pre-flight: health check "
            "failed): the runs listed are older") in page.inner_text("#not-started-runs")
    page.click("tr.run-row >> nth=0 >> a.vs-prev")
    page.wait_for_function("p => (document.body.getAttribute('data-ready') || '') === p", arg=f"/compare/{MID}/{CAND}")
    assert "got better" in page.inner_text("#summary") and "c-flaky" in page.inner_text("#bucket-newly_passing")
    # the previous run's own gate was closed (c-flaky failed there): said first, in gate.py --baseline's words
    notes = page.inner_text("#compare-notes")
    assert notes.startswith(f"the baseline {MID} is red: its own gate is closed (1 gating failure(s): c-flaky (answer));"), notes
    assert "a case failing there too is still_failing here, never newly failing" in notes
    assert "compare with a run whose gate was open (--baseline auto chooses one)" in notes
