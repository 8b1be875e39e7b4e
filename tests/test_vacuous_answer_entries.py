"""Answer entries that can never fail are refused before the run (the hand-written-suite trial).

A newcomer writes `must_contain: ["/999 usd/i"]` (a trailing flag the scorer never reads: the check is
unscorable on every answer) or `must_contain: ["/.*$/"]` (an anchor, yet found in every answer) beside
a route check. Before, the linter only warned of the first and passed the second; the route held, the
answer check never failed, the case passed and the gate opened whatever the app answered. Each test
writes the state dir as a user does, plans it with make_plan.py as a subprocess and runs it against a
real HTTP app on its own loopback port.
"""

from __future__ import annotations

import pytest

from fakeapp import FakeApp, Reply
from helpers import run_script
from test_no_silent_green import case_yaml, plan, refused_plan, run, travel_reply, write_state

FLAGGED = "  route: quotes\n  answer:\n    must_contain: [\"/999 usd/i\"]\n"
FLAGGED_NOT = "  route: quotes\n  answer:\n    must_not_contain: [\"/sorry/i\"]\n    must_contain: [\"EUR\"]\n"
ANCHORED = "  route: quotes\n  answer:\n    must_contain: [\"/(?i)(flight)?.*$/\"]\n"
NEAR_MISS = ("  route: quotes\n  answer:\n    must_contain: [\"/(?i)120 eur/\", \"/^A flight/\", \"/EUR\\\\.$/\"]\n"
             "    must_not_contain: [\"/usr/bin\", \"/(?i)sorry/\"]\n")


def wrong_reply(req) -> Reply:
    """The right route, the wrong answer: every answer check a case makes must be able to see it."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"answer": "Sorry, no flights today.", "route": "quotes", "quote": {"price": 0}})


def test_entries_that_cannot_fail_are_refused_and_never_open_the_gate(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001", expect=FLAGGED),
                                   "c-00000002": case_yaml("c-00000002", expect=FLAGGED_NOT),
                                   "c-00000003": case_yaml("c-00000003", expect=ANCHORED)})
    refusal = refused_plan(state)
    err = refusal["error"]
    assert ("datasets/c-00000001.yaml:15: c-00000001 [regex_trailing_flags] expect.answer.must_contain[0] "
            "'/999 usd/i'") in err and "use inline flags: '/(?i)999 usd/'" in err
    assert "datasets/c-00000002.yaml:15: c-00000002 [regex_trailing_flags] expect.answer.must_not_contain[0]" in err
    assert "datasets/c-00000003.yaml:15: c-00000003 [vacuous_regex]" in err
    assert {(e["case_id"], e["code"]) for e in refusal["errors"]} == {
        ("c-00000001", "regex_trailing_flags"), ("c-00000002", "regex_trailing_flags"),
        ("c-00000003", "vacuous_regex")}
    # planned anyway, against an app that answers wrongly on the right route: the gate stays closed, naming them
    rc, summary, plan_file = plan(state, "--allow-invalid")
    assert rc == 0, summary
    with FakeApp(wrong_reply) as app:
        run_dir = run(state, plan_file, app)
    g = run_script("gate", run_dir)
    assert g.rc == 1, g.stdout
    closed = [line for line in g.stdout.splitlines() if line.startswith("  gate closed: the plan was made with")]
    assert closed and "c-00000001 [regex_trailing_flags]" in closed[0] and "c-00000003 [vacuous_regex]" in closed[0]


@pytest.mark.parametrize("reply, opens", [(travel_reply, True), (wrong_reply, False)])
def test_the_near_misses_plan_and_can_fail(tmp_path, reply, opens):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001", expect=NEAR_MISS)})
    rc, summary, plan_file = plan(state)
    assert rc == 0 and summary["validation"]["errors"] == 0, summary
    with FakeApp(reply) as app:   # travel_reply: "A flight to Oslo costs 120 EUR."
        run_dir = run(state, plan_file, app)
    g = run_script("gate", run_dir)
    assert (g.rc == 0) is opens, g.stdout
    assert opens or "c-00000001 (answer)" in g.stdout, g.stdout
