"""Record and replay end to end (docs/runner-contract.md, "Record and replay"): run_cases.py
--record against a real loopback app, then --replay with the app gone AND a socket-level guard in
the runner's interpreter (every connect() is logged and refused), so "no connection" is observed,
not assumed. Verdicts compare file for file with timings and per-request ids masked."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, state  # noqa: F401 (fixture)
from helpers import SCRIPTS, run_script
from judgefake import anthropic_handler, judge_block, write_rubric
from rundir_util import case_json, cases_view, committed_lines, run_files

pytestmark = pytest.mark.slow

GUARD = '''
import os, socket
_log = os.environ["ASSAY_TEST_CONNECT_LOG"]
def _refuse(self, address, *a):
    with open(_log, "a") as f:
        f.write(repr(address) + "\\n")
    raise ConnectionRefusedError(111, "socket guard: this test allows no connection")
def _refuse_ex(self, address):
    with open(_log, "a") as f:
        f.write(repr(address) + "\\n")
    return 111
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse_ex
'''

VOLATILE = {"latency_ms", "sent_at", "started_at", "finished_at", "artifact_sha256", "recorded_at", "wall_s"}
IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{16,32}\b")


def finished(out) -> set[str]:
    """The cases whose record is committed in the run dir (the journal's whole lines)."""
    return set(committed_lines(out)) if (out / "cases.jsonl").is_file() else set()


def masked(value):
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [masked(v) for v in value]
    if isinstance(value, str):
        return IDS.sub("<id>", value)
    return value


def case_tree(out):
    """{relative path: content} of every case file, JSON masked (timings, uuids, trace ids)."""
    files = {}
    for rel, text in run_files(out).items():
        if rel.startswith("cases/"):
            files[rel] = masked(json.loads(text)) if rel.endswith(".json") else text
    return files


def guarded(tmp_path):
    """env for run_cases.py whose interpreter refuses (and logs) every socket connect()."""
    guard = tmp_path / "guard"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(GUARD)
    log = tmp_path / "connects.log"
    log.write_text("")
    return {"PYTHONPATH": str(guard), "ASSAY_TEST_CONNECT_LOG": str(log)}, log


def go(state, plan, *extra, env=None, run_id=None):
    if run_id:
        plan = dict(plan, run_id=run_id)
    path = state / "work" / f"plan-{plan['run_id']}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    return run_runner("--plan", path, "--out", out, "--progress", "never", *extra, env=env), out


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    return Reply(200, {"message": f"echo: {msg}", "route": "billing" if "bill" in msg else "chat"})


CASES = [case("c-1", "hello", expect={"answer": {"must_contain": ["hello"]}, "route": "chat"}),
         case("c-2", "my bill", expect={"answer": {"must_contain": ["nothing"]}, "route": "billing"}),
         case("c-3", "three", expect={"answer": {"must_contain": ["three"]}})]


def test_replay_gives_the_same_verdicts_with_no_connection_and_one_edit_is_one_miss(state, tmp_path):
    with FakeApp(handler) as app:
        plan = make_plan(state, CASES, app_url=app.url, k=2)
        rec, rec_out = go(state, plan, "--record", run_id="smoke-20261129T101500Z")
        sent = app.count(path="/api/chat")
    assert rec.rc == 0, rec.stdout + rec.stderr
    assert sent == 6   # 3 cases x k=2
    env, log = guarded(tmp_path)
    rep, rep_out = go(state, plan, "--replay", env=env, run_id="smoke-20261129T101600Z")
    assert rep.rc == 0, rep.stdout + rep.stderr
    assert log.read_text() == ""          # not one connect() in the replaying process
    assert case_tree(rep_out) == case_tree(rec_out)
    manifest = json.loads((rep_out / "manifest.yaml").read_text())
    assert manifest["replayed_from"]["source"] == "cache"
    assert manifest["health_check"]["skipped"] is True
    gated = run_script("gate", rep_out, "--baseline", rec_out)   # the baseline is the stored recorded run
    first = gated.stdout.splitlines()[0]
    assert first.startswith("smoke-20261129T101600Z: FAIL [REPLAYED from the cache ") and "not called" in first
    assert "candidate run was replayed from a recorded cache" in gated.stdout
    assert f"compared with {rec_out.name}: no verdict changed" in gated.stdout, gated.stdout
    assert "REPLAYED" not in run_script("gate", rec_out).stdout     # the live run reads as live
    # a recorded run dir is a SOURCE too; one edited case is exactly one replay miss, never a pass
    edited = json.loads(json.dumps(plan))
    edited["cases"][2]["input"]["messages"][0]["content"] = "three!"
    miss, miss_out = go(state, edited, "--replay", str(rec_out), env=env, run_id="smoke-20261129T101700Z")
    assert log.read_text() == ""
    verdicts = {c: json.loads((cases_view(miss_out) / c / "verdict.json").read_text()) for c in ("c-1", "c-2", "c-3")}
    assert [v["verdict"] for v in verdicts.values()] == ["pass", "fail", "infra_error"]
    reason = verdicts["c-3"]["infra_reason"]
    assert reason == ('replay miss: case c-3: request 1 differs from the recording at body.message: recorded '
                      '"three", now "three!"'), reason
    assert json.loads((miss_out / "manifest.yaml").read_text())["replayed_from"]["run_id"] == "smoke-20261129T101500Z"
    assert "REPLAYED from run smoke-20261129T101500Z" in run_script("gate", miss_out).stdout.splitlines()[0]


def test_a_run_that_was_not_recorded_is_no_source(state, tmp_path):
    with FakeApp(handler) as app:
        plan = make_plan(state, CASES[:1], app_url=app.url)
        live, live_out = go(state, plan)
    assert live.rc == 0
    env, log = guarded(tmp_path)   # the guard itself works: a live run under it cannot reach the app
    blocked, _ = go(state, plan, env=env, run_id="smoke-20261129T101550Z")
    assert blocked.rc == 3 and "health check" in blocked.stdout + blocked.stderr and log.read_text() != ""
    r, _ = go(state, plan, "--replay", str(live_out), run_id="smoke-20261129T101600Z")
    assert r.rc == 2 and "was not recorded" in r.stdout + r.stderr
    r, _ = go(state, plan, "--replay", "--record", run_id="smoke-20261129T101700Z")
    assert r.rc == 2 and "do not go together" in r.stdout + r.stderr


def test_a_run_of_another_app_is_no_source(state, tmp_path):
    """A recording answers only for the app it recorded: a state dir copied for another app (its
    adapter.yaml app.name changed) replaying the first app's run read PASS wherever the requests
    looked alike (the replay trial). Refused, naming both apps; the same app replays as before."""
    with FakeApp(handler) as app:
        plan = make_plan(state, CASES[:1], app_url=app.url)
        plan["manifest_extra"]["app"] = {"name": "helpdesk"}
        rec, rec_out = go(state, plan, "--record")
    assert rec.rc == 0, rec.stdout
    other = json.loads(json.dumps(plan))
    other["manifest_extra"]["app"] = {"name": "otherchat"}
    r, _ = go(state, other, "--replay", str(rec_out), run_id="smoke-20261129T101600Z")
    assert r.rc == 2 and "recorded app 'helpdesk', and this plan is of app 'otherchat'" in r.stdout, r.stdout
    same, _ = go(state, plan, "--replay", str(rec_out), run_id="smoke-20261129T101700Z")
    assert same.rc == 0, same.stdout
    # make_plan.py --changed-since that run refuses it at plan time, before a run is started
    from assay.core.errors import AssayError
    from assay.suite.changed_since import changed_since
    with pytest.raises(AssayError) as err:
        changed_since(other, rec_out)
    assert err.value.code == 2 and "recorded app 'helpdesk', and this plan is of app 'otherchat'" in err.value.message
    assert changed_since(plan, rec_out)["changed_since"] == rec_out.name


def test_a_bare_cache_of_another_app_is_no_source_and_its_answers_never_score(state, tmp_path):
    """A bare cache carried no app: `--replay <another app's state>/cache` answered a look-alike case
    with that app's recorded answer and the gate read PASS [REPLAYED]. Every recording now names its
    app (the cache's apps/ and each exchange's app_name): another app's cache is exit 2 naming both;
    an answer recorded from another app, or by a recording that named no app, is a replay miss."""
    plan = make_plan(state, CASES[:1], app_url="${HELPDESK_URL}")
    plan["manifest_extra"]["app"] = {"name": "helpdesk"}
    with FakeApp(handler) as app:
        rec, _ = go(state, plan, "--record", env={"HELPDESK_URL": app.url})
    assert rec.rc == 0, rec.stdout + rec.stderr
    cache = state / "cache"
    other_state = make_state(tmp_path / "other")
    other = make_plan(other_state, CASES[:1], app_url="${HELPDESK_URL}", run_id="smoke-20261129T101600Z")
    other["manifest_extra"]["app"] = {"name": "otherchat"}
    r, out = go(other_state, other, "--replay", str(cache), env={"HELPDESK_URL": "http://127.0.0.1:9"})
    assert r.rc == 2 and not out.exists(), r.stdout
    assert (f"the cache {cache} holds recordings of app 'helpdesk' (adapter.yaml app.name), and this plan is of "
            "app 'otherchat'") in r.stdout and "run_cases.py --record" in r.stdout, r.stdout
    # the answer itself names its app: with the cache's app list gone, it is still never otherchat's answer
    shutil.rmtree(cache / "v1" / "apps")
    r, out = go(other_state, other, "--replay", str(cache), env={"HELPDESK_URL": "http://127.0.0.1:9"},
                run_id="smoke-20261129T101700Z")
    verdict = json.loads((cases_view(out) / "c-1" / "verdict.json").read_text())
    assert verdict["verdict"] == "infra_error", verdict
    assert verdict["infra_reason"] == ("replay miss: case c-1: request 1: the cache's answer was recorded from app "
                                       "'helpdesk', and this plan is of app 'otherchat' (adapter.yaml app.name): a "
                                       "recording answers only for the app it recorded; replay this app's own "
                                       "recording, or record it with --record"), verdict["infra_reason"]
    assert run_script("gate", out).rc == 1
    # an answer recorded before recordings named their app cannot be shown to be this app's: a miss
    for path in (cache / "v1" / "exchanges").glob("*/*.json"):
        doc = json.loads(path.read_text())
        del doc["app_name"]
        path.write_text(json.dumps(doc))
    r, out = go(state, plan, "--replay", env={"HELPDESK_URL": "http://127.0.0.1:9"}, run_id="smoke-20261129T101800Z")
    reason = json.loads((cases_view(out) / "c-1" / "verdict.json").read_text())["infra_reason"]
    assert "the cache's answer names no app" in reason and "record again with --record" in reason, reason


def fares(price):
    """A stand-in travel app that quotes its own price (never the user's words back)."""
    def reply(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(200, {"message": f"Flights there start at {price} EUR.", "route": "quotes"})
    return reply


def test_an_app_with_no_name_is_never_answered_with_another_addresss_recording(state, tmp_path):
    """Two apps with no adapter.yaml app.name and the same adapter and suite keyed alike: the suite
    recorded against app A and then replayed with the base URL pointed at app B (or from B's own
    state dir, given A's cache or run) read PASS [REPLAYED] for B, which fails live. With no name an
    app is known by its address: another address is a replay miss naming the variable and the fix;
    the base URL unset (a CI replay, no app) or the recorded address still replays; an answer
    recorded before answers named their address is a miss once the replay names one."""
    quote = [case("c-oslo", "How much is a flight to Oslo?", expect={"answer": {"must_contain": ["120 EUR"]}})]
    unnamed = adapter("${TRAVEL_BASE_URL}")
    del unnamed["app"]
    plan = make_plan(state, quote, adapter_doc=unnamed)
    guard, log = guarded(tmp_path)

    def verdict(out):
        return json.loads((cases_view(out) / "c-oslo" / "verdict.json").read_text())

    with FakeApp(fares(120)) as app_a, FakeApp(fares(999)) as app_b:
        rec, rec_out = go(state, plan, "--record", env={"TRAVEL_BASE_URL": app_a.url})
        live_b, live_out = go(state, plan, env={"TRAVEL_BASE_URL": app_b.url}, run_id="smoke-20261129T101550Z")
        a_url, b_url = app_a.url, app_b.url
    assert rec.rc == 0 and run_script("gate", rec_out).rc == 0, rec.stdout + rec.stderr
    assert live_b.rc == 0 and verdict(live_out)["verdict"] == "fail"     # app B fails when it is asked
    other_state = make_state(tmp_path / "b")
    miss_reason = ("replay miss: case c-oslo: request 1: the cache's answer was recorded from an app with no "
                   "app.name at another address than the one TRAVEL_BASE_URL (invocation.base_url) gives now: with no "
                   "name an app is known only by its address, so this may be another app's answer; set "
                   "TRAVEL_BASE_URL (invocation.base_url) to the address it was recorded at, or name the app "
                   "(adapter.yaml app.name) and record it with --record (a named app's recording replays at any "
                   "address), or record this app with --record, or run live")
    for n, (st, source) in enumerate(((state, ()), (other_state, (str(state / "cache"),)),
                                      (other_state, (str(rec_out),)))):
        r, out = go(st, dict(plan, paths=dict(plan["paths"], state_dir=str(st))), "--replay", *source,
                    env={**guard, "TRAVEL_BASE_URL": b_url}, run_id=f"smoke-20261129T1016{n}0Z")
        assert r.rc == 0 and verdict(out)["verdict"] == "infra_error", (source, verdict(out))
        assert verdict(out)["infra_reason"] == miss_reason, verdict(out)["infra_reason"]
        gated = run_script("gate", out)
        assert gated.rc == 1 and ": FAIL [REPLAYED from " in gated.stdout.splitlines()[0], gated.stdout
    # the same app: its recorded address, or none told (the CI replay with no app and no URL exported)
    for n, env in enumerate(({"TRAVEL_BASE_URL": a_url + "/"}, {})):
        r, out = go(state, plan, "--replay", env={**guard, **env}, run_id=f"smoke-20261129T1017{n}0Z")
        assert r.rc == 0 and verdict(out)["verdict"] == "pass", (env, verdict(out))
        assert run_script("gate", out).rc == 0
    assert log.read_text() == ""
    # recorded before answers named their address: never an answer of the app the URL points at now
    for path in (state / "cache" / "v1" / "exchanges").glob("*/*.json"):
        doc = json.loads(path.read_text())
        del doc["address"]
        path.write_text(json.dumps(doc))
    for n, source in enumerate(((), (str(rec_out),))):
        r, out = go(state, plan, "--replay", *source, env={**guard, "TRAVEL_BASE_URL": a_url},
                    run_id=f"smoke-20261129T1018{n}0Z")
        reason = verdict(out)["infra_reason"]
        assert verdict(out)["verdict"] == "infra_error" and run_script("gate", out).rc == 1, reason
        assert reason.startswith("replay miss: case c-oslo: request 1: the cache's answer names no address (recorded "
                                 "at ") and "record this app with --record" in reason, reason


def test_a_replay_needs_no_app_address_or_credential_but_keeps_the_values_its_key_binds(state, tmp_path):
    """run_cases.py --replay stopped at pre-flight (exit 3) on the app's unset URL variable though no
    app is called (rescore.py allowed it): in CI with no app running, or on another machine. The base
    URL's, the auth's and credential-shaped variables are never in the replay key, so a replay does
    not need them; a variable whose value the key binds (X-Model: ${APP_MODEL}) is still required."""
    doc = adapter("${HELPDESK_URL}", headers={"X-Model": "${APP_MODEL}"},
                  auth={"type": "bearer", "token_env": "HELPDESK_TOKEN"})
    plan = make_plan(state, CASES[:1], adapter_doc=doc)
    live = {"APP_MODEL": "model-a-2026", "HELPDESK_TOKEN": "tok-0123456789abcdef"}
    with FakeApp(handler) as app:
        rec, _ = go(state, plan, "--record", env=dict(live, HELPDESK_URL=app.url))
    assert rec.rc == 0, rec.stdout + rec.stderr
    env, log = guarded(tmp_path)
    rep, out = go(state, plan, "--replay", env=dict(env, APP_MODEL="model-a-2026"), run_id="smoke-20261129T101600Z")
    assert rep.rc == 0, rep.stdout + rep.stderr
    assert log.read_text() == ""
    gated = run_script("gate", out)
    assert gated.rc == 0 and "PASS [REPLAYED from the cache" in gated.stdout.splitlines()[0], gated.stdout
    r, out = go(state, plan, "--replay", env=env, run_id="smoke-20261129T101700Z")
    assert r.rc == 3 and r.json["missing_env"] == ["APP_MODEL"], r.stdout


class Memory:
    """client-id conversations: turn 2's answer depends on turn 1 (the session remembers INV-2)."""

    def __init__(self):
        self.seen = {}

    def __call__(self, req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        sid, msg = req.json["session_id"], req.json["message"]
        if "open" in msg:
            self.seen[sid] = "INV-2"
            return Reply(200, {"message": "INV-2 is open", "route": "billing"})
        return Reply(200, {"message": f"refunded {self.seen.get(sid, 'nothing')}", "route": "billing"})


def test_conversations_replay_turn_by_turn_and_miss_at_the_turn_that_changed(state, tmp_path):
    conv = {"id": "c-conv", "split": ["smoke"], "category": "multistep", "test_type": "MFT", "template_id": None,
            "input": {"turns": [{"user": "which invoice is open?"}, {"user": "refund that one"}]},
            "expect": {"answer": {"must_contain": ["refunded INV-2"]}}}
    ad = adapter("http://127.0.0.1:9", conversation={"style": "client-id", "memory": "session"})
    with FakeApp(Memory()) as app:
        ad["invocation"]["base_url"] = app.url
        plan = make_plan(state, [conv], app_url=app.url, adapter_doc=ad)
        rec, rec_out = go(state, plan, "--record")
    assert rec.rc == 0, rec.stdout + rec.stderr
    env, log = guarded(tmp_path)
    rep, rep_out = go(state, plan, "--replay", env=env, run_id="smoke-20261129T101600Z")
    assert rep.rc == 0 and log.read_text() == "", rep.stdout + rep.stderr
    assert case_tree(rep_out) == case_tree(rec_out)
    assert (cases_view(rep_out) / "c-conv" / "turns" / "2" / "answer.txt").read_text() == "refunded INV-2"
    changed = json.loads(json.dumps(plan))
    changed["cases"][0]["input"]["turns"][1]["user"] = "refund it please"
    miss, miss_out = go(state, changed, "--replay", env=env, run_id="smoke-20261129T101700Z")
    v = json.loads((cases_view(miss_out) / "c-conv" / "verdict.json").read_text())
    assert v["verdict"] == "infra_error"
    assert v["infra_reason"].startswith("replay miss: case c-conv: request 2 (turn 2) differs from the recording "
                                        'at body.message: recorded "refund that one", now "refund it please"')


def test_judge_calls_go_through_the_cache_and_never_cross_a_changed_rubric(state, tmp_path):
    seen: list = []
    with FakeApp(lambda r: Reply(200, {"message": "Refund of 20 USD issued; arrives in 5 business days."})
                 if r.method == "POST" else Reply(200, {"ok": True})) as app, \
            FakeApp(anthropic_handler(seen=seen)) as judge:
        write_rubric(state)
        config = {"provider": "anthropic", "model": "claude-test", "base_url": judge.url, "api_key": "${JUDGE_KEY}"}
        cases = [case("c-1", "refund", expect={"answer": {"rubric": ["refund-eta-v1"]}})]
        plan = make_plan(state, cases, app_url=app.url)
        plan["judge"] = judge_block(state, config)
        env = {"JUDGE_KEY": "sk-judge-secret-4242"}
        rec, rec_out = go(state, plan, "--record", env=env)
        assert rec.rc == 0, rec.stdout + rec.stderr
        assert len(seen) == 2    # one call per node
        rep, rep_out = go(state, plan, "--replay", env=env, run_id="smoke-20261129T101600Z")
        assert rep.rc == 0, rep.stdout + rep.stderr
        assert len(seen) == 2    # both verdicts came from the cache: no judge call
        doc = json.loads((cases_view(rep_out) / "c-1" / "judge.json").read_text())
        calls = [c for n in doc["rubrics"][0]["nodes"] for c in n["calls"]]
        assert [c["cache"]["hit"] for c in calls] == [True, True]
        assert masked(json.loads((cases_view(rep_out) / "c-1" / "verdict.json").read_text())) == \
            masked(json.loads((cases_view(rec_out) / "c-1" / "verdict.json").read_text()))
        # a live rerun with --judge-cache: same judge, same rubric, same answer -> reused
        again, _ = go(state, plan, "--judge-cache", env=env, run_id="smoke-20261129T101700Z")
        assert again.rc == 0 and len(seen) == 2
        # an edited rubric (one node's criterion, same version) is judged again, for every node
        write_rubric(state, (state / "rubrics" / "refund-eta.md").read_text().replace(
            "with its currency", "and its currency"))
        plan["judge"] = judge_block(state, config)
        edited, _ = go(state, plan, "--judge-cache", env=env, run_id="smoke-20261129T101800Z")
        assert edited.rc == 0 and len(seen) == 4
        # another judge model is another identity: judged again
        plan["judge"] = judge_block(state, dict(config, model="claude-other"))
        other, _ = go(state, plan, "--judge-cache", env=env, run_id="smoke-20261129T101900Z")
        assert other.rc == 0 and len(seen) == 6
    cache = state / "cache"
    assert not [p for p in cache.rglob("*") if p.is_file() and b"sk-judge-secret-4242" in p.read_bytes()]


def test_two_shards_record_into_one_cache_at_once(state, tmp_path):
    from assay.shard.assign import add_shards
    cases = [case(f"c-{i:02d}", f"message {i}", split=["full"], expect={"answer": {"must_contain": [f"{i}"]}})
             for i in range(24)]
    with FakeApp(handler) as app:
        plan = add_shards(make_plan(state, cases, app_url=app.url, run_id="regression-20261129T101500Z",
                                    mode="regression", selecting_split="full"), 2)
        path = state / "work" / "plan.json"
        path.write_text(json.dumps(plan))
        procs = [subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out",
                                   str(state / "reports" / f"regression-20261129T101500Z.shard-{i}"), "--shard", str(i),
                                   "--progress", "never", "--record"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for i in (1, 2)]
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, out + err
    files = [p for p in (state / "cache" / "v1").rglob("*") if p.is_file()]
    assert not [p for p in files if p.name.endswith(".tmp")]
    for p in files:
        json.loads(p.read_text())          # every entry whole
    assert len([p for p in files if "exchanges" in p.parts]) == 24
    env, log = guarded(tmp_path)
    whole = {k: v for k, v in plan.items() if k != "shards"}
    rep, rep_out = go(state, whole, "--replay", env=env, run_id="regression-20261129T101600Z")
    assert rep.rc == 0 and log.read_text() == "", rep.stdout + rep.stderr
    infra = [c for c in cases if json.loads((cases_view(rep_out) / c["id"] / "verdict.json").read_text())["verdict"]
             == "infra_error"]
    assert infra == []


def test_cache_stats_and_prune(state):
    with FakeApp(handler) as app:
        plan = make_plan(state, CASES, app_url=app.url)
        rec, _out = go(state, plan, "--record")
    assert rec.rc == 0
    stats = run_script("cache", "stats", "--state-dir", state)
    assert stats.rc == 0, stats.stdout + stats.stderr
    doc = stats.json
    assert doc["sections"]["exchanges"]["entries"] == 3 and doc["sections"]["cases"]["entries"] == 3
    assert doc["apps"] == ["fake"]   # the app it recorded (adapter.yaml app.name): what --replay checks
    keep = run_script("cache", "prune", "--state-dir", state, "--older-than", "1d")
    assert keep.rc == 0 and keep.json["removed"] == 0 and keep.json["kept"] == 6
    bad = run_script("cache", "prune", "--state-dir", state, "--older-than", "soon")
    assert bad.rc == 2 and "--older-than" in bad.stdout + bad.stderr
    gone = run_script("cache", "prune", "--state-dir", state, "--older-than", "0s")
    assert gone.rc == 0 and gone.json["removed"] == 6
    assert run_script("cache", "stats", "--state-dir", state).json["entries"] == 0


def test_traces_replay_with_their_spans_and_no_secret_reaches_the_cache(tmp_path):
    """The EchoApp of test_hardening_secrets puts its bearer token everywhere a value can come from
    (route, data, answer, headers incl. Set-Cookie, a 5xx body, span attributes) and writes OTLP
    spans: recorded, the whole cache holds no byte of it; replayed with the span file emptied and
    the app stopped, every trajectory comes back from the recording."""
    from test_hardening_secrets import CASES as ECHO_CASES, TOKEN, EchoApp
    span_file = tmp_path / "spans.jsonl"
    span_file.touch()
    app = EchoApp(span_file)
    state = make_state(tmp_path)
    ad = adapter(app.url, endpoint="POST /chat", auth={"type": "bearer", "token_env": "ECHO_API_KEY"},
                 request_body='{"message": "<user turn>", "session": "<uuid>"}',
                 response_body='{"answer": "<answer>"}', result_from_response="data.value",
                 health_check={"method": "GET", "path": "/healthz", "expect_status": [200]})
    ad["traces"] = {"source": "otlp-file", "location": str(span_file), "convention": "gen_ai",
                    "correlation": "traceparent-echo", "completeness": {"quiescence_ms": 30, "max_wait_s": 2}}
    plan = make_plan(state, ECHO_CASES, app_url=app.url, adapter_doc=ad,
                     execution={"max_attempts": 2, "backoff_s": [0]})
    env = {"ECHO_API_KEY": TOKEN}
    try:
        rec, rec_out = go(state, plan, "--record", env=env)
    finally:
        app.stop()
    assert rec.rc in (0, 1), rec.stdout + rec.stderr
    assert (cases_view(rec_out) / "c-trace" / "trajectory.json").is_file()   # a trace was collected
    cache_files = [p for p in (state / "cache").rglob("*") if p.is_file()]
    assert len(cache_files) > len(ECHO_CASES)
    assert [p for p in cache_files if TOKEN.encode() in p.read_bytes()] == []
    assert b"Bearer" not in b"".join(p.read_bytes() for p in cache_files)
    span_file.write_text("")     # nothing for a trace source to find now
    guard_env, log = guarded(tmp_path)
    rep, rep_out = go(state, plan, "--replay", env=dict(env, **guard_env), run_id="smoke-20261129T101600Z")
    assert rep.rc == rec.rc, rep.stdout + rep.stderr
    assert log.read_text() == ""
    live, replayed = case_tree(rec_out), case_tree(rep_out)
    assert [k for k in live if k.endswith("trajectory.json")] == [k for k in replayed if k.endswith("trajectory.json")]
    for name in live:
        if name.endswith(("trajectory.json", "verdict.json", "trace.json")):
            assert replayed[name] == live[name], name


def test_make_plan_changed_since_sends_only_the_edited_case_live(tmp_path):
    """The CI recipe: record on main; on a pull request that edits one case, make_plan.py
    --changed-since <main's run> plans that case live and run_cases.py --replay answers the rest
    from the recording (the app sees exactly that case's requests)."""
    import fixtures_authoring as fa
    state = fa.make_state(tmp_path / "app")
    fa.convert(state)
    conv = state / "work" / "converted.json"
    def helpdesk(req):
        if req.method != "POST":
            return Reply(200, {"ok": True})
        shifts = any(w in req.json["message"] for w in ("rota", "works", "change"))
        return Reply(200, {"message": "20% on Monday, alex, 120.00", "domain": "shifts" if shifts else "invoices"})

    with FakeApp(helpdesk) as app:
        env = {"HELPDESK_BASE_URL": app.url, "HELPDESK_TOKEN": "tok-main-branch-0001"}
        base = run_script("make_plan", conv, "--state-dir", state, "--mode", "smoke", "--run-id",
                          "smoke-20261129T101500Z", "-o", state / "work" / "main.json")
        assert base.rc == 0, base.stdout + base.stderr
        rec = run_runner("--plan", state / "work" / "main.json", "--out", state / "reports" / "smoke-20261129T101500Z",
                         "--progress", "never", "--record", env=env)
        assert rec.rc in (0, 1), rec.stdout + rec.stderr
        recorded = app.count(path="/api/chat/ask")
        # the pull request: one smoke case's question is edited
        path = state / "datasets" / "c-00000004.yaml"
        path.write_text(path.read_text().replace("Who works Friday night?", "Who works Friday night shift?"))
        fa.convert(state)
        pr = run_script("make_plan", conv, "--state-dir", state, "--mode", "smoke", "--run-id",
                        "smoke-20261129T111500Z", "-o", state / "work" / "pr.json", "--changed-since",
                        state / "reports" / "smoke-20261129T101500Z")
        assert pr.rc == 0, pr.stdout + pr.stderr
        plan = json.loads((state / "work" / "pr.json").read_text())
        assert plan["replay"]["live"] == ["c-00000004"] and plan["replay"]["replayed"] == len(plan["cases"]) - 1
        assert pr.json["run"].endswith(" --replay")
        refused = run_runner("--plan", state / "work" / "pr.json", "--out", state / "reports" / "smoke-20261129T111500Z",
                             "--progress", "never", env=env)
        assert refused.rc == 2 and "--changed-since" in refused.stdout + refused.stderr
        rep = run_runner("--plan", state / "work" / "pr.json", "--out", state / "reports" / "smoke-20261129T111500Z",
                         "--progress", "never", "--replay", env=env)
        assert rep.rc in (0, 1), rep.stdout + rep.stderr
        live = app.posts()[recorded:]
    assert [p.json["message"] for p in live] == ["Who works Friday night shift?"]
    out = state / "reports" / "smoke-20261129T111500Z"
    rows = [json.loads((d / "verdict.json").read_text()) for d in cases_view(out).iterdir()]
    assert not [r for r in rows if r["verdict"] == "infra_error"]
    first = run_script("gate", out).stdout.splitlines()[0]
    assert "REPLAYED from run smoke-20261129T101500Z, except 1 case(s) changed since it, sent live" in first


def test_function_and_cli_apps_are_neither_imported_nor_started_on_replay(state, tmp_path):
    (state.parent / "replayagent.py").write_text("def handle(body):\n    return 'you said ' + body['message']\n")
    fn = adapter("http://unused", mode="function", entrypoint="replayagent:handle")
    fn["invocation"].pop("response_body")
    agent = tmp_path / "agent.py"
    calls = tmp_path / "calls.log"
    agent.write_text(f"import sys, json\nopen({str(calls)!r}, 'a').write('x')\n"
                     "print(json.dumps({'answer': 'you said ' + sys.stdin.read()}))\n")
    cli = adapter("http://unused", mode="cli", command=[sys.executable, str(agent)], stdin="user_turn",
                  cwd="scratch", env_allowlist=["PATH"], response_body='{"answer": "<answer>"}')
    for key in ("base_url", "endpoint", "request_body", "health_check"):
        cli["invocation"].pop(key)
    env = {"ASSAY_SCRATCH_DIR": str(tmp_path / "scratch")}
    for n, ad in enumerate((fn, cli)):
        plan = make_plan(state, [case("c-1", "hello"), case("c-2", "bye")], adapter_doc=ad,
                         run_id=f"smoke-20261129T10{n}500Z")
        rec, rec_out = go(state, plan, "--record", env=env)
        assert rec.rc == 0, rec.stdout + rec.stderr
    assert calls.read_text() == "xx"
    (state.parent / "replayagent.py").write_text("raise SystemExit('imported on replay')\n")
    agent.unlink()
    for n, ad in enumerate((fn, cli)):
        plan = make_plan(state, [case("c-1", "hello"), case("c-2", "bye")], adapter_doc=ad,
                         run_id=f"smoke-20261129T11{n}500Z")
        rep, rep_out = go(state, plan, "--replay", env=env)
        assert rep.rc == 0, rep.stdout + rep.stderr
        verdicts = [json.loads((cases_view(rep_out) / c / "verdict.json").read_text())["verdict"] for c in ("c-1", "c-2")]
        assert verdicts == ["pass", "pass"], ad["invocation"]["mode"]
    assert calls.read_text() == "xx"


def test_a_cli_replay_needs_no_program_on_path_but_a_live_case_still_does(state, tmp_path):
    """A full --replay of a cli app whose program is not installed on the replaying machine (`mybot`
    not on PATH in CI) stopped at pre-flight, exit 3 "not found on PATH", though every case is answered
    from the recording and the program is never started. Replayed, it is not looked up; a replay that
    sends a case live (a --changed-since plan's changed case) still needs it (exit 3, nothing sent)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.log"
    bot = bin_dir / "mybot"
    bot.write_text(f"#!{sys.executable}\nimport sys, json\nopen({str(calls)!r}, 'a').write('x')\n"
                   "print(json.dumps({'answer': 'you said ' + sys.stdin.read()}))\n")
    bot.chmod(0o755)
    doc = adapter("http://unused", mode="cli", command=["mybot", "--quiet"], stdin="user_turn", cwd="scratch",
                  env_allowlist=["PATH"], response_body='{"answer": "<answer>"}')
    for key in ("base_url", "endpoint", "request_body", "health_check"):
        doc["invocation"].pop(key)
    import os
    without = os.environ.get("PATH", os.defpath)
    env = {"ASSAY_SCRATCH_DIR": str(tmp_path / "scratch"), "PATH": f"{bin_dir}{os.pathsep}{without}"}
    cases = [case("c-1", "hello"), case("c-2", "bye")]
    rec, rec_out = go(state, make_plan(state, cases, adapter_doc=doc), "--record", env=env)
    assert rec.rc == 0 and calls.read_text() == "xx", rec.stdout + rec.stderr
    env["PATH"] = without   # the replaying machine: no mybot
    rep, out = go(state, make_plan(state, cases, adapter_doc=doc, run_id="smoke-20261129T101600Z"), "--replay",
                  rec_out, env=env)
    assert rep.rc == 0, rep.stdout + rep.stderr
    verdicts = [json.loads((cases_view(out) / c / "verdict.json").read_text())["verdict"] for c in ("c-1", "c-2")]
    assert verdicts == ["pass", "pass"]
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["health_check"]["skipped"] is True and manifest["invocation"]["command"] == ["mybot", "--quiet"]
    # a --changed-since plan with c-2 edited: c-2 goes live, so the program must be there
    edited = [cases[0], case("c-2", "bye now")]
    block = {"changed_since": rec_out.name, "source": str(rec_out), "live": ["c-2"], "replayed": 1}
    live, _ = go(state, make_plan(state, edited, adapter_doc=doc, run_id="smoke-20261129T101700Z", replay=block),
                 "--replay", env=env)
    assert live.rc == 3 and "'mybot' is not found on the child's PATH" in live.stdout + live.stderr, live.stdout
    assert calls.read_text() == "xx"


# ---------------------------------------------------------------- pure functions, in-process
def test_a_key_masks_what_differs_per_request_and_keeps_what_shapes_the_answer():
    from assay.replay.key import exchange_key, first_difference, normalize_request
    uid = "0c2bcf5f-a81f-48f6-8542-1d4450777ca8"
    rec = {"mode": "http", "method": "POST", "url": "${BASE}/chat", "sent_at": "2026-12-02T00:00:00Z", "turn": 2,
           "headers": {"traceparent": "00-abc-def-01", "Cookie": "sid=1", "X-Role": "admin",
                       "Authorization": "<redacted>"},
           "body": {"message": "hi", "session_id": uid, "thread": f"t-{uid}", "sid": "S-77"}}
    norm = normalize_request(rec, uuid=uid, session="S-77")
    assert norm == {"mode": "http", "method": "POST", "url": "${BASE}/chat",
                    "headers": {"traceparent": "<masked>", "Cookie": "<masked>", "X-Role": "admin",
                                "Authorization": "<redacted>"},
                    "body": {"message": "hi", "session_id": "<uuid>", "thread": "t-<uuid>", "sid": "<session>"}}
    other = normalize_request(dict(rec, headers=dict(rec["headers"], traceparent="00-zzz")), uuid=uid, session="S-77")
    assert exchange_key("c-1", 0, norm) == exchange_key("c-1", 0, other)
    role = normalize_request(dict(rec, headers=dict(rec["headers"], **{"X-Role": "viewer"})), uuid=uid, session="S-77")
    assert exchange_key("c-1", 0, norm) != exchange_key("c-1", 0, role)
    assert exchange_key("c-1", 0, norm) != exchange_key("c-1", 1, norm) != exchange_key("c-2", 0, norm)
    assert first_difference(norm, role) == 'headers.X-Role: recorded "admin", now "viewer"'
    assert first_difference({"a": [1, 2]}, {"a": [1]}) == "a: 2 item(s) recorded, 1 now"
    assert first_difference({"a": 1}, {"a": 1, "b": 2}) == "b: not in the recorded request (now 2)"
    assert first_difference({"a": 1}, {"a": True}) == "a: recorded 1, now true"
    assert first_difference(norm, norm) is None


def test_a_header_that_says_what_is_asked_keeps_its_value_in_the_key():
    """Only the per-request headers (trace propagation, the cookie, a request id) are masked: a header
    that picks the model, the tenant or the language asks another thing, and another value is another
    key with its difference named (mutation hunt, round 3)."""
    from assay.replay.key import MASKED_HEADERS, exchange_key, first_difference, normalize_request
    headers = {"X-Model": "small-1", "X-Tenant": "acme", "Accept-Language": "de", "Content-Type": "application/json"}
    rec = {"mode": "http", "method": "POST", "url": "${BASE}/chat", "headers": headers, "body": {"message": "hi"}}
    assert normalize_request(rec)["headers"] == headers
    for name in headers:
        assert name.lower() not in MASKED_HEADERS
        other = normalize_request(dict(rec, headers=dict(headers, **{name: "other"})))
        assert exchange_key("c-1", 0, normalize_request(rec)) != exchange_key("c-1", 0, other), name
        assert first_difference(normalize_request(rec), other) == f'headers.{name}: recorded "{headers[name]}", now "other"'


def test_judge_through_caches_ordinals_and_never_an_outage(tmp_path):
    from assay.replay.session import ReplayMiss, ReplaySession
    from assay.replay.store import Cache
    cache = Cache(tmp_path / "cache")
    rec = ReplaySession(cache, calls="record")
    answers = iter(["a", "b", "down"])
    for _ in range(3):
        rec.through("judge", {"q": 1}, lambda: {"v": next(answers)},
                    cacheable=lambda v: v["v"] != "down")
    again = ReplaySession(cache, calls="cache")
    got = [again.through("judge", {"q": 1}, lambda: {"v": "live"})[0]["v"] for _ in range(3)]
    assert got == ["a", "b", "live"]     # ordinal 0 and 1 recorded; the outage (2) was never cached
    replay = ReplaySession(cache, app="replay", calls="cache")
    with pytest.raises(ReplayMiss, match="replay miss: case c-1: simulator call turn 2 is not in the cache"):
        replay.through("simulator", {"t": 2}, lambda: {"user": "x"}, case_id="c-1", what="turn 2")
    assert (tmp_path / "cache" / ".gitignore").read_text().endswith("*\n")
    from assay.replay.store import parse_age
    assert parse_age("30d") == 30 * 86400 and parse_age("90m") == 5400


def test_many_writers_of_one_key_in_one_process_leave_one_whole_entry(tmp_path):
    """16 threads write the same key into a fresh cache at once (the judge's repeats, two cases
    with the same material): the one writer's temp name is per process, so without the cache's
    per-path lock they would trip over each other's temp file."""
    import threading
    from assay.replay.store import Cache
    cache = Cache(tmp_path / "cache")
    start, errors = threading.Barrier(16), []
    path = cache.call_path("judge", "ab" + "0" * 62)

    def work(i):
        start.wait()
        try:
            for n in range(20):
                cache.write(path, {"n": i, "pad": "x" * 20000})
        except Exception as exc:   # noqa: BLE001 (the test reports any)
            errors.append(repr(exc))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert json.loads(path.read_text())["pad"] == "x" * 20000 and cache.stats()["entries"] == 1


class Holding:
    """`handler`, except that a message containing "hold" waits (up to 30 s) until released."""

    def __init__(self):
        import threading
        self.waiting, self.release = threading.Event(), threading.Event()

    def __call__(self, req):
        if req.method == "POST" and "hold" in req.json["message"]:
            self.waiting.set()
            self.release.wait(30)
        return handler(req)


def killed_while_held(state, plan, hold, *flags, run_id):
    """run_cases.py with these flags as a subprocess, SIGKILLed once c-1 and c-2 are done and c-3's request
    is held at the app: the run dir of an interrupted run."""
    import os
    import signal
    import time
    plan = dict(plan, run_id=run_id)
    path = state / "work" / f"plan-{run_id}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / run_id
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out", str(out),
                             "--progress", "never", "--order", "plan", *flags], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (hold.waiting.is_set() and {"c-1", "c-2"} <= finished(out)):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    hold.release.set()
    assert "c-3" not in finished(out) and "c-2" in finished(out)
    return path, out


HELD = [CASES[0], CASES[1], case("c-3", "three hold", expect={"answer": {"must_contain": ["three"]}})]


def test_resume_of_a_killed_record_run_records_every_case_and_keeps_its_flags(state, tmp_path):
    hold = Holding()
    with FakeApp(hold) as app:
        plan = make_plan(state, HELD, app_url=app.url)
        path, out = killed_while_held(state, plan, hold, "--record", run_id="smoke-20261129T101500Z")
        # resumed without --record, the rest would go unrecorded under a manifest that says recorded
        bare = run_runner("--plan", path, "--out", out, "--resume", "--progress", "never")
        assert bare.rc == 2 and "started with --record and this is no --record" in bare.stdout, bare.stdout
        r = run_runner("--plan", path, "--out", out, "--resume", "--record", "--progress", "never")
    assert r.rc == 0, r.stdout + r.stderr
    assert run_runner("--verify", out).rc == 0
    env, log = guarded(tmp_path)
    rep, rep_out = go(state, plan, "--replay", str(out), env=env, run_id="smoke-20261129T101600Z")
    assert rep.rc == 0 and log.read_text() == "", rep.stdout + rep.stderr
    assert case_tree(rep_out) == case_tree(out)       # every case, the resumed one too, was recorded


def test_resume_of_a_killed_replay_run_replays_the_rest_and_never_goes_live_silently(state, tmp_path):
    hold = Holding()
    with FakeApp(hold) as app:
        plan = make_plan(state, HELD, app_url=app.url)
        hold.release.set()
        rec, rec_out = go(state, plan, "--record", run_id="smoke-20261129T101500Z")
        assert rec.rc == 0, rec.stdout + rec.stderr
        # the recording's c-3 set `waiting` too: cleared, so the kill below waits for the replay run's own
        # live request to be held at the app (else it could land after `sent` is read: one request more)
        hold.release.clear()
        hold.waiting.clear()
        # c-3 changed since the recording (make_plan.py --changed-since): it goes live, held at the app
        edited = json.loads(json.dumps(plan))
        edited["cases"][2]["input"]["messages"][0]["content"] = "three hold!"
        edited["replay"] = {"changed_since": rec_out.name, "source": str(rec_out), "live": ["c-3"], "replayed": 2}
        path, out = killed_while_held(state, edited, hold, "--replay", run_id="smoke-20261129T101600Z")
        sent = app.count(path="/api/chat")
        for flags in ((), ("--record",)):   # never resumed live (or recording) under a replayed run's manifest
            bad = run_runner("--plan", path, "--out", out, "--resume", "--progress", "never", *flags)
            assert bad.rc == 2, bad.stdout + bad.stderr
        r = run_runner("--plan", path, "--out", out, "--resume", "--replay", "--progress", "never")
        assert app.count(path="/api/chat") == sent + 1      # only the live case, once more
    assert r.rc == 0, r.stdout + r.stderr
    assert run_runner("--verify", out).rc == 0
    got = {c: case_json(out, c)["verdict"] for c in ("c-1", "c-2", "c-3")}
    assert got == {"c-1": "pass", "c-2": "fail", "c-3": "pass"}
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["replayed_from"]["run_id"] == rec_out.name and manifest["replay"]["app"] == "replay"


@pytest.mark.parametrize("style, session_from", [("cookie", None), ("server-id", {"body": "sid"}),
                                                 ("server-id", {"header": "X-Session"})])
def test_conversations_under_cookie_and_server_id_sessions_replay_byte_for_byte(state, tmp_path, style, session_from):
    from test_run_conversation import REFUND, MemoryApp
    body = ('{"message": "<user turn>", "session": "<session>"}' if style == "server-id"
            else '{"message": "<user turn>"}')
    conv = {"style": style, **({"session_from": session_from} if session_from else {})}
    with FakeApp(MemoryApp(style)) as app:
        ad = adapter(app.url, request_body=body, conversation=conv)
        plan = make_plan(state, [REFUND], app_url=app.url, adapter_doc=ad)
        rec, rec_out = go(state, plan, "--record")
        assert len(app.posts()) == 2
    assert rec.rc == 0, rec.stdout + rec.stderr
    assert case_json(rec_out, "c-refund")["verdict"] == "pass"
    env, log = guarded(tmp_path)
    rep, rep_out = go(state, plan, "--replay", env=env, run_id="smoke-20261129T101600Z")
    assert rep.rc == 0 and log.read_text() == "", rep.stdout + rep.stderr
    recorded = {k: v for k, v in run_files(rec_out).items() if k.startswith("cases/")}
    replayed = {k: v for k, v in run_files(rep_out).items() if k.startswith("cases/")}
    assert sorted(recorded) == sorted(replayed)
    assert replayed["cases/c-refund/turns/2/answer.txt"] == "refunded INV-2"
    for rel, text in recorded.items():   # byte for byte, but for the timings and per-request ids
        other = replayed[rel]
        assert (masked(json.loads(text)) == masked(json.loads(other)) if rel.endswith(".json") else text == other), rel
    assert run_runner("--verify", rep_out).rc == 0
