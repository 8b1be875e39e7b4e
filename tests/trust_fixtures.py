"""Shared by tests/test_trust_judge.py and tests/test_trust_gate.py (issue 24 §A): a small claims
app with traces, its state dir as a user writes it, and the plan/run helpers."""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply, run_runner
from rundir_util import cases_view

TONE = """---
rubric_id: tone
version: 1
nodes:
  - id: polite
    criterion: The reply is polite.
---
# tone
"""


def go(state, plan, *args):
    path = state / "work" / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    return run_runner("--plan", path, "--out", out, "--progress", "never", *args), out


def read(out, cid, name="verdict.json"):
    return json.loads((cases_view(out) / cid / name).read_text())



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


