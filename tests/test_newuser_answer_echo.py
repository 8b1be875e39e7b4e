"""Two more ways a text check reads something other than the app's reply (the sibling of
test_newuser_answer_object.py, driven the same way: each script a subprocess, a real HTTP app).

1. The adapter's `<answer>` path is a field where the app echoes the question
   (`response_body: '{"question": "<answer>"}'`): a must_contain copied from the question ("ORD-7" from
   "Where is my order ORD-7?") passed on the user's own words and the gate read PASS.
2. No `response_body`: the whole body is the answer, and when that body is a JSON object the text checks
   were scored on its JSON (a key name passed them), the answer_not_text mistake through another key.
"""

from __future__ import annotations

import json

from test_newuser_answer_object import ADAPTER, PROFILE, case, closed_lines, pipeline, record

ECHO_ADAPTER = ADAPTER.replace("""'{"reply": "<answer>"}'""", """'{"question": "<answer>"}'""")
NO_BODY_ADAPTER = ADAPTER.replace("""  response_body: '{"reply": "<answer>"}'\n""", "")
ECHO_CASES = {
    "c-00000011": case("c-00000011", "Where is my order ORD-7?", "  answer: {must_contain: [ORD-7]}\n"),
    "c-00000012": case("c-00000012", "Cancel   order ORD-9 please",
                       "  answer: {must_contain: [ORD-9, cancelled]}\n"),
}


CONVERSATION = ("id: c-00000013\nsplit: [full, smoke]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n"
                "input:\n  turns:\n    - user: Is ORD-5 late?\n      expect: {answer: {must_contain: [ORD-5]}}\n"
                "    - user: Thanks\nexpect:\n  answer: {must_contain: [depot]}\n")


def echo_app(req):
    from fakeapp import Reply
    if req.method == "GET":
        return Reply(200, {"ok": True})
    message = (req.json or {}).get("message", "")
    # the app echoes the question beside its reply (whitespace collapsed, as some apps do)
    return Reply(200, {"question": " ".join(message.split()), "reply": "It left the depot."})


def test_a_must_contain_found_in_the_echoed_question_is_not_scored_and_the_gate_closes(tmp_path):
    run_dir, g = pipeline(tmp_path, ECHO_ADAPTER, ECHO_CASES, echo_app)
    v = record(run_dir, "c-00000011")
    assert v["verdict"] == "unscored", v
    (check,) = v["layers"]["answer"]["checks"]
    assert check["status"] == "unscorable" and "is the user's message word for word" in check["reason"], check
    assert "(question)" in check["reason"], check
    v = record(run_dir, "c-00000012")   # the entry the question does not hold is scored, and fails
    assert v["verdict"] == "fail", v
    assert [c["status"] for c in v["layers"]["answer"]["checks"]] == ["unscorable", "fail"], v
    block = json.loads((run_dir / "results.json").read_text())["summary"]["answer_echo"]
    assert (block["cases"], block["path"], block["first_case"], block["entry"]) == \
        (2, "question", "c-00000011", "ORD-7"), block
    assert g.rc == 1, g.stdout
    (line,) = [x for x in closed_lines(g.stdout) if "must_contain on an answer that is the user's message" in x]
    assert line.startswith("  gate closed: 2 gating case(s) asserted must_contain on an answer that is the "
                           "user's message word for word"), line
    assert "response_body <answer> path (question)" in line and "first: c-00000011" in line, line
    assert "run_cases.py --verify" not in g.stdout


def test_a_conversation_turn_that_reads_its_question_back_is_not_scored(tmp_path):
    adapter = ECHO_ADAPTER.replace("  health_check:", "  conversation: {style: client-id}\n  health_check:") \
        .replace('"<user turn>"}', '"<user turn>", "session_id": "<uuid>"}')
    profile = PROFILE + "  multi_turn: {enabled: true}\n"
    run_dir, g = pipeline(tmp_path, adapter, {"c-00000013": CONVERSATION}, echo_app, profile)
    v = record(run_dir, "c-00000013")   # the last turn's "depot" is scored on "Thanks" read back, and fails
    assert v["verdict"] == "fail", v
    block = json.loads((run_dir / "results.json").read_text())["summary"]["answer_echo"]
    assert (block["cases"], block["first_case"], block["entry"], block["read"]) == \
        (1, "c-00000013", "ORD-5", "Is ORD-5 late?"), block
    assert g.rc == 1 and [x for x in closed_lines(g.stdout) if "the user's message word for word" in x], g.stdout


def test_the_path_at_the_reply_scores_the_words(tmp_path):
    adapter = ADAPTER  # reply holds the app's words: ORD-7 is not in them, so the check fails (the pass was hollow)
    run_dir, g = pipeline(tmp_path, adapter, ECHO_CASES, echo_app)
    assert record(run_dir, "c-00000011")["verdict"] == "fail"
    assert "answer_echo" not in json.loads((run_dir / "results.json").read_text())["summary"]
    assert g.rc == 1 and not [x for x in closed_lines(g.stdout) if "word for word" in x], g.stdout


def flat_shop(req):
    from fakeapp import Reply
    if req.method == "GET":
        return Reply(200, {"ok": True})
    message = (req.json or {}).get("message", "")
    words = 'I said "forbidden" again.' if "Say" in message else "Your parcel left the depot."
    return Reply(200, {"reply": words, "lang": "en"})


def test_no_response_body_and_an_object_body_is_not_text(tmp_path):
    """The whole body is the answer; the body is {"reply": "...", "lang": "en"}: must_contain [en] passed on
    the language field, must_not_contain ['"forbidden"'] on escaped quotes."""
    run_dir, g = pipeline(tmp_path, NO_BODY_ADAPTER, app=flat_shop)
    v = record(run_dir, "c-00000001")
    assert v["verdict"] == "unscored", v
    (check,) = v["layers"]["answer"]["checks"]
    assert check["status"] == "unscorable" and "the whole response body" in check["reason"], check
    assert """declare response_body with "<answer>" at its text field (e.g. '{"reply": "<answer>"}')""" \
        in check["reason"], check
    block = json.loads((run_dir / "results.json").read_text())["summary"]["answer_not_text"]
    assert (block["cases"], block["path"], block["kind"], block["whole_body"]) == (3, None, "object", True), block
    assert g.rc == 1, g.stdout
    (line,) = [x for x in closed_lines(g.stdout) if "on an answer that is not text" in x]
    assert "declares no response_body, so the answer was the whole response body" in line, line
    assert """response_body '{"reply": "<answer>"}'""" in line, line
    assert "run_cases.py --verify" not in g.stdout


def test_no_response_body_and_a_plain_text_body_is_scored_as_text(tmp_path):
    from fakeapp import Reply

    def plain(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(200, "Your parcel left the depot.")
    cases = {"c-00000021": case("c-00000021", "Where is my parcel?", "  answer: {must_contain: [depot]}\n")}
    run_dir, g = pipeline(tmp_path, NO_BODY_ADAPTER, cases, plain)
    assert record(run_dir, "c-00000021")["verdict"] == "pass"
    assert g.rc == 0, g.stdout
