"""A judge reply that did not stop of itself is never read as a verdict, and a typo'd judge model is
named as the model, not as base_url (run_cases.py and gate.py as subprocesses against a fake app and
fake Anthropic / OpenAI judges on real loopback ports).

Before: an Anthropic reply cut at max_tokens whose tool input had got as far as
`{"verdict": "pass", "evidence": [...]}` was read as a pass (a calibrated rubric's missing criterion
passed and the gate opened); `stop_reason: refusal` and OpenAI's `finish_reason: length` /
`content_filter` with a complete-looking body the same; a 404 `model: claude-judg-1` said to take
/v1 off base_url."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, app, state  # noqa: F401 (fixtures)
from judgefake import is_probe, prompt_parts, write_calibration, probe_reply
from test_judge_run import KEY, app_handler, go, judged_plan, rcase, read
from helpers import run_script

# the judge's reply for every node: a pass quoting the answer (so the evidence rule accepts it)
CUT = {"verdict": "pass", "evidence": ["20 USD"]}


def anthropic(stop_reason):
    def handler(req):
        body = req.json
        if is_probe(req):
            return probe_reply(body["model"], input_tokens=9)
        prompt_parts(body["messages"][0]["content"])
        return Reply(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                           "content": [{"type": "tool_use", "id": "toolu_1", "name": "record_verdict", "input": CUT}],
                           "stop_reason": stop_reason, "stop_sequence": None,
                           "usage": {"input_tokens": 100, "output_tokens": 1024}})
    return handler


def openai(finish_reason):
    def handler(req):
        body = req.json
        done = is_probe(req)
        content = "ok" if done else json.dumps(dict(CUT, reason="stated"))
        return Reply(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                                        "finish_reason": "stop" if done else finish_reason}],
                           "usage": {"prompt_tokens": 100, "completion_tokens": 1024, "total_tokens": 1124}})
    return handler


@pytest.mark.parametrize("provider,stop,words", [
    ("anthropic", "max_tokens", "cut off at the token limit (stop_reason max_tokens)"),
    ("anthropic", "refusal", "the model refused (stop_reason refusal)"),
    ("openai", "length", "cut off at the token limit (finish_reason length)"),
    ("openai", "content_filter", "content filter stopped the reply (finish_reason content_filter)"),
])
def test_a_cut_off_or_refused_reply_is_unknown_never_a_pass(app, state, provider, stop, words):
    app.handler = app_handler
    with FakeApp() as judge:
        judge.handler = anthropic(stop) if provider == "anthropic" else openai(stop)
        base = judge.url if provider == "anthropic" else judge.url + "/v1"
        config = {"provider": provider, "model": "judge-1", "base_url": base, "api_key": "${JUDGE_KEY}"}
        plan = judged_plan(state, app, config, cases=[rcase("c-2", "no-eta")])  # no arrival time: not a pass
        plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True},
                                                               config=plan["judge"]["config"])
        r, out = go(state, plan, {"JUDGE_KEY": KEY})
    assert r.rc == 0, r.stdout + r.stderr
    v = read(out, "c-2", "verdict.json")
    assert v["verdict"] == "unscored" and v["layers"]["judged"]["verdict"] == "unscored", v["layers"]["judged"]
    node = read(out, "c-2", "judge.json")["rubrics"][0]["nodes"][0]
    assert node["verdict"] == "unknown" and words in node["reason"], node["reason"]
    g = run_script("gate", out)
    assert g.rc == 1 and "c-2 (judged:" in g.stdout and words in g.stdout, g.stdout


@pytest.mark.parametrize("provider,body", [
    ("anthropic", {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-judg-1"}}),
    ("openai", {"error": {"message": "The model `claude-judg-1` does not exist or you do not have access to it.",
                          "type": "invalid_request_error", "param": None, "code": "model_not_found"}}),
])
def test_a_typo_in_the_judge_model_is_named_as_the_model_not_base_url(app, state, provider, body):
    with FakeApp() as judge:
        judge.handler = lambda req: Reply(404, body)
        base = judge.url if provider == "anthropic" else judge.url + "/v1"   # base_url is right
        plan = judged_plan(state, app, {"provider": provider, "model": "claude-judg-1", "base_url": base,
                                        "api_key": "${JUDGE_KEY}"})
        r, out = go(state, plan, {"JUDGE_KEY": KEY})
    assert r.rc == 3, r.stdout + r.stderr
    err = r.json["error"]
    assert "HTTP 404" in err and "does not serve the model 'claude-judg-1'" in err and "judge.yaml model" in err, err
    assert "/v1" not in err.split("claude-judg-1", 2)[-1]   # no base_url advice after the body
    assert r.json["key"] == "judge.model" and KEY not in r.stdout + r.stderr


def test_a_cut_off_reply_is_never_kept_in_the_verdict_cache(app, state):
    """--judge-cache: a reply cut off at max_tokens is not cached, so the rerun the error asks for
    (max_tokens raised) asks the judge again and gets its whole verdict, never the cut-off one."""
    app.handler = app_handler
    asked: list = []
    with FakeApp() as judge:
        def handler(stop):
            inner = anthropic(stop)
            return lambda req: (asked.append(stop) if not is_probe(req) else None) or inner(req)
        judge.handler = handler("max_tokens")
        config = {"provider": "anthropic", "model": "judge-1", "base_url": judge.url, "api_key": "${JUDGE_KEY}"}
        plan = judged_plan(state, app, config, cases=[rcase("c-1", "full")])
        plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True},
                                                               config=plan["judge"]["config"])
        r, out = go(state, plan, {"JUDGE_KEY": KEY}, "--judge-cache")
        assert r.rc == 0, r.stdout + r.stderr
        assert read(out, "c-1", "verdict.json")["layers"]["judged"]["verdict"] == "unscored"
        cut = len(asked)
        judge.handler = handler("tool_use")   # max_tokens raised: the reply now ends of itself
        plan["run_id"] = "smoke-20261129T235959Z"
        r, out = go(state, plan, {"JUDGE_KEY": KEY}, "--judge-cache")
    assert r.rc == 0, r.stdout + r.stderr
    assert asked[cut:] and set(asked[cut:]) == {"tool_use"}   # asked again, not answered from the cache
    calls = [c for n in read(out, "c-1", "judge.json")["rubrics"][0]["nodes"] for c in n["calls"]]
    assert not any(c.get("cache") for c in calls)
    assert read(out, "c-1", "verdict.json")["layers"]["judged"]["verdict"] == "pass"


def test_stopped_error_knows_read_replys_words_for_a_reply_that_did_not_stop_of_itself():
    from assay.judge.providers import read_reply, stopped_error
    cut = read_reply("openai", {"choices": [{"message": {"content": "{}"}, "finish_reason": "length"}]})[3]
    refused = read_reply("anthropic", {"content": [], "stop_reason": "refusal"})[3]
    assert stopped_error(cut) and stopped_error(refused)
    assert not stopped_error("the provider's reply is not JSON") and not stopped_error(None)
