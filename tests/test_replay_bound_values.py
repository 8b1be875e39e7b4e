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
