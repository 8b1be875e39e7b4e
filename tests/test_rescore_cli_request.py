"""Rescore of a command-line app (`invocation.mode: cli`) renders the request the current adapter
would send, as the runner records it in request.json (the cli invoker's own `prepare`), and compares
it with the stored one, as it does for http. A newcomer's cli bot is run live with `--model a`, then
the adapter's argv is edited to `--model b` (or its stdin mode changed) and the run rescored. Before:
the stored answers (to `--model a`) were scored as the answers to the new command and the gate read
PASS, a stale green. Now each case is a replay miss naming where the request differs; an unchanged
adapter still rescores to the live verdicts (no false miss: the uuid and trace context are masked)."""

from __future__ import annotations

import json
import sys

from helpers import run_script, write_yaml
from test_rescore_changed_requests import live_run, make_state

SOURCE = "smoke-20261205T000000Z"
BOT = """\
import json, sys
msg = sys.argv[-1]
city = msg.rstrip("?").split(" in ")[-1]
print(json.dumps({"answer": f"It is sunny in {city}", "route": "weather"}))
"""


def cli_state(tmp_path):
    state = make_state(tmp_path)
    (state.parent / "bot.py").write_text(BOT)
    command = json.dumps([sys.executable, str(state.parent / "bot.py"), "--model", "a", "<user turn>"])
    write_yaml(state / "adapter.yaml", f"""\
adapter_version: 1
app: {{name: tinybot, repo_access: read-only}}
access_level: black
invocation:
  mode: cli
  command: {command}
  stdin: none
  cwd: scratch
  env_allowlist: [PATH]
  response_body: '{{"answer": "<answer>"}}'
  identity_map: {{user: BOT_TENANT}}
  route_from_response: route
  timeout_s: 10
  max_concurrency: 2
traces: {{source: none}}
tools: []
environment: {{kind: mocked, safe_to_attack: false}}
""")
    return state


def rescore_gate(state, source, run_id):
    r = run_script("rescore", source, "--out", state / "reports" / run_id)
    assert r.rc == 0, r.stdout + r.stderr
    return run_script("gate", state / "reports" / run_id), state / "reports" / run_id


def test_a_cli_command_edited_after_the_run_is_a_replay_miss_never_a_stale_green(tmp_path):
    state = cli_state(tmp_path)
    source = live_run(tmp_path, state, SOURCE)
    assert run_script("gate", source).rc == 0

    g, _ = rescore_gate(state, source, "smoke-20261205T000100Z")
    assert g.rc == 0 and "3 pass, 0 fail" in g.stdout, g.stdout   # the same command: the same request

    adapter = state / "adapter.yaml"
    adapter.write_text(adapter.read_text().replace('"--model", "a"', '"--model", "b"'))
    g, again = rescore_gate(state, source, "smoke-20261205T000200Z")
    assert g.rc == 1, g.stdout
    assert ("w-rome (replay miss: case w-rome: request 1 differs from the source run smoke-20261205T000000Z's at "
            'argv[3]: recorded "a", now "b"; rescore re-scores stored answers only: run the case live '
            "(run_cases.py))") in g.stdout, g.stdout
    assert run_script("run_cases", "--verify", again).rc == 0

    adapter.write_text(adapter.read_text().replace('"--model", "b"', '"--model", "a"')
                       .replace("stdin: none", "stdin: user_turn"))
    g, _ = rescore_gate(state, source, "smoke-20261205T000300Z")
    assert g.rc == 1, g.stdout
    assert ('w-oslo (replay miss: case w-oslo: request 1 differs from the source run smoke-20261205T000000Z\'s at '
            'stdin: recorded "none", now "user_turn"') in g.stdout, g.stdout
