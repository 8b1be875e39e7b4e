"""Issue 24 §A, the gate's trust: a misspelt tool (A4), a called tool the adapter does not declare
(A5), --allow-invalid (A6), a holdout past its look budget (A7), a route path no answer holds (A8;
the shard gate is pinned in test_newuser_round2). A small claims app with real OTLP spans on a real
port; each test reproduces a green gate the issue found and now closes."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, case, make_plan, run_runner, state  # noqa: F401 (fixtures)
from helpers import run_script
from trust_fixtures import ClaimsApp, claims_case, claims_plan, claims_state, go, read, run_claims

def test_a_misspelt_forbidden_tool_is_an_error_make_plan_refuses(tmp_path):
    """A4. Before: `validate_cases` warned, make_plan printed only the case count, the gate said PASS."""
    state = claims_state(tmp_path, forbidden="aprove_payout")
    r, plan_file = claims_plan(state)
    assert r.rc == 2, r.stdout
    assert not plan_file.exists()
    err = r.json["error"]
    assert "datasets/c-status01.yaml:" in err and "c-status01 [unknown_tool]" in err
    assert "expect.authz.forbidden_tools names 'aprove_payout'" in err and "did you mean 'approve_payout'?" in err
    line = next(x for x in err.splitlines() if "[unknown_tool]" in x)
    assert line.strip().startswith("datasets/c-status01.yaml:14:"), line  # the authz line

def test_a_forbidden_tool_with_no_tools_list_to_hold_it_to_is_an_error_too(tmp_path):
    """Before: with no tools list, `validate_cases` warned once (tools_not_declared), make_plan planned, the
    app called approve_payout (or a renamed approve_claim_payout), `forbidden_tools: [aprove_payout]` passed
    and the gate said PASS. A forbidden name is the one a wrong spelling can never make fail: an ERROR."""
    state = claims_state(tmp_path, forbidden="aprove_payout", tools="tools: []")
    r, plan_file = claims_plan(state)
    assert r.rc == 2 and not plan_file.exists(), r.stdout
    err = r.json["error"]
    line = next(x for x in err.splitlines() if "[forbidden_tool_undeclared]" in x)
    assert line.strip().startswith("datasets/c-status01.yaml:14: c-status01 [forbidden_tool_undeclared] "
                                   "expect.authz.forbidden_tools forbids 'aprove_payout', but the adapter declares "
                                   "no tools list"), line
    assert "adapter.yaml `tools`" in line
    assert [e["code"] for e in r.json["errors"]] == ["forbidden_tool_undeclared"]  # c-lookup01's subset: not an error
    # a required name alone still plans: misspelt, it fails loudly on its own (the suite's one WARN says so)
    lookup_only = {"c-lookup01": claims_case("c-lookup01", "Look up claim CL-8",
                                             "  route: claims\n  tools: {subset: [lookup_claim]}\n")}
    state2 = claims_state(tmp_path / "required", tools="tools: []", cases=lookup_only)
    r, plan_file = claims_plan(state2)
    assert r.rc == 0, r.stdout
    assert "tools_not_declared" in r.stderr and "declares no tools list" in r.stderr, r.stderr


def test_a_called_tool_the_adapter_does_not_declare_is_named_and_holds_the_forbidden_check(tmp_path):
    """A5. Before: the app shipped approve_payout as approve_claim_payout, the forbidden check passed
    and nothing warned anywhere."""
    state = claims_state(tmp_path)
    r, plan_file = claims_plan(state)
    assert r.rc == 0, r.stdout
    spans = tmp_path / "spans.jsonl"
    with ClaimsApp(spans, payout_tool="approve_claim_payout") as app:
        r, out = run_claims(state, plan_file, spans, app.url)
    assert r.rc == 0, (r.stdout, r.stderr)
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout  # before: PASS
    v = read(out, "c-status01")
    assert v["undeclared_tools"] == ["approve_claim_payout"]
    authz = v["layers"]["authz"]
    assert authz["verdict"] == "unscored" and authz["undeclared_tools"] == ["approve_claim_payout"]
    assert "does not declare: approve_claim_payout" in authz["reason"]
    assert v["verdict"] == "unscored"
    assert read(out, "c-lookup01")["undeclared_tools"] is None  # it called only declared tools
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["undeclared_tools"] == {"tools": {"approve_claim_payout": 1}, "cases": 1, "checked_cases": 1}
    assert run_runner("--verify", out).rc == 0  # --verify recounts the new summary block
    line = next(x for x in g.stdout.splitlines() if "called tool(s)" in x and "gate closed" in x)
    assert "approve_claim_payout x1" in line and "adapter.yaml tools" in line
    md = run_script("draft_report", out, "-o", "-")
    assert md.rc == 0 and "approve\\_claim\\_payout x1" in md.stdout, md.stdout


def test_a_plan_made_with_allow_invalid_says_so_first_and_never_opens(tmp_path):
    """A6. Before: --allow-invalid left no trace in the gate or the report, and the gate said PASS."""
    state = claims_state(tmp_path, forbidden="aprove_payout")
    r, plan_file = claims_plan(state, "--allow-invalid")
    assert r.rc == 0, r.stdout
    spans = tmp_path / "spans.jsonl"
    with ClaimsApp(spans) as app:  # the app calls approve_payout: the misspelt deny-list cannot see it
        r, out = run_claims(state, plan_file, spans, app.url)
    assert r.rc == 0, (r.stdout, r.stderr)
    assert read(out, "c-status01")["layers"]["authz"]["verdict"] == "pass"  # what the linter warned of
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout
    lines = g.stdout.splitlines()
    assert lines[0].split(" -- closed: ")[0].endswith(": FAIL")
    assert lines[1].startswith("  PLANNED WITH --allow-invalid: make_plan.py overrode 1 linter ERROR(s) (unknown_tool)")
    assert lines[2].strip().startswith("datasets/c-status01.yaml:14: c-status01 [unknown_tool]")
    # the reason itself names each case and code (the viewer, api.gate and JSON show reasons, not these lines)
    assert any(x.startswith("  gate closed: the plan was made with --allow-invalid over 1 linter ERROR(s) "
                            "(unknown_tool): c-status01 [unknown_tool]; fix them") for x in lines), g.stdout
    md = run_script("draft_report", out, "-o", "-")
    assert md.rc == 0 and "> PLANNED WITH --allow-invalid: make\\_plan.py overrode 1 linter ERROR(s)" in md.stdout, md.stdout[:900]
    assert "> - datasets/c-status01.yaml:14: c-status01 \\[unknown\\_tool\\]" in md.stdout, md.stdout


def test_a_holdout_run_past_its_look_budget_closes_the_decision_gate(state):
    """A7. Before: looks 6 and 7 ran and the gate said PASS."""
    ledger = state / "datasets" / "holdout-looks.jsonl"

    def holdout_run(run_id):
        plan = make_plan(state, [case("c-hold0001", "hello", split=("holdout",))], app_url=app.url,
                         mode="holdout", selecting_split="holdout", run_id=run_id)
        r, out = go(state, plan)
        assert r.rc == 0, r.stdout + r.stderr
        return out
    with FakeApp() as app:  # echoes the message: the case passes
        within = holdout_run("holdout-20261201T000001Z")
        ledger.write_text(ledger.read_text() + "".join(
            json.dumps({"run_id": f"holdout-20261201T00000{i}Z", "date": "2026-12-01T00:00:00Z", "mode": "holdout",
                        "reason": "earlier look"}) + "\n" for i in range(2, 6)))
        past = holdout_run("holdout-20261201T000006Z")
    assert len(ledger.read_text().splitlines()) == 6
    g = run_script("gate", within)
    assert g.rc == 0, g.stdout  # look 1 of 5
    g = run_script("gate", past)
    assert g.rc == 1, g.stdout
    line = next(x for x in g.stdout.splitlines() if "gate closed: holdout look" in x)
    assert "holdout look 6 of a budget of 5 (6 look(s) in datasets/holdout-looks.jsonl)" in line
    assert f"holdout.py reseal {state}" in line
    # a holdout run dir whose look the ledger does not hold cannot show it is within budget
    ledger.write_text("")
    g = run_script("gate", within)
    assert g.rc == 1 and "is not in the ledger datasets/holdout-looks.jsonl" in g.stdout, g.stdout


ROUTE_CASES = {
    "c-route001": claims_case("c-route001", "Status of claim CL-7?", "  route: claims\n  answer: {must_contain: [CL-7]}\n"),
    "c-route002": claims_case("c-route002", "Look up claim CL-8", "  route: claims\n  tools: {subset: [lookup_claim]}\n"),
}


@pytest.mark.parametrize("route_path", ["agent", "meta.agent"])
def test_a_route_path_no_answer_holds_is_a_hollow_source_not_a_fallback(tmp_path, route_path):
    """A8. Before: a typo'd route_from_response silently fell back to the trace's agent name and the
    gate said PASS."""
    state = claims_state(tmp_path, route_path=route_path, cases=ROUTE_CASES)
    r, plan_file = claims_plan(state)
    assert r.rc == 0, r.stdout
    spans = tmp_path / "spans.jsonl"
    with ClaimsApp(spans, payout_tool="lookup_claim") as app:
        r, out = run_claims(state, plan_file, spans, app.url)
    assert r.rc == 0, (r.stdout, r.stderr)
    routing = read(out, "c-route001")["layers"]["routing"]
    g = run_script("gate", out)
    if route_path == "meta.agent":  # the control: the right path, read from the answer
        assert routing["observed_from"] == "response" and routing["response_path"] == {"path": "meta.agent",
                                                                                       "found": True}
        assert g.rc == 0, g.stdout
        return
    assert g.rc == 1, g.stdout  # before: PASS, the route silently read from the trace
    assert routing["verdict"] == "pass" and routing["observed_from"] == "trace"  # the case says where it came from
    assert routing["response_path"] == {"path": "agent", "found": False}
    assert routing["note"] == ("route_from_response 'agent' is absent in this response; the route was read from "
                               "the trace instead")
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["route_from_response"] == {"path": "agent", "read": 2, "found": 0, "fell_back": 2}
    assert run_runner("--verify", out).rc == 0
    assert ("gate closed: route_from_response 'agent' was absent in all 2 answer(s) read for routing (a hollow "
            "route source; 2 fell back to the trace)") in g.stdout


# ---------------------------------------------------------------- calibration bound to what was calibrated


def test_the_gate_info_lines_when_only_some_answers_lack_the_route_or_no_check_rests_on_a_tool():
    """A5/A8 per case: a partial miss is said on an info line and does not close the gate."""
    from assay.report.gate_trust import route_source_line, route_source_reason, undeclared_tools
    partial = {"route_from_response": {"path": "meta.agent", "read": 5, "found": 3, "fell_back": 2}}
    assert route_source_reason(partial) is None
    assert route_source_line(partial) == ("  routing: route_from_response 'meta.agent' absent in 2 of 5 answer(s); "
                                          "2 routed from the trace or status map instead "
                                          "(verdict.json layers.routing.note)")
    assert route_source_reason({"route_from_response": {"path": "x", "read": 3, "found": 0, "fell_back": 0}})
    info, reason = undeclared_tools({"undeclared_tools": {"tools": {"new_tool": 2}, "cases": 2, "checked_cases": 0}})
    assert reason is None and "new_tool x2" in info[0]
