"""Conversations (`input.turns`) end to end: run_cases.py as a subprocess against a stateful app
on a real loopback port, one test per style, the stop rule, a checkpoint failure, a server-id
app that gives no id, a 500 on turn 2 (restart from turn 1), k=3, kill -9 then --resume, and
--verify over the turn tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from fakeapp import FakeApp, Reply, adapter, make_plan, make_state, run_runner, state  # noqa: F401 (fixture)
from helpers import SCRIPTS, run_script
from rundir_util import cases_view, committed_lines, edit_case, run_files

pytestmark = pytest.mark.slow


class MemoryApp:
    """A chat app that remembers the invoice a user asked about, per session.

    Turn "which invoice is open?" answers "INV-2 is open" and remembers INV-2; "refund that one"
    answers "refunded INV-2" only when the session remembers it, else "refund which invoice?".
    The session comes from the body's session_id (client-id), the body's `session` (server-id,
    issued on the first turn as body `sid` and header X-Session), or a `sid` cookie (cookie).
    """

    def __init__(self, style: str, *, give_id: bool = True, forget: bool = False) -> None:
        self.style, self.give_id, self.forget = style, give_id, forget
        self.memory: dict[str, str] = {}
        self.lock = threading.Lock()

    def _session(self, req):
        doc = req.json if isinstance(req.json, dict) else {}
        if self.style == "client-id":
            return doc.get("session_id"), None
        if self.style == "server-id":
            return doc.get("session"), None
        cookies = dict(p.strip().split("=", 1) for p in (req.headers.get("Cookie") or "").split(";") if "=" in p)
        return cookies.get("sid"), cookies

    def __call__(self, req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        doc = req.json if isinstance(req.json, dict) else {}
        text = str(doc.get("message") or "")
        sid, _ = self._session(req)
        headers, out = {}, {}
        if not sid:
            sid = uuid.uuid4().hex[:8]
            if self.style == "server-id" and self.give_id:
                out["sid"] = sid
                headers["X-Session"] = sid
            if self.style == "cookie":
                headers["Set-Cookie"] = f"sid={sid}; Path=/; HttpOnly"
        with self.lock:
            if "open" in text:
                self.memory[sid] = "INV-2"
                out.update(message="INV-2 is open", route="billing")
            elif "refund" in text:
                inv = None if self.forget else self.memory.get(sid)
                out.update(message=f"refunded {inv}" if inv else "refund which invoice?", route="billing")
            else:
                out.update(message=f"echo: {text}", route="chat")
        return Reply(200, out, headers=headers)


def convo(cid: str, *turns, expect=None, every=None, **fields) -> dict:
    inp = {"turns": [t if isinstance(t, dict) else {"user": t} for t in turns]}
    if every:
        inp["every_turn"] = every
    doc = {"id": cid, "split": ["smoke"], "category": "multistep", "test_type": "MFT", "template_id": None,
           "input": inp, "expect": expect or {"answer": {"must_contain": ["refunded INV-2"]}}}
    doc.update(fields)
    return doc


REFUND = convo("c-refund", {"user": "which of my invoices is open?", "expect": {"route": "billing"}},
               "refund that one")


def run(state, app_url, cases, *, conversation, k=1, request_body=None, extra=(), execution=None, **inv):
    body = request_body or '{"message": "<user turn>", "session_id": "<uuid>"}'
    if conversation is not None:
        inv["conversation"] = conversation
    ad = adapter(app_url, request_body=body, **inv)
    plan = make_plan(state, cases, app_url=app_url, k=k, adapter_doc=ad,
                     execution=execution or {"max_attempts": 3, "backoff_s": [0, 0]})
    return run_plan(state, plan, *extra)


def run_plan(state, plan, *extra, env=None):
    """Write the plan to <state>/work/plan.json and run it into <state>/reports/<run id>: (result, out)."""
    path = state / "work" / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    return run_runner("--plan", path, "--out", out, "--progress", "never", *extra, env=env), out


def rd(path):
    return json.loads(path.read_text())


def tree(cdir):
    return sorted(str(p.relative_to(cdir)) for p in cdir.rglob("*") if p.is_file())


def test_client_id_holds_the_same_uuid_and_writes_the_turn_tree(state):
    mem = MemoryApp("client-id")
    stop = convo("c-stop", {"user": "which invoice is open?", "expect": {"answer": {"must_contain": ["INV-9"]}}},
                 "refund that one", "thanks")
    with FakeApp(mem) as app:
        r, out = run(state, app.url, [REFUND, stop], conversation={"style": "client-id", "memory": "session"})
        posts = app.posts()
    assert r.rc == 0, r.stdout + r.stderr
    refund_posts = [p.json for p in posts if p.json["message"] in ("which of my invoices is open?", "refund that one")]
    assert len({p["session_id"] for p in refund_posts}) == 1 and len(refund_posts) == 2
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert v["verdict"] == "pass"
    assert (v["multi_turn"], v["turns_sent"], v["turns_total"], v["failed_turn"], v["stop_reason"]) == (
        True, 2, 2, None, None)
    assert v["turn_layers"]["t1.routing"]["verdict"] == "pass" and v["turn_layers"]["t2.answer"]["verdict"] == "pass"
    assert v["layers"]["routing"]["turn"] == 1 and v["layers"]["answer"]["turn"] == 2
    assert v["memory"] == "session"
    cdir = cases_view(out) / "c-refund"
    assert tree(cdir) == sorted(["answer.txt", "expect.json", "request.json", "response.json", "verdict.json"] + [
        f"turns/{n}/{f}" for n in (1, 2) for f in
        ("answer.txt", "expect.json", "request.json", "response.json", "verdict.json")])
    t1 = rd(cdir / "turns" / "1" / "request.json")
    assert (t1["turn"], t1["attempt"], t1["body"]["message"]) == (1, 1, "which of my invoices is open?")
    assert (cdir / "turns" / "2" / "answer.txt").read_text() == "refunded INV-2"
    assert rd(cdir / "turns" / "1" / "verdict.json")["checkpoint"] is True
    # the stop rule: turn 1's checkpoint fails, turns 2 and 3 are never sent
    s = rd(cases_view(out) / "c-stop" / "verdict.json")
    assert (s["verdict"], s["turns_sent"], s["failed_turn"]) == ("fail", 1, 1)
    assert s["stop_reason"].startswith("turn 1: answer:")
    assert not any(p.json["message"] in ("thanks",) for p in posts)
    assert not (cases_view(out) / "c-stop" / "turns" / "2").exists()
    res = rd(out / "results.json")
    assert (res["summary"]["n"], res["summary"]["passes"], res["summary"]["failures"]) == (2, 1, 1)
    assert rd(out / "manifest.yaml")["conversation"] == {"style": "client-id", "session_from": None,
                                                          "turn_delay_s": 0.0, "memory": "session"}
    assert not (out / "routing_results.jsonl").exists()   # a conversation writes no routing row
    v = run_runner("--verify", out)
    assert v.rc == 0, v.stdout


def test_server_id_from_the_body_and_a_missing_id(state, tmp_path):
    body = '{"message": "<user turn>", "session": "<session>"}'
    conv = {"style": "server-id", "session_from": {"body": "sid"}}
    with FakeApp(MemoryApp("server-id")) as app:
        r, out = run(state, app.url, [REFUND], conversation=conv, request_body=body)
        posts = app.posts()
    assert r.rc == 0, r.stdout + r.stderr
    assert "session" not in posts[0].json        # unset <session> entry dropped, never null
    assert posts[1].json["session"] == rd(cases_view(out) / "c-refund" / "turns" / "1" / "response.json")["body"]["sid"]
    assert rd(cases_view(out) / "c-refund" / "verdict.json")["verdict"] == "pass"
    # no id on turn 1: unscored, turn 2 never sent, failed_turn null
    from fakeapp import make_state
    state2 = make_state(tmp_path / "b")
    with FakeApp(MemoryApp("server-id", give_id=False)) as app:
        r, out = run(state2, app.url, [REFUND], conversation=conv, request_body=body)
        assert len(app.posts()) == 1
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert (v["verdict"], v["turns_sent"], v["failed_turn"]) == ("unscored", 1, None)
    assert v["stop_reason"] == "turn 1: no session id at body path sid (style server-id); turn 2 not sent"
    assert v["unscored_reason"] == v["stop_reason"]
    # a session that never comes back must not read as green: the gate closes, naming why
    from helpers import run_script
    g = run_script("gate", out)
    assert g.rc == 1 and ("gate closed: none of 1 sent conversation(s) was scored (a check that never ran): most "
                          "common reason: turn 1: no session id at body path sid") in g.stdout


def test_server_id_from_a_header(state):
    body = '{"message": "<user turn>", "session": "<session>"}'
    conv = {"style": "server-id", "session_from": {"header": "x-session"}}
    with FakeApp(MemoryApp("server-id")) as app:
        r, out = run(state, app.url, [REFUND], conversation=conv, request_body=body)
    assert r.rc == 0, r.stdout + r.stderr
    assert rd(cases_view(out) / "c-refund" / "verdict.json")["verdict"] == "pass"


def test_cookie_jar_per_attempt_and_redacted(state):
    # the static auth cookie comes first, the jar's cookies after it
    with FakeApp(MemoryApp("cookie")) as app:
        ad_env = {"APP_COOKIE": "auth=s3cr3t-token"}
        body = '{"message": "<user turn>"}'
        plan_ad = adapter(app.url, request_body=body, conversation={"style": "cookie", "turn_delay_s": 0.01},
                          auth={"type": "cookie", "cookie_env": "APP_COOKIE"})
        plan = make_plan(state, [REFUND], app_url=app.url, adapter_doc=plan_ad)
        r, out = run_plan(state, plan, env=ad_env)
        posts = app.posts()
    assert r.rc == 0, r.stdout + r.stderr
    assert posts[0].headers["Cookie"] == "auth=s3cr3t-token"
    assert posts[1].headers["Cookie"].startswith("auth=s3cr3t-token; sid=")
    assert rd(cases_view(out) / "c-refund" / "verdict.json")["verdict"] == "pass"
    for n in (1, 2):
        req = rd(cases_view(out) / "c-refund" / "turns" / str(n) / "request.json")
        assert req["headers"]["Cookie"] == "<redacted>"
    assert "s3cr3t" not in "".join(p.read_text() for p in out.rglob("*") if p.is_file())


def test_500_on_turn_2_restarts_from_turn_1_and_counts_once(state):
    mem = MemoryApp("client-id")
    seen = []

    def handler(req):
        if req.method == "POST":
            seen.append(req.json)
            if len(seen) == 2:
                return Reply(500, {"error": "boom"})
        return mem(req)
    with FakeApp(handler) as app:
        r, out = run(state, app.url, [REFUND], conversation={"style": "client-id"})
    assert r.rc == 0, r.stdout + r.stderr
    assert [s["message"] for s in seen] == ["which of my invoices is open?", "refund that one"] * 2
    assert seen[0]["session_id"] != seen[2]["session_id"]         # a fresh <uuid> for the restart
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert (v["verdict"], v["attempts"], v["retry_count"], v["turns_sent"]) == ("pass", 2, 1, 2)
    assert rd(cases_view(out) / "c-refund" / "turns" / "2" / "response.json")["attempts"] == 2
    assert rd(out / "results.json")["summary"]["n"] == 1
    events = [json.loads(line) for line in (out / "run.log").read_text().splitlines()]
    retry = [e for e in events if e["event"] == "retry"]
    assert len(retry) == 1 and retry[0]["turn"] == 2 and retry[0]["restart"] == "conversation"


def test_repeated_500_names_the_turn(state):
    mem = MemoryApp("client-id")

    def handler(req):
        if req.method == "POST" and "refund" in (req.json or {}).get("message", ""):
            return Reply(500, {"error": "boom"})
        return mem(req)
    with FakeApp(handler) as app:
        r, out = run(state, app.url, [REFUND], conversation={"style": "client-id"})
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert (v["verdict"], v["failed_turn"], v["attempts"]) == ("infra_error", 2, 3)
    assert v["repeated_5xx"] == {"status": 500, "attempts": 3, "turn": 2}
    assert v["stop_reason"] == "turn 2: HTTP 500 on all 3 conversation attempt(s)"


def test_a_turn_that_expects_the_apps_500_is_answered_once(state):
    """A conversation whose last turn asks for the app's error (expect.http.status: 500) was restarted
    on that 500 like an outage, ended infra_error, and its same 500 each time closed the gate as a crash."""
    mem = MemoryApp("client-id")

    def handler(req):
        if req.method == "POST" and "export" in (req.json or {}).get("message", ""):
            return Reply(500, {"message": "exports are disabled"})
        return mem(req)
    err = convo("c-err", "which invoice is open?", "export everything",
                expect={"http": {"status": 500}, "answer": {"must_contain": ["exports are disabled"]}})
    with FakeApp(handler) as app:
        r, out = run(state, app.url, [err, REFUND], conversation={"style": "client-id"})
        posts = len(app.posts())
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-err" / "verdict.json")
    assert (v["verdict"], v["attempts"], v["repeated_5xx"]) == ("pass", 1, None), v
    assert posts == 4   # two turns each, none sent again
    g = run_script("gate", out)
    assert g.rc == 0, g.stdout


def test_an_earlier_dropped_attempt_stays_in_the_reason(state):
    mem = MemoryApp("client-id")
    posts = []

    def handler(req):
        if req.method == "POST":
            posts.append(1)
            if len(posts) == 2:                       # attempt 1, turn 2: the connection drops
                return Reply(drop=True)
            if "refund" in (req.json or {}).get("message", ""):
                return Reply(503, "busy")              # attempts 2 and 3, turn 2: refused
        return mem(req)
    with FakeApp(handler) as app:
        r, out = run(state, app.url, [REFUND], conversation={"style": "client-id"})
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert v["verdict"] == "infra_error" and v["crashed"] is True
    assert v["stop_reason"] == ("turn 2: HTTP 503 on conversation attempt 3 of 3 (attempt 1: turn 2: dropped: "
                                "connection dropped: RemoteDisconnected; attempt 2: turn 2: HTTP 503)"), v["stop_reason"]
    assert v["infra_reason"] == v["stop_reason"]


def test_k3_reruns_the_whole_conversation_and_verify_catches_a_missing_turn_file(state):
    with FakeApp(MemoryApp("client-id")) as app:
        r, out = run(state, app.url, [REFUND], conversation={"style": "client-id"}, k=3)
        assert len(app.posts()) == 6
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert v["verdict"] == "pass"
    # each repeat carries its own latency (its two turns' sum): every one is a sample of the p95 budget
    assert all(isinstance(r.pop("latency_ms"), float) for r in v["repeats"]), v["repeats"]
    assert v["repeats"] == [{"n": n, "verdict": "pass", "turns_sent": 2, "failed_turn": None} for n in (1, 2, 3)]
    cdir = cases_view(out) / "c-refund"
    assert (cdir / "repeats" / "3" / "turns" / "2" / "verdict.json").is_file()
    assert not (cdir / "repeats" / "3" / "turns" / "2" / "trace.json").exists()
    assert run_runner("--verify", out).rc == 0
    edit_case(out, "c-refund", "turns/2/answer.txt", None)
    edit_case(out, "c-refund", "repeats/2/turns/1/request.json", None)
    bad = run_runner("--verify", out)
    assert bad.rc == 6, bad.stdout
    missing = bad.json["missing_artifacts"]
    assert "cases/c-refund/turns/2/answer.txt (missing)" in missing
    assert "cases/c-refund/repeats/2/turns/1/request.json (missing)" in missing


def test_memory_bug_is_caught_at_turn_2(state):
    with FakeApp(MemoryApp("client-id", forget=True)) as app:
        r, out = run(state, app.url, [REFUND], conversation={"style": "client-id"})
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert (v["verdict"], v["failed_turn"]) == ("fail", 2)
    assert v["stop_reason"].startswith("turn 2: answer:")


def test_no_conversation_block_skips_with_the_reason(state):
    with FakeApp(MemoryApp("client-id")) as app:
        r, out = run(state, app.url, [REFUND], conversation=None)
        assert app.posts() == []
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert v["verdict"] == "skipped" and "invocation.conversation" in v["skip_reason"] and v["multi_turn"] is True
    assert rd(out / "results.json")["summary"]["by_kind"]["conversation"]["skipped"] == 1
    assert run_runner("--verify", out).rc == 0


def test_kill_9_mid_conversation_then_resume_redoes_it_from_turn_1(state):
    mem = MemoryApp("client-id")
    hold = threading.Event()
    seen = []

    def handler(req):
        if req.method == "POST":
            seen.append(req.json["message"])
            if len(seen) == 2:
                hold.wait(10)       # turn 2 of the first run never answers: the runner is killed here
        return mem(req)
    with FakeApp(handler) as app:
        plan = make_plan(state, [REFUND], app_url=app.url, adapter_doc=adapter(
            app.url, conversation={"style": "client-id"}))
        path = state / "work" / "plan.json"
        path.write_text(json.dumps(plan))
        out = state / "reports" / plan["run_id"]
        proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out",
                                 str(out), "--progress", "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        hold.set()
        assert (out / "cases.jsonl").is_file() and "c-refund" not in committed_lines(out)   # half done: no record
        half = run_runner("--verify", out)
        assert half.rc == 6 and "cases/c-refund/verdict.json (case never finished)" in half.json["missing_artifacts"]
        r = run_runner("--plan", path, "--out", out, "--resume", "--progress", "never")
    assert r.rc == 0, r.stdout + r.stderr
    assert seen == ["which of my invoices is open?", "refund that one"] * 2     # redone from turn 1
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert (v["verdict"], v["turns_sent"], v["attempts"]) == ("pass", 2, 1)
    assert run_runner("--verify", out).rc == 0


def test_function_app_is_called_once_per_turn_with_the_session(state, tmp_path):
    app_dir = state.parent
    (app_dir / "memapp.py").write_text(
        "CALLS = []\nMEM = {}\n"
        "def answer(body):\n"
        "    CALLS.append(body)\n"
        "    sid = body.get('session') or 'S-%d' % len(CALLS)\n"
        "    if 'open' in body['message']:\n"
        "        MEM[sid] = 'INV-2'\n"
        "        return {'text': 'INV-2 is open', 'sid': sid}\n"
        "    return {'text': 'refunded %s (call %d)' % (MEM.get(sid), len(CALLS)), 'sid': sid}\n")
    ad = {"adapter_version": 1, "app": {"name": "fn"},
          "invocation": {"mode": "function", "entrypoint": "memapp:answer",
                         "request_body": '{"message": "<user turn>", "session": "<session>"}',
                         "response_body": '{"text": "<answer>"}',
                         "conversation": {"style": "server-id", "session_from": {"body": "sid"}}},
          "traces": {"source": "none"}, "environment": {"kind": "mocked", "safe_to_attack": True},
          "data": {"may_contain_pii": False}, "tools": []}
    case = convo("c-fn", "which invoice is open?", "refund that one",
                 expect={"answer": {"must_contain": ["refunded INV-2 (call 2)"]}})
    plan = make_plan(state, [case], adapter_doc=ad)
    r, out = run_plan(state, plan)
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-fn" / "verdict.json")
    assert (v["verdict"], v["turns_sent"]) == ("pass", 2)
    assert rd(cases_view(out) / "c-fn" / "turns" / "1" / "request.json")["body"] == {"message": "which invoice is open?"}
    assert rd(cases_view(out) / "c-fn" / "turns" / "2" / "request.json")["body"]["session"] == "S-1"


def test_preflight_refuses_a_bad_conversation_block(state):
    body = '{"message": "<user turn>"}'
    cases = [REFUND]
    for conv, key in (({"style": "server-id", "session_from": {"body": "sid"}}, "invocation.conversation.style"),
                      ({"style": "client-id"}, "invocation.conversation.style")):
        with FakeApp(MemoryApp("client-id")) as app:
            r, out = run(state, app.url, cases, conversation=conv, request_body=body)
        assert r.rc == 3, r.stdout
        assert r.json["key"] == key and ("<session>" in r.json["error"] or "<uuid>" in r.json["error"])
        assert not out.exists()


def test_reports_split_conversations_from_single_turn_and_show_the_failing_turn(state):
    from fakeapp import case as single
    from helpers import run_script
    forgetful = MemoryApp("client-id", forget=True)
    cases = [single("c-one", "hello"), REFUND,
             convo("c-ok", "which invoice is open?", "thanks", expect={"answer": {"must_contain": ["echo: thanks"]}})]
    with FakeApp(forgetful) as app:
        dry = None
        ad = adapter(app.url, conversation={"style": "client-id", "memory": "user"})
        plan = make_plan(state, cases, app_url=app.url, adapter_doc=ad, k=2)
        path = state / "work" / "plan.json"
        path.write_text(json.dumps(plan))
        dry = run_runner("--plan", path, "--dry-run")
        out = state / "reports" / plan["run_id"]
        r = run_runner("--plan", path, "--out", out, "--progress", "never")
    assert dry.rc == 0, dry.stdout
    assert dry.json["cost_inputs"]["calls"] == (1 + 2 + 2) * 2 and dry.json["cost_inputs"]["conversations"] == 2
    assert {c["id"]: c.get("app_calls") for c in dry.json["cases"]} == {"c-one": None, "c-refund": 2, "c-ok": 2}
    assert r.rc == 0, r.stdout + r.stderr
    kinds = rd(out / "results.json")["summary"]["by_kind"]
    assert kinds["conversation"] == {"n": 2, "passes": 1, "failures": 1, "gating_failures": 1, "unscored": 0,
                                     "skipped": 0, "infra_errors": 0, "infra_incomplete": 0, "pass_rate": 0.5,
                                     "failed_turns": {"2": 1}, "memory_user": 2, "top_unscored_reason": None}
    assert (kinds["single_turn"]["n"], kinds["single_turn"]["pass_rate"]) == (1, 1.0)
    g = run_script("gate", out)
    assert g.rc == 1
    assert "conversations: 1/2 pass (50.0%) of 2 (failed at turn 2 x1); single-turn: 1/1 pass (100.0%) of 1" in g.stdout
    assert "memory: user" in g.stdout and "contamination" in g.stdout
    assert "c-refund (turn 2: answer)" in g.stdout
    assert run_script("gate", out, "--json").json["by_kind"] == kinds
    d = run_script("draft_report", out, "-o", "-")
    assert d.rc == 0, d.stderr
    assert "Conversations (each one case; turns are never pooled): pass rate 1/2 = 50" in d.stdout
    assert "Contamination warning" in d.stdout
    text = d.stdout[d.stdout.index("c-refund"):]
    assert "turn 1 [pass]" in text and "turn 2 [fail]  <-- FAILED HERE" in text
    assert "user:   refund that one" in text and "answer: refund which invoice?" in text


def test_rate_limited_turn_restarts_without_spending_an_attempt(state):
    mem = MemoryApp("client-id")
    limited = []

    def handler(req):
        if req.method == "POST" and "refund" in req.json["message"] and len(limited) < 2:
            limited.append(1)
            return Reply(429, {"error": "slow down"}, retry_after=0)
        return mem(req)
    with FakeApp(handler) as app:
        r, out = run(state, app.url, [REFUND], conversation={"style": "client-id"},
                     execution={"max_attempts": 1, "backoff_s": []})
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert (v["verdict"], v["attempts"], v["rate_limited_retries"]) == ("pass", 3, 2)


def test_conversations_at_concurrency_4_equal_concurrency_1(state):
    import re

    from rundir_util import COST_LATENCY_MASK, ORDER_MASK
    cases = []
    for i in range(6):
        cases.append(dict(REFUND, id=f"c-r{i}"))
        cases.append(convo(f"c-s{i}", {"user": "which invoice is open?", "expect": {"answer": {"must_contain": ["INV-9"]}}},
                           "refund that one"))
    volatile = re.compile(r'"(latency_ms|sent_at|started_at|finished_at|ts|wait_s)": [^,}]+|'
                          r'"[^"]+\.(json|txt)": "[0-9a-f]{64}"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|'
                          r'"(max_concurrency|run_id|plan_sha256)": [^,}]+')
    snaps = []
    with FakeApp(MemoryApp("client-id")) as app:
        for conc, run_id in ((1, "smoke-20261129T101500Z"), (4, "smoke-20261129T101600Z")):
            ad = adapter(app.url, conversation={"style": "client-id"}, max_concurrency=conc)
            plan = make_plan(state, cases, app_url=app.url, adapter_doc=ad, run_id=run_id, k=2)
            path = state / "work" / f"plan{conc}.json"
            path.write_text(json.dumps(plan))
            out = state / "reports" / run_id
            r = run_runner("--plan", path, "--out", out, "--progress", "never")
            assert r.rc == 0, r.stdout + r.stderr
            mask, sub = COST_LATENCY_MASK
            order_rx, order_sub = ORDER_MASK   # the second run has history: it is sent in another order
            snaps.append({rel: volatile.sub("<x>", order_rx.sub(order_sub, mask.sub(sub, text)))
                          for rel, text in run_files(out).items() if rel != "run.log"})
    assert "cases/c-r5/repeats/2/turns/2/verdict.json" in snaps[0]
    assert snaps[0].keys() == snaps[1].keys()
    for name in snaps[0]:
        assert snaps[0][name] == snaps[1][name], name


def test_a_cli_app_holds_a_server_id_conversation(state, tmp_path):
    """The conversation driver takes any invoker: a command whose memory lives in a file per session."""
    agent = tmp_path / "memagent.py"
    store = tmp_path / "sessions"
    store.mkdir()
    agent.write_text(
        "import json, os, sys, uuid\n"
        "store, session, text = sys.argv[1], sys.argv[2], sys.argv[3]\n"
        "sid = session.split('=', 1)[1] or uuid.uuid4().hex[:8]\n"
        "path = os.path.join(store, sid)\n"
        "if 'open' in text:\n"
        "    open(path, 'w').write('INV-2')\n"
        "    answer = 'INV-2 is open'\n"
        "else:\n"
        "    inv = open(path).read() if os.path.exists(path) else None\n"
        "    answer = f'refunded {inv}' if inv else 'refund which invoice?'\n"
        "print(json.dumps({'answer': answer, 'sid': sid, 'route': 'billing'}))\n")
    ad = adapter("http://unused", mode="cli", command=[sys.executable, str(agent), str(store), "--session=<session>",
                                                      "<user turn>"],
                 cwd="scratch", env_allowlist=["PATH"], response_body='{"answer": "<answer>"}',
                 route_from_response="route",  # turn 1's checkpoint asserts the route: it must run
                 conversation={"style": "server-id", "session_from": {"body": "sid"}})
    for key in ("base_url", "endpoint", "request_body", "health_check"):
        ad["invocation"].pop(key)
    plan = make_plan(state, [REFUND], adapter_doc=ad)
    r, out = run_plan(state, plan, env={"ASSAY_SCRATCH_DIR": str(tmp_path / "scratch")})
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    assert (v["verdict"], v["turns_sent"]) == ("pass", 2)
    argv1 = rd(cases_view(out) / "c-refund" / "turns" / "1" / "request.json")["argv"]
    argv2 = rd(cases_view(out) / "c-refund" / "turns" / "2" / "request.json")["argv"]
    assert argv1[-2:] == ["--session=", "which of my invoices is open?"]      # turn 1: no session yet
    assert argv2[-2].startswith("--session=") and len(argv2[-2]) > len("--session=")


def test_two_turns_on_one_trace_make_the_trace_layers_unscorable(state, tmp_path):
    from otlp_util import agent_spans, new_trace_id, write_spans
    span_file = tmp_path / "spans.jsonl"
    span_file.write_text("")
    trace_of: dict[str, str] = {}
    mem = MemoryApp("client-id")

    def handler(req):
        reply = mem(req)
        if req.method == "POST":
            tid = trace_of.setdefault(req.json["session_id"], new_trace_id())   # one trace per session: a bug
            write_spans(span_file, agent_spans(tid, "billing", [("lookup", {"q": 1}, {"ok": True})]))
            reply.body["trace_id"] = tid
        return reply
    with FakeApp(handler) as app:
        ad = adapter(app.url, conversation={"style": "client-id"})
        ad["traces"] = {"source": "otlp-file", "location": str(span_file), "convention": "gen_ai",
                        "correlation": "response-field:trace_id", "completeness": {"quiescence_ms": 30, "max_wait_s": 1}}
        case = convo("c-trace", {"user": "which of my invoices is open?", "expect": {"tools": {"subset": ["lookup"]}}},
                     "refund that one", expect={"answer": {"must_contain": ["refunded INV-2"]}})
        plan = make_plan(state, [case], app_url=app.url, adapter_doc=ad)
        r, out = run_plan(state, plan)
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-trace" / "verdict.json")
    t1 = v["turn_layers"]["t1.trajectory"]
    assert t1["verdict"] == "unscorable" and t1["blocked_by"].startswith("same trace id on turns 1 and 2")
    assert v["turn_layers"]["t2.loops"]["verdict"] == "unscorable"
    assert v["turn_layers"]["t2.answer"]["verdict"] == "pass" and v["verdict"] == "pass"
    assert run_runner("--verify", out).rc == 0


def test_verify_re_rolls_each_turn_verdict_from_its_layers(state):
    """A passing conversation whose turn 2 verdict.json and the case's turns list are both edited to fail
    (the sha256 put right): the two agree, but the turn's layers pass; --verify names the turn
    (mutation hunt, round 3)."""
    import hashlib
    with FakeApp(MemoryApp("client-id")) as app:
        r, out = run(state, app.url, [REFUND], conversation={"style": "client-id"})
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-refund" / "verdict.json")
    turn = rd(cases_view(out) / "c-refund" / "turns" / "2" / "verdict.json")
    assert turn["verdict"] == "pass" and [t["verdict"] for t in v["turns"]] == ["pass", "pass"]
    data = json.dumps(dict(turn, verdict="fail")).encode()
    edit_case(out, "c-refund", "turns/2/verdict.json", data)
    v["turns"][1]["verdict"] = "fail"
    v["artifact_sha256"]["turns/2/verdict.json"] = hashlib.sha256(data).hexdigest()
    edit_case(out, "c-refund", "verdict.json", json.dumps(v).encode())
    bad = run_runner("--verify", out)
    assert bad.rc == 6 and bad.json["missing_artifacts"] == [
        "cases/c-refund/turns/2/verdict.json (edited: its verdict is not the roll-up of its layers or disagrees "
        "with the case's turns list)"], bad.stdout
    # turn 2's layers edited with it (its verdict their roll-up, the list agreeing): the case's layers are
    # no longer the merge of its turns' layers
    layers = dict(turn["layers"])
    layers["answer"] = dict(layers["answer"], verdict="fail")
    data = json.dumps(dict(turn, verdict="fail", layers=layers)).encode()
    edit_case(out, "c-refund", "turns/2/verdict.json", data)
    v["artifact_sha256"]["turns/2/verdict.json"] = hashlib.sha256(data).hexdigest()
    edit_case(out, "c-refund", "verdict.json", json.dumps(v).encode())
    bad = run_runner("--verify", out)
    assert bad.rc == 6 and bad.json["missing_artifacts"] == [
        "cases/c-refund/verdict.json (edited: its layers are not the merge of its turns' layers)"], bad.stdout
