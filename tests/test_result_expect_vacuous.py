"""An `expect.result` a wrong result passes is refused, never green (the execution-layer trial).

Two expectations let a wrong number or a wrong row through while looking like checks:
- `columns` that leaves out a key the expected row holds: the row's value for it was never
  compared, so the app returned revenue 999 for an expected 100 and the case passed;
- a `float_tolerance` at least as large as the expected (non-zero) value: the app returned 0 for
  an expected 0.5 with tolerance 2 and the case passed (its diff even said "difference -0.5 ... equal").
make_plan refuses both (linter ERRORs naming file, line, case and code); planned anyway with
--allow-invalid, the scorer refuses them too (the case is unscored, the gate closes). A real HTTP app
on a loopback port; the pipeline driven as scripts.
"""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply, run_runner
from helpers import run_script
from test_no_silent_green import case_yaml, write_state
from rundir_util import cases_view

RUN_ID = "smoke-20261130T000000Z"


def analytics_reply(req) -> Reply:
    """Revenue by region with a wrong revenue; an average discount of 0 (the right one is 0.5)."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    message = (req.json or {}).get("message", "")
    if "region" in message:
        return Reply(200, {"answer": "EU: 999", "route": "quotes", "quote": {"price": [{"region": "EU", "revenue": 999}]}})
    if "discount" in message:
        return Reply(200, {"answer": "0", "route": "quotes", "quote": {"price": 0}})
    return Reply(200, {"answer": "120", "route": "quotes", "quote": {"price": 120}})


def _cases(*, fixed: bool) -> dict[str, str]:
    cols = "[region, revenue]" if fixed else "[region]"
    tol = "0.01" if fixed else "2"
    return {
        "c-00000001": case_yaml("c-00000001"),
        "c-00000002": case_yaml("c-00000002", content="Revenue by region?", expect=(
            f"  route: quotes\n  result:\n    rows: [{{region: EU, revenue: 100}}]\n    columns: {cols}\n")),
        "c-00000003": case_yaml("c-00000003", content="Average discount?", expect=(
            f"  route: quotes\n  result: {{scalar: 0.5, float_tolerance: {tol}}}\n")),
    }


def _plan(state, *extra):
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", RUN_ID, *extra)
    return r, work / "plan.json"


def _run_and_gate(state, plan_file):
    out = state / "reports" / RUN_ID
    with FakeApp(analytics_reply) as app:
        r = run_runner("--plan", plan_file, "--out", out, env={"TRAVEL_BASE_URL": app.url})
    assert "Traceback" not in r.stderr, r.stderr
    return out, r, run_script("gate", out)


def test_make_plan_refuses_columns_leaving_out_a_row_key_and_a_tolerance_that_swallows_the_value(tmp_path):
    state = write_state(tmp_path, _cases(fixed=False))
    r, _ = _plan(state)
    assert r.rc == 2, r.stdout
    err = r.json["error"]
    assert ("datasets/c-00000002.yaml:16: c-00000002 [columns_mismatch] expect.result.rows[0] holds 'revenue', "
            "which columns does not list: never compared") in err, err
    assert ("datasets/c-00000003.yaml:14: c-00000003 [tolerance_swallows_value] expect.result: float_tolerance 2 "
            "is at least the expected value 0.5 (scalar): a result of 0 would pass") in err, err


def test_planned_anyway_the_wrong_revenue_and_the_zero_are_not_passes_and_the_gate_closes(tmp_path):
    state = write_state(tmp_path, _cases(fixed=False))
    r, plan_file = _plan(state, "--allow-invalid")
    assert r.rc == 0, r.stdout
    out, run, gate = _run_and_gate(state, plan_file)
    assert json.loads(run.stdout)["exit_code"] == 7, run.stdout   # a scorer rejected its input
    for cid, why in (("c-00000002", "expect.result.rows[0] holds 'revenue', which columns does not list"),
                     ("c-00000003", "expect.result: float_tolerance 2 is at least the expected value 0.5")):
        verdict = json.loads((cases_view(out) / cid / "verdict.json").read_text())
        assert verdict["verdict"] == "unscored", (cid, verdict["layers"]["execution"])
        assert verdict["layers"]["execution"] == {"verdict": "error", "reason": verdict["layers"]["execution"]["reason"]}
        assert verdict["layers"]["execution"]["reason"].startswith(why), verdict["layers"]["execution"]
    assert gate.rc == 1, gate.stdout
    assert "2 gating case(s) asserted a check that never ran" in gate.stdout, gate.stdout


def test_the_same_cases_written_tightly_fail_on_the_wrong_results(tmp_path):
    # the control: listing revenue among the columns, and a tolerance below the value, catch both
    state = write_state(tmp_path, _cases(fixed=True))
    r, plan_file = _plan(state)
    assert r.rc == 0, r.stdout
    out, run, gate = _run_and_gate(state, plan_file)
    assert json.loads(run.stdout)["exit_code"] == 0, run.stdout
    verdicts = {cid: json.loads((cases_view(out) / cid / "verdict.json").read_text())
                for cid in ("c-00000001", "c-00000002", "c-00000003")}
    assert {cid: v["verdict"] for cid, v in verdicts.items()} == {
        "c-00000001": "pass", "c-00000002": "fail", "c-00000003": "fail"}
    assert verdicts["c-00000003"]["layers"]["execution"]["diff"]["summary"] == "expected 0.5, got 0"
    assert gate.rc == 1, gate.stdout
    assert "2 gating failure(s)" in gate.stdout, gate.stdout


def formatted_reply(req) -> Reply:
    """The number as formatted text, then as null."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    price = "1,234.50" if "Revenue" in (req.json or {}).get("message", "") else None
    return Reply(200, {"answer": "here", "route": "quotes", "quote": {"price": price}})


def test_a_number_returned_as_formatted_text_or_null_fails_in_words_a_reader_can_act_on(tmp_path):
    # before: `expected 1234.5, got 1,234.50` (text and number looked alike) and `expected 17, got None`
    state = write_state(tmp_path, {
        "c-00000001": case_yaml("c-00000001", content="Revenue 2025?", expect="  route: quotes\n  result: {scalar: 1234.5}\n"),
        "c-00000002": case_yaml("c-00000002", content="Refunds?", expect="  route: quotes\n  result: {scalar: 17}\n")})
    r, plan_file = _plan(state)
    assert r.rc == 0, r.stdout
    out = state / "reports" / RUN_ID
    with FakeApp(formatted_reply) as app:
        run = run_runner("--plan", plan_file, "--out", out, env={"TRAVEL_BASE_URL": app.url})
    assert json.loads(run.stdout)["exit_code"] == 0, run.stdout
    summary = {cid: json.loads((cases_view(out) / cid / "verdict.json").read_text())["layers"]["execution"]
               for cid in ("c-00000001", "c-00000002")}
    assert summary["c-00000001"]["verdict"] == summary["c-00000002"]["verdict"] == "fail"
    assert summary["c-00000001"]["diff"]["summary"].startswith(
        'expected 1234.5, got "1,234.50" (text, read as a number only when it is a plain decimal: no thousands '
        'separators, currency or units'), summary["c-00000001"]
    assert summary["c-00000002"]["diff"]["summary"] == "expected 17, got null", summary["c-00000002"]
    assert run_script("gate", out).rc == 1
