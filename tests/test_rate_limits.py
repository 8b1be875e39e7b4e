"""Throughput under rate limits: the adaptive in-flight limit (run/limiter.py), the separate
rate-limit budget (outcome.attempt_with_retries), and runs against rate-limited apps.

The limiter and the retry loop are pure enough to test with a fake clock; the rest drives
run_cases.py against FakeApps on real ports: a token bucket that clears, an app that never
stops saying 429, and the same with `--fixed-concurrency` (today's behaviour).
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from fakeapp import FakeApp, Reply, case, default_handler, make_plan, run_runner, state, write_plan  # noqa: F401
from helpers import run_script

from assay.run.limiter import AppSlots
from assay.invoke.outcome import RESPONSE, Outcome, attempt_with_retries, is_rate_limited
from rundir_util import cases_view


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def answer(slots: AppSlots, slot, status: int, retry_after: float | None = None) -> None:
    slot.answered, slot.status, slot.retry_after_s = True, status, retry_after
    slots.release(slot)


# ---------------------------------------------------------------- the limiter

def test_aimd_halves_once_per_round_trip_and_climbs_back_additively():
    clock = Clock()
    events = []
    slots = AppSlots(8, clock=clock, on_change=lambda e, f: events.append((e, f)))
    held = [slots.acquire() for _ in range(8)]
    assert slots.in_flight == 8
    clock.t += 0.1
    for s in held[:4]:                       # four 429s from one window: one decrease, not four
        answer(slots, s, 429)
    assert slots.limit == 4 and slots.decreases == 1
    answer(slots, held[4], 200)              # answers from the same window raise it slowly
    assert 4 < slots.limit < 4.5
    clock.t += 0.01
    fresh = slots.acquire()                  # sent after the decrease: may decrease again
    clock.t += 0.1
    answer(slots, fresh, 429)
    assert slots.decreases == 2 and 2 <= slots.limit < 2.5
    for s in held[5:]:
        answer(slots, s, 200)
    for _ in range(200):                     # recovery: +1/limit per answer, capped at max
        answer(slots, slots.acquire(), 200)
    assert slots.limit == 8
    summary = slots.summary()
    assert summary["limit_min"] < 2.5 and summary["in_flight"]["max"] == 8 and summary["rate_limited_answers"] == 5
    assert [e for e, _ in events] == ["decrease", "decrease"]


def test_retry_after_pauses_new_sends_and_never_below_one():
    clock = Clock()
    slots = AppSlots(2, clock=clock)
    s = slots.acquire()
    answer(slots, s, 429, retry_after=0.2)
    assert slots.limit == 1 and slots.pause_until == pytest.approx(100.2)
    got = []
    t = threading.Thread(target=lambda: got.append(slots.acquire()))
    t.start()
    t.join(0.05)
    assert not got, "a send during the pause must wait"
    clock.t += 0.25
    with slots._cond:
        slots._cond.notify_all()
    t.join(2)
    assert got and slots.pauses == 1
    answer(slots, got[0], 429)
    assert slots.limit == 1


def test_fixed_mode_never_changes_the_limit():
    clock = Clock()
    slots = AppSlots(4, adaptive=False, start=1, clock=clock)
    assert slots.limit == 4
    for _ in range(5):
        answer(slots, slots.acquire(), 429, retry_after=5)
    assert slots.limit == 4 and slots.pause_until == 0.0 and slots.decreases == 0


# ---------------------------------------------------------------- the retry loop

def outcome(status, retry_after=None):
    return Outcome(RESPONSE, status=status, headers={"Retry-After": str(retry_after)} if retry_after is not None else {})


def test_rate_limited_retries_spend_their_own_budget_not_max_attempts():
    script = [outcome(429, 0.5)] * 6 + [outcome(200)]
    sent = iter(script)
    slept = []
    outs = attempt_with_retries(lambda: next(sent), max_attempts=2, backoff_s=[0], rate_limit_wait_s=10,
                                sleep=slept.append)
    assert [o.status for o in outs] == [429] * 6 + [200]
    assert slept == [0.5] * 6


def test_budget_spent_is_final_and_says_so():
    sent = iter([outcome(429, 1)] * 10)
    outs = attempt_with_retries(lambda: next(sent), max_attempts=3, backoff_s=[0, 0], rate_limit_wait_s=2.5,
                                sleep=lambda s: None)
    assert len(outs) == 3 and outs[-1].status == 429
    assert "rate-limit budget spent" in outs[-1].notes[-1]


def test_without_a_budget_429_spends_max_attempts_as_before():
    sent = iter([outcome(429)] * 10)
    outs = attempt_with_retries(lambda: next(sent), max_attempts=3, backoff_s=[0, 0], sleep=lambda s: None)
    assert len(outs) == 3


def test_what_counts_as_rate_limited():
    assert is_rate_limited(outcome(429)) and is_rate_limited(outcome(503, 1))
    assert not is_rate_limited(outcome(503)) and not is_rate_limited(outcome(500, 1))


# ---------------------------------------------------------------- runs against throttling apps

class TokenBucket:
    """rate req/s with a small burst; beyond it 429 + Retry-After (seconds, fractional)."""

    def __init__(self, rate: float, burst: float):
        self.rate, self.burst, self.tokens, self.last = rate, burst, burst, time.monotonic()
        self.lock = threading.Lock()
        self.limited = 0
        self.in_flight = self.max_in_flight = 0

    def __call__(self, req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens < 1:
                self.limited += 1
                return Reply(429, {"error": "rate limited"}, retry_after=round((1 - self.tokens) / self.rate, 3))
            self.tokens -= 1
        return Reply(200, default_handler(req).body, delay=0.02)


def _run(state, app_url, n, *, execution=None, concurrency=8, run_id="smoke-20261130T101500Z"):
    from fakeapp import adapter
    cases = [case(f"c-{i:03d}", f"hello {i}") for i in range(n)]
    plan = make_plan(state, cases, app_url=app_url, run_id=run_id, adapter_doc=adapter(app_url, max_concurrency=concurrency),
                     execution=execution or {"max_attempts": 3, "backoff_s": [0, 0]})
    out = state / "reports" / run_id
    r = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    return r, out


def _log(out):
    return [json.loads(line) for line in (out / "run.log").read_text().splitlines()]


def test_a_429_storm_that_clears_is_survived_with_every_case_scored(state):
    bucket = TokenBucket(rate=60, burst=3)
    with FakeApp(bucket) as app:
        r, out = _run(state, app.url, 40)
    assert r.rc == 0, r.stdout + r.stderr
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["infra_errors"] == 0 and summary["passes"] == 40
    assert bucket.limited > 0 and summary["rate_limited_retries"] == bucket.limited
    log = _log(out)
    decreases = [e for e in log if e["event"] == "concurrency" and e["change"] == "decrease"]
    assert decreases, "the in-flight limit must drop under 429s"
    thr = [e for e in log if e["event"] == "throughput"][-1]
    assert thr["adaptive"] is True and thr["limit_min"] < 8 and thr["rate_limited_answers"] == bucket.limited
    gate = run_script("gate", out, "--no-verify")
    assert f"rate-limited retries {bucket.limited}" in gate.stdout
    # the in-flight summary reaches the gate and the report (read from run.log's throughput event)
    line = (f"throttled by the app: {bucket.limited} rate-limited answer(s); in flight "
            f"{thr['in_flight']['min']}-{thr['in_flight']['max']} (median {thr['in_flight']['median']}) of "
            f"max_concurrency 8; the limit went down {thr['decreases']} time(s), lowest {thr['limit_min']:g}")
    assert line in gate.stdout, gate.stdout
    report = run_script("draft_report", out)
    assert report.rc == 0, report.stdout
    text = (out / "report.md").read_text() if (out / "report.md").exists() else report.stdout
    assert f"The app throttled the run ({bucket.limited} rate-limited answer(s); in flight" in text


def test_a_permanently_rate_limited_app_ends_as_infra_with_a_clear_reason(state):
    with FakeApp(lambda req: Reply(200, {"ok": True}) if req.method == "GET"
                 else Reply(429, {"error": "quota"}, retry_after=0.05)) as app:
        r, out = _run(state, app.url, 3, execution={"max_attempts": 3, "backoff_s": [0, 0], "rate_limit_wait_s": 0.5})
    assert r.rc == 0, r.stdout + r.stderr
    verdict = json.loads((cases_view(out) / "c-000" / "verdict.json").read_text())
    assert verdict["verdict"] == "infra_error"
    assert verdict["infra_reason"].startswith("rate limited: HTTP 429 on ")
    assert "execution.rate_limit_wait_s (0.5 s) was spent" in verdict["infra_reason"]
    assert verdict["attempts"] > 3, "rate-limited retries are not bounded by max_attempts"


def test_fixed_concurrency_behaves_as_before(state):
    seen = []
    with FakeApp(lambda req: Reply(200, {"ok": True}) if req.method == "GET"
                 else (seen.append(1), Reply(429, {"error": "quota"}, retry_after=0))[1]) as app:
        r, out = _run(state, app.url, 2, execution={"max_attempts": 3, "backoff_s": [0, 0], "adaptive": False})
    assert r.rc == 0
    verdict = json.loads((cases_view(out) / "c-000" / "verdict.json").read_text())
    assert verdict["verdict"] == "infra_error" and verdict["attempts"] == 3
    assert verdict["infra_reason"] == "HTTP 429 on all 3 attempt(s)"
    assert not [e for e in _log(out) if e["event"] == "concurrency"]


def test_make_plan_flags_reach_the_plan(tmp_path):
    from fixtures_authoring import convert, make_state
    st = make_state(tmp_path)
    work = convert(st)
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", st, "-o", work / "p.json",
                   "--start-concurrency", "2", "--rate-limit-wait-s", "45")
    assert r.rc == 0, r.stdout
    ex = json.loads((work / "p.json").read_text())["execution"]
    assert ex["start_concurrency"] == 2 and ex["rate_limit_wait_s"] == 45 and "adaptive" not in ex
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", st, "-o", work / "q.json",
                   "--fixed-concurrency")
    assert json.loads((work / "q.json").read_text())["execution"]["adaptive"] is False


def test_quickack_is_set_before_each_answer_is_read():
    from assay.invoke import http as http_invoker
    if http_invoker._TCP_QUICKACK is None:
        pytest.skip("TCP_QUICKACK is Linux-only")
    srv = socket.create_server(("127.0.0.1", 0))
    try:
        cli = socket.create_connection(srv.getsockname())

        class Conn:
            sock = cli
        http_invoker._quickack(Conn)
        assert cli.getsockopt(socket.IPPROTO_TCP, http_invoker._TCP_QUICKACK) == 1
        cli.close()
    finally:
        srv.close()


def test_progress_eta_follows_the_recent_rate_and_the_latency_tail():
    from assay.run.progress import Progress
    p = Progress(100, "always", stream=open("/dev/null", "w"))
    base = p.start
    p._recent.extend([base + i * 0.1 for i in range(11)])      # 10 cases per second lately
    p.done = 11
    assert p.eta(base + 1.0) == pytest.approx(89 / 10, rel=1e-6)
    p._latencies.extend([0.2] * 9 + [30.0])                    # one case in ten takes 30 s
    assert p.eta(base + 1.0) == pytest.approx(30.0)
    p.done = 100
    assert p.eta(base + 2.0) == 0.0


def test_throughput_line_per_shard_and_silent_when_not_throttled(tmp_path):
    from assay.report.throughput import throughput_line
    calm = {"event": "throughput", "adaptive": True, "max_concurrency": 8, "in_flight": {"min": 1, "median": 8, "max": 8},
            "limit_min": 8, "limit_end": 8, "rate_limited_answers": 0, "decreases": 0, "pauses": 0, "paused_s": 0}
    hot = dict(calm, rate_limited_answers=5, decreases=2, limit_min=2, limit_end=3.5, pauses=1, paused_s=1.5,
               in_flight={"min": 1, "median": 3, "max": 8})
    log = tmp_path / "run.log"
    log.write_text(json.dumps(calm) + "\n")
    assert throughput_line(tmp_path) is None
    assert throughput_line(tmp_path / "missing") is None
    # a merged run: each shard's last event, in shard order; a calm shard says nothing
    log.write_text("\n".join(json.dumps(dict(e, shard=s)) for e, s in ((hot, 1), (calm, 0), (hot, 2))) + "\n")
    assert throughput_line(tmp_path) == (
        "throttled by the app: shard 1: 5 rate-limited answer(s); in flight 1-8 (median 3) of max_concurrency 8; "
        "the limit went down 2 time(s), lowest 2, ended at 3.5; 1 Retry-After pause(s), 1.5 s without sending; "
        "shard 2: 5 rate-limited answer(s); in flight 1-8 (median 3) of max_concurrency 8; the limit went down "
        "2 time(s), lowest 2, ended at 3.5; 1 Retry-After pause(s), 1.5 s without sending")
