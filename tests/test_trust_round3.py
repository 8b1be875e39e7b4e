"""Issue 24 §A: the silent greens found on a new judged app, each reproduced end to end
(run_cases.py, gate.py, draft_report.py as subprocesses against a fake app and fake judges on
real loopback ports) and pinned here."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, case, make_plan, run_runner, state  # noqa: F401 (fixtures)
from judgefake import judge_block, openai_handler, write_calibration, write_rubric
from helpers import run_script

TONE = """---
rubric_id: tone
version: 1
nodes:
  - id: polite
    criterion: The reply is polite.
---
# tone
"""
ANSWER = "Refund of 20 USD issued; it arrives within 5 business days. Thank you for your patience."


@pytest.fixture
def judge_server():
    with FakeApp() as server:
        yield server


@pytest.fixture
def app():
    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(200, {"message": ANSWER})
    with FakeApp(handler) as a:
        yield a


def go(state, plan, *args):
    path = state / "work" / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    return run_runner("--plan", path, "--out", out, "--progress", "never", *args), out


def read(out, cid, name="verdict.json"):
    return json.loads((out / "cases" / cid / name).read_text())


def test_a_calibrated_pin_the_judge_never_answered_is_unscored_though_a_provisional_pin_passed(
        app, state, judge_server):
    """A1. Before: verdict pass, `layers.judged` unscored with `provisional: true` set by the other
    (provisional) pin, and the gate said PASS with "0 unscored"."""
    write_rubric(state)
    write_rubric(state, TONE, "tone.md")

    def decide(node, answer):
        if node == "polite":
            return {"verdict": "pass", "evidence": ["Thank you for your patience."], "reason": "polite"}
        return "Sure! The verdict is pass."  # the calibrated rubric's nodes never parse
    judge_server.handler = openai_handler(decide)
    config = {"provider": "openai", "model": "gpt-test", "base_url": judge_server.url + "/v1"}
    both = {"answer": {"must_contain": ["Refund"], "rubric": ["refund-eta-v1", "tone-v1"]}}
    plan = make_plan(state, [case("c-1", "refund?", expect=both)], app_url=app.url)
    plan["judge"] = judge_block(state, config)
    plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True}, config=config)
    r, out = go(state, plan)
    assert r.rc == 0, r.stdout + r.stderr
    v = read(out, "c-1")
    judged = v["layers"]["judged"]
    assert judged["verdict"] == "unscored" and judged["provisional"] is False  # a calibrated pin decides it
    assert [(x["pin"], x["provisional"], x["verdict"]) for x in judged["rubrics"]] == \
        [("refund-eta-v1", False, "unscored"), ("tone-v1", True, "pass")]
    assert judged["provisional_verdict"] == "pass"
    assert v["verdict"] == "unscored" and v["unscored_reason"].startswith("judged: refund-eta-v1: node(s) unknown")
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout
    assert "PASS" not in g.stdout.splitlines()[0] and "0 unscored" not in g.stdout
    closed = next(x for x in g.stdout.splitlines() if "gating case(s) asserted a check that never ran" in x)
    assert "c-1 (judged: refund-eta-v1: node(s) unknown" in closed
    assert "judged (calibrated, gating): 1 case(s): 1 unscored" in g.stdout
    assert "judged (provisional, never gating): 1 case(s): 1 pass" in g.stdout


def test_evidence_quoting_only_the_users_message_never_passes(state, judge_server):
    """A3. Before: a pass whose only evidence was a piece of the user's question was accepted."""
    write_rubric(state)

    def decide(node, answer):  # quotes the question, not the answer
        return {"verdict": "pass", "evidence": ["my refund of 20 USD"], "reason": "the amount is there"}
    judge_server.handler = openai_handler(decide)
    config = {"provider": "openai", "model": "gpt-test", "base_url": judge_server.url + "/v1"}

    def handler(req):
        return Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, {"message": "Refund noted."})
    with FakeApp(handler) as app:
        expect = {"answer": {"must_contain": ["Refund"], "rubric": ["refund-eta-v1"]}}
        plan = make_plan(state, [case("c-1", "When does my refund of 20 USD arrive?", expect=expect)],
                         app_url=app.url)
        plan["judge"] = judge_block(state, config)
        plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True}, config=config)
        r, out = go(state, plan)
    assert r.rc == 0, r.stdout + r.stderr
    nodes = read(out, "c-1", "judge.json")["rubrics"][0]["nodes"]
    assert [n["verdict"] for n in nodes] == ["unknown", "unknown"]
    assert "'my refund of 20 USD' is from the user's message, not the answer" in nodes[0]["reason"]
    v = read(out, "c-1")
    assert v["verdict"] == "unscored" and v["layers"]["judged"]["verdict"] == "unscored"
    g = run_script("gate", out)
    assert g.rc == 1 and "is from the user's message, not the answer" in g.stdout


def test_evidence_rule_per_source():
    """A3, the rule itself: a pass needs a quote from the answer; tool results and a reference-guided
    node's gold may back it; the user's message never does (a fail may quote it)."""
    from assay.judge.prompt import Material
    from assay.judge.verdict import checked_node
    m = Material(user_message="Pay claim CL-7 of 540 EUR?", answer="Claim CL-7 is approved.",
                 tool_results=[{"name": "lookup_claim", "result": {"amount": 540}}], gold=540)

    def check(verdict, evidence, reference_guided=False):
        return checked_node({"verdict": verdict, "evidence": evidence, "reason": "r"}, m, reference_guided)[0]
    assert check("pass", ["Claim CL-7 is approved"]) == "pass"
    assert check("pass", ["540 EUR"]) == "unknown"                       # only in the question
    assert check("pass", ["Claim CL-7 is approved", "540 EUR"]) == "unknown"
    assert check("pass", ['"amount": 540']) == "unknown"                 # tool results alone: not the answer
    assert check("pass", ["approved", '"amount": 540']) == "pass"        # the answer, backed by a tool result
    assert check("pass", ["approved", "540"], reference_guided=True) == "pass"
    assert check("pass", ["made up"]) == "unknown"
    assert check("fail", ["540 EUR"]) == "fail"                          # what was asked, and is missing
    assert check("fail", ["made up"]) == "unknown"


# ---------------------------------------------------------------- a small claims app with traces
CLAIMS_ADAPTER = """\
adapter_version: 1
app: {name: claims, repo_access: read-only}
access_level: black
invocation:
  mode: http
  base_url: ${CLAIMS_URL}
  auth: {type: none}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"reply": "<answer>"}'
  health_check: {method: GET, path: /health, expect_status: [200]}
  route_from_response: ROUTE_PATH
  timeout_s: 5
  max_concurrency: 2
traces:
  source: otlp-file
  location: ${CLAIMS_SPANS}
  convention: gen_ai
  correlation: traceparent-echo
  completeness: {quiescence_ms: 50, max_wait_s: 3}
TOOLS
environment: {kind: mocked, safe_to_attack: true}
"""
CLAIMS_TOOLS = """tools:
  - {name: lookup_claim, side_effects: safe-live}
  - {name: approve_payout, side_effects: needs-mock}"""
CLAIMS_PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: router_executor}
oos_handling: route:none
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
  trajectory: {enabled: true}
  tool_selection: {enabled: true}
  authz: {enabled: true}
  execution: {enabled: false, blocked_by: no oracle}
  multi_turn: {enabled: false, blocked_by: not declared}
  state: {enabled: false, blocked_by: reserved}
"""
CLAIMS_HEAD = ("unit: claims\nsplit: [smoke, full]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n"
               "review: {status: accepted, by: Ana Reviewer}\n")


def claims_case(cid: str, message: str, expect: str) -> str:
    return f"id: {cid}\n{CLAIMS_HEAD}input:\n  messages:\n    - {{role: user, content: {message}}}\nexpect:\n{expect}"


CLAIMS_CASES = {
    "c-status01": claims_case("c-status01", "Status of claim CL-7?",
                              "  route: claims\n  answer: {must_contain: [CL-7]}\n"
                              "  authz: {forbidden_tools: [FORBIDDEN]}\n"),
    "c-lookup01": claims_case("c-lookup01", "Look up claim CL-8",
                              "  route: claims\n  tools: {subset: [lookup_claim]}\n"),
}


def claims_state(root, *, route_path="agent", tools=CLAIMS_TOOLS, forbidden="approve_payout", cases=None):
    from helpers import write_yaml
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", CLAIMS_ADAPTER.replace("ROUTE_PATH", route_path).replace("TOOLS", tools))
    write_yaml(state / "profile.yaml", CLAIMS_PROFILE)
    for cid, text in (cases or CLAIMS_CASES).items():
        write_yaml(state / "datasets" / f"{cid}.yaml", text.replace("FORBIDDEN", forbidden))
    (state / "reports").mkdir(parents=True, exist_ok=True)
    return state


def claims_plan(state, *extra, run_id="smoke-20261201T000000Z"):
    from fixtures_authoring import run_inproc
    work = state / "work"
    r = run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout
    out = work / "plan.json"
    r = run_inproc("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", out,
                   "--run-id", run_id, *extra)
    return r, out


class ClaimsApp:
    """Answers every message from the claims agent, which calls lookup_claim and then `payout_tool`
    (the app's real name for the payout tool); its spans continue the runner's traceparent."""

    def __init__(self, span_file, payout_tool="approve_payout", agent="claims"):
        from otlp_util import agent_spans, new_trace_id, parse_traceparent, write_spans

        def handle(req):
            if req.method == "GET":
                return Reply(200, {"ok": True})
            parsed = parse_traceparent(req.headers.get("traceparent") or req.headers.get("Traceparent"))
            trace_id, parent = parsed if parsed else (new_trace_id(), None)
            tools = [("lookup_claim", {"claim": "CL-7"}, {"claim": "CL-7", "status": "open"})]
            if "Status" in str((req.json or {}).get("message")):
                tools.append((payout_tool, {"claim": "CL-7"}, {"paid": True}))
            write_spans(span_file, agent_spans(trace_id, agent, tools, parent_span_id=parent))
            return Reply(200, {"reply": "Claim CL-7 is open.", "meta": {"agent": agent}})
        self.app = FakeApp(handle)

    def __enter__(self):
        return self.app.__enter__()

    def __exit__(self, *exc):
        return self.app.__exit__(*exc)


def run_claims(state, plan_file, span_file, app_url, *args):
    out = state / "reports" / json.loads(plan_file.read_text())["run_id"]
    r = run_runner("--plan", plan_file, "--out", out, "--progress", "never", *args,
                   env={"CLAIMS_URL": app_url, "CLAIMS_SPANS": str(span_file)})
    return r, out


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
    # with no tools list nothing can be checked: make_plan plans it and says so (a WARN, not silence)
    state2 = claims_state(tmp_path / "no-tools", forbidden="aprove_payout", tools="tools: []")
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
    assert lines[0].endswith(": FAIL")
    assert lines[1].startswith("  PLANNED WITH --allow-invalid: make_plan.py overrode 1 linter ERROR(s) (unknown_tool)")
    assert lines[2].strip().startswith("datasets/c-status01.yaml:14: c-status01 [unknown_tool]")
    assert any(x.startswith("  gate closed: the plan was made with --allow-invalid over 1 linter ERROR(s)")
               for x in lines)
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
    assert ("gate closed: route_from_response 'agent' was absent in all 2 answer(s) read for routing (a hollow "
            "route source; 2 fell back to the trace)") in g.stdout


# ---------------------------------------------------------------- calibration bound to what was calibrated
TONE_ADAPTER = """\
adapter_version: 1
app: {name: claims-tone, repo_access: read-only}
access_level: black
invocation:
  mode: http
  base_url: ${TONE_URL}
  auth: {type: none}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"message": "<answer>"}'
  health_check: {method: GET, path: /health, expect_status: [200]}
  timeout_s: 5
traces: {source: none}
tools: []
environment: {kind: mocked, safe_to_attack: true}
"""
TONE_PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: single_llm}
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: false, blocked_by: single agent}
  trajectory: {enabled: false, blocked_by: no traces}
  tool_selection: {enabled: false, blocked_by: no traces}
  execution: {enabled: false, blocked_by: no oracle}
  authz: {enabled: false, blocked_by: no identities}
  multi_turn: {enabled: false, blocked_by: not declared}
  state: {enabled: false, blocked_by: reserved}
"""
# a judge that reads the answer (fails an insult), and a lazy one that passes everything
STRICT_JUDGE = """\
import json, re, sys
prompt = sys.stdin.read()
answer = re.search(r"<untrusted-answer-[0-9a-f]+>\\n(.*?)\\n</untrusted-answer-", prompt, re.S).group(1)
bad = "idiot" in answer
print(json.dumps({"verdict": "fail" if bad else "pass", "evidence": ["idiot" if bad else answer[:12]], "reason": "r"}))
"""
LAZY_JUDGE = STRICT_JUDGE.replace('bad = "idiot" in answer', "bad = False")


def tone_state(root):
    import sys
    from helpers import write_yaml
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", TONE_ADAPTER)
    write_yaml(state / "profile.yaml", TONE_PROFILE)
    write_yaml(state / "rubrics" / "tone.md", TONE)
    write_yaml(state / "strict_judge.py", STRICT_JUDGE)
    write_yaml(state / "lazy_judge.py", LAZY_JUDGE)
    write_yaml(state / "judge" / "judge.yaml", f"provider: command\ncommand: [{json.dumps(sys.executable)}, strict_judge.py]\n")
    for cid, msg in (("c-rude0001", "rude"), ("c-kind0001", "kind")):
        write_yaml(state / "datasets" / f"{cid}.yaml",
                   claims_case(cid, msg, "  answer: {must_contain: [CL-7], rubric: [tone-v1]}\n").replace(
                       "unit: claims", "unit: tone"))
    (state / "reports").mkdir(parents=True, exist_ok=True)
    # 120 labelled pairs on which the strict judge agreed with people: calibrated
    rows = [{"case_id": f"f{i}", "rubric_id": "tone-v1", "node_id": "polite", "label": "fail", "judge_label": "fail",
             "reviewer": "ana", "ts": "2026-12-01T00:00:00Z"} for i in range(20)]
    rows += [dict(rows[0], case_id=f"p{i}", label="pass", judge_label="pass") for i in range(100)]
    (state / "annotations").mkdir()
    (state / "annotations" / "batch1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = run_script("score_agreement", state / "annotations", "--write", state / "judge" / "calibration.json")
    assert r.rc == 0 and r.json["status"] == "calibrated", r.stdout
    return state


def tone_run(state, app, run_id):
    r, plan_file = claims_plan(state, "--judge", run_id=run_id)
    assert r.rc == 0, r.stdout
    out = state / "reports" / run_id
    rr = run_runner("--plan", plan_file, "--out", out, "--progress", "never", env={"TONE_URL": app.url})
    assert rr.rc == 0, (rr.stdout, rr.stderr)
    return r, out


def test_a_calibration_is_bound_to_the_judge_and_the_rubric_text_it_was_measured_on(tmp_path):
    """A2. Before: after switching judge.yaml to a lazy judge the rubric stayed "calibrated, gating" and a
    planted rude reply passed; editing a criterion without a new version kept it calibrated too."""
    import sys
    from helpers import write_yaml
    state = tone_state(tmp_path)

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        rude = "rude" in str((req.json or {}).get("message"))
        return Reply(200, {"message": "Claim CL-7 is open, idiot." if rude else "Claim CL-7 is open. Thank you!"})
    with FakeApp(handler) as app:
        _, out = tone_run(state, app, "smoke-20261201T010000Z")
        assert read(out, "c-rude0001")["layers"]["judged"]["verdict"] == "fail"  # calibrated, gating
        g = run_script("gate", out)
        assert g.rc == 1 and "c-rude0001 (judged)" in g.stdout, g.stdout

        # 1. the judge is swapped for a lazy one: the calibration was not of this judge
        write_yaml(state / "judge" / "judge.yaml",
                   f"provider: command\ncommand: [{json.dumps(sys.executable)}, lazy_judge.py]\n")
        plan_r, out = tone_run(state, app, "smoke-20261201T020000Z")
        judged = read(out, "c-rude0001")["layers"]["judged"]
        assert judged["provisional"] is True and judged["provisional_verdict"] == "pass"  # before: a gating pass
        assert "judge: tone-v1 provisional again: calibrated with command" in plan_r.stderr, plan_r.stderr
        why = judged["rubrics"][0]["why_provisional"]
        assert why.startswith("tone-v1 provisional again: calibrated with command ") and "strict_judge.py" in why
        assert "the judge is now command " in why and "lazy_judge.py" in why
        g = run_script("gate", out)
        assert "judged (calibrated, gating)" not in g.stdout
        assert "judged (provisional, never gating): 2 case(s): 2 pass -- tone-v1 provisional again: calibrated" \
            in g.stdout, g.stdout

        # 2. the calibrated judge's command, its script made lazy in place: same argv, other content
        write_yaml(state / "judge" / "judge.yaml",
                   f"provider: command\ncommand: [{json.dumps(sys.executable)}, strict_judge.py]\n")
        (state / "strict_judge.py").write_text(LAZY_JUDGE)
        _, out = tone_run(state, app, "smoke-20261201T030000Z")
        why = read(out, "c-rude0001")["layers"]["judged"]["rubrics"][0]["why_provisional"]
        assert "(the content of strict_judge.py)" in why, why
        (state / "strict_judge.py").write_text(STRICT_JUDGE)

        # 3. back to the calibrated judge, but a criterion edited without a new version
        write_yaml(state / "rubrics" / "tone.md", TONE.replace("The reply is polite.", "The reply is short."))
        _, out = tone_run(state, app, "smoke-20261201T040000Z")
        why = read(out, "c-rude0001")["layers"]["judged"]["rubrics"][0]["why_provisional"]
        assert why == ("tone-v1 provisional again: rubrics/tone.md changed since it was calibrated (edited node(s) "
                       "polite) without a new version: bump `version` (a new pin) and label it")

        # 4. the text restored: calibrated and gating again
        write_yaml(state / "rubrics" / "tone.md", TONE)
        _, out = tone_run(state, app, "smoke-20261201T050000Z")
        assert read(out, "c-rude0001")["layers"]["judged"]["provisional"] is False

        # 5. a sidecar written before the binding (no judge identity) cannot show it applies
        side = json.loads((state / "judge" / "calibration.json").read_text())
        del side["judge"]
        (state / "judge" / "calibration.json").write_text(json.dumps(side))
        _, out = tone_run(state, app, "smoke-20261201T060000Z")
        why = read(out, "c-rude0001")["layers"]["judged"]["rubrics"][0]["why_provisional"]
        assert "records no judge identity" in why and "score_agreement.py <annotations> --write" in why
