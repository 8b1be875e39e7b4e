"""A holdout run killed midway leaves verdicts files that are its runner's last batch, not its result:
run_cases.py, stats.py as subprocesses on real runs of a loopback app.

- stats.py paired a finished holdout run with a killed one's verdicts_for_stats.jsonl (the 16 cases of
  its first batch, all passing) and said "IMPROVED ... keep = True": a holdout pass rate from a run that
  never finished. It now refuses (exit 2) naming the run id, that it never finished, and the --resume
  command; the killed run as the baseline the same;
- run_cases.py --baseline-verdicts took the killed run's file as the baseline of a new holdout run (its
  comparison.json a measurement against a partial run): refused the same way, before any spend and
  before a holdout look is recorded.
"""

from __future__ import annotations

import threading

import pytest

from fakeapp import FakeApp, case, make_plan, make_state, write_plan
from helpers import run_script
from test_gate_names_cases import HANG, handler, killed_run

FINISHED, KILLED, NEXT = "holdout-20261201T000000Z", "holdout-20261207T000000Z", "holdout-20261208T000000Z"
N = 18   # the runner refreshes its verdicts files after 16 finished cases: the killed run leaves 16 rows


def sealed(want: str, hang_last: bool = False) -> list[dict]:
    cases = [case(f"h-{i}", f"hello h{i}", split=("holdout",), expect={"answer": {"must_contain": [want]}})
             for i in range(1, N + 1)]
    if hang_last:
        cases[-1] = case(f"h-{N}", HANG, split=("holdout",))
    return cases


def holdout_plan(state, cases, url, run_id):
    return make_plan(state, cases, app_url=url, run_id=run_id, mode="holdout", selecting_split="holdout")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """FINISHED: every holdout case fails (the app never says "refunded"); KILLED: the same cases asking
    "ok" (a pass), the runner SIGKILLed while the app holds the last one."""
    state = make_state(tmp_path_factory.mktemp("killed-holdout"))
    hanging = threading.Event()
    with FakeApp(handler(hanging)) as app:
        r = run_script("run_cases", "--plan", write_plan(state, holdout_plan(state, sealed("refunded"), app.url, FINISHED),
                                                         "finished.json"),
                       "--out", state / "reports" / FINISHED, "--progress", "never")
        assert r.rc == 0, r.stdout + r.stderr   # finished (the runner exits 0; its gate closes on the failures)
        killed_run(state, holdout_plan(state, sealed("ok", hang_last=True), app.url, KILLED), hanging)
    return state


def test_stats_refuses_a_killed_holdout_runs_verdicts_on_either_side(runs):
    reports = runs / "reports"
    left = (reports / KILLED / "verdicts_for_stats.jsonl").read_text().splitlines()
    assert 0 < len(left) < N   # what the killed runner left: its last batch, all passes
    base, cand = reports / FINISHED / "verdicts_for_stats.jsonl", reports / KILLED / "verdicts_for_stats.jsonl"
    for args, side in (((base, cand), "candidate"), ((cand, base), "baseline")):
        s = run_script("stats", *args)
        assert s.rc == 2, s.stdout + s.stderr   # was exit 0: "improved", keep = True, from a run that never finished
        err = s.json
        assert err["key"] == side and err["run_id"] == KILLED, err
        assert f"the {side} {cand} is the verdicts of run {KILLED}, which never finished" in err["error"], err
        assert "no runner holds its lock: killed?" in err["error"] and "--resume" in err["error"], err
        assert "h-1" not in s.stdout   # the holdout seal: ids never named


def test_a_killed_holdout_run_is_no_baseline_for_the_runner(runs):
    ledger = runs / "datasets" / "holdout-looks.jsonl"
    looks = ledger.read_text().splitlines()
    plan = write_plan(runs, holdout_plan(runs, sealed("ok"), "http://127.0.0.1:9", NEXT), "next.json")
    r = run_script("run_cases", "--plan", plan, "--out", runs / "reports" / NEXT, "--progress", "never",
                   "--baseline-verdicts", runs / "reports" / KILLED / "verdicts_for_stats.jsonl")
    assert r.rc == 2, r.stdout + r.stderr
    err = r.json
    assert err["key"] == "--baseline-verdicts" and err["run_id"] == KILLED, err
    assert f"is the verdicts of run {KILLED}, which never finished" in err["error"] and "--resume" in err["error"], err
    assert ledger.read_text().splitlines() == looks   # refused before a holdout look is spent
    assert not (runs / "reports" / NEXT).exists()
