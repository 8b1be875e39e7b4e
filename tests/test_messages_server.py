"""The scripted Messages-API server (tests/messages_server.py): its wire format, read by hand and by
Anthropic's own Python SDK, its script semantics and its command line."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from claude_cli import CLAUDE, session_env, unavailable
from helpers import ROOT
from messages_server import (FAKE_KEY, FINISHED, MessagesServer, api_error, conversation_results, first_json,
                             load_script, text, tool, turn)

pytestmark = pytest.mark.slow   # waits on its servers more than it computes: started first (conftest)

TOOLS = [{"name": "Bash", "description": "run a command",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]


def post(srv: MessagesServer, path: str, body: dict) -> tuple[int, str, str]:
    req = urllib.request.Request(srv.base_url + path, json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", "x-api-key": FAKE_KEY})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def sse(raw: str) -> list[tuple[str, dict]]:
    out = []
    for chunk in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def body(messages=None, stream=True, tools=TOOLS) -> dict:
    b = {"model": "claude-scripted-model", "max_tokens": 1024, "stream": stream,
         "messages": messages or [{"role": "user", "content": "hi"}]}
    if tools:
        b["tools"] = tools
    return b


def test_streaming_tool_call_has_the_wire_format_events_in_order():
    with MessagesServer([turn(text("Let me look."), tool("Bash", {"command": "echo hi"}))]) as srv:
        status, ctype, raw = post(srv, "/v1/messages", body())
    assert status == 200 and ctype.startswith("text/event-stream")
    events = sse(raw)
    names = [n for n, _ in events]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    assert all(d["type"] == n for n, d in events), "each data's type is its event name"
    start = events[0][1]["message"]
    assert start["id"].startswith("msg_") and start["role"] == "assistant" and start["content"] == []
    assert start["stop_reason"] is None and start["usage"]["input_tokens"] > 0
    blocks = [d for n, d in events if n == "content_block_start"]
    assert [b["content_block"]["type"] for b in blocks] == ["text", "tool_use"]
    use = blocks[1]["content_block"]
    assert use["id"].startswith("toolu_01") and use["name"] == "Bash" and use["input"] == {}
    deltas = [d for n, d in events if n == "content_block_delta"]
    said = "".join(d["delta"]["text"] for d in deltas if d["index"] == 0)
    assert said == "Let me look." and {d["delta"]["type"] for d in deltas if d["index"] == 0} == {"text_delta"}
    partial = "".join(d["delta"]["partial_json"] for d in deltas if d["index"] == 1)
    assert json.loads(partial) == {"command": "echo hi"}
    assert [d["index"] for n, d in events if n == "content_block_stop"] == [0, 1]
    final = events[-2][1]
    assert final["delta"]["stop_reason"] == "tool_use" and final["usage"]["output_tokens"] > 0


def test_non_streaming_text_and_count_tokens():
    with MessagesServer([text("Done.")]) as srv:
        status, _, raw = post(srv, "/v1/messages", body(stream=False))
        counted = post(srv, "/v1/messages/count_tokens", {"model": "m", "messages": [{"role": "user", "content": "x" * 400}]})
    msg = json.loads(raw)
    assert status == 200 and msg["type"] == "message" and msg["stop_reason"] == "end_turn"
    assert msg["content"] == [{"type": "text", "text": "Done."}]
    assert msg["usage"]["input_tokens"] > 0 and msg["usage"]["output_tokens"] > 0
    assert counted[0] == 200 and json.loads(counted[2])["input_tokens"] >= 100
    assert [r.kind for r in srv.requests] == ["main", "count_tokens"]


def test_side_requests_do_not_take_a_step_and_the_script_ends_in_a_finished_text():
    with MessagesServer([text("first"), text("second")]) as srv:
        answers = []
        for b in (body(stream=False), body(stream=False, tools=None), body(stream=False), body(stream=False)):
            answers.append(json.loads(post(srv, "/v1/messages", b)[2])["content"][0]["text"])
    assert answers == ["first", "OK", "second", FINISHED]
    assert [(r.kind, r.step) for r in srv.requests] == [("main", 0), ("side", None), ("main", 1), ("main", None)]
    assert srv.overrun == 1 and srv.summary()["by_kind"] == {"main": 3, "side": 1}


def test_tool_use_ids_are_unique_and_an_input_is_computed_from_the_results_so_far():
    script = [turn(tool("Bash", {"command": "a"}), tool("Bash", {"command": "b"})),
              tool("Bash", lambda ctx: {"command": f"cat {ctx.json()['run_dir']}/report.md",
                                        "seen": [r.text for r in ctx.results]})]
    with MessagesServer(script) as srv:
        first = json.loads(post(srv, "/v1/messages", body(stream=False))[2])
        ids = [b["id"] for b in first["content"]]
        convo = [{"role": "user", "content": "go"}, {"role": "assistant", "content": first["content"]},
                 {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": ids[0], "content": "noise\n"},
                     {"type": "tool_result", "tool_use_id": ids[1],
                      "content": [{"type": "text", "text": 'made it\n{"run_dir": "/tmp/r1", "n": 2}'}]}]}]
        second = json.loads(post(srv, "/v1/messages", body(convo, stream=False))[2])
    assert len(set(ids)) == 2 and all(i.startswith("toolu_") for i in ids)
    assert second["content"][0]["id"] not in ids
    assert second["content"][0]["input"] == {"command": "cat /tmp/r1/report.md",
                                             "seen": ["noise\n", 'made it\n{"run_dir": "/tmp/r1", "n": 2}']}
    assert [r.name for r in conversation_results({"messages": convo})] == ["Bash", "Bash"]


def test_a_scripted_api_error_is_sent_once_then_the_script_goes_on():
    with MessagesServer([api_error(529, "overloaded_error", "Overloaded"), text("after")]) as srv:
        status, _, raw = post(srv, "/v1/messages", body())
        again = post(srv, "/v1/messages", body(stream=False))
    assert status == 529 and json.loads(raw) == {"type": "error", "error": {"type": "overloaded_error",
                                                                           "message": "Overloaded"}}
    assert json.loads(again[2])["content"][0]["text"] == "after"


def test_an_unknown_path_is_a_404_in_the_api_error_shape():
    with MessagesServer([]) as srv:
        status, _, raw = post(srv, "/v1/complete", {"prompt": "x"})
    assert status == 404 and json.loads(raw)["error"]["type"] == "not_found_error"
    assert srv.requests[0].kind == "other"


def test_first_json_skips_leading_text_and_broken_braces():
    assert first_json('log {not json\n{"a": [1, {"b": 2}]} tail') == {"a": [1, {"b": 2}]}
    assert first_json("no json here") is None


@pytest.mark.skipif(unavailable() is not None, reason=unavailable() or "")
def test_the_pinned_cli_runs_the_by_hand_session(tmp_path):
    """The docstring's by-hand command, as written: the real client reads the stream, runs both tool
    calls (the second computed from the first's output) and ends on the text step."""
    home = tmp_path / "home"
    env = session_env(home)
    r = subprocess.run([sys.executable, "tests/messages_server.py", "--script", "tests/fixtures/messages/hello.json",
                        "--", str(CLAUDE), "-p", "hello", "--bare", "--permission-mode", "acceptEdits",
                        "--permission-prompts", "none", "--output-format", "stream-json", "--verbose"],
                       capture_output=True, text=True, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    events = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    results = [b["content"] for e in events if e.get("type") == "user"
               for b in e["message"]["content"] if b.get("type") == "tool_result"]
    assert results == ['{"greeting": "hello"}', "the first call said hello"]
    final = [e for e in events if e.get("type") == "result"][-1]
    assert final["is_error"] is False and final["result"] == "Done: both commands ran."
    assert final["permission_denials"] == [] and final["usage"]["output_tokens"] > 0
    served = json.loads(r.stderr.strip().splitlines()[-1])
    assert served["steps_taken"] == served["steps"] == 3 and served["overrun"] == 0 and not served["failures"]


def test_a_script_file_with_a_template_and_the_command_line(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"tool": "Bash", "input": {"command": "echo {not a template}"}},
                                  {"tool": "Bash", "input_template": {"command": "cat {last_json[path]}"}},
                                  {"blocks": [{"text": "two"}, {"tool": "Read", "input": {"file_path": "/x"}}]},
                                  {"error": 500, "type": "api_error"}, {"text": "bye"}]))
    steps = load_script(script)
    with MessagesServer(steps) as srv:
        post(srv, "/v1/messages", body())
        convo = [{"role": "user", "content": "go"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x",
                                               "content": '{"path": "/tmp/p"}'}]}]
        second = json.loads(post(srv, "/v1/messages", body(convo, stream=False))[2])
    assert second["content"][0]["input"] == {"command": "cat /tmp/p"}
    # by hand: the server runs a command with the variables set, then says what it served
    client = ("import json, os, urllib.request as u; r = u.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', "
              "json.dumps({'model': 'm', 'max_tokens': 5, 'messages': [{'role': 'user', 'content': 'hi'}], "
              "'tools': [{'name': 'T', 'input_schema': {}}]}).encode(), {'content-type': 'application/json'}); "
              "print(json.load(u.urlopen(r, timeout=60))['content'][0]['input']); raise SystemExit(3)")
    log = tmp_path / "log.jsonl"
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "messages_server.py"), "--script", str(script),
                        "--log", str(log), "--", sys.executable, "-c", client],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert r.stdout.strip() == "{'command': 'echo {not a template}'}"
    assert json.loads(r.stderr.strip().splitlines()[-1])["steps_taken"] == 1
    assert json.loads(log.read_text().splitlines()[0])["kind"] == "main"
    bad = tmp_path / "bad.json"
    bad.write_text('[{"nothing": 1}]')
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "messages_server.py"), "--script", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "a step needs text, tool, blocks or error" in json.loads(r.stderr)["error"]


def test_a_computed_input_that_raises_ends_the_session_with_the_step_named():
    with MessagesServer([tool("Bash", lambda ctx: {"command": ctx.json()["missing"]}), text("never")]) as srv:
        status, _, raw = post(srv, "/v1/messages", body(stream=False))
    msg = json.loads(raw)
    assert status == 200 and msg["stop_reason"] == "end_turn"
    assert msg["content"][0]["text"].startswith("scripted model: step 0 failed: TypeError")
    assert srv.failures == [msg["content"][0]["text"]] and srv.summary()["failures"] == srv.failures
