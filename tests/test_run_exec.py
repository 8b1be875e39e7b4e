"""run_cases.py end to end against a fake app on a real port: the tree, retries and the
infra taxonomy, skips, canaries, holdout, repeats, layers, secrets, function mode."""

from __future__ import annotations

import json
import textwrap

import pytest

from fakeapp import RUN_ID, FakeApp, Reply, adapter, app, case, default_handler, make_plan, run_runner, state
from helpers import run_script
from rundir_util import cases_view

pytestmark = pytest.mark.slow


def go(state, plan, *args, env=None, subprocess=False):
    """Run the plan; in-process by default (fast), as a real subprocess when asked."""
    path = state / "work" / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    argv = ("--plan", path, "--out", out, "--progress", "never", *args)
    r = run_script("run_cases", *argv, env=env) if subprocess else run_runner(*argv, env=env)
    return r, out


def verify(out):
    return run_runner("--verify", out)


def verdict(out, cid):
    return json.loads((cases_view(out) / cid / "verdict.json").read_text())


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def results(out):
    return json.loads((out / "results.json").read_text())


# ---------------------------------------------------------------- the tree
def test_successful_run_writes_the_exact_tree(app, state):
    plan = make_plan(state, [case("c-1", "hello"), case("c-2", "bye", expect={"route": "billing"}),
                             case("c-3", "x", expect={"answer": {"must_contain": ["x"]}, "result": {"scalar": 3}})],
                     app_url=app.url)
    r, out = go(state, plan, subprocess=True)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.json == {"run_id": RUN_ID, "status": "ok", "exit_code": 0, "out": str(out), "order": "plan"}
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["manifest.yaml", "results.json", "verdicts.jsonl", "verdicts_for_stats.jsonl", "run.log", "cases.jsonl"])
    for cid in ("c-1", "c-2"):
        assert sorted(p.name for p in (cases_view(out) / cid).iterdir()) == sorted(
            ["request.json", "response.json", "expect.json", "answer.txt", "verdict.json"])
    assert (cases_view(out) / "c-3" / "actual.json").exists()
    assert not list(state.rglob("*.tmp")) and not list(state.rglob(".*.tmp"))
    assert not (state / "reports" / f".{RUN_ID}.lock").exists()
    assert not (state / "reports" / ".gitignore").exists()
    rows = jsonl(out / "verdicts.jsonl")
    assert [r["case_id"] for r in rows] == ["c-1", "c-2", "c-3"]
    assert all(isinstance(v, str) for v in rows[0]["layers"].values())
    stats = jsonl(out / "verdicts_for_stats.jsonl")
    assert all(set(s) == {"case_id", "verdict"} and s["verdict"] in ("pass", "fail") for s in stats)
    assert stats == [{"case_id": r["case_id"], "verdict": r["verdict"]} for r in rows if r["verdict"] in ("pass", "fail")]
    events = [e["event"] for e in jsonl(out / "run.log")]
    assert events[0] == "preflight" and events[-1] == "finalize" and events.count("case_done") == 3
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["k"] == 1 and len(manifest["plan_sha256"]) == 64 and manifest["cases"][0]["id"] == "c-1"
    # A trace-less run: every sent case says so, with the pre-flight reason.
    assert manifest["traces"]["collected"] is False and manifest["traces"]["reason"]
    assert verdict(out, "c-1")["trace"] == {"collected": False, "status": "not_collected", "trace_id": None,
                                            "correlation": None, "reason": manifest["traces"]["reason"]}
    assert verify(out).rc == 0


def test_pii_gitignore(app, state):
    ad = adapter(app.url)
    ad["data"]["may_contain_pii"] = True
    r, out = go(state, make_plan(state, [case("c-1")], adapter_doc=ad))
    assert r.rc == 0
    assert (state / "reports" / ".gitignore").read_text() == "*/cases/\n*/cases.jsonl\n"


# ---------------------------------------------------------------- secrets
def test_no_secret_reaches_disk(app, state):
    app.handler = lambda req: Reply(200, {"message": "ok " + json.dumps(req.headers)})  # an app that echoes
    ad = adapter("${FAKE_URL}", endpoint="POST /api/${FAKE_PATH}",
                 auth={"type": "bearer", "token_env": "FAKE_TOKEN"},
                 headers={"X-Api-Key": "${FAKE_KEY}", "X-Plain": "visible"},
                 request_body='{"message": "<user turn>", "key": "${FAKE_BODY}"}',
                 identity_map={"role": "X-Role"})
    env = {"FAKE_URL": app.url, "FAKE_PATH": "chat-s3cr3tpath", "FAKE_TOKEN": "tok-s3cr3t-123",
           "FAKE_KEY": "key-s3cr3t-456", "FAKE_BODY": "body-s3cr3t-789"}
    plan = make_plan(state, [case("c-1", identity={"role": "admin"})], adapter_doc=ad)
    r, out = go(state, plan, env=env, subprocess=True)
    assert r.rc == 0, r.stdout
    post = app.posts()[0]
    assert post.path == "/api/chat-s3cr3tpath" and post.headers["Authorization"] == "Bearer tok-s3cr3t-123"
    assert post.json["key"] == "body-s3cr3t-789" and post.headers["X-Role"] == "admin"
    for path in list(state.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            for secret in env.values():
                if secret != app.url:
                    assert secret.encode() not in data, (path, secret)
    req = json.loads((cases_view(out) / "c-1" / "request.json").read_text())
    assert req["url"] == "${FAKE_URL}/api/${FAKE_PATH}"
    assert req["headers"]["Authorization"] == "<redacted>" and req["headers"]["X-Api-Key"] == "<redacted>"
    assert req["headers"]["X-Plain"] == "visible" and req["body"]["key"] == "${FAKE_BODY}"
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["identity_headers"] == ["X-Role"] and "admin" not in json.dumps(manifest["identity_headers"])


# ---------------------------------------------------------------- retries and the infra taxonomy
def test_500_storm_is_infra_error_with_repeated_5xx(app, state):
    app.handler = lambda req: Reply(200, {"ok": True}) if req.method == "GET" else Reply(503, "overloaded")
    plan = make_plan(state, [case("c-1")], app_url=app.url)
    r, out = go(state, plan)
    assert r.rc == 0, r.stdout
    v = verdict(out, "c-1")
    assert v["verdict"] == "infra_error" and v["attempts"] == 3 and v["retry_count"] == 2
    assert v["repeated_5xx"] == {"status": 503, "attempts": 3}
    assert v["layers"]["http"]["verdict"] == "infra_error" and v["layers"]["answer"]["verdict"] == "n/a"
    assert json.loads((cases_view(out) / "c-1" / "response.json").read_text())["retry_count"] == 2
    s = results(out)["summary"]
    assert s["infra_errors"] == 1 and s["passes"] + s["failures"] == 0 and s["repeated_5xx"] == 1
    assert s["infra_rate"] == 1.0
    assert len(app.posts()) == 3
    assert v["trace"]["status"] == "not_collected" and v["trace"]["collected"] is False and v["trace"]["reason"]


def test_a_case_the_app_answers_with_the_same_500_every_time_closes_the_gate_under_the_infra_bar(app, state):
    """Before: one case in 25 that crashed the app (the same 500 and body on every attempt) was infra
    under --max-infra-rate's 5% and the gate opened on an app that fails on that input. A transient
    error differs between attempts; the same one each time is the app's own."""
    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        if "crash me" in json.dumps(req.json):
            return Reply(500, {"error": "KeyError: 'invoice'"})
        return default_handler(req)   # every other case passes
    app.handler = handler
    cases = [case(f"c-{i:02d}") for i in range(24)] + [case("c-crash", "crash me")]
    r, out = go(state, make_plan(state, cases, app_url=app.url))
    assert r.rc == 0, r.stdout
    assert verdict(out, "c-crash")["repeated_5xx"] == {"status": 500, "attempts": 3}
    g = run_script("gate", out, "--json")
    assert g.rc == 1, g.stdout
    assert results(out)["summary"]["gating_failures"] == 0 and results(out)["summary"]["infra_rate"] == 0.04
    said = [x for x in g.json["reasons"] if "same 5xx status and body on every attempt" in x]
    assert said and "c-crash (500 x3)" in said[0] and "the app's own error" in said[0], g.json["reasons"]


def test_a_case_that_expects_the_apps_500_gets_it_once_and_passes(app, state):
    """A case about the app's error handling expects its 500 (expect.http.status): that answer is the
    one the case asks for, never retried into infra (nor, answered the same each time, read as a crash)."""
    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(500, {"message": "sorry, that request failed"})
    app.handler = handler
    expect = {"http": {"status": 500}, "answer": {"must_contain": ["that request failed"]}}
    r, out = go(state, make_plan(state, [case("c-err", expect=expect)], app_url=app.url))
    assert r.rc == 0, r.stdout
    v = verdict(out, "c-err")
    assert (v["verdict"], v["attempts"], v["repeated_5xx"]) == ("pass", 1, None), v
    assert v["layers"]["http"]["verdict"] == "pass" and len(app.posts()) == 1
    assert run_script("gate", out).rc == 0


def test_a_case_that_expects_the_apps_500_at_k3_is_no_repeated_5xx(app, state):
    """At k=3 the case that expects its 500 is answered once per repeat: three of the same 500 are its
    answers, not a crash (it was marked repeated_5xx and counted on the gate's "infra case(s) got the
    same 5xx" line; a holdout run, which closes on the count, closed on it)."""
    app.handler = lambda req: (Reply(200, {"ok": True}) if req.method == "GET"
                               else Reply(500, {"message": "sorry, that request failed"}))
    expect = {"http": {"status": 500}, "answer": {"must_contain": ["that request failed"]}}
    r, out = go(state, make_plan(state, [case("c-err", expect=expect)], app_url=app.url, k=3), subprocess=True)
    assert r.rc == 0, r.stdout
    v = verdict(out, "c-err")
    assert (v["verdict"], v["attempts"], v["repeated_5xx"]) == ("pass", 3, None), v
    assert results(out)["summary"]["repeated_5xx"] == 0
    g = run_script("gate", out)
    assert g.rc == 0 and "same 5xx" not in g.stdout, g.stdout


def test_a_rate_limited_503_on_every_attempt_is_not_the_apps_crash(app, state):
    """A proxy's 503 with Retry-After (busy: come back later) the same on every attempt says the app is
    throttled, not broken: under --max-infra-rate it is infra, never the crash that closes the gate."""
    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        if "busy" in json.dumps(req.json):
            return Reply(503, "upstream rate limit, retry later", retry_after=1)
        return default_handler(req)
    app.handler = handler
    cases = [case(f"c-{i:02d}") for i in range(24)] + [case("c-busy", "busy")]
    plan = make_plan(state, cases, app_url=app.url,
                     execution={"max_attempts": 3, "backoff_s": [0, 0], "rate_limit_wait_s": 2.5})
    r, out = go(state, plan, subprocess=True)
    assert r.rc == 0, r.stdout
    v = verdict(out, "c-busy")
    assert v["verdict"] == "infra_error" and v["attempts"] == 3 and v["repeated_5xx"] is None, v
    g = run_script("gate", out, "--max-infra-rate", "0.05")
    assert g.rc == 0, g.stdout


def test_differing_5xx_is_not_repeated_5xx(app, state):
    app.queue(Reply(500, "a"), Reply(502, "b"), Reply(500, "a"))
    r, out = go(state, make_plan(state, [case("c-1")], app_url=app.url))
    assert verdict(out, "c-1")["verdict"] == "infra_error" and verdict(out, "c-1")["repeated_5xx"] is None
    g = run_script("gate", out, "--json", "--max-infra-rate", "1")
    assert not [x for x in g.json["reasons"] if "same 5xx" in x], g.json["reasons"]   # a transient error: infra only


def test_429_with_retry_after_then_success(app, state):
    app.queue(Reply(429, "slow down", retry_after=0))
    app.handler = lambda req: Reply(200, {"message": "hello there"})
    r, out = go(state, make_plan(state, [case("c-1", "hello")], app_url=app.url))
    v = verdict(out, "c-1")
    assert v["verdict"] == "pass" and v["attempts"] == 2 and v["retry_count"] == 1
    retry = [e for e in jsonl(out / "run.log") if e["event"] == "retry"]
    assert retry and retry[0]["outcome"] == "HTTP 429" and retry[0]["wait_s"] == 0.1   # RATE_LIMIT_MIN_WAIT_S


def test_an_app_that_says_retry_after_0_every_time_ends_as_infra(app, state):
    """A throttle that answers 429 with `Retry-After: 0` on every request spent none of the rate-limit
    budget: the case was retried forever and the run never ended. Each retry now waits (and spends) 0.1 s."""
    app.handler = lambda req: Reply(200, {"ok": True}) if req.method == "GET" else Reply(429, "slow down", retry_after=0)
    plan = make_plan(state, [case("c-1")], app_url=app.url,
                     execution={"max_attempts": 3, "backoff_s": [0, 0], "rate_limit_wait_s": 0.5})
    r, out = go(state, plan, subprocess=True)
    assert r.rc == 0, r.stdout + r.stderr
    v = verdict(out, "c-1")
    assert v["verdict"] == "infra_error" and v["infra_reason"].startswith("rate limited: HTTP 429 on "), v
    assert 3 <= len(app.posts()) <= 7, len(app.posts())


def test_400_is_an_answer_sent_once(app, state):
    app.handler = lambda req: Reply(200, {"ok": 1}) if req.method == "GET" else Reply(400, {"message": "bad"})
    r, out = go(state, make_plan(state, [case("c-1", "hello")], app_url=app.url))
    v = verdict(out, "c-1")
    assert v["verdict"] == "fail" and v["attempts"] == 1 and v["layers"]["http"]["verdict"] == "fail"
    assert len(app.posts()) == 1
    s = results(out)["summary"]
    assert s["failures"] == 1 and s["infra_errors"] == 0


def test_expected_4xx_passes_http(app, state):
    app.handler = lambda req: Reply(200, {"ok": 1}) if req.method == "GET" else Reply(400, {"message": "out of scope"})
    c = case("c-1", expect={"http": {"status": 400}, "answer": {"must_contain": ["out of scope"]}})
    r, out = go(state, make_plan(state, [c], app_url=app.url))
    assert verdict(out, "c-1")["verdict"] == "pass"


def test_dropped_connection_is_a_crash(app, state):
    app.queue(Reply(drop=True))
    app.handler = lambda req: Reply(200, {"message": "hello there"})
    r, out = go(state, make_plan(state, [case("c-1", "hello"), case("c-2", "hello")], app_url=app.url))
    v = verdict(out, "c-1")
    assert v["crashed"] is True and v["verdict"] == "pass" and v["attempts"] == 2
    s = results(out)["summary"]
    assert s["crashes"] == 1 and s["crash_rate"] == 0.5


def test_always_dropped_is_infra_error_and_crash(app, state):
    app.handler = lambda req: Reply(200, {"ok": 1}) if req.method == "GET" else Reply(drop=True)
    r, out = go(state, make_plan(state, [case("c-1")], app_url=app.url))
    v = verdict(out, "c-1")
    assert v["verdict"] == "infra_error" and v["crashed"] is True and v["repeated_5xx"] is None


def test_hang_past_timeout_is_infra_error(app, state):
    app.handler = lambda req: Reply(200, {"ok": 1}) if req.method == "GET" else Reply(200, {"message": "late"}, delay=1.0)
    plan = make_plan(state, [case("c-1")], app_url=app.url,
                     execution={"timeout_s": 0.2, "max_attempts": 2, "backoff_s": [0]})
    r, out = go(state, plan)
    v = verdict(out, "c-1")
    assert v["verdict"] == "infra_error" and "timeout" in v["infra_reason"] and v["crashed"] is False


@pytest.mark.parametrize("reply, note", [
    (Reply(200, raw=b'{"message": "\xff\xfe bad"}'), "UTF-8"),
    (Reply(200, raw=b"[" * 10000 + b"]" * 10000), "nested"),
    (Reply(200, "{ this is not json"), "not JSON"),
])
def test_hostile_bodies_are_unscored_not_crashes(app, state, reply, note):
    app.handler = lambda req: Reply(200, {"ok": 1}) if req.method == "GET" else reply
    r, out = go(state, make_plan(state, [case("c-1")], app_url=app.url))
    assert r.rc == 0, r.stdout + r.stderr
    v = verdict(out, "c-1")
    assert v["verdict"] == "unscored" and v["layers"]["http"]["verdict"] == "pass"
    assert note in v["layers"]["answer"]["reason"]


def test_20mb_body_is_bounded(app, state):
    big = b'{"message": "' + b"a" * (21 * 1024 * 1024) + b'"}'
    app.handler = lambda req: Reply(200, {"ok": 1}) if req.method == "GET" else Reply(200, raw=big)
    r, out = go(state, make_plan(state, [case("c-1", "a")], app_url=app.url))
    assert r.rc == 0
    v = verdict(out, "c-1")
    assert v["verdict"] == "unscored" and "exceeded" in v["layers"]["answer"]["reason"]


# ---------------------------------------------------------------- aborts
def test_infra_abort_exit_5(app, state):
    app.handler = lambda req: Reply(200, {"ok": 1}) if req.method == "GET" else Reply(500, "x")
    cases = [case(f"c-{i:02d}") for i in range(20)]
    plan = make_plan(state, cases, app_url=app.url, execution={"max_attempts": 1, "backoff_s": []})
    r, out = go(state, plan)
    assert r.rc == 5, r.stdout
    assert r.json["status"] == "aborted_infra"
    res = results(out)
    assert res["summary"]["status"] == "aborted_infra" and res["exit_code"] == 5
    finished = len(list((cases_view(out)).iterdir()))
    assert 8 <= finished < 20
    assert len(jsonl(out / "verdicts.jsonl")) == finished
    assert any(e["event"] == "abort" for e in jsonl(out / "run.log"))
    assert verify(out).rc == 0


def test_canary_failure_aborts_before_other_cases_exit_4(app, state):
    app.handler = lambda req: Reply(200, {"message": "wrong"})
    cases = [case("c-1", "hello"), case("k-1", "hello", split=["smoke", "canary"]), case("c-2", "hello")]
    r, out = go(state, make_plan(state, cases, app_url=app.url))
    assert r.rc == 4 and r.json["status"] == "aborted_canary"
    assert [p.name for p in (cases_view(out)).iterdir()] == ["k-1"]
    assert len(app.posts()) == 1
    assert results(out)["summary"]["canaries"] == {"n": 1, "passed": 0, "failed": 1, "not_verified": 0}


def test_canaries_run_first_and_count_apart(app, state):
    cases = [case("c-1", "hello"), case("k-1", "canary", split=["smoke", "canary"])]
    r, out = go(state, make_plan(state, cases, app_url=app.url))
    assert r.rc == 0
    assert app.posts()[0].json["message"] == "canary"
    s = results(out)["summary"]
    assert s["n"] == 1 and s["passes"] == 1 and s["attempted"] == 2
    assert s["canaries"] == {"n": 1, "passed": 1, "failed": 0, "not_verified": 0}
    assert verdict(out, "k-1")["gating"] is False


# ---------------------------------------------------------------- skips
def test_safety_skips_are_never_sent(app, state):
    ad = adapter(app.url)
    ad["environment"] = {"kind": "live-readonly", "safe_to_attack": False}
    ad["tools"] = [{"name": "wire_money", "side_effects": "never-live"}]
    cases = [case("c-1", "fine"),
             case("c-adv", "attack", category="adversarial-refusal"),
             case("c-tool", "pay", expect={"tools": {"subset": ["wire_money"]}}),
             case("c-turns", "x", input={"turns": [{"user": "a"}, {"user": "b"}]}),
             case("c-two", "x", input={"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}),
             case("c-ident", "x", identity={"role": "admin"}),
             case("c-session", "x", input={"messages": [{"role": "user", "content": "x"}], "session": "sticky"})]
    r, out = go(state, make_plan(state, cases, adapter_doc=ad))
    assert r.rc == 0, r.stdout
    assert [p.json["message"] for p in app.posts()] == ["fine"]
    for cid, needle in [("c-adv", "safe_to_attack"), ("c-tool", "never-live"), ("c-turns", "invocation.conversation"),
                        ("c-two", "exactly one user message"), ("c-ident", "identity not mapped"),
                        ("c-session", "input.session")]:
        v = verdict(out, cid)
        assert v["verdict"] == "skipped" and needle in v["skip_reason"], cid
        assert all(layer["verdict"] == "n/a" for layer in v["layers"].values())
        assert v["sent"] is False and "trace" not in v      # the trace block is for sent cases only
        assert sorted(p.name for p in (cases_view(out) / cid).iterdir()) == ["expect.json", "verdict.json"]
    s = results(out)["summary"]
    assert s["n"] == 7 and s["skipped"] == 6 and s["attempted"] == 1 and s["infra_rate"] == 0.0
    assert verify(out).rc == 0


# ---------------------------------------------------------------- holdout
def test_holdout_seal_and_one_ledger_line(app, state):
    app.handler = lambda req: Reply(200, {"message": "hello there", "route": "billing"})
    cases = [case("hold-secret-1", "hello", split=["holdout"]),
             case("hold-secret-2", "nope", split=["holdout"], expect={"answer": {"must_contain": ["nope"]},
                                                                      "route_acceptable": ["billing"], "route": "x"})]
    plan = make_plan(state, cases, app_url=app.url, mode="holdout", selecting_split="holdout",
                     run_id="holdout-20261129T101500Z")
    r, out = go(state, plan, subprocess=True)
    assert r.rc == 0, r.stdout
    text = (out / "results.json").read_text()
    assert "hold-secret" not in text
    res = json.loads(text)
    assert res["cases"] == [] and res["summary"]["holdout"]["n"] == 2
    assert res["summary"]["holdout"]["passes"] == 1 and res["summary"]["holdout"]["failures"] == 1
    for name in ("run.log", "routing_report.json", "routing_results.jsonl"):
        assert "hold-secret" not in (out / name).read_text(), name
    assert json.loads((out / "routing_report.json").read_text())["accepted_alternates"][0]["case_id"] == "<holdout #2>"
    assert "hold-secret" not in r.stderr + r.stdout
    ledger = jsonl(state / "datasets" / "holdout-looks.jsonl")
    assert len(ledger) == 1 and ledger[0]["run_id"] == plan["run_id"]
    assert "holdout look 1" in r.stderr
    assert len(jsonl(out / "verdicts.jsonl")) == 2  # the durable record stats.py pairs
    # an edited holdout record: --verify names it by its order among the holdout cases, never by id
    lines = (out / "cases.jsonl").read_bytes().splitlines(keepends=True)
    doc = json.loads(lines[-1])
    doc["files"]["answer.txt"] = "something else entirely"
    lines[-1] = (json.dumps(doc) + "\n").encode()
    (out / "cases.jsonl").write_bytes(b"".join(lines))
    v = verify(out)
    assert v.rc == 6 and any(p.startswith("cases/<holdout #") for p in v.json["missing_artifacts"]), v.stdout
    assert "hold-secret" not in v.stdout + v.stderr


def test_smoke_run_adds_no_ledger_line(app, state):
    r, out = go(state, make_plan(state, [case("c-1")], app_url=app.url))
    assert not (state / "datasets" / "holdout-looks.jsonl").exists()


# ---------------------------------------------------------------- repeats and reliability
def test_k3_repeats_and_reliability(app, state):
    calls = {"n": 0}

    def flaky(req):
        if req.method == "GET":
            return Reply(200, {"ok": 1})
        if req.json["message"] == "flaky":
            calls["n"] += 1
            return Reply(200, {"message": "re: flaky" if calls["n"] != 2 else "nope"})
        return Reply(200, {"message": f"re: {req.json['message']}"})
    app.handler = flaky
    cases = [case("c-1", "steady", split=["full"]), case("c-2", "flaky", split=["full"])]
    plan = make_plan(state, cases, app_url=app.url, mode="regression", selecting_split="full", k=3,
                     run_id="regression-20261129T101500Z")
    r, out = go(state, plan)
    assert r.rc == 0, r.stdout
    v1, v2 = verdict(out, "c-1"), verdict(out, "c-2")
    assert v1["verdict"] == "pass" and [x["verdict"] for x in v1["repeats"]] == ["pass"] * 3
    assert v2["verdict"] == "fail" and [x["verdict"] for x in v2["repeats"]] == ["pass", "fail", "pass"]
    for n in (1, 2, 3):
        assert sorted(p.name for p in (cases_view(out) / "c-2" / "repeats" / str(n)).iterdir()) == [
            "request.json", "response.json", "verdict.json"]
    assert len(jsonl(out / "repeats.jsonl")) == 6
    rel = json.loads((out / "reliability.json").read_text())
    assert rel["k"] == 3 and rel["excluded_cases"] == []
    assert rel["pass_hat_k"] == pytest.approx(0.5) and rel["pass_at_k"] == pytest.approx(1.0)
    # the case dir's top-level files come from the repeat whose verdict equals the folded verdict
    assert (cases_view(out) / "c-2" / "answer.txt").read_text() == "nope"
    assert verify(out).rc == 0


def test_k1_has_no_repeat_artifacts(app, state):
    r, out = go(state, make_plan(state, [case("c-1")], app_url=app.url))
    assert not (out / "repeats.jsonl").exists() and not (out / "reliability.json").exists()
    assert not (cases_view(out) / "c-1" / "repeats").exists()


# ---------------------------------------------------------------- layers
def test_layer_table_na_unscorable_unscored(app, state):
    app.handler = lambda req: Reply(200, {"message": "hello there", "domain": "billing"})
    c = case("c-1", "hello", expect={
        "answer": {"must_contain": ["hello"], "rules": ["r-1"], "rubric": "tone-v1"},
        "result": {"scalar": 1}, "state": {"x": 1}, "tools": {"subset": ["lookup"]},
        "authz": {"forbidden_tools": ["delete"]}})
    matrix = {"execution": {"enabled": False, "blocked_by": "no oracle"}}
    r, out = go(state, make_plan(state, [c], app_url=app.url, matrix=matrix))
    L = verdict(out, "c-1")["layers"]
    assert L["routing"]["verdict"] == "n/a"
    assert L["execution"] == {"verdict": "unscorable", "blocked_by": "no oracle"}
    assert L["trajectory"]["verdict"] == "unscored" and "traces not collected" in L["trajectory"]["reason"]
    assert L["loops"]["verdict"] == "n/a"
    assert L["rules"] == {"verdict": "unscored", "reason": "business rules are evaluated by the skill"}
    assert L["state"] == {"verdict": "unscored", "reason": "reserved"}
    assert L["judged"] == {"verdict": "unscored", "reason": "unjudged (mode: smoke)"}
    assert L["answer"]["verdict"] == "pass"
    assert (cases_view(out) / "c-1" / "actual.json").exists()
    s = results(out)["summary"]
    assert s["unscorable_layers"]["execution"]["blocked_by"] == "no oracle"
    assert s["unjudged"] == {"unjudged (mode: smoke)": 1}


def test_judged_reason_follows_the_calibration_sidecar(app, state):
    c = case("c-1", "hello", split=["full"], expect={"answer": {"must_contain": ["hello"], "rubric": "tone-v1"}})
    plan = make_plan(state, [c], app_url=app.url, mode="targeted", selecting_split="full",
                     run_id="targeted-20261129T101500Z")
    r, out = go(state, plan)
    assert verdict(out, "c-1")["layers"]["judged"]["reason"] == "unjudged (judge not calibrated)"
    (state / "judge").mkdir()
    (state / "judge" / "calibration.json").write_text(json.dumps({"rubrics": {"tone-v1": {"calibrated": True}}}))
    plan = dict(plan, run_id="targeted-20261129T101600Z", paths=dict(plan["paths"], judge_calibration="judge/calibration.json"))
    r, out = go(state, plan)
    assert verdict(out, "c-1")["layers"]["judged"]["reason"] == "unjudged (deferred to skill)"
    assert verdict(out, "c-1")["verdict"] == "pass"


def test_http_alone_never_passes_a_case(app, state):
    app.handler = lambda req: Reply(200, {"other": "x"})
    r, out = go(state, make_plan(state, [case("c-1", "hello")], app_url=app.url))
    v = verdict(out, "c-1")
    assert v["layers"]["http"]["verdict"] == "pass" and v["layers"]["answer"]["verdict"] == "unscored"
    assert v["verdict"] == "unscored"


def test_scorer_error_is_an_error_layer_and_exit_7(app, state):
    bad = case("c-bad", "hello", expect={"answer": {"must_contain": "hello"}})  # a bare string, not a list
    r, out = go(state, make_plan(state, [bad, case("c-ok", "hello")], app_url=app.url))
    assert r.rc == 7, r.stdout
    assert verdict(out, "c-bad")["layers"]["answer"]["verdict"] == "error"
    assert verdict(out, "c-bad")["verdict"] == "unscored"
    assert verdict(out, "c-ok")["verdict"] == "pass"
    res = results(out)
    assert res["summary"]["scorer_errors"] == 1 and res["exit_code"] == 7 and res["summary"]["status"] == "ok"


def test_routing_only_from_declared_sources(app, state):
    app.handler = lambda req: Reply(200, {"message": "m", "route": "billing"}) if req.method != "GET" else Reply(200, {})
    ad = adapter(app.url)
    ad["invocation"].pop("route_from_response")
    cases = [case("c-1", expect={"route": "billing"}), case("c-2", expect={"route": "shifts"})]
    r, out = go(state, make_plan(state, cases, adapter_doc=ad))
    v = verdict(out, "c-1")["layers"]["routing"]
    assert v["verdict"] == "unscored" and "never inferred" in v["reason"]
    assert not (out / "routing_results.jsonl").exists()
    # declared: from the response, with observed_from recorded
    plan = make_plan(state, cases, app_url=app.url, run_id="smoke-20261129T101600Z")
    r, out = go(state, plan)
    assert verdict(out, "c-1")["layers"]["routing"]["verdict"] == "pass"
    assert verdict(out, "c-1")["layers"]["routing"]["observed_from"] == "response"
    assert verdict(out, "c-2")["layers"]["routing"]["verdict"] == "fail"
    rows = jsonl(out / "routing_results.jsonl")
    assert [r["case_id"] for r in rows] == ["c-1", "c-2"]
    report = json.loads((out / "routing_report.json").read_text())
    assert report["n"] == 2 and report["accuracy"] == 0.5


def test_route_from_status(app, state):
    app.handler = lambda req: Reply(200, {}) if req.method == "GET" else Reply(400, {"message": "no"})
    ad = adapter(app.url, route_from_status={"200": "answered", "400": "__oos__"})
    ad["invocation"].pop("route_from_response")
    c = case("c-1", expect={"route": "__oos__", "http": {"status": 400}})
    r, out = go(state, make_plan(state, [c], adapter_doc=ad))
    layer = verdict(out, "c-1")["layers"]["routing"]
    assert layer["verdict"] == "pass" and layer["observed_from"] == "status"


def test_execution_actual_only_from_declared_sources(app, state):
    app.handler = lambda req: Reply(200, {}) if req.method == "GET" else Reply(200, {"message": "m", "data": {"value": 0}})
    c = case("c-1", expect={"result": {"scalar": 0}})
    r, out = go(state, make_plan(state, [c], app_url=app.url))
    assert json.loads((cases_view(out) / "c-1" / "actual.json").read_text())["missing"] is True
    assert verdict(out, "c-1")["layers"]["execution"]["verdict"] == "unscored"
    ad = adapter(app.url, result_from_response="data.value")
    r, out = go(state, make_plan(state, [c], adapter_doc=ad, run_id="smoke-20261129T101600Z"))
    assert json.loads((cases_view(out) / "c-1" / "actual.json").read_text())["scalar"] == 0
    assert verdict(out, "c-1")["layers"]["execution"]["verdict"] == "pass"


def test_catastrophic_regex_is_bounded_and_isolated(app, state):
    app.handler = lambda req: Reply(200, {"message": "a" * 40 + "!"})
    bad = case("c-re", expect={"answer": {"must_contain": ["/(a+)+$/"]}})
    cases = [bad] + [case(f"c-{i}", "a") for i in range(4)]
    for c in cases[1:]:
        c["expect"] = {"answer": {"must_contain": ["aaa"]}}
    ad = adapter(app.url, max_concurrency=4)
    r, out = go(state, make_plan(state, cases, adapter_doc=ad, scoring={"scorer_timeout_s": 0.5}))
    assert r.rc == 0, r.stdout
    assert verdict(out, "c-re")["verdict"] == "unscored"
    assert all(verdict(out, f"c-{i}")["verdict"] == "pass" for i in range(4))


# ---------------------------------------------------------------- function mode
def test_function_mode(state, tmp_path):
    app_root = state.parent
    (app_root / "fakeagent.py").write_text(textwrap.dedent("""
        def handle(body):
            msg = body["message"]
            if msg == "boom":
                raise RuntimeError("kaboom")
            if msg == "dict":
                return {"text": "dict hello", "status": 200}
            return "you said " + msg
    """))
    ad = adapter("http://unused", mode="function", entrypoint="fakeagent:handle")
    ad["invocation"].pop("response_body")
    cases = [case("c-1", "hello"), case("c-2", "boom"), case("c-3", "dict", expect={"answer": {"must_contain": ["dict hello"]}})]
    r, out = go(state, make_plan(state, cases, adapter_doc=ad), subprocess=True)
    assert r.rc == 0, r.stdout + r.stderr
    assert verdict(out, "c-1")["verdict"] == "pass"
    v2 = verdict(out, "c-2")
    assert v2["verdict"] == "infra_error" and "kaboom" in v2["infra_reason"] and v2["attempts"] == 3
    assert verdict(out, "c-3")["verdict"] == "pass"
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["invocation"]["timeout_enforced"] is True
    assert manifest["invocation"]["entrypoint"] == "fakeagent:handle"


def test_baseline_comparison_written(app, state):
    r, base = go(state, make_plan(state, [case("c-1"), case("c-2", "x")], app_url=app.url,
                                  run_id="smoke-20261128T101500Z"))
    assert r.rc == 0
    r, out = go(state, make_plan(state, [case("c-1"), case("c-2", "x")], app_url=app.url),
                "--baseline-verdicts", base / "verdicts_for_stats.jsonl")
    assert r.rc == 0, r.stdout
    comp = json.loads((out / "comparison.json").read_text())
    assert comp["n"] == 2 and comp["delta"] == 0
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["baseline_verdicts"]["run_id"] == "smoke-20261128T101500Z"
    assert verify(out).rc == 0


# ---------------------------------------------------------------- TLS, concurrency, progress
def test_self_signed_tls_fails_preflight_unless_insecure(state, tmp_path):
    from fakeapp import self_signed_cert
    pair = self_signed_cert(tmp_path)
    if pair is None:
        pytest.skip("openssl CLI not available")
    with FakeApp(tls=pair) as tls_app:
        r, out = go(state, make_plan(state, [case("c-1")], app_url=tls_app.url))
        assert r.rc == 3 and "CERTIFICATE_VERIFY_FAILED" in r.json["error"]
        assert tls_app.posts() == [] and not out.exists()
        tls_app.handler = lambda req: Reply(200, {"message": "hello there"})
        plan = make_plan(state, [case("c-1", "hello")], app_url=tls_app.url,
                         execution={"insecure_tls": True, "max_attempts": 1, "backoff_s": []})
        r, out = go(state, plan)
        assert r.rc == 0, r.stdout
        assert verdict(out, "c-1")["verdict"] == "pass"


def test_max_concurrency_is_honoured(app, state):
    import threading
    lock = threading.Lock()
    seen = {"now": 0, "max": 0}
    four_in = threading.Barrier(4, timeout=20)

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": 1})
        with lock:
            seen["now"] += 1
            seen["max"] = max(seen["max"], seen["now"])
        try:
            if req.json["message"] in ("m0", "m1", "m2", "m3"):
                four_in.wait()          # only returns once four requests are in flight together
        finally:
            with lock:
                seen["now"] -= 1
        return Reply(200, {"message": f"re: {req.json['message']}"})
    app.handler = handler
    cases = [case(f"c-{i}", f"m{i}") for i in range(12)]
    r, out = go(state, make_plan(state, cases, adapter_doc=adapter(app.url, max_concurrency=4)))
    assert r.rc == 0, r.stdout
    assert 4 == seen["max"]
    assert [json.loads(l)["case_id"] for l in (out / "verdicts.jsonl").read_text().splitlines()] == [c["id"] for c in cases]


def test_max_concurrency_1_sends_in_plan_order(app, state):
    order = []

    def handler(req):
        if req.method != "GET":
            order.append(req.json["message"])
        return Reply(200, {"message": "ok"})
    app.handler = handler
    cases = [case(f"c-{i}", f"m{i}") for i in range(8)]
    r, out = go(state, make_plan(state, cases, adapter_doc=adapter(app.url, max_concurrency=1)))
    assert r.rc == 0, r.stdout
    assert order == [f"m{i}" for i in range(8)]


def test_progress_lines_on_stderr_only(app, state):
    path = state / "work" / "plan.json"
    plan = make_plan(state, [case("c-1"), case("c-2")], app_url=app.url)
    path.write_text(json.dumps(plan))
    r = run_script("run_cases", "--plan", path, "--out", state / "reports" / RUN_ID, "--progress", "always")
    assert r.rc == 0
    assert "assay: 2/2 (2 cases + 0 canaries) | pass 2 fail 0 infra 0" in r.stderr and "ETA" in r.stderr
    assert json.loads(r.stdout)["status"] == "ok"   # stdout: JSON only


def test_app_dying_mid_run_is_infra_then_abort(app, state):
    import threading
    served = {"n": 0}

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": 1})
        served["n"] += 1
        if served["n"] == 3:                 # the app dies after this answer: new connections are refused
            threading.Thread(target=app.close, daemon=True).start()
        if served["n"] > 3:
            return Reply(drop=True)
        return Reply(200, {"message": f"re: {req.json['message']}"})
    app.handler = handler
    cases = [case(f"c-{i:02d}", f"m{i}") for i in range(14)]
    plan = make_plan(state, cases, app_url=app.url, execution={"max_attempts": 2, "backoff_s": [0], "timeout_s": 2})
    r, out = go(state, plan)
    assert r.rc == 5, r.stdout
    rows = [json.loads(l) for l in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [row["verdict"] for row in rows[:3]] == ["pass"] * 3
    assert {row["verdict"] for row in rows[3:]} == {"infra_error"}
    assert verify(out).rc == 0


def test_internal_error_is_exit_1_with_json(app, state):
    def handler(req):
        if req.method != "GET":   # sabotage a derived file the runner will replace, while the request is in flight
            target = state / "reports" / RUN_ID / "verdicts.jsonl"
            if target.is_file():
                target.unlink()
            target.mkdir(exist_ok=True)
            (target / "x").write_text("a directory in its place")
        return Reply(200, {"message": "hello there"})
    app.handler = handler
    r, out = go(state, make_plan(state, [case("c-1", "hello")], app_url=app.url), subprocess=True)
    assert r.rc == 1, r.stdout
    assert r.json["internal"] is True and "Traceback" in r.stderr
    assert json.loads((out / "results.json").read_text())["summary"]["status"] == "running"
    assert not (state / "reports" / f".{RUN_ID}.lock").exists()


def test_holdout_baseline_comparison_is_sealed(app, state):
    app.handler = lambda req: Reply(200, {"message": f"re: {req.json['message']}"} if req.method != "GET" else {})
    cases = [case("hold-secret-a", "a", split=["holdout"]), case("hold-secret-b", "b", split=["holdout"])]
    base_plan = make_plan(state, cases, app_url=app.url, mode="holdout", selecting_split="holdout",
                          run_id="holdout-20261128T101500Z")
    r, base = go(state, base_plan)
    assert r.rc == 0
    plan = make_plan(state, cases[:1], app_url=app.url, mode="holdout", selecting_split="holdout",
                     run_id="holdout-20261129T101500Z")
    r, out = go(state, plan, "--baseline-verdicts", base / "verdicts_for_stats.jsonl")
    assert r.rc == 0, r.stdout
    text = (out / "comparison.json").read_text()
    assert "hold-secret" not in text and json.loads(text)["n"] == 1


def test_hostile_case_shapes_are_skipped_not_crashes(app, state):
    cases = [case("c-1"), dict(case("c-2"), input="just text"), dict(case("c-3"), expect=["not", "a", "map"]),
             dict(case("c-4"), unit={"x": 1}, category=7)]
    r, out = go(state, make_plan(state, cases, app_url=app.url))
    assert r.rc == 0, r.stdout + r.stderr
    assert verdict(out, "c-2")["verdict"] == "skipped" and "input is not a mapping" in verdict(out, "c-2")["skip_reason"]
    assert verdict(out, "c-3")["verdict"] == "skipped" and "expect" in verdict(out, "c-3")["skip_reason"]
    assert verdict(out, "c-4")["unit"] is None and verdict(out, "c-4")["verdict"] == "pass"
    assert verify(out).rc == 0
