"""A new user types the request template's placeholder as `"<user_turn>"` (or any spelling but
`"<user turn>"`). Nothing filled it, so every case sent the app the same request, `{"message":
"<user_turn>"}`; the app answered it the same way each time, and every case that one answer happened
to meet passed: the first gate opened over an app that never saw a question. convert_suite.py now
refuses the adapter at its line, naming the near miss and the fix; a plan made otherwise stops at
pre-flight before any request. A cli `command` is held to the same rule unless the turn goes on
stdin. Scripts run as subprocesses, as a user runs them, against a real app on its own port.
"""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, write_plan, run_runner
from helpers import run_script, write_yaml

ADAPTER = """adapter_version: 1
app: {{name: shop, repo: ..}}
access_level: black
invocation:
{invocation}
  response_body: '{{"answer": "<answer>"}}'
  route_from_response: route
traces: {{source: none}}
"""
HTTP = """  mode: http
  base_url: ${SHOP_URL}
  endpoint: POST /chat
  request_body: '{"message": "<user_turn>"}'"""
PROFILE = """profile_version: 1
stage: stable
architecture: {kind: router_executor}
routing_contract: [orders, policy]
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
"""
CASES = {
    "c-00000001": "Where is my order?\nexpect:\n  route: orders\n  answer: {must_contain: [shipped]}\n",
    "c-00000002": "Tell me about shipping\nexpect:\n  answer: {must_not_contain: ['/(?i)internal error/']}\n",
}


def state_dir(tmp_path, invocation: str):
    state = tmp_path / "shop" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.format(invocation=invocation))
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, text in CASES.items():
        write_yaml(state / "datasets" / f"{cid}.yaml",
                   f"id: {cid}\nsplit: [full, smoke]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n"
                   f"input:\n  messages:\n    - role: user\n      content: {text}")
    return state


def convert(state):
    return run_script("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work",
                      cwd=state.parent)


def test_a_misspelt_user_turn_placeholder_is_refused_at_its_line(tmp_path):
    r = convert(state_dir(tmp_path, HTTP))
    assert r.rc == 2, r.stdout + r.stderr
    doc = r.json
    assert (doc["file"], doc["line"], doc["key"]) == ("adapter.yaml", 8, "invocation.request_body"), doc
    assert doc["error"].startswith("adapter.yaml:8: invocation.request_body never mentions \"<user turn>\", "
                                   "so no case's question reaches the app"), doc["error"]
    assert "it has \"<user_turn>\" (did you mean \"<user turn>\"?)" in doc["error"]
    assert doc["error"].endswith("write request_body: '{\"message\": \"<user turn>\"}'"), doc["error"]
    # no placeholder at all: the fix shows where one goes
    r = convert(state_dir(tmp_path / "none", HTTP.replace('"<user_turn>"', '"hello"')))
    assert r.rc == 2 and "put \"<user turn>\" where the app reads the question" in r.json["error"], r.stdout


def test_a_plan_made_otherwise_stops_at_pre_flight_before_any_request(tmp_path):
    state = make_state(tmp_path)
    cases = [case("c-1", "Where is my order?", expect={"answer": {"must_contain": ["shipped"]}})]
    with FakeApp(lambda req: Reply(200, {"message": "Your order has shipped."})) as app:
        plan = make_plan(state, cases, adapter_doc=adapter(app.url, request_body='{"message": "<usr turn>"}'))
        out = state / "reports" / plan["run_id"]
        r = run_runner("--plan", write_plan(state, plan), "--out", out)
        posts = app.count(path="/api/chat")
    assert r.rc == 3, r.stdout + r.stderr
    assert r.json["key"] == "invocation.request_body" and "did you mean \"<user turn>\"?" in r.json["error"]
    assert posts == 0 and not (out / "results.json").exists()


def test_a_cli_command_without_the_turn_is_refused_unless_the_turn_goes_on_stdin(tmp_path):
    bot = tmp_path / "shop" / "bot.py"
    write_yaml(bot, "import json, sys\nprint(json.dumps({'answer': 'Your order has shipped.', 'route': 'orders'}))\n")
    cli = f"  mode: cli\n  command: [python3, {json.dumps(str(bot))}, --prompt, \"<prompt>\"]\n  stdin: none"
    r = convert(state_dir(tmp_path, cli))
    assert r.rc == 2 and r.json["key"] == "invocation.command" and r.json["line"] == 6, r.stdout
    assert "never mentions \"<user turn>\"" in r.json["error"] and "(or stdin: user_turn)" in r.json["error"]
    r = convert(state_dir(tmp_path / "stdin", cli.replace("stdin: none", "stdin: user_turn")))
    assert r.rc == 0, r.stdout + r.stderr
    r = convert(state_dir(tmp_path / "argv", cli.replace('"<prompt>"', '"<user turn>"')))
    assert r.rc == 0, r.stdout + r.stderr
