"""A replay keys on the values of the `${NAME}`s that say what is asked, never on a credential's:
run_cases.py --record against a real loopback app, then --replay (app gone, every connect() refused)
with a variable changed. Before: `model: ${APP_MODEL}` in the body (or an `X-Model: ${APP_MODEL}`
header) recorded with one model replayed the old answers under another: a stale green."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, state  # noqa: F401 (fixture)
from rundir_util import cases_view
from test_replay import go, guarded

GOOD, BAD = "acme-model-good-7", "acme-model-bad-3"


def by_model(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    model = req.headers.get("X-Model") or req.json.get("model")
    return Reply(200, {"message": f"echo: {req.json['message']}" if model == GOOD else "no idea"})


@pytest.mark.parametrize("where", ["body", "header"])
def test_another_value_of_a_variable_the_request_names_is_a_replay_miss(state, tmp_path, where):
    body = ('{"message": "<user turn>", "model": "${APP_MODEL}"}' if where == "body"
            else '{"message": "<user turn>"}')
    headers = {"Authorization": "Bearer ${APP_TOKEN}", **({"X-Model": "${APP_MODEL}"} if where == "header" else {})}
    cases = [case("c-1", "hello", expect={"answer": {"must_contain": ["hello"]}})]
    with FakeApp(by_model) as app:
        plan = make_plan(state, cases, app_url=app.url,
                         adapter_doc=adapter(app.url, request_body=body, headers=headers))
        rec, _ = go(state, plan, "--record", env={"APP_MODEL": GOOD, "APP_TOKEN": "tok-recorded-0001"},
                    run_id="smoke-20261129T101500Z")
    assert rec.rc == 0, rec.stdout + rec.stderr
    env, log = guarded(tmp_path)
    # a rotated token still hits: who asks is keyed by the variable's name, never its value
    same, same_out = go(state, plan, "--replay", env=dict(env, APP_MODEL=GOOD, APP_TOKEN="tok-rotated-0002"),
                        run_id="smoke-20261129T101600Z")
    assert same.rc == 0, same.stdout + same.stderr
    assert json.loads((cases_view(same_out) / "c-1" / "verdict.json").read_text())["verdict"] == "pass"
    # another model is another request: a miss (infra_error), never the recorded model's pass
    other, other_out = go(state, plan, "--replay", env=dict(env, APP_MODEL=BAD, APP_TOKEN="tok-rotated-0002"),
                          run_id="smoke-20261129T101700Z")
    assert other.rc == 0, other.stdout + other.stderr
    assert log.read_text() == ""
    v = json.loads((cases_view(other_out) / "c-1" / "verdict.json").read_text())
    assert v["verdict"] == "infra_error", v
    assert v["infra_reason"].startswith("replay miss: case c-1: request 1 differs from the recording at values.sha256: "
                                        "recorded "), v["infra_reason"]
    cache = state / "cache"   # the values are bound by a digest: never a value on disk
    assert not [p for p in cache.rglob("*.json") if GOOD.encode() in p.read_bytes() or b"tok-" in p.read_bytes()]


def test_the_binding_leaves_out_the_base_url_credentials_and_who_asked():
    from assay.replay.key import Binding
    inv = {"base_url": "${APP_URL}", "headers": {"X-Model": "${APP_MODEL}", "X-Api-Key": "${KEY_A}"},
           "auth": {"type": "bearer", "token_env": "APP_BEARER"}}
    env = {"APP_URL": "http://127.0.0.1:1", "APP_MODEL": "m1", "KEY_A": "k", "APP_BEARER": "b",
           "APP_REGION": "eu", "APP_TOKEN": "t", "WHO": "w"}
    bind = Binding.of(inv, env)
    recorded = {"url": "${APP_URL}/chat", "headers": {"Authorization": "Bearer ${WHO}"},
                "body": {"region": "${APP_REGION}", "token": "${APP_TOKEN}", "q": "hi"}}
    got = bind.values(recorded)
    assert got["vars"] == ["APP_MODEL", "APP_REGION"] and len(got["sha256"]) == 16
    assert Binding.of(inv, dict(env, APP_REGION="us")).values(recorded) != got
    assert Binding.of(inv, dict(env, APP_TOKEN="t2", APP_BEARER="b2", KEY_A="k2", WHO="w2",
                                APP_URL="http://127.0.0.1:2")).values(recorded) == got
    assert Binding.of({}, env).values({"url": "/chat", "body": {"q": "hi"}}) is None


def test_an_agent_env_blocks_values_are_bound_but_never_a_secret_shaped_entrys():
    """An agent's `env` block is recorded as written (`agent_env`): the `${NAME}`s it names are bound by
    digest like a header's, except under an entry whose name says it holds a secret (ANTHROPIC_API_KEY:
    ${ANTHRO}: a rotated key still hits, and a replay needs it unset or not), as replay_unkeyed reads."""
    from assay.replay.key import Binding
    inv = {"mode": "agent", "agent": {"env": {"ANTHROPIC_MODEL": "${AGENT_MODEL}", "ANTHROPIC_API_KEY": "${ANTHRO}",
                                              "GH_AUTH_TOKEN": "${GH_VAL}"}}}
    recorded = {"mode": "agent", "argv": ["claude", "-p", "hi"], "env": ["ANTHROPIC_MODEL", "PATH"],
                "fixture": "fixtures/repo", "agent_env": inv["agent"]["env"]}
    env = {"AGENT_MODEL": "m1", "ANTHRO": "sk-1", "GH_VAL": "g1"}
    got = Binding.of(inv, env).values(recorded)
    assert got["vars"] == ["AGENT_MODEL"], got
    assert Binding.of(inv, dict(env, ANTHRO="sk-2", GH_VAL="g2")).values(recorded) == got
    assert Binding.of(inv, dict(env, AGENT_MODEL="m2")).values(recorded) != got
    assert {"ANTHRO", "GH_VAL"} <= Binding.of(inv, {}).never and "AGENT_MODEL" not in Binding.of(inv, {}).never


CLI_BOT = ("import json, os, sys\nq = sys.stdin.read()\n"
           f"print(json.dumps({{'answer': 'echo: ' + q if os.environ.get('APP_MODEL') == {GOOD!r} else 'no idea'}}))\n")


def test_a_cli_apps_allowlisted_variable_is_bound_but_never_a_machine_or_secret_one(state, tmp_path):
    """A cli app that reads its model from a variable it is given through `env_allowlist` (no `${NAME}`
    in its argv): recorded with one model and replayed under another, the replay used to answer with
    the old model's answers, PASS [REPLAYED]. Now the allowlisted value is bound by digest (a miss at
    values.sha256), unset is a value too, while PATH, HOME, LC_ALL and a secret-shaped name still hit."""
    bot = tmp_path / "bot.py"
    bot.write_text(CLI_BOT)
    doc = adapter("http://unused", mode="cli", command=[__import__("sys").executable, str(bot)], stdin="user_turn",
                  cwd="scratch", env_allowlist=["PATH", "HOME", "LC_ALL", "APP_MODEL", "APP_API_KEY"],
                  response_body='{"answer": "<answer>"}')
    for key in ("base_url", "endpoint", "request_body", "health_check"):
        doc["invocation"].pop(key)
    plan = make_plan(state, [case("c-1", "hello", expect={"answer": {"must_contain": ["hello"]}})], adapter_doc=doc)
    base = {"ASSAY_SCRATCH_DIR": str(tmp_path / "scratch"), "APP_API_KEY": "key-recorded-0001",
            "HOME": str(tmp_path / "home-a"), "LC_ALL": "C.UTF-8"}
    rec, rec_out = go(state, plan, "--record", env=dict(base, APP_MODEL=GOOD), run_id="smoke-20261129T101500Z")
    assert rec.rc == 0, rec.stdout + rec.stderr
    assert json.loads((cases_view(rec_out) / "c-1" / "verdict.json").read_text())["verdict"] == "pass"
    guard, log = guarded(tmp_path)
    other_machine = dict(base, **guard, APP_API_KEY="key-rotated-0002", HOME=str(tmp_path / "home-b"), LC_ALL="C",
                         PATH="/usr/bin:/bin")

    def replay(run_id, **env):
        r, out = go(state, plan, "--replay", env=dict(other_machine, **env), run_id=run_id)
        assert r.rc == 0, r.stdout + r.stderr
        return json.loads((cases_view(out) / "c-1" / "verdict.json").read_text())

    assert replay("smoke-20261129T101600Z", APP_MODEL=GOOD)["verdict"] == "pass"
    miss = "replay miss: case c-1: request 1 differs from the recording at values.sha256: recorded "
    other = replay("smoke-20261129T101700Z", APP_MODEL=BAD)
    assert other["verdict"] == "infra_error" and other["infra_reason"].startswith(miss), other
    unset = replay("smoke-20261129T101800Z")   # APP_MODEL unset: the app reads its absence, another request
    assert unset["verdict"] == "infra_error" and unset["infra_reason"].startswith("replay miss: case c-1"), unset
    assert log.read_text() == ""
    cache = state / "cache"   # a digest, never a value on disk
    assert not [p for p in cache.rglob("*.json") if GOOD.encode() in p.read_bytes() or b"key-" in p.read_bytes()]


def test_which_allowlisted_variables_the_binding_keeps():
    from assay.replay.key import Binding, machine_variable
    inv = {"mode": "cli", "command": ["./bot"], "env_allowlist": [
        "PATH", "HOME", "LANG", "LC_MESSAGES", "XDG_CONFIG_HOME", "HTTPS_PROXY", "https_proxy", "NODE_PATH",
        "APP_DATA_DIR", "OPENAI_API_KEY", "APP_TOKEN", "DB_PASSWORD", "APP_MODEL", "APP_TEMPERATURE"]}
    assert Binding.of(inv, {}).given == {"APP_MODEL", "APP_TEMPERATURE"}
    assert all(machine_variable(n) for n in ("PATH", "https_proxy", "NODE_PATH", "APP_DATA_DIR", "LC_MESSAGES"))
    recorded = {"mode": "cli", "argv": ["./bot", "hi"], "stdin": "none", "env": ["APP_MODEL", "PATH"]}
    got = Binding.of(inv, {"APP_MODEL": "m1", "OPENAI_API_KEY": "sk-1"}).values(recorded)
    assert got["vars"] == ["APP_MODEL", "APP_TEMPERATURE"], got   # an unset one is bound as unset
    assert Binding.of(inv, {"APP_MODEL": "m1", "OPENAI_API_KEY": "sk-2"}).values(recorded) == got
    assert Binding.of(inv, {"APP_MODEL": "m1", "APP_TEMPERATURE": "0.7"}).values(recorded) != got
    assert Binding.of(inv, {}).values(recorded) != got
    # an agent's allowlist too (default [PATH]: nothing bound); an http or function app has none
    assert Binding.of({"mode": "agent", "agent": {}}, {}).given == frozenset()
    assert Binding.of({"mode": "agent", "agent": {}, "env_allowlist": ["PATH", "ANTHROPIC_MODEL"]}, {}).given \
        == {"ANTHROPIC_MODEL"}
    assert Binding.of(dict(inv, mode="function"), {"APP_MODEL": "m1"}).values({"body": {"q": "hi"}}) is None
