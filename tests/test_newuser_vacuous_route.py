"""A new user's ambiguous case that accepts every route: `route: orders` with `route_acceptable:
[returns, smalltalk]`, and the profile's routing_contract is exactly those three. Whatever the router
picks passes, so against an app that routes everything to smalltalk the case passed and the gate
opened. make_plan now refuses the suite, naming the file, line, key, case id and the fix; a case
that leaves one route out still plans. Scripts run as subprocesses, as a user runs them.
"""

from __future__ import annotations

from helpers import run_script, write_yaml

ADAPTER = """adapter_version: 1
app: {name: orderbot}
access_level: black
invocation:
  mode: http
  base_url: ${ORDERBOT_URL}
  endpoint: POST /v1/message
  request_body: '{"text": "<user turn>"}'
  response_body: '{"reply": "<answer>"}'
  route_from_response: intent
traces: {source: none}
"""
PROFILE = """profile_version: 1
stage: stable
architecture: {kind: router_executor}
routing_contract: [orders, returns, smalltalk]
capability_matrix:
  answer_quality: {enabled: true}
"""
CASE = """id: c-00000001
split: [full, smoke]
category: ambiguous
test_type: MFT
template_id: null
input:
  messages:
    - {role: user, content: 'hmm, about my stuff'}
expect:
  route: orders
  route_acceptable: ACCEPTABLE
"""


def plan(tmp_path, acceptable: str):
    state = tmp_path / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "c-00000001.yaml", CASE.replace("ACCEPTABLE", acceptable))
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work, cwd=tmp_path)
    assert r.rc == 0, r.stdout + r.stderr
    return run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                      "-o", work / "plan.json", cwd=tmp_path)


def test_route_acceptable_naming_every_declared_route_is_refused(tmp_path):
    r = plan(tmp_path, "[returns, smalltalk]")
    assert r.rc == 2, r.stdout + r.stderr
    (err,) = r.json["errors"]
    assert (err["code"], err["case_id"], err["key"]) == ("vacuous_route", "c-00000001", "expect.route_acceptable")
    assert err["where"] == "datasets/c-00000001.yaml:11"
    assert "orders, returns, smalltalk" in err["message"] and "keep in route_acceptable only" in err["message"]


def test_a_route_left_out_still_plans(tmp_path):
    r = plan(tmp_path, "[returns]")
    assert r.rc == 0, r.stdout + r.stderr
