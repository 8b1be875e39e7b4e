"""Fake judge providers for tests: real HTTP servers (tests/fakeapp.FakeApp) speaking the
Anthropic Messages and OpenAI Chat Completions wire formats, and helpers that put a rubric,
a judge config and a calibration sidecar into a state dir / plan.

A `decide(node_id, answer) -> {"verdict", "evidence", "reason"} | str` function scripts the
judge; a str is sent as the raw reply text (to test unparseable replies).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from fakeapp import Reply

RUBRIC = """---
rubric_id: refund-eta
version: 1
nodes:
  - id: states-amount
    criterion: The reply states the refunded amount, with its currency.
  - id: states-arrival
    criterion: The reply says when the refund will arrive.
---
# refund-eta
For people.
"""


def prompt_parts(text: str) -> tuple[str, str]:
    """(node id, answer) from a judge prompt; a whole conversation's prompt: the conversation block."""
    node = re.search(r"Node: (\S+)", text).group(1)
    answer = re.search(r"<untrusted-answer-[0-9a-f]+>\n(.*?)\n</untrusted-answer-", text, re.S) or \
        re.search(r"<untrusted-conversation-[0-9a-f]+>\n(.*?)\n</untrusted-conversation-", text, re.S)
    return node, answer.group(1)


def default_decide(node: str, answer: str) -> dict:
    if node == "states-amount":
        m = re.search(r"\d+ USD", answer)
        return ({"verdict": "pass", "evidence": [m.group(0)], "reason": "amount stated"} if m
                else {"verdict": "fail", "evidence": [], "reason": "no amount"})
    m = re.search(r"\d+ business days", answer)
    return ({"verdict": "pass", "evidence": [m.group(0)], "reason": "arrival stated"} if m
            else {"verdict": "fail", "evidence": [], "reason": "no arrival time"})


PROBE_MARK = "assay pre-flight probe"


def is_probe(req) -> bool:
    """The runner's pre-flight probe (one cheap call, judge/probe.py): answered, not recorded in `seen`."""
    return req.method == "POST" and PROBE_MARK in (req.body or b"").decode("utf-8", "replace")


def probe_reply(model: str, *, input_tokens: int = 3, msg_id: str = "msg_0"):
    """A Messages API reply to the pre-flight probe: one text block, `end_turn`."""
    return Reply(200, {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                       "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": input_tokens, "output_tokens": 1}})


def anthropic_handler(decide: Callable[[str, str], Any] = default_decide, seen: list | None = None):
    def handler(req):
        if is_probe(req) and req.path == "/v1/messages":
            return probe_reply(req.json["model"], input_tokens=12, msg_id="msg_00")
        if seen is not None:
            seen.append(req)
        if req.path != "/v1/messages" or req.method != "POST":
            return Reply(404, {"type": "error", "error": {"type": "not_found_error", "message": req.path}})
        body = req.json
        node, answer = prompt_parts(body["messages"][0]["content"])
        verdict = decide(node, answer)
        if isinstance(verdict, str):
            content = [{"type": "text", "text": verdict}]
        else:
            content = [{"type": "tool_use", "id": "toolu_01", "name": body["tool_choice"]["name"], "input": verdict}]
        return Reply(200, {"id": "msg_01", "type": "message", "role": "assistant", "model": body["model"],
                           "content": content, "stop_reason": "tool_use", "stop_sequence": None,
                           "usage": {"input_tokens": 120, "output_tokens": 30}})
    return handler


def openai_handler(decide: Callable[[str, str], Any] = default_decide, seen: list | None = None):
    def handler(req):
        if is_probe(req) and req.path == "/v1/chat/completions":
            return Reply(200, {"id": "chatcmpl-0", "object": "chat.completion", "created": 1, "model": req.json["model"],
                               "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok", "refusal": None},
                                            "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}})
        if seen is not None:
            seen.append(req)
        if req.path != "/v1/chat/completions" or req.method != "POST":
            return Reply(404, {"error": {"message": req.path, "type": "invalid_request_error"}})
        body = req.json
        node, answer = prompt_parts(body["messages"][1]["content"])
        verdict = decide(node, answer)
        content = verdict if isinstance(verdict, str) else json.dumps(verdict)
        return Reply(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": content,
                                                                "refusal": None}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240}})
    return handler


def write_rubric(state, text: str = RUBRIC, name: str = "refund-eta.md"):
    (state / "rubrics").mkdir(exist_ok=True)
    (state / "rubrics" / name).write_text(text, encoding="utf-8")


def judge_block(state, config: dict, *, enabled: bool = True) -> dict:
    """plan.judge as make_plan.py builds it, from the state dir's rubric files."""
    from assay.judge.config import effective
    from assay.judge.rubrics import load_rubrics
    rubrics = {r["pin"]: {k: v for k, v in r.items() if k != "body"} for r in load_rubrics(state).values()}
    return {"enabled": enabled, "reason": None if enabled else "mode: smoke; pass make_plan.py --judge to judge",
            "config": effective(config), "rubrics": rubrics}


def write_calibration(state, pins_calibrated: dict[str, bool], config: dict | None = None,
                      env: dict | None = None) -> str:
    """A hand-written calibration sidecar (assay.calibration/1) bound, as score_agreement.py --write
    binds it, to the judge `config` (judge.yaml's keys; `env`: the values of the variables its
    base_url/model name) and the state dir's rubric files (config None: an unbound, older sidecar);
    returns the plan's paths value."""
    (state / "judge").mkdir(exist_ok=True)
    doc = {"schema": "assay.calibration/1", "generated_at": "2026-11-30T00:00:00Z",
           "floors": {"min_pairs": 100, "min_per_class": 10, "min_tpr": 0.9, "min_tnr": 0.9, "min_kappa": 0.6},
           "rubrics": {pin: {"calibrated": cal, "pairs": 120 if cal else 12, "unknown": 0,
                             "tp": 20, "fn": 1, "fp": 2, "tn": 97, "tpr": 0.95, "tnr": 0.98, "kappa": 0.9,
                             "blocking": [] if cal else ["pairs 12 < 100"],
                             "unlock": None if cal else "label 88 more, at least 9 of them failing"}
                       for pin, cal in pins_calibrated.items()}}
    if config is not None:
        from assay.judge.binding import binding_fields, judge_identity
        from assay.judge.config import effective
        from assay.judge.rubrics import load_rubrics
        by_pin = {r["pin"]: r for r in load_rubrics(state).values()}
        doc["judge"] = binding_fields(doc["rubrics"], by_pin, judge_identity(effective(config), state, env))
    (state / "judge" / "calibration.json").write_text(json.dumps(doc), encoding="utf-8")
    return "judge/calibration.json"
