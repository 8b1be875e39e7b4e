"""Issue 24 D3: a judge that cannot answer is caught at pre-flight by one cheap call, and every
judge error names the resolved URL, the HTTP status and the key's variable (never the key).

Before: a judge base_url without /v1 made every call a 404 and the gate said only "the judge
said infra_error"."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, app, state  # noqa: F401 (fixtures)
from judgefake import anthropic_handler, openai_handler
from test_judge_run import KEY, app_handler, go, judged_plan, rcase
from rundir_util import cases_view


@pytest.fixture
def judge_server():
    with FakeApp() as server:
        yield server


def test_openai_base_url_without_v1_is_exit_3_at_pre_flight(app, state, judge_server):
    app.handler = app_handler
    judge_server.handler = openai_handler()
    plan = judged_plan(state, app, {"provider": "openai", "model": "gpt-x", "base_url": judge_server.url,  # no /v1
                                    "api_key": "${JUDGE_KEY}"})
    r, out = go(state, plan, {"JUDGE_KEY": KEY})
    assert r.rc == 3, r.stdout + r.stderr
    err = r.json["error"]
    assert f"POST {judge_server.url}/chat/completions" in err and "HTTP 404" in err
    assert "$JUDGE_KEY" in err and KEY not in r.stdout + r.stderr
    assert "/v1" in err  # the likely fix
    assert judge_server.count() == 1  # one cheap call, no case judged
    assert app.count(method="POST") == 0


def test_anthropic_base_url_with_v1_is_exit_3_at_pre_flight(app, state, judge_server):
    app.handler = app_handler
    judge_server.handler = anthropic_handler()
    plan = judged_plan(state, app, {"provider": "anthropic", "model": "m", "base_url": judge_server.url + "/v1",
                                    "api_key": "${JUDGE_KEY}"})
    r, out = go(state, plan, {"JUDGE_KEY": KEY})
    assert r.rc == 3, r.stdout + r.stderr
    err = r.json["error"]
    assert f"POST {judge_server.url}/v1/v1/messages" in err and "HTTP 404" in err and "$JUDGE_KEY" in err


def test_a_base_url_variable_is_an_address_the_probe_names_not_a_secret(app, state, judge_server):
    """judge.yaml `base_url: ${JUDGE_URL}` (as the adapter's base_url may be): the probe's error shows
    the URL it posted to, as it does for the app's address; it read `POST <redacted>/v1/messages`, so
    the doubled /v1 could not be seen. The key stays a secret."""
    app.handler = app_handler
    judge_server.handler = anthropic_handler()
    plan = judged_plan(state, app, {"provider": "anthropic", "model": "m", "base_url": "${JUDGE_URL}",
                                    "api_key": "${JUDGE_KEY}"})
    r, out = go(state, plan, {"JUDGE_KEY": KEY, "JUDGE_URL": judge_server.url + "/v1"})
    assert r.rc == 3, r.stdout + r.stderr
    err = r.json["error"]
    assert f"POST {judge_server.url}/v1/v1/messages" in err and "HTTP 404" in err, err
    assert KEY not in r.stdout + r.stderr


def test_a_base_url_with_credentials_names_its_host_never_them(app, state, judge_server):
    """judge.yaml `base_url: ${JUDGE_URL}` holding `user:password@` (a proxy with basic auth) or a
    `?key=`: a secret, so its whole value was redacted and the probe's error read `POST
    <redacted>/v1/messages`: where it posted, and the doubled /v1, were lost. Now the host, port and
    path are said, the credentials never."""
    app.handler = app_handler
    judge_server.handler = anthropic_handler()
    plan = judged_plan(state, app, {"provider": "anthropic", "model": "claude-x", "base_url": "${JUDGE_URL}",
                                    "api_key": "${JUDGE_KEY}"})
    host = judge_server.url.removeprefix("http://")
    # the fake's 404 quotes the path it was asked for, so the query (posted as part of it) comes back
    for url, shown in ((f"http://proxy:pw-TESTSECRET-4f9a1c@{host}/v1", f"POST {judge_server.url}/v1/v1/messages"),
                       (f"http://{host}/v1?key=TESTSECRET-4f9a1c", f"POST {judge_server.url}/v1 (key $JUDGE_KEY)")):
        r, out = go(state, plan, {"JUDGE_KEY": KEY, "JUDGE_URL": url})
        assert r.rc == 3, r.stdout + r.stderr
        err = r.json["error"]
        assert "TESTSECRET" not in r.stdout + r.stderr and KEY not in r.stdout + r.stderr, err
        assert shown in err and "HTTP 404" in err and "POST <redacted>" not in err, err


def test_a_judge_that_answers_the_probe_passes_pre_flight(app, state, judge_server):
    app.handler = app_handler
    judge_server.handler = openai_handler()
    plan = judged_plan(state, app, {"provider": "openai", "model": "gpt-x", "base_url": judge_server.url + "/v1",
                                    "api_key": "${JUDGE_KEY}"})
    r, out = go(state, plan, {"JUDGE_KEY": KEY})
    assert r.rc == 0, r.stdout + r.stderr
    probe = json.loads((out / "manifest.yaml").read_text())["judge"]["probe"]
    assert probe["ok"] is True and probe["status"] == 200


def test_a_mid_run_refusal_names_url_status_and_key_variable(app, state, judge_server):
    app.handler = app_handler
    inner = openai_handler()
    calls = []

    def handler(req):
        calls.append(req)
        if len(calls) == 1:
            return inner(req)  # the probe is answered; then the key is revoked
        return Reply(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
    judge_server.handler = handler
    plan = judged_plan(state, app, {"provider": "openai", "model": "gpt-x", "base_url": judge_server.url + "/v1",
                                    "api_key": "${JUDGE_KEY}"}, cases=[rcase("c-1", "full")])
    r, out = go(state, plan, {"JUDGE_KEY": KEY})
    assert r.rc == 0, r.stdout + r.stderr
    error = json.loads((cases_view(out) / "c-1" / "judge.json").read_text())["rubrics"][0]["nodes"][0]["calls"][0]["error"]
    assert f"POST {judge_server.url}/v1/chat/completions" in error, error
    assert "HTTP 401" in error and "$JUDGE_KEY" in error and KEY not in error


@pytest.mark.parametrize("provider, base, reply, said", [
    ("openai", "/v1", Reply(200, raw=b"<!doctype html><html><body>Welcome to nginx!</body></html>",
                             headers={"Content-Type": "text/html"}), "a body that is not JSON"),
    ("anthropic", "", Reply(200, raw=b""), "an empty body"),
    ("openai", "/v1", Reply(200, {"status": "ok"}), "a JSON body, not an OpenAI Chat Completions reply"),
])
def test_a_2xx_that_is_not_the_wire_format_is_exit_3_at_pre_flight(app, state, judge_server, provider, base, reply,
                                                                    said):
    """A base_url naming a web server, a UI or a health endpoint answers 200 to any POST: the probe read
    that as a healthy judge (manifest `probe.ok: true`), and every node was then an unreadable reply.
    The probe asks for the configured provider's wire format, not just a 2xx."""
    app.handler = app_handler
    judge_server.handler = lambda req: reply
    plan = judged_plan(state, app, {"provider": provider, "model": "m", "base_url": judge_server.url + base,
                                    "api_key": "${JUDGE_KEY}"})
    r, out = go(state, plan, {"JUDGE_KEY": KEY})
    assert r.rc == 3, r.stdout + r.stderr
    err = r.json["error"]
    assert "HTTP 200" in err and said in err and "judge/judge.yaml base_url" in err, err
    assert r.json.get("key") == "judge.base_url", r.json
    assert judge_server.count() == 1 and app.count(method="POST") == 0   # no case was sent
    assert KEY not in r.stdout + r.stderr
