"""Cost and latency from traces (score_cost.py), budgets in the gate, and the history of real runs.

Three smoke runs of the bundled example app (its spans carry made-up but fixed token
counts) in a copy of its state dir; everything below reads those run directories.
"""

from __future__ import annotations

import importlib.util
import html
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from fixtures_authoring import run_inproc
from helpers import ROOT, run_script
from rundir_util import cases_view, drop_case

from assay.compare.cost_table import money, ms
from assay.stats.cost_words import WORDS

pytestmark = pytest.mark.slow

EXAMPLE = ROOT / "examples" / "helpdesk"


def _demo_module():
    spec = importlib.util.spec_from_file_location("helpdesk_demo_cost", EXAMPLE / "demo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cost")
    state = base / "app" / ".assay"
    shutil.copytree(EXAMPLE / ".assay", state, ignore=shutil.ignore_patterns("work", "reports", "holdout-looks.jsonl"))
    app = _demo_module().App(base, broken=False, flaky=False)
    url = app.start()
    env = {"HELPDESK_BASE_URL": url, "HELPDESK_OTLP_FILE": str(app.otlp_file)}
    try:
        conv = run_script("convert_suite", state, "-o", base / "converted.json")
        assert conv.rc == 0, conv.stdout
        out = []
        for i in range(3):
            run_id = f"smoke-202611{28 + i}T120000Z"
            # the second run is sharded in two and merged (its results.json is the merge's own)
            shards = ("--shards", "2") if i == 1 else ()
            plan = run_script("make_plan", base / "converted.json", "--mode", "smoke", "--state-dir", state,
                              "-o", base / f"plan{i}.json", "--run-id", run_id, *shards)
            assert plan.rc == 0, plan.stdout
            if shards:
                shard_dirs = [state / "reports" / f"{run_id}.shard-{n}" for n in (1, 2)]
                for n, sdir in enumerate(shard_dirs, 1):
                    r = run_script("run_cases", "--plan", base / f"plan{i}.json", "--shard", n, "--out", sdir,
                                   "--progress", "never", env=env)
                    assert r.rc == 0, r.stdout + r.stderr
                r = run_script("merge_runs", "--plan", base / f"plan{i}.json", "--out", state / "reports" / run_id,
                               *shard_dirs)
                assert r.rc == 0, r.stdout + r.stderr
                for sdir in shard_dirs:   # out of reports/: the history below is of runs, not of shards
                    shutil.move(sdir, base / sdir.name)
            else:
                r = run_script("run_cases", "--plan", base / f"plan{i}.json", "--out", state / "reports" / run_id,
                               "--progress", "never", env=env)
                assert r.rc == 0, r.stdout + r.stderr
            out.append(state / "reports" / run_id)
    finally:
        app.stop()
    return state, out


def _trajectory_tokens(run_dir: Path) -> tuple[int, int]:
    """Every model call the run stored: a case's trajectory.json, or for a conversation every
    sent turn's turns/<n>/trajectory.json (the case-level one is a copy of the deciding turn's)."""
    tin = tout = 0
    files = []
    for cdir in cases_view(run_dir).glob("*"):
        turns = list(cdir.glob("turns/*/trajectory.json"))
        files += turns or list(cdir.glob("trajectory.json"))
    for t in files:
        for call in json.loads(t.read_text())["llm_calls"]:
            tin += call.get("input_tokens", 0)
            tout += call.get("output_tokens", 0)
    return tin, tout


def test_cost_is_priced_from_the_traces(runs):
    state, dirs = runs
    r = run_script("score_cost", dirs[0])
    assert r.rc == 0, r.stdout
    doc = r.json
    assert doc["capability"] == {"enabled": True, "blocked_by": None}
    t = doc["totals"]
    assert (t["input_tokens"], t["output_tokens"]) == _trajectory_tokens(dirs[0])
    assert t["input_tokens"] > 0 and t["complete"] is True and doc["unpriced_models"] == []
    # helpdesk-rules-1: 0.40 / 1.60 per million tokens (the example's prices.yaml)
    expected = t["input_tokens"] * 0.40 / 1e6 + t["output_tokens"] * 1.60 / 1e6
    assert t["cost"]["total"] == pytest.approx(expected, rel=1e-6)
    assert t["latency_ms"]["p95"] >= t["latency_ms"]["p50"] > 0
    assert doc["currency"] == "USD"


def test_unknown_model_is_named_never_priced_at_zero(runs, tmp_path):
    _, dirs = runs
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\nper: 1000\nmodels:\n  some-other-model: {input: 1, output: 2}\n")
    doc = run_script("score_cost", dirs[0], "--prices", prices).json
    assert doc["unpriced_models"] == ["helpdesk-rules-1"]
    assert doc["totals"]["complete"] is False and doc["totals"]["cost"]["total"] is None
    priced_models = [c for c in doc["cases"] if c["model_calls"]]
    assert priced_models and all(c["cost"] is None for c in priced_models)


@pytest.mark.parametrize("text, complaint", [
    ("currency: USD\nmodels: {}\n", "`models` must map"),
    ("models:\n  m: {input: -1, output: 2}\n", "models.m.input must be a price"),
    ("models:\n  m: {input: 1}\n", "models.m must be {input"),
    ("modles:\n  m: {input: 1, output: 1}\n", "unknown key"),
    ("per: 0\nmodels:\n  m: {input: 1, output: 1}\n", "`per` must be"),
])
def test_bad_prices_file_is_exit_2_naming_the_key(runs, tmp_path, text, complaint):
    _, dirs = runs
    prices = tmp_path / "p.yaml"
    prices.write_text(text)
    r = run_inproc("score_cost", dirs[0], "--prices", prices)   # a refusal: the command in this process
    assert r.rc == 2 and complaint in r.json["error"] and "p.yaml" in r.json["error"]


def test_baseline_split_by_verdict_change(runs):
    _, dirs = runs
    doc = run_script("score_cost", dirs[1], "--baseline", dirs[0]).json
    groups = doc["baseline"]["by_verdict_change"]
    assert groups["unchanged"]["cases"] == len(doc["cases"]) and groups["broken"]["cases"] == 0
    assert groups["unchanged"]["cost_delta"] == pytest.approx(0, abs=1e-9)  # deterministic app, same tokens


def test_budgets_close_and_open_the_gate_with_the_margin(runs, tmp_path):
    _, dirs = runs
    closed = run_script("gate", dirs[0], "--max-cost-per-case", "0.00001")
    assert closed.rc == 1
    assert "is over the budget 1e-05 by" in closed.stdout
    # (a budget under the cases' 10 s timeout: one above it can never be exceeded, and closes)
    opened = run_script("gate", dirs[0], "--max-cost-per-case", "1", "--max-p95-latency-s", "9")
    assert opened.rc == 0, opened.stdout
    assert "budget 1: margin" in opened.stdout and "budget 9s: margin" in opened.stdout
    slow = run_script("gate", dirs[0], "--max-p95-latency-s", "0")
    assert slow.rc == 1 and "p95 latency" in slow.stdout and "over the budget 0s" in slow.stdout
    # a budget that cannot be checked is not a pass
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  nope: {input: 1, output: 1}\n")
    blind = run_script("gate", dirs[0], "--max-cost-per-case", "1", "--prices", prices)
    assert blind.rc == 1 and "cannot be checked" in blind.stdout and "helpdesk-rules-1" in blind.stdout
    bad = run_inproc("gate", dirs[0], "--max-cost-per-case", "-1")   # a refusal: the command in this process
    assert bad.rc == 2


def test_report_has_the_cost_section(runs):
    _, dirs = runs
    r = run_script("draft_report", dirs[2], "-o", dirs[2] / "report.md", "--force")
    assert r.rc == 0, r.stdout
    text = (dirs[2] / "report.md").read_text()
    assert "## Cost and latency" in text and "USD in all" in text


@pytest.fixture(scope="module")
def history_page(runs, tmp_path_factory):
    """run_history.py --html over the three real runs, as CI renders it: the page and its history.json."""
    state, _ = runs
    tmp = tmp_path_factory.mktemp("history-page")
    r = run_script("run_history", state, "-o", tmp / "history.json", "--html", tmp / "history.html")
    assert r.rc == 0, r.stdout + r.stderr
    out = r.json
    assert out["runs_used"] == 3 and out["excluded_runs"] == 0 and len(out["series"]) == 1
    return tmp / "history.html", json.loads((tmp / "history.json").read_text())


def _figures(html_text: str) -> list[str]:
    return re.findall(r"<figure>.*?</figure>", html_text, re.S)


def test_history_page_of_real_runs_draws_pass_rate_cost_and_latency(history_page):
    """The static page drew only the pass rate: a person handed it in CI saw no cost or latency trend."""
    page, doc = history_page
    text = page.read_text()
    assert "<script" not in text.lower() and "default-src 'none'" in text
    runs = doc["series"][0]["runs"]
    rate, cost, latency = _figures(text)
    assert "pass rate, % (bar: 95 % Wilson interval)" in rate and rate.count("<circle") == 3
    assert f"<strong>{WORDS['cost_per_case'][0]}, USD</strong>" in cost and cost.count("<circle") == 3
    assert f"latest <strong>{money(runs[-1]['cost_per_case'], 'USD')}</strong>" in cost
    assert cost.count("<polyline") == 1 and 'aria-label="app cost per traced case, USD per run"' in cost
    assert f"<strong>p95 {WORDS['latency'][0]}, ms</strong>" in latency and latency.count("<circle") == 3
    assert f"latest <strong>{ms(runs[-1]['p95_latency_ms'])}</strong>" in latency
    # what the cost covers, under the charts: the app's own calls, never the judge's
    assert html.escape(WORDS["cost_per_case"][1], quote=True) in text


@NEEDS_CHROMIUM
def test_history_page_shows_its_three_trend_charts_on_the_first_screen(history_page, tmp_path):
    api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    page_file, doc = history_page
    latest = doc["series"][0]["runs"][-1]
    with api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(page_file.as_uri())
        page.screenshot(path=str(tmp_path / "history-static.png"))
        if os.environ.get("ASSAY_KEEP_SCREENSHOTS"):
            shutil.copy(tmp_path / "history-static.png", Path(os.environ["ASSAY_KEEP_SCREENSHOTS"]) / "history-static.png")
        figures = page.locator(".charts figure")
        assert figures.count() == 3
        for i, title in enumerate(("pass rate, %", f"{WORDS['cost_per_case'][0]}, USD", f"p95 {WORDS['latency'][0]}, ms")):
            fig = figures.nth(i)
            box = fig.locator("svg").bounding_box()
            assert fig.is_visible() and box["y"] + box["height"] <= 800, (title, box)   # all of it on the first screen
            caption = fig.locator("figcaption").inner_text()
            assert caption.startswith(title) and "latest" in caption, caption
        assert f"latest {money(latest['cost_per_case'], 'USD')}" in figures.nth(1).inner_text()
        # side by side, never overlapping
        boxes = [figures.nth(i).bounding_box() for i in range(3)]
        assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"] and boxes[1]["x"] + boxes[1]["width"] <= boxes[2]["x"]
        # every axis label inside its chart
        assert all(x >= 0 for x in page.evaluate("() => [...document.querySelectorAll('.charts svg text')].map(t => t.getBBox().x)"))
        browser.close()


# ---------------------------------------------------------------- results.json's cost_latency block
def _block(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())["cost_latency"]


def _untimed(block: dict) -> dict:
    """The block without its timing (latency percentiles), as two runs of the same answers agree."""
    return {k: v for k, v in block.items() if k not in ("latency_ms", "model_latency_ms")}


def test_results_json_cost_block_agrees_with_score_cost_and_the_report(runs):
    _, dirs = runs
    block = _block(dirs[0])
    totals = run_script("score_cost", dirs[0]).json["totals"]
    assert block["enabled"] is True and block["blocked_by"] is None
    assert block["traced_cases"] == totals["traced_cases"] == block["cases"]
    assert (block["input_tokens"]["total"], block["output_tokens"]["total"]) == _trajectory_tokens(dirs[0])
    assert block["input_tokens"]["total"] == totals["input_tokens"] and block["model_calls"] == totals["model_calls"]
    assert block["input_tokens"]["mean_per_case"] == pytest.approx(totals["input_tokens"] / totals["traced_cases"],
                                                                   abs=1e-3)
    money = block["cost"]
    assert money["complete"] is True and money["currency"] == "USD" and money["prices"] == "prices.yaml"
    assert money["total"] == totals["cost"]["total"] > 0 and money["mean_per_case"] == totals["cost"]["mean"]
    for key in ("latency_ms", "model_latency_ms"):
        assert block[key] == {"p50": totals[key]["p50"], "p95": totals[key]["p95"]}
    r = run_script("draft_report", dirs[0], "-o", dirs[0] / "report.md", "--force")
    assert r.rc == 0, r.stdout
    report = (dirs[0] / "report.md").read_text()
    assert f"Tokens: {block['input_tokens']['total']} in + {block['output_tokens']['total']} out" in report
    assert f"Cost: {money['total']:.6f} USD in all" in report
    assert f"p95 {block['latency_ms']['p95']:.0f} ms" in report
    assert run_script("run_cases", "--verify", dirs[0]).rc == 0   # the block passes the results schema


def test_merged_run_recomputes_the_block_from_the_merged_cases(runs):
    state, dirs = runs
    merged, whole = _block(dirs[1]), _block(dirs[0])
    shards = [_block(state.parent.parent / f"{dirs[1].name}.shard-{n}") for n in (1, 2)]
    assert _untimed(merged) == _untimed(whole)   # the deterministic app: same tokens, same cost
    for shard in shards:   # each shard priced its own slice; the merge copied neither
        assert shard["cases"] < merged["cases"] and shard["input_tokens"] != merged["input_tokens"]
    assert set(merged["latency_ms"]) == {"p50", "p95"} and merged["latency_ms"]["p95"] > 0


def test_untraced_run_says_why_and_never_reports_zeros(tmp_path):
    from fakeapp import FakeApp, case, make_plan, make_state, run_runner, write_plan

    state = make_state(tmp_path)
    (state / "prices.yaml").write_text("models:\n  m: {input: 1, output: 1}\n")
    (state / "profile.yaml").write_text("capability_matrix: {}\nbudgets:\n  max_cost_per_case: 1\n")
    with FakeApp() as app:
        plan = write_plan(state, make_plan(state, [case("c-1", "hello one"), case("c-2", "hello two")],
                                           app_url=app.url))
        r = run_runner("--plan", plan, "--out", state / "reports" / "smoke-20261129T101500Z", "--progress", "never")
    assert r.rc == 0, r.stdout + r.stderr
    run_dir = state / "reports" / "smoke-20261129T101500Z"
    block = _block(run_dir)
    assert block["enabled"] is False and "no traces collected" in block["blocked_by"]
    assert block["input_tokens"] is None and block["output_tokens"] is None and block["model_calls"] is None
    assert block["cost"] is None and block["model_latency_ms"] is None and block["traced_cases"] == 0
    assert block["latency_ms"]["p95"] >= block["latency_ms"]["p50"] > 0   # end to end needs no trace
    gate = run_script("gate", run_dir)   # the profile's cost budget cannot be checked: closed, never green
    assert gate.rc == 1, gate.stdout
    assert "cannot be checked: no traces collected" in gate.stdout and "profile.yaml:3 budgets.max_cost_per_case" \
        in gate.stdout


def test_rescore_reprices_and_an_unknown_model_is_named_in_results_json(runs, tmp_path):
    """Rescore rebuilds results.json (the engine's own finalize) with the state dir's prices now:
    a model prices.yaml does not name leaves the cost null with the model named, never 0."""
    state, dirs = runs
    copy = tmp_path / "app" / ".assay"
    shutil.copytree(state, copy, ignore=shutil.ignore_patterns("work"))
    (copy / "prices.yaml").write_text("currency: EUR\nmodels:\n  some-other-model: {input: 1, output: 2}\n")
    src, out = copy / "reports" / dirs[0].name, copy / "reports" / "smoke-20261201T120000Z"
    # rescore does not replay conversations (each would be infra_error, and four of 18 can trip the
    # infra abort): rescore the single-turn part of the run
    manifest = json.loads((src / "manifest.yaml").read_text())
    convos = {c["id"] for c in manifest["cases"]
              if json.loads((cases_view(src) / c["id"] / "verdict.json").read_text()).get("multi_turn")}
    assert convos
    manifest["cases"] = [c for c in manifest["cases"] if c["id"] not in convos]
    (src / "manifest.yaml").write_text(json.dumps(manifest))
    for cid in convos:
        drop_case(src, cid)
    r = run_script("rescore", src, "--out", out)
    assert r.rc == 0, r.stdout + r.stderr
    block, totals = _block(out), run_script("score_cost", out).json["totals"]
    assert block["input_tokens"]["total"] == totals["input_tokens"] > 0
    # the conversations dropped from the run are still in its split: rescored as replay misses (untraced)
    assert block["traced_cases"] == len(manifest["cases"]) and block["cases"] == len(manifest["cases"]) + len(convos)
    money = block["cost"]
    assert money["complete"] is False and money["total"] is None and money["mean_per_case"] is None
    assert money["unpriced_models"] == ["helpdesk-rules-1"] and "not priced at 0" in money["reason"]
    # a budget in the run's own state dir's profile (found from the run dir) cannot be checked: closed
    _set_budgets(copy, "  max_cost_per_case: 1\n")
    gate = run_script("gate", out, "--no-verify")
    assert gate.rc == 1 and "cannot be checked" in gate.stdout and "helpdesk-rules-1" in gate.stdout
    r = run_script("draft_report", out, "-o", out / "report.md")   # the report's banner applies it too
    assert r.rc == 0, r.stdout
    assert "FAIL · gate closed" in (out / "report.md").read_text()


@pytest.fixture
def budget_state(runs, tmp_path):
    """A state dir beside the run (--state-dir) holding the example's profile.yaml and prices.yaml."""
    state, _ = runs
    other = tmp_path / "other" / ".assay"
    other.mkdir(parents=True)
    for name in ("profile.yaml", "prices.yaml"):
        shutil.copy(state / name, other / name)
    return other


def _set_budgets(state: Path, text: str) -> int:
    """Replace profile.yaml's budgets block (the example's is its last key); return the line of
    the new block's first key."""
    profile = state / "profile.yaml"
    before = profile.read_text()
    if "\nbudgets:" in before:
        before = before[:before.index("\nbudgets:") + 1]
    profile.write_text(before + "budgets:\n" + text)
    return before.count("\n") + 2


def test_profile_budgets_close_and_open_the_gate_naming_their_line(runs, budget_state):
    _, dirs = runs
    cost = _block(dirs[0])["cost"]["mean_per_case"]
    line = _set_budgets(budget_state, f"  max_cost_per_case: {cost / 2}\n  max_p95_latency_s: 9\n")
    closed = run_script("gate", dirs[0], "--state-dir", budget_state, "--no-verify")
    assert closed.rc == 1, closed.stdout
    over = [x for x in closed.stdout.splitlines() if "gate closed: cost" in x]
    assert len(over) == 1 and "is over the budget" in over[0] and "(100.0 %)" in over[0]
    assert f"profile.yaml:{line} budgets.max_cost_per_case]" in over[0]
    assert f"budget 9s: margin" in closed.stdout and f"profile.yaml:{line + 1} budgets.max_p95_latency_s]" \
        in closed.stdout
    # a flag overrides the profile's key, and says what it overrode
    opened = run_script("gate", dirs[0], "--state-dir", budget_state, "--no-verify", "--max-cost-per-case", "1",
                        "--json")
    assert opened.rc == 0, opened.stdout
    sources = opened.json["budget_sources"]
    assert sources["max_cost_per_case"]["value"] == 1
    assert sources["max_cost_per_case"]["source"].startswith("--max-cost-per-case (overrides ")
    assert sources["max_p95_latency_s"]["source"].endswith(f"profile.yaml:{line + 1} budgets.max_p95_latency_s")


def test_a_latency_budget_above_the_timeout_cannot_be_checked_and_closes(runs, budget_state):
    """A p95 budget above the cases' timeout can never be exceeded (a slower case stops at its timeout):
    one written in milliseconds (2000 for 2 s) read as 2000 s and the gate stayed open whatever the app's
    latency (the cost trial). It closes, saying why and what to set."""
    _, dirs = runs
    timeout = json.loads((dirs[0] / "manifest.yaml").read_text())["invocation"]["timeout_s"]
    _set_budgets(budget_state, f"  max_p95_latency_s: {timeout * 100:g}\n")
    r = run_script("gate", dirs[0], "--state-dir", budget_state, "--no-verify")
    assert r.rc == 1 and f"it is above the cases' timeout ({timeout:g}s)" in r.stdout, r.stdout
    assert f"set one below {timeout:g}" in r.stdout
    _set_budgets(budget_state, f"  max_p95_latency_s: {timeout:g}\n")   # at the timeout: checked, as before
    assert "margin" in run_script("gate", dirs[0], "--state-dir", budget_state, "--no-verify").stdout


def test_misspelled_budget_key_is_exit_2_naming_file_line_and_key(runs, budget_state):
    _, dirs = runs
    line = _set_budgets(budget_state, "  max_cost_per_cse: 1\n")
    # never ignored, even when the flags cover both budgets
    r = run_inproc("gate", dirs[0], "--state-dir", budget_state, "--no-verify",   # refusals: in this process
                   "--max-cost-per-case", "1", "--max-p95-latency-s", "30")
    assert r.rc == 2, r.stdout
    err = r.json["error"]
    assert f"profile.yaml:{line}" in err and "did you mean 'max_cost_per_case'" in err
    missing = run_inproc("gate", dirs[0], "--state-dir", budget_state.parent, "--no-verify")
    assert missing.rc == 2 and "no profile.yaml there" in missing.json["error"]


def test_every_cost_latency_key_is_documented_in_the_runner_contract():
    schema = json.loads((ROOT / "scripts" / "assay" / "schemas" / "results.schema.json").read_text())
    block = schema["properties"]["cost_latency"]
    doc = (ROOT / "docs" / "runner-contract.md").read_text()
    section = doc[doc.index("### 10.3 `results.json`"):doc.index("### 10.4")]
    cost = block["properties"]["cost"]["oneOf"][1]
    for key in block["required"] + cost["required"]:
        assert f'"{key}"' in section, key


def test_prices_symlink_leaving_the_state_dir_is_not_read(runs, tmp_path):
    from assay.stats.cost import results_summary

    _, dirs = runs
    outside = tmp_path / "outside.yaml"
    outside.write_text("models:\n  helpdesk-rules-1: {input: 1, output: 1}\n")
    state = tmp_path / "state"
    state.mkdir()
    (state / "prices.yaml").symlink_to(outside)
    manifest = json.loads((dirs[0] / "manifest.yaml").read_text())
    records = [json.loads(p.read_text()) for p in cases_view(dirs[0]).glob("*/verdict.json")]
    block = results_summary(dirs[0], manifest, records, state)
    assert block["cost"]["total"] is None and "symlink that leaves the state dir" in block["cost"]["reason"]
    assert block["input_tokens"] == _block(dirs[0])["input_tokens"]   # in memory == what the runner wrote


def test_the_analyze_skill_quotes_keys_score_cost_writes(runs, tmp_path):
    """analyze --history told the agent to quote `totals.cost` as a run's cost, with no word of
    `totals.incomplete_reason` (the total is null when a model is unpriced) or `totals.k_note` (at k > 1
    the cost is of one repeat: the run spent about k times as much). Every `totals.`/`baseline.`/
    `capability.` key its paragraph names is in score_cost.py's output, the two caveats among them."""
    import re
    _, dirs = runs
    text = (ROOT / "skills" / "analyze" / "SKILL.md").read_text(encoding="utf-8")
    para = " ".join(text.split("score_cost.py <state-dir>/reports/<run-id>", 1)[1].split("## Worked example", 1)[0].split())
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  some-other-model: {input: 1, output: 2}\n")
    doc = run_script("score_cost", dirs[0], "--baseline", dirs[2], "--prices", prices).json
    assert doc["totals"]["cost"]["total"] is None and doc["totals"]["incomplete_reason"]
    named = set(re.findall(r"`((?:totals|baseline|capability)\.[a-z_.0-9]+)`", para))
    assert {"totals.incomplete_reason", "totals.k_note", "totals.complete", "totals.cost.total"} <= named
    for path in named:
        node = doc
        for part in path.split("."):
            assert isinstance(node, dict) and part in node, path
            node = node[part]


def _cost_doc(**totals):
    base = {"complete": True, "cost": {"mean": 0.001}, "latency_ms": {"p95": 2000.0}, "judge": {}}
    base.update(totals)
    return {"capability": {"enabled": True}, "prices": {"models": {}}, "currency": "USD", "totals": base,
            "timeout_s": 30}


def test_each_budget_closes_just_over_it_and_when_it_cannot_be_checked():
    """The budget rule itself (stats.cost_budget), at its edges: a p95 just over its budget closes (a
    0 s budget alone cannot tell `>` from a looser test), and a budget that cannot be checked (no
    prices file, no latency recorded) closes, never holds."""
    from assay.stats.cost_budget import budget_lines
    close, _ = budget_lines(_cost_doc(), max_cost_per_case=None, max_p95_latency_s=1.9)
    assert len(close) == 1 and close[0].startswith("p95 latency 2.000s is over the budget 1.9s"), close
    close, lines = budget_lines(_cost_doc(), max_cost_per_case=None, max_p95_latency_s=2.1)
    assert close == [] and "margin" in lines[0]
    close, _ = budget_lines(_cost_doc(latency_ms={}), max_cost_per_case=None, max_p95_latency_s=5)
    assert close == ["latency budget p95 5s cannot be checked: no case latency recorded"]
    close, _ = budget_lines(_cost_doc(), max_cost_per_case=0.0009, max_p95_latency_s=None)
    assert len(close) == 1 and "is over the budget 0.0009" in close[0]
    unpriced = dict(_cost_doc(), prices=None, prices_note="no .assay/prices.yaml")
    close, _ = budget_lines(unpriced, max_cost_per_case=1, max_p95_latency_s=None)
    assert close == ["cost budget 1/case cannot be checked: no prices file (no .assay/prices.yaml)"]
