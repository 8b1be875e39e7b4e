"""A new user's first suite that checks nothing real: every case asserts only what the answer must
not contain, and the adapter's <answer> path reads a field that is always there (`status: "ok"`)
instead of the nested reply. A broken app (it refuses everything) passed every case and the first
gate opened. The pipeline is driven the way the README says (convert_suite, make_plan, run_cases,
gate as subprocesses), against a real HTTP app on its own loopback port, from another working dir.
"""

from __future__ import annotations

import json

from fakeapp import Reply, run_as_a_user
from helpers import run_script, write_yaml
from helpers import user_case as case

ADAPTER = """adapter_version: 1
app: {name: convo}
access_level: black
invocation:
  mode: http
  base_url: ${CONVO_URL}
  endpoint: POST /v2/converse
  request_body: '{"prompt": "<user turn>"}'
  response_body: 'ANSWER_TEMPLATE'
  health_check: {method: GET, path: /healthz, expect_status: [200]}
  route_from_response: meta.intent
traces: {source: none}
"""
PROFILE = """profile_version: 1
stage: pre-stability
architecture: {kind: router_executor}
routing_contract: [billing, out_of_scope]
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
  tool_selection: {enabled: false, blocked_by: no traces}
  trajectory: {enabled: false, blocked_by: no traces}
"""
STATUS_FIELD = '{"status": "<answer>"}'
REPLY_TEXT = '{"data": {"reply": {"text": "<answer>"}}}'


ABSENT = "  answer: {must_not_contain: [cannot help, '/(?i)sorry/']}\n"


def broken(req) -> Reply:
    """Answers every question with a refusal, its text nested at data.reply.text."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"status": "ok", "data": {"reply": {"text": "I cannot help."}}, "meta": {"intent": "out_of_scope"}})


def pipeline(tmp_path, template: str, cases: dict[str, str]):
    state = tmp_path / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.replace("ANSWER_TEMPLATE", template))
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, text in cases.items():
        write_yaml(state / "datasets" / f"{cid}.yaml", text)
    return run_as_a_user(tmp_path, state, broken, "CONVO_URL")


def closing(gate) -> list[str]:
    return [x for x in gate.stdout.splitlines() if x.startswith("  gate closed:")]


def test_absence_only_suite_read_from_a_constant_field_closes_the_gate(tmp_path):
    run_dir, g = pipeline(tmp_path, STATUS_FIELD, {"c-00000001": case("c-00000001", "What is my invoice total?", ABSENT),
                                                   "c-00000002": case("c-00000002", "Where is my bill?", ABSENT)})
    summary = json.loads((run_dir / "results.json").read_text())["summary"]
    assert (summary["passes"], summary["failures"]) == (2, 0)   # "ok" holds neither refusal
    assert summary["passes_on_presence"] == {"passes": 2, "on_presence": 0, "first_absence_only": "c-00000001"}
    assert g.rc == 1, g.stdout
    (line,) = [x for x in closing(g) if "must_not_contain" in x]
    assert "all 2 passing case(s) passed only on must_not_contain" in line and "e.g. c-00000001" in line
    assert "response_body" in line and "must_contain" in line
    assert g.stdout.splitlines()[0].startswith(f"{run_dir.name}: FAIL")
    j = run_script("gate", run_dir, "--json")   # the same decision on every surface
    assert j.rc == 1 and any("passed only on must_not_contain" in x for x in j.json["reasons"])


def test_one_case_that_asserts_what_a_right_answer_holds_is_evidence(tmp_path):
    # The right path and a case that needs the answer's words: the broken app fails it (red for the
    # right reason, no absence line); and a correct app would pass it, so the rule is not noise.
    present = "  answer: {must_contain: ['120.00 USD']}\n"
    run_dir, g = pipeline(tmp_path, REPLY_TEXT, {"c-00000001": case("c-00000001", "What is my invoice total?", present),
                                                 "c-00000002": case("c-00000002", "Where is my bill?", ABSENT)})
    summary = json.loads((run_dir / "results.json").read_text())["summary"]
    assert (summary["passes"], summary["failures"]) == (0, 2)   # the refusal holds "cannot help" too
    assert "passes_on_presence" not in summary
    assert g.rc == 1 and not any("must_not_contain" in x for x in closing(g)), g.stdout


def test_a_passing_route_check_beside_absences_leaves_the_gate_open(tmp_path):
    route = "  route: out_of_scope\n" + ABSENT.replace("cannot help", "INV-")
    run_dir, g = pipeline(tmp_path, REPLY_TEXT, {"c-00000001": case("c-00000001", "Tell me a joke", route),
                                                 "c-00000002": case("c-00000002", "Write a poem",
                                                                    ABSENT.replace("cannot help", "INV-"))})
    summary = json.loads((run_dir / "results.json").read_text())["summary"]
    assert summary["passes_on_presence"] == {"passes": 2, "on_presence": 1, "first_absence_only": "c-00000002"}
    assert g.rc == 0, g.stdout
