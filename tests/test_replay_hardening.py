"""Replay meets a hand-edited cache and a session id that happens to equal a secret's value:
a one-line JSON error naming the file, and a cache key that does not depend on redaction."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner
from rundir_util import case_json
from test_run_conversation import convo

pytestmark = pytest.mark.slow   # real runs and subprocesses: over ~7 s on a loaded machine

SECRET = "s3cr3t-sid-7f2a9c41"   # the app's bearer token, and (by accident) the session id it issues


def go(state, plan, *extra, run_id, env=None):
    plan = dict(plan, run_id=run_id)
    path = state / "work" / f"plan-{run_id}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / run_id
    return run_runner("--plan", path, "--out", out, "--progress", "never", *extra, env=env), out


def echo(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": f"echo: {req.json['message']}"})


def test_a_hand_edited_cache_index_is_a_named_error_not_a_traceback(tmp_path):
    state = make_state(tmp_path / "s")
    with FakeApp(echo) as app:
        plan = make_plan(state, [case("c-1", "hello", expect={"answer": {"must_contain": ["hello"]}})], app_url=app.url)
        rec, _ = go(state, plan, "--record", run_id="smoke-20261129T101500Z")
    assert rec.rc == 0, rec.stdout + rec.stderr
    index = next((state / "cache" / "v1" / "cases").glob("*/*.json"))
    index.write_text(json.dumps({"case_id": "c-1", "requests": "garbage"}), encoding="utf-8")
    plan["cases"][0]["input"]["messages"][0]["content"] = "hello!"   # a miss: the index is read
    rep, _ = go(state, plan, "--replay", run_id="smoke-20261129T101600Z")
    assert rep.rc == 2, rep.stdout + rep.stderr
    assert "Traceback" not in rep.stderr and "AttributeError" not in rep.stdout + rep.stderr
    lines = rep.stdout.strip().splitlines()
    err = json.loads(lines[-1])["error"]
    assert str(index) in err and "requests" in err and "record again" in err, err
    # an exchange entry edited by hand is the same named error
    exchange = next((state / "cache" / "v1" / "exchanges").glob("*/*.json"))
    exchange.write_text(json.dumps({"response": "garbage"}), encoding="utf-8")
    plan["cases"][0]["input"]["messages"][0]["content"] = "hello"
    rep, _ = go(state, plan, "--replay", run_id="smoke-20261129T101700Z")
    assert rep.rc == 2 and str(exchange) in json.loads(rep.stdout.strip().splitlines()[-1])["error"], rep.stdout


class SessionIsTheToken:
    """A server-id chat app that issues the session id SECRET (equal to its own bearer token)."""

    def __call__(self, req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        doc = req.json
        if doc.get("session") == SECRET:
            return Reply(200, {"message": "refunded INV-2", "route": "billing"})
        return Reply(200, {"message": "INV-2 is open", "route": "billing", "sid": SECRET})


def test_a_session_id_equal_to_a_secret_replays(tmp_path):
    state = make_state(tmp_path / "s")
    env = {"APP_TOKEN": SECRET}
    refund = convo("c-refund", {"user": "which of my invoices is open?", "expect": {"route": "billing"}},
                   "refund that one")
    with FakeApp(SessionIsTheToken()) as app:
        ad = adapter(app.url, request_body='{"message": "<user turn>", "session": "<session>"}',
                     conversation={"style": "server-id", "session_from": {"body": "sid"}},
                     auth={"type": "bearer", "token_env": "APP_TOKEN"})
        plan = make_plan(state, [refund], app_url=app.url, adapter_doc=ad)
        rec, rec_out = go(state, plan, "--record", run_id="smoke-20261129T101500Z", env=env)
        assert rec.rc == 0, rec.stdout + rec.stderr
        assert case_json(rec_out, "c-refund")["verdict"] == "pass"
    rep, rep_out = go(state, plan, "--replay", run_id="smoke-20261129T101600Z", env=env)
    assert rep.rc == 0, rep.stdout + rep.stderr
    got = case_json(rep_out, "c-refund")
    assert got["verdict"] == "pass", got
    for path in (state / "cache").rglob("*.json"):   # the secret never reached the cache
        assert SECRET not in path.read_text(encoding="utf-8"), path


def test_a_cache_that_cannot_be_written_is_named_never_a_traceback(tmp_path):
    """--record into a cache with a file where one of its directories should be (a stray `cache`
    file, a `v1/exchanges/<xx>` made by hand): it was a traceback (NotADirectoryError, FileExistsError)
    and an exit 1 after the app was called. Pre-flight says it before anything is sent (exit 3); one
    found mid-run stops the run (exit 5) naming the file, and --resume --record finishes a whole recording."""
    state = make_state(tmp_path / "s")
    cases = [case(f"c-{n}", f"hello {n}", expect={"answer": {"must_contain": ["hello"]}}) for n in (1, 2)]
    (state / "cache").write_text("not a directory", encoding="utf-8")
    with FakeApp(echo) as app:
        plan = make_plan(state, cases, app_url=app.url)
        first, _ = go(state, plan, "--record", run_id="smoke-20261129T101500Z")
        assert first.rc == 3, first.stdout + first.stderr
        assert app.count(path="/api/chat") == 0
        err = json.loads(first.stdout.strip().splitlines()[-1])["error"]
        assert f"the cache {state / 'cache'} cannot be written: {state / 'cache'} (Not a directory)" in err, err
        assert "move it aside" in err and "nothing was sent to the app" in err, err
        (state / "cache").unlink()
        shards = state / "cache" / "v1" / "exchanges"
        shards.mkdir(parents=True)
        for i in range(256):   # every exchange's directory is a file: found only when a case is recorded
            (shards / f"{i:02x}").write_text("x", encoding="utf-8")
        mid, out = go(state, plan, "--record", run_id="smoke-20261129T101600Z")
        assert mid.rc == 5 and "Traceback" not in mid.stderr, mid.stdout + mid.stderr
        err = json.loads(mid.stdout.strip().splitlines()[-1])["error"]
        assert f"cannot be written: {shards}/" in err and "(File exists)" in err and "--resume" in err, err
        for i in range(256):
            (shards / f"{i:02x}").unlink()
        path = state / "work" / "plan-smoke-20261129T101600Z.json"
        resumed = run_runner("--plan", path, "--out", out, "--resume", "--record", "--progress", "never")
        assert resumed.rc == 0, resumed.stdout + resumed.stderr
    rep, rep_out = go(state, plan, "--replay", str(out), run_id="smoke-20261129T101700Z")
    assert rep.rc == 0, rep.stdout + rep.stderr
    assert {c: case_json(rep_out, c)["verdict"] for c in ("c-1", "c-2")} == {"c-1": "pass", "c-2": "pass"}


class Invoices:
    """A client-id chat app: build 1 refunds the invoice it named open; build 2 refunds nothing."""

    def __init__(self):
        self.build, self.open = 1, {}

    def __call__(self, req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        sid, msg = req.json["session_id"], req.json["message"]
        if "open" in msg:
            self.open[sid] = f"INV-{self.build}"
            return Reply(200, {"message": f"INV-{self.build} is open"})
        return Reply(200, {"message": f"refunded {self.open.get(sid) if self.build == 1 else 'nothing'}"})


def test_a_case_whose_recording_stopped_halfway_is_never_replayed_from_two_recordings(tmp_path):
    """Run A records a conversation whole; run B (the app broken since) stops while writing the same
    case (killed, or its disk full): its turn 1 is in the cache, its turn 2 never was. `--replay` of the
    cache answered turn 1 with B's recording and turn 2 with A's: a conversation that never happened,
    scored PASS on the broken app. The case's index (written last) names the run whose recording is
    whole; an answer of another run is a replay miss naming both."""
    state = make_state(tmp_path / "s")
    app_impl = Invoices()
    conv = convo("c-a", "which invoice is open?", "refund that one", expect={"answer": {"must_contain": ["refunded INV-1"]}})
    with FakeApp(app_impl) as app:
        plan = make_plan(state, [conv], app_url=app.url,
                         adapter_doc=adapter(app.url, conversation={"style": "client-id", "memory": "session"}))
        rec, _ = go(state, plan, "--record", run_id="smoke-20261129T101500Z")
        assert rec.rc == 0, rec.stdout + rec.stderr
        turn2 = next(json.loads(p.read_text()) for p in (state / "cache" / "v1" / "exchanges").glob("*/*.json")
                     if json.loads(p.read_text())["position"] == 1)["key"]
        shard = state / "cache" / "v1" / "exchanges" / turn2[:2]
        kept = (shard / f"{turn2}.json").read_bytes()
        (shard / f"{turn2}.json").unlink()
        shard.rmdir()
        shard.write_text("x", encoding="utf-8")   # run B's turn 2 cannot be written: it stops after turn 1's
        app_impl.build = 2
        stopped, _ = go(state, plan, "--record", run_id="smoke-20261129T101600Z")
        assert stopped.rc == 5, stopped.stdout + stopped.stderr
    shard.unlink()
    shard.mkdir()
    (shard / f"{turn2}.json").write_bytes(kept)
    rep, rep_out = go(state, plan, "--replay", run_id="smoke-20261129T101700Z")
    assert rep.rc == 0, rep.stdout + rep.stderr
    got = case_json(rep_out, "c-a")
    assert got["verdict"] == "infra_error", got
    assert got["infra_reason"].startswith(
        "replay miss: case c-a: request 1: the cache's answer was written by run smoke-20261129T101600Z"), got
    assert "never finished" in got["infra_reason"] and "replay run smoke-20261129T101500Z" in got["infra_reason"]
