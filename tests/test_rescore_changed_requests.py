"""Rescore re-scores stored answers; it must never score a stored answer as the answer to a
question the suite no longer asks, nor leave out a case the suite gained (the replay trial).

A newcomer's app (a keyword router on a real loopback port) is run live, then the suite is edited
and the run rescored with the app gone, the way docs/runner-contract.md ("Rescore") says:

- a case whose input was edited after the run (the app would misroute the new question) was
  rescored with the old question's stored answer and the gate read PASS, "open is the release
  signal"; it is now a replay miss naming the case and where the request differs;
- a case added to the run's split after the run was left out of the rescore (PASS "over the full
  split"); it is now a replay miss naming the case;
- an unchanged suite still rescores to the run's verdicts (no false miss: the per-request uuid in
  the body and the identity headers are not a change);
- `--out` onto the source run (or any run dir that exists) says rescore writes a new run, never
  "pass --resume" (rescore has no --resume).
"""

from __future__ import annotations

import json
import os
import shutil

from fakeapp import FakeApp, Reply
from helpers import run_script, write_yaml

ADAPTER = """\
adapter_version: 1
app: {name: tinyrouter, repo_access: read-only}
access_level: black
invocation:
  mode: http
  base_url: ${TINY_URL}
  auth: {type: none}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>", "session_id": "<uuid>"}'
  response_body: '{"answer": "<answer>"}'
  identity_map: {user: X-Tenant}
  health_check: {method: GET, path: /health, expect_status: [200]}
  route_from_response: route
  timeout_s: 5
  max_concurrency: 2
traces: {source: none}
tools: []
environment: {kind: mocked, safe_to_attack: false}
"""

PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: router_executor}
oos_handling: route:chat
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
  trajectory: {enabled: false, blocked_by: no traces}
  tool_selection: {enabled: false, blocked_by: no traces}
  execution: {enabled: false, blocked_by: no oracle}
  authz: {enabled: false, blocked_by: no authz checks}
  multi_turn: {enabled: false, blocked_by: single-turn app}
  state: {enabled: false, blocked_by: reserved}
"""


def case_yaml(cid: str, text: str, route: str, must: str, split: str = "[smoke, full]") -> str:
    return f"""\
id: {cid}
unit: {route}
split: {split}
category: happy
test_type: MFT
template_id: null
dataset_version_added: 1
origin: synthetic
review: {{status: accepted, by: Me, at: '2026-12-01'}}
identity: {{user: acme}}
input:
  messages:
  - {{role: user, content: "{text}"}}
  session: fresh
expect:
  route: {route}
  answer: {{must_contain: ["{must}"]}}
"""


def router(req):
    """weather questions (the word "weather") go to weather; everything else is small talk."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    if "weather" in msg.lower():
        return Reply(200, {"answer": f"It is sunny in {msg.rstrip('?').split(' in ')[-1]}", "route": "weather"})
    return Reply(200, {"answer": f"Hello! You said: {msg}", "route": "chat"})


def make_state(tmp_path):
    state = tmp_path / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, city in (("w-paris", "Paris"), ("w-rome", "Rome"), ("w-oslo", "Oslo")):
        write_yaml(state / "datasets" / f"{cid}.yaml",
                   case_yaml(cid, f"What is the weather in {city}?", "weather", f"sunny in {city}"))
    write_yaml(state / "datasets" / "h-tokyo.yaml",
               case_yaml("h-tokyo", "What is the weather in Tokyo?", "weather", "sunny in Tokyo", split="[holdout]"))
    return state


def live_run(tmp_path, state, run_id="smoke-20261205T000000Z"):
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    with FakeApp(router) as app:
        env = dict(os.environ, TINY_URL=app.url)
        p = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                       "-o", work / "plan.json", "--run-id", run_id, env=env)
        assert p.rc == 0, p.stdout + p.stderr
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", state / "reports" / run_id,
                       "--progress", "never", env=env)
        assert r.rc == 0, r.stdout + r.stderr
    return state / "reports" / run_id


def rescore(state, source, run_id):
    env = {k: v for k, v in os.environ.items() if k != "TINY_URL"}   # the app is gone
    r = run_script("rescore", source, "--out", state / "reports" / run_id, env=env)
    return r, state / "reports" / run_id


def test_an_unchanged_suite_rescores_to_the_live_verdicts(tmp_path):
    state = make_state(tmp_path)
    source = live_run(tmp_path, state)
    assert run_script("gate", source).rc == 0
    r, again = rescore(state, source, "smoke-20261205T000100Z")
    assert r.rc == 0, r.stdout + r.stderr
    g = run_script("gate", again)
    assert g.rc == 0, g.stdout   # the uuid in the body and the X-Tenant header are no change
    assert "3 pass, 0 fail" in g.stdout, g.stdout
    # a rescored PASS never reads as a live one: the gate's first line says where its answers came from
    assert g.stdout.splitlines()[0].endswith("[RESCORED from run smoke-20261205T000000Z: its stored answers scored "
                                             "again, the app was not called]"), g.stdout
    assert "RESCORED from run smoke-20261205T000000Z" in run_script("gate", again, "--json").json["replayed"]


def test_an_input_edited_after_the_run_is_a_replay_miss_never_the_old_answers_pass(tmp_path):
    state = make_state(tmp_path)
    source = live_run(tmp_path, state)
    # the app would route this new question to small talk: a live run fails it
    write_yaml(state / "datasets" / "w-rome.yaml",
               case_yaml("w-rome", "What is the forecast for Rome?", "weather", "sunny in Rome"))
    r, again = rescore(state, source, "smoke-20261205T000200Z")
    assert r.rc == 0, r.stdout + r.stderr
    g = run_script("gate", again)
    assert g.rc == 1, g.stdout
    assert g.stdout.splitlines()[0].startswith("smoke-20261205T000200Z: FAIL"), g.stdout
    assert ("w-rome (replay miss: case w-rome: request 1 differs from the source run smoke-20261205T000000Z's "
            "at body.message: recorded \"What is the weather in Rome?\", now \"What is the forecast for Rome?\"; "
            "rescore re-scores stored answers only: run the case live (run_cases.py))") in g.stdout, g.stdout
    assert run_script("run_cases", "--verify", again).rc == 0


def test_an_identity_edited_after_the_run_is_a_replay_miss(tmp_path):
    state = make_state(tmp_path)
    source = live_run(tmp_path, state)
    text = (state / "datasets" / "w-oslo.yaml").read_text().replace("user: acme", "user: globex")
    (state / "datasets" / "w-oslo.yaml").write_text(text)
    r, again = rescore(state, source, "smoke-20261205T000300Z")
    assert r.rc == 0, r.stdout + r.stderr
    g = run_script("gate", again)
    assert g.rc == 1 and "w-oslo (replay miss: case w-oslo: request 1 differs" in g.stdout, g.stdout
    assert "headers.X-Tenant" in g.stdout, g.stdout


def test_a_case_added_to_the_split_after_the_run_is_a_replay_miss_never_left_out(tmp_path):
    state = make_state(tmp_path)
    source = live_run(tmp_path, state)
    write_yaml(state / "datasets" / "w-berlin.yaml",
               case_yaml("w-berlin", "forecast for Berlin", "weather", "sunny in Berlin"))
    # a holdout case added since is not in a smoke run's split: not added to its rescore
    write_yaml(state / "datasets" / "h-lima.yaml",
               case_yaml("h-lima", "weather in Lima", "weather", "sunny in Lima", split="[holdout]"))
    r, again = rescore(state, source, "smoke-20261205T000400Z")
    assert r.rc == 0, r.stdout + r.stderr
    g = run_script("gate", again)
    assert g.rc == 1, g.stdout
    assert "4 cases + 0 canaries: 3 pass" in g.stdout, g.stdout
    assert ("w-berlin (replay miss: case w-berlin: not in the source run smoke-20261205T000000Z (added to the smoke "
            "split since): no stored answer; rescore re-scores stored answers only: run the case live") in g.stdout
    assert "h-lima" not in json.dumps(json.loads((again / "manifest.yaml").read_text())["cases"])
    assert run_script("run_cases", "--verify", again).rc == 0


def test_rescore_out_onto_an_existing_run_says_it_writes_a_new_one(tmp_path):
    state = make_state(tmp_path)
    source = live_run(tmp_path, state)
    before = sorted(p.name for p in source.iterdir())
    r, _ = rescore(state, source, source.name)
    assert r.rc == 2
    err = json.loads(r.stdout)
    assert err["key"] == "--out" and "is the source run" in err["error"] and "--resume" not in err["error"], err
    other = state / "reports" / "smoke-20261205T000500Z"
    shutil.copytree(source, other)
    r, _ = rescore(state, source, other.name)
    err = json.loads(r.stdout)
    assert r.rc == 2 and "already exists and is not empty" in err["error"] and "--resume" not in err["error"], err
    assert sorted(p.name for p in source.iterdir()) == before


def test_an_identity_token_edited_after_the_run_is_a_replay_miss(tmp_path, monkeypatch):
    """A case identity's token is recorded by its variable's name (never its value): another user's
    token is another request, so the first user's stored answer is never rescored as the second's."""
    state = make_state(tmp_path)
    path = state / "datasets" / "w-oslo.yaml"
    path.write_text(path.read_text().replace("identity: {user: acme}", "identity: {token_env: ACME_TOKEN}"))
    monkeypatch.setenv("ACME_TOKEN", "tok-acme-0001")
    monkeypatch.setenv("GLOBEX_TOKEN", "tok-globex-0002")
    source = live_run(tmp_path, state)
    path.write_text(path.read_text().replace("token_env: ACME_TOKEN", "token_env: GLOBEX_TOKEN"))
    r, again = rescore(state, source, "smoke-20261205T000600Z")
    assert r.rc == 0, r.stdout + r.stderr
    g = run_script("gate", again)
    assert g.rc == 1, g.stdout
    assert ('w-oslo (replay miss: case w-oslo: request 1 differs from the source run smoke-20261205T000000Z\'s at '
            'headers.Authorization: recorded "Bearer ${ACME_TOKEN}", now "Bearer ${GLOBEX_TOKEN}"') in g.stdout, g.stdout
