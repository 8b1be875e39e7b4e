"""A new user's app answers 200 with an error body for some questions: `{"answer": "", "error":
"upstream model timeout"}`. The case that hit it asserted only what the answer must not contain;
an empty answer holds nothing, so that check passed, the other cases passed on real words, and the
first gate opened over an app that failed a question. The pipeline is driven as the README says
(convert_suite, make_plan, run_cases, gate, each a subprocess from another directory) against a
real HTTP app on its own loopback port.
"""

from __future__ import annotations

import json

from fakeapp import Reply, run_as_a_user
from helpers import write_yaml
from helpers import user_case as case

ADAPTER = """adapter_version: 1
app: {name: shop}
access_level: black
invocation:
  mode: http
  base_url: ${SHOP_URL}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"answer": "<answer>"}'
  health_check: {method: GET, path: /healthz, expect_status: [200]}
  route_from_response: route
traces: {source: none}
"""
PROFILE = """profile_version: 1
stage: stable
architecture: {kind: router_executor}
routing_contract: [orders, policy, out_of_scope]
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
  tool_selection: {enabled: false, blocked_by: no traces}
  trajectory: {enabled: false, blocked_by: no traces}
"""


CASES = {
    "c-00000001": case("c-00000001", "Where is my order?",
                       "  route: orders\n  answer: {must_contain: [shipped]}\n"),
    "c-00000002": case("c-00000002", "Tell me about shipping",
                       "  answer: {must_not_contain: ['/(?i)internal error/']}\n"),
}


def shop(answer_when_broken: str):
    def handler(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        message = (req.json or {}).get("message", "")
        if "shipping" in message:      # the app's error path: 200, an error, an empty answer field
            return Reply(200, {"answer": answer_when_broken, "error": "upstream model timeout"})
        return Reply(200, {"route": "orders", "answer": "Your order has shipped."})
    return handler


def pipeline(tmp_path, answer_when_broken: str):
    state = tmp_path / "shop" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, text in CASES.items():
        write_yaml(state / "datasets" / f"{cid}.yaml", text)
    return run_as_a_user(tmp_path, state, shop(answer_when_broken), "SHOP_URL")


def record(run_dir, cid: str) -> dict:
    for line in (run_dir / "cases.jsonl").read_text().splitlines():
        doc = json.loads(line)
        if doc["case_id"] == cid:
            return doc["verdict"]
    raise AssertionError(cid)


def test_an_error_body_with_an_empty_answer_is_no_pass_for_an_absence_check(tmp_path):
    run_dir, g = pipeline(tmp_path, "")
    v = record(run_dir, "c-00000002")
    assert v["verdict"] == "unscored", v
    (check,) = v["layers"]["answer"]["checks"]
    assert check["status"] == "unscorable" and "the answer is empty" in check["reason"]
    assert record(run_dir, "c-00000001")["verdict"] == "pass"
    assert g.rc == 1, g.stdout
    assert g.stdout.splitlines()[0].startswith(f"{run_dir.name}: FAIL")
    (line,) = [x for x in g.stdout.splitlines() if x.startswith("  gate closed:")]
    assert "c-00000002" in line and "the answer is empty" in line and "response.json" in line


def test_a_whitespace_answer_is_empty_too_and_a_worded_one_is_scored(tmp_path):
    run_dir, g = pipeline(tmp_path, "  \n")
    assert record(run_dir, "c-00000002")["verdict"] == "unscored" and g.rc == 1, g.stdout
    # An error path that says something is an answer: the absence check reads it (and passes).
    (tmp_path / "worded").mkdir()
    run_dir, g = pipeline(tmp_path / "worded", "Sorry, try again later.")
    assert record(run_dir, "c-00000002")["verdict"] == "pass"
    assert g.rc == 0, g.stdout
