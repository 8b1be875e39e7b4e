"""Cost and latency where runs are compared and trended say what they cover, on real runs.

`make demo COMPARE=1` in a copy of the helpdesk state dir (traces, prices.yaml, a judge): a clean
run whose judge's calls are priced, then the broken app, two of whose judge calls report no usage,
so its judge's cost is unknown and gate.py's cost budget cannot be checked. Then the "fix" rerun
on the billing cases that failed (make_plan --mode targeted --failing-in, in 2 shards, merged):
9 traced cases against the broken run's 20, and its shard dirs left in reports/ (excluded from
history). The viewer serves them; one headless Chromium looks at Compare and History.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpdesk_util import HELPDESK, copy_state, helpdesk
from helpers import ROOT, run_script, view_server
from rundir_util import case_json

from assay.compare.cost_table import money
from assay.stats.cost_words import WORDS

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    state = copy_state(tmp_path_factory.mktemp("costfig"))
    demo = subprocess.run([sys.executable, str(HELPDESK / "demo.py"), "--compare", "--state-dir", str(state)],
                          capture_output=True, text=True, timeout=300)
    assert demo.returncode == 1, demo.stdout + demo.stderr   # the gate closes on the regressions
    clean, broken = sorted(p for p in (state / "reports").iterdir() if p.is_dir())
    assert "cost budget 0.0005 USD/case cannot be checked: 2 of 6 judge call(s) reported no token usage" in demo.stdout
    plan_file = state / "work" / "targeted.json"
    plan = run_script("make_plan", state / "work" / "converted.json", "--mode", "targeted", "--tag", "billing",
                      "--split", "smoke", "--failing-in", broken, "--state-dir", state, "--shards", "2", "-o", plan_file)
    assert plan.rc == 0, plan.stdout
    fixed = state / "reports" / json.loads(plan_file.read_text())["run_id"]
    shards = [fixed.parent / f"{fixed.name}.shard-{i}" for i in (1, 2)]
    with helpdesk(state) as env:
        for i, d in enumerate(shards, 1):
            r = run_script("run_cases", "--plan", plan_file, "--shard", i, "--out", d, "--progress", "never", env=env)
            assert r.rc == 0, r.stdout + r.stderr
    r = run_script("merge_runs", "--plan", plan_file, "--out", fixed, *shards)   # the shard dirs stay in reports/
    assert r.rc == 0, r.stdout + r.stderr
    return {"state": state, "clean": clean.name, "broken": broken.name, "fixed": fixed.name}


@pytest.fixture(scope="module")
def server(runs):
    with view_server(runs["state"]) as url:
        yield url


@pytest.fixture(scope="module")
def page(server):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent (Debian's chromium)")
    api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    with api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        pg = b.new_page(viewport={"width": 1280, "height": 800})
        yield pg
        b.close()


def _open(page, server, route: str, tmp_path: Path, shot: str) -> None:
    page.goto(server + "#" + route)
    page.wait_for_function("p => (document.body.getAttribute('data-ready') || '') === p", arg=route)
    page.screenshot(path=str(tmp_path / f"{shot}.png"))
    if os.environ.get("ASSAY_KEEP_SCREENSHOTS"):
        shutil.copy(tmp_path / f"{shot}.png", Path(os.environ["ASSAY_KEEP_SCREENSHOTS"]) / f"{shot}.png")


def _api(server: str, path: str) -> dict:
    with urllib.request.urlopen(server + path + "?wait=60", timeout=120) as resp:
        return json.loads(resp.read())


@NEEDS_CHROMIUM
def test_compare_says_the_cost_is_the_apps_and_names_an_unknown_judge_cost(runs, server, page, tmp_path):
    """The broken run's app cost per case fell while its judge's cost is unknown (the gate's budget
    cannot be checked): the page said "cost per case −0.0000188 USD" and nothing else."""
    _open(page, server, f"/compare/{runs['clean']}/{runs['broken']}", tmp_path, "compare-judge")
    box = page.inner_text("#cost-box")
    assert WORDS["cost_per_case"][0] in box and "\u2212" in box, box      # the drop, named as the app's
    assert "judge's cost unknown in the candidate" in box and "cost budget cannot be checked" in box, box
    table = page.inner_text("#cost")
    assert re.search(WORDS["judge_cost_per_case"][0] + r"\s+0\.0000121 USD\s+unknown", table), table
    assert re.search(re.escape(WORDS["cost_per_case_with_judge"][0]) + r"\s+0\.000110 USD\s+–", table), table
    notes = page.inner_text("#cost-notes")
    assert "the candidate: the judge's cost is unknown: 2 of 6 judge call(s) reported no token usage" in notes, notes
    # the same words on History, from the same definition (run_history.py's history.json carries them)
    hist = run_script("run_history", runs["state"], "-o", tmp_path / "history.json", "--no-verify")
    assert hist.rc == 0, hist.stdout
    doc = json.loads((tmp_path / "history.json").read_text())
    assert doc["cost_words"]["cost_per_case"]["label"] == WORDS["cost_per_case"][0]
    smoke = next(s for s in doc["series"] if s["name"].startswith("smoke"))["runs"]
    assert [r["judge_cost_per_case"] is None for r in smoke] == [False, True]
    assert "2 of 6 judge call(s) reported no token usage" in smoke[1]["judge_cost_note"]
    assert smoke[0]["cost_per_case_with_judge"] == pytest.approx(smoke[0]["cost_per_case"] + smoke[0]["judge_cost_per_case"])
    assert smoke[1]["cost_per_case_with_judge"] is None
    _open(page, server, "/history", tmp_path, "history-judge")
    assert page.locator(f"svg.chart.cost[aria-label^='{WORDS['cost_per_case'][0]}']").count() == 2
    covers = page.inner_text("p.cost-covers >> nth=0")
    assert WORDS["cost_per_case"][1] in covers and f"unknown in {runs['broken']}" in covers, covers
    page.click("details.fold:has(table) > summary >> nth=0")
    assert "unknown: the judge's cost is unknown" in page.inner_text("td.judge-cost >> nth=0")


def test_history_page_charts_the_apps_cost_and_keeps_the_judges_apart(runs, tmp_path):
    """run_history.py --html: the cost chart is the app's cost per traced case, the judge's part and the sum
    gate.py's budget checks are words under it, and the run whose judge's cost is unknown is named."""
    r = run_script("run_history", runs["state"], "--no-verify", "-o", tmp_path / "h.json", "--html", tmp_path / "h.html")
    assert r.rc == 0, r.stdout + r.stderr
    page = (tmp_path / "h.html").read_text()
    smoke = page.split("<h2>smoke")[1].split("<h2>")[0]
    cost = re.findall(r"<figure>.*?</figure>", smoke, re.S)[1]
    assert f"<strong>{WORDS['cost_per_case'][0]}, USD</strong>" in cost and cost.count("<circle") == 2
    notes = html.unescape(smoke.split('<p class="chart-notes">')[1].split("</p>")[0])
    clean = json.loads((tmp_path / "h.json").read_text())["series"][0]["runs"][0]
    assert f"The judge's part, apart from the chart, in <code>{runs['clean']}</code>: " \
           f"{WORDS['judge_cost_per_case'][0]} {money(clean['judge_cost_per_case'], 'USD')}, " \
           f"{WORDS['cost_per_case_with_judge'][0]} (what gate.py's cost budget checks) " \
           f"{money(clean['cost_per_case_with_judge'], 'USD')}." in notes, notes
    assert f"The judge's cost is unknown in <code>{runs['broken']}</code>: 2 of 6 judge call(s) reported no token " \
           "usage" in notes and "so gate.py's cost budget could not be checked there." in notes, notes

def _compare(runs: dict, base: str, cand: str, tmp_path: Path, env: dict | None = None) -> tuple[dict, str]:
    reports = runs["state"] / "reports"
    r = run_script("compare_runs", reports / base, reports / cand, "-o", tmp_path / "compare.json",
                   "--html", tmp_path / "compare.html", env=env)
    assert r.rc == 0, r.stdout + r.stderr
    return json.loads((tmp_path / "compare.json").read_text()), (tmp_path / "compare.html").read_text()


def test_compare_json_carries_the_cost_and_latency_the_viewer_shows(runs, tmp_path):
    """compare.json (the CI artifact) had no cost at all: the viewer's Compare page computed it apart.
    Now it is the viewer's block, made in compare_runs.py's one pass over both runs, equal to
    cost_delta reading the two runs itself; the broken run's unknown judge cost is said, never 0."""
    from assay.compare.cost_delta import cost_latency
    from assay.stats.cost_words import words
    doc, _ = _compare(runs, runs["clean"], runs["broken"], tmp_path)
    cl = doc["cost_latency"]
    reports = runs["state"] / "reports"
    assert cl == cost_latency(reports / runs["clean"], reports / runs["broken"])   # one computation
    assert cl["words"] == words() and cl["currency"] == "USD"
    assert cl["base"]["judge_cost_per_case"] == pytest.approx(0.0000121, rel=0.01) and cl["base"]["judge_note"] is None
    assert cl["candidate"]["judge_cost_per_case"] is None and cl["candidate"]["cost_per_case_with_judge"] is None
    assert "2 of 6 judge call(s) reported no token usage" in cl["candidate"]["judge_note"]
    assert cl["delta"]["cost_per_case"] < 0 and cl["delta"]["cost_per_case_with_judge"] is None
    # no per case map (at 100,000 cases it held 100,000 rows: issue 51's bar): a listed case's own
    # figures are on its pair, when they changed; a still passing case is in the totals only
    assert "cases" not in cl
    listed = [p for b, ps in doc["buckets"].items() if b not in ("still_passing", "still_unscored") for p in ps]
    own = [p["cost_latency"] for p in listed if "cost_latency" in p]
    assert own and all(isinstance(c["cost"][0], float) and isinstance(c["latency_ms"][2], float) for c in own)
    assert not any("cost_latency" in p for p in doc["buckets"].get("still_passing") or [])
    forked, _ = _compare(runs, runs["clean"], runs["broken"], tmp_path, env={"ASSAY_COMPARE_FORK_ABOVE": "0"})
    assert forked["cost_latency"] == cl   # half the pairs (and their cases' cost rows) made in a child
    # the targeted rerun traced 9 of the broken run's 20: totals over the cases traced in both, said
    rerun, _ = _compare(runs, runs["broken"], runs["fixed"], tmp_path)
    assert rerun["cost_latency"]["both_traced"]["cases"] == 9
    assert rerun["cost_latency"]["traced_note"].startswith("the base traced 20 case(s), the candidate 9")


def test_compare_html_shows_cost_and_latency_in_the_viewers_words(runs, tmp_path):
    """compare.html showed buckets and diffs only: what the change cost was nowhere on the CI artifact."""
    _, page = _compare(runs, runs["clean"], runs["broken"], tmp_path)
    assert '<h2 id="cost-latency">Cost and latency</h2>' in page
    assert f"<td>{WORDS['judge_cost_per_case'][0]}</td><td>0.0000121 USD</td><td>unknown</td>" in page
    assert f"<td>{WORDS['cost_per_case_with_judge'][0]}</td><td>0.000110 USD</td><td>–</td><td class=\"delta\">–</td>" \
        in page
    assert re.search(f"<td>{WORDS['cost_per_case'][0]}</td><td>0\\.0000\\d+ USD</td><td>0\\.0000\\d+ USD</td>"
                     "<td class=\"delta\">\u2212", page), page
    assert "judge&#x27;s cost unknown in the candidate: not in this figure, and gate.py&#x27;s cost budget cannot be " \
           "checked" in page
    assert "the candidate: the judge&#x27;s cost is unknown: 2 of 6 judge call(s) reported no token usage" in page
    for label, covers in WORDS.values():
        assert f"<strong>{label}</strong>: {html.escape(covers)}" in page, label
    assert re.search(r'<p class="what cost-line">app cost 0\.0000\d+ → 0\.0000\d+ \([+\u2212±]', page)


def test_report_comparison_section_shows_cost_and_latency(runs, tmp_path):
    """draft_report.py --baseline: the comparison section said nothing of cost or latency."""
    reports = runs["state"] / "reports"
    r = run_script("draft_report", reports / runs["broken"], "--baseline", reports / runs["clean"],
                   "-o", tmp_path / "report.md")
    assert r.rc == 0, r.stdout + r.stderr
    section = (tmp_path / "report.md").read_text().split("## Compared with the baseline", 1)[1]
    assert "**Cost and latency**" in section
    assert f"| {WORDS['judge_cost_per_case'][0]} | 0.0000121 USD | unknown |" in section, section
    assert re.search(re.escape(f"| {WORDS['cost_per_case_with_judge'][0]} | 0.000110 USD | – | – |"), section), section
    assert "> the candidate: the judge's cost is unknown: 2 of 6 judge call(s) reported no token usage" in section
    assert f"- **{WORDS['cost_per_case'][0]}**: " in section and "judge's cost unknown in the candidate" in section
    assert "app cost 0.0000" in section   # each listed case's own cost and latency


@NEEDS_CHROMIUM
def test_compare_totals_are_over_the_cases_traced_in_both_runs(runs, server, page, tmp_path):
    """The rerun traced 9 cases, the broken run 20: its input tokens "fell" by the 11 cases it did not
    run (2461 → 1687, −774) though each case used more."""
    cl = _api(server, f"/api/compare/{runs['broken']}/{runs['fixed']}")["cost_latency"]
    assert (cl["base"]["traced_cases"], cl["candidate"]["traced_cases"], cl["both_traced"]["cases"]) == (20, 9, 9)
    from assay.compare.cost_delta import prices_of
    from assay.stats.cost import run_cost
    reports = runs["state"] / "reports"
    prices = prices_of(reports / runs["fixed"])[0]
    base, cand = (run_cost(reports / runs[r], prices)["cases"] for r in ("broken", "fixed"))
    common = {r["case_id"] for r in cand if r["traced"]} & {r["case_id"] for r in base if r["traced"]}
    assert len(common) == 9   # the base's cost over the candidate's 9, folded in the pairs' pass
    assert cl["both_traced"]["base"]["cost_total"] == pytest.approx(sum(r["cost"] for r in base if r["case_id"] in common))
    assert cl["delta"]["input_tokens_per_case"] > 0   # per traced case, the rerun used more
    _open(page, server, f"/compare/{runs['broken']}/{runs['fixed']}", tmp_path, "compare-traced")
    table = page.inner_text("#cost")
    assert "app cost over the 9 case(s) traced in both runs" in table and "input tokens per traced case" in table
    assert not re.search(r"^input tokens\t", table, re.M), table   # no total of unlike sets
    assert "the base traced 20 case(s), the candidate 9: the totals are over the 9 case(s) traced in both runs" \
        in page.inner_text("#cost-notes")
    assert "traced cases differ: 20 \u2192 9" in page.inner_text("#cost-box")


@NEEDS_CHROMIUM
def test_history_first_screen_says_why_runs_are_excluded_and_its_axis_labels_fit(runs, server, page, tmp_path):
    _open(page, server, "/history", tmp_path, "history-first-screen")
    excluded = page.inner_text("#excluded-runs")
    assert f"{runs['fixed']}.shard-1: shard 1 of run {runs['fixed']}: a slice of a run, not a run" in excluded
    assert page.evaluate("() => document.getElementById('excluded-runs').getBoundingClientRect().bottom") < 800
    # every axis label inside its chart (the cost chart's "0.0000974" began left of it)
    boxes = page.evaluate("""() => [...document.querySelectorAll('svg.chart text.axis')]
                               .map(t => [t.textContent, t.getBBox().x])""")
    assert boxes and all(x >= 0 for _t, x in boxes), boxes
    assert any(t.startswith("0.0000") and len(t) > 7 for t, _x in boxes), boxes


def test_latency_is_the_final_attempts_and_the_docs_say_so(tmp_path):
    """A case answered on its second attempt after a slow 500: its latency (the p95's sample) is the
    second attempt's, and every doc that defines latency says so."""
    state = make_state(tmp_path)
    with FakeApp() as app:
        app.queue(Reply(500, {"error": "overloaded"}, delay=0.6), Reply(200, {"message": "echo: hello"}))
        plan = make_plan(state, [case("c-retried", "hello")], adapter_doc=adapter(app.url, timeout_s=30),
                         execution={"max_attempts": 2, "backoff_s": [0.3]})
        out = state / "reports" / plan["run_id"]
        res = run_runner("--plan", write_plan(state, plan), "--out", out)
    assert res.rc == 0, res.stdout + res.stderr
    response = case_json(out, "c-retried", "response.json")
    slow, fast = (a["latency_ms"] for a in response["attempt_log"])
    assert slow >= 600 and case_json(out, "c-retried")["latency_ms"] == fast < 600
    words = WORDS["latency"][1]
    assert "the attempt whose answer was scored" in words and "backoff" in words
    assert "**A case's latency is its final attempt's**" in (ROOT / "references" / "history-and-cost.md").read_text()
    assert "of the case's final attempt" in (ROOT / "docs" / "runner-contract.md").read_text()
