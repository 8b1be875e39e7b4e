"""A newcomer's adapter reads an object as the answer: `response_body: '{"reply": "<answer>"}'` where
the app's `reply` is `{"text": "...", "lang": "en"}` (the right path was reply.text). The answer read
is then the object's JSON text, and must_contain / must_not_contain were scored on it: a check passed
on a key name ("text") or another field ("en"), and a must_not_contain the real text breaks passed
because JSON escaped the quotes in it; the gate read green. Driven as the README says (each script a
subprocess from another directory) against a real HTTP app on its own loopback port.
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
  response_body: '{"reply": "<answer>"}'
  health_check: {method: GET, path: /healthz, expect_status: [200]}
traces: {source: none}
"""
PROFILE = """profile_version: 1
stage: stable
architecture: {kind: single_llm}
capability_matrix:
  answer_quality: {enabled: true}
  tool_selection: {enabled: false, blocked_by: no traces}
  trajectory: {enabled: false, blocked_by: no traces}
"""


CASES = {
    # passes on the object's key name: the reply says nothing of the kind
    "c-00000001": case("c-00000001", "Where is my order?", "  answer: {must_contain: [text]}\n"),
    # the real text holds the quoted word; the JSON text escapes the quotes, so the absence "held"
    "c-00000002": case("c-00000002", "Say it", "  answer: {must_not_contain: ['\"forbidden\"']}\n"),
    # passes on another field of the object (lang), not on the reply's words
    "c-00000003": case("c-00000003", "Which language?", "  answer: {must_contain: [en]}\n"),
}


def shop(req) -> Reply:
    if req.method == "GET":
        return Reply(200, {"ok": True})
    message = (req.json or {}).get("message", "")
    words = 'I said "forbidden" again.' if "Say" in message else "Your parcel left the depot."
    return Reply(200, {"reply": {"text": words, "lang": "en"}})


def pipeline(tmp_path, adapter: str = ADAPTER, cases: dict[str, str] = CASES, app=None, profile: str = PROFILE):
    state = tmp_path / "shop" / ".assay"
    write_yaml(state / "adapter.yaml", adapter)
    write_yaml(state / "profile.yaml", profile)
    for cid, text in cases.items():
        write_yaml(state / "datasets" / f"{cid}.yaml", text)
    return run_as_a_user(tmp_path, state, app or shop, "SHOP_URL")


def record(run_dir, cid: str) -> dict:
    for line in (run_dir / "cases.jsonl").read_text().splitlines():
        doc = json.loads(line)
        if doc["case_id"] == cid:
            return doc["verdict"]
    raise AssertionError(cid)


def closed_lines(stdout: str) -> list[str]:
    return [x for x in stdout.splitlines() if x.startswith("  gate closed:")]


def test_text_checks_on_an_object_answer_are_not_scored_and_the_gate_says_why(tmp_path):
    run_dir, g = pipeline(tmp_path)
    for cid in CASES:   # none passes on the object's JSON: each text check is unscorable, the case unscored
        v = record(run_dir, cid)
        assert v["verdict"] == "unscored", (cid, v)
        (check,) = v["layers"]["answer"]["checks"]
        assert check["status"] == "unscorable" and "is an object (keys: text, lang), not text" in check["reason"]
        assert "(reply.text)" in check["reason"], check
        assert v["layers"]["answer"]["answer_not_text"]["path"] == "reply"
    block = json.loads((run_dir / "results.json").read_text())["summary"]["answer_not_text"]
    assert (block["cases"], block["path"], block["kind"], block["first_case"], block["text_field"]) == \
        (3, "reply", "object", "c-00000001", "text"), block
    assert g.rc == 1, g.stdout
    (line,) = [x for x in closed_lines(g.stdout) if "on an answer that is not text" in x]
    assert line.startswith("  gate closed: 3 gating case(s) asserted must_contain / must_not_contain on an answer "
                           "that is not text, so those checks were not scored: the adapter's response_body <answer> "
                           "path (reply) read an object (keys: text, lang) (first: c-00000001; "
                           'e.g. {"lang": "en", "text": "Your parcel left the depot."})'), line
    assert """(reply.text, e.g. response_body '{"reply": {"text": "<answer>"}}')""" in line, line
    assert "format.json_schema" in line
    assert "run_cases.py --verify" not in g.stdout   # the recount agrees with the block the runner wrote


def test_the_path_at_the_text_field_scores_the_words(tmp_path):
    """The fix the gate names: each check now reads the reply's words, and each fails (the passes were hollow)."""
    run_dir, g = pipeline(tmp_path, ADAPTER.replace("""'{"reply": "<answer>"}'""", """'{"reply": {"text": "<answer>"}}'"""))
    for cid in CASES:
        v = record(run_dir, cid)
        assert v["verdict"] == "fail" and "answer_not_text" not in v["layers"]["answer"], (cid, v)
    assert "answer_not_text" not in json.loads((run_dir / "results.json").read_text())["summary"]
    assert g.rc == 1 and "3 gating failure(s)" in g.stdout, g.stdout


def test_a_schema_beside_a_text_check_passes_the_case_and_the_gate_still_closes(tmp_path):
    """The schema is checked on the object's JSON (its purpose) and passes; the must_contain beside it was not
    scored, so the case passes on part of what it asserts: only the run's answer_not_text closes the gate."""
    cases = {"c-00000004": case("c-00000004", "Where is my order?",
                                "  answer: {must_contain: [text]}\n"
                                "  format: {json_schema: {type: object, required: [text]}}\n")}
    run_dir, g = pipeline(tmp_path, cases=cases)
    v = record(run_dir, "c-00000004")
    assert v["verdict"] == "pass" and v["layers"]["answer"]["partially_unscored"] is True, v
    assert [c["status"] for c in v["layers"]["answer"]["checks"]] == ["unscorable", "pass"]
    assert g.rc == 1, g.stdout
    (line,) = closed_lines(g.stdout)
    assert line.startswith("  gate closed: 1 gating case(s) asserted must_contain / must_not_contain on an answer "
                           "that is not text, so those checks were not scored"), line
    assert "(first: c-00000004; e.g. " in line, line
    assert g.stdout.splitlines()[0].endswith("-- closed: 1 gating case(s) asserted must_contain / must_not_contain on "
                                             "an answer that is not text, so those checks were not scored"), g.stdout

