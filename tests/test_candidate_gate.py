"""candidate.py keep asks the one verdict (assay.verdict, what gate.py prints) of each run it decides on.

keep decided from the paired comparison alone (fixed vs broken gating cases the champion passed, cases
the champion could not score), so a run whose own gate was closed for another reason was kept: here an
edit that makes the app slow (the p95 latency over profile.yaml's budget) won on training (exit 3) and,
slow on the holdout cases only, was kept and pinned as the champion. Now a run whose gate closes for a
reason the champion's run does not is rejected, naming gate.py's first such reason; a reason the
champion's run closes on too (the gating failures the loop is there to fix, a budget both are over) is
no keep's business, and is said. A real app on its own port routes by a config file in a real git
checkout; every step is the scripts as a user runs them.
"""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply
from helpers import run_script
from test_candidate_evidence import app_with_sealed_money, candidate, champion, measure, new, router, sealed_out

pytestmark = pytest.mark.slow   # several runs each, in sequence (conftest: slow files first)

CHAMP, CHAMP_HOLD = "regression-20261201T000000Z", "holdout-20261201T000000Z"


def slow_router(app_dir):
    """router(), and a line `slow: w1 w2` in words.txt (after the routes) answers those messages 0.6 s late."""
    routed = router(app_dir)

    def handle(req):
        reply = routed(req)
        if req.method == "POST":
            for line in (app_dir / "words.txt").read_text().splitlines():
                name, _, words = line.partition(":")
                if name.strip() == "slow" and any(w in req.json["message"].lower() for w in words.split()):
                    reply.delay = 0.6
        return reply
    return handle


def with_budget(state, p95_s: float):
    profile = state / "profile.yaml"
    profile.write_text(profile.read_text() + f"budgets: {{max_p95_latency_s: {p95_s}}}\n")


def test_a_run_whose_gate_closes_where_the_champions_does_not_is_no_keep(tmp_path):
    app, state = app_with_sealed_money(tmp_path)
    with_budget(state, 0.4)
    with FakeApp(slow_router(app)) as fake:
        champion(state, fake.url)
        base = run_script("gate", state / "reports" / CHAMP, "--json")   # closed on the refund cases only
        assert base.rc == 1 and not any("p95" in x for x in base.json["reasons"]) and base.json["budgets"], base.stdout
        # fixes the five refund questions, and answers them 0.6 s late: the run's p95 is over the budget
        new(state, "slow-refunds")
        (app / "words.txt").write_text("billing: invoice refund\nslow: refund\n")
        train = measure(state, fake.url, "regression-20261201T010000Z", CHAMP)
        assert json.loads((train / "comparison.json").read_text())["keep"] is True   # what keep trusted
        gate = run_script("gate", train, "--json")
        assert gate.rc == 1 and gate.json["reasons"][0].startswith("p95 latency "), gate.stdout
        r = candidate(state, "keep", "--id", "slow-refunds", "--training", train)
        assert r.rc == 1 and r.json["decision"] == "rejected", r.stdout   # was exit 3: a training win
        assert r.json["reason"].startswith(f"the training run's gate (gate.py) closes on {gate.json['reasons'][0]}"), r.json
        assert f"the champion's run {CHAMP} does not" in r.json["reason"]
        assert "holdout was not looked at" in r.json["next"] and "holdout" not in r.json
        assert r.json["training"]["gate"]["decision"] == "closed"
        assert r.json["training"]["gate"]["new_reasons"] == gate.json["reasons"]
        assert candidate(state, "revert", "--id", "slow-refunds").rc == 0
        # wins on training (fast) and on the holdout (two money questions fixed), but answers every money
        # question 0.6 s late: only the holdout run is over the budget
        new(state, "slow-money")
        (app / "words.txt").write_text("billing: invoice want order now owed\nslow: money\n")
        train = measure(state, fake.url, "regression-20261201T020000Z", CHAMP)
        r = candidate(state, "keep", "--id", "slow-money", "--training", train)
        assert r.rc == 3, r.stdout
        hold = measure(state, fake.url, "holdout-20261201T020500Z", CHAMP_HOLD)
        assert json.loads((hold / "comparison.json").read_text())["keep"] is True
        r = candidate(state, "keep", "--id", "slow-money", "--training", train, "--holdout", hold)
        assert r.rc == 1 and r.json["decision"] == "rejected", r.stdout   # was exit 0: kept and pinned
        assert r.json["reason"].startswith("won on training but the holdout run's gate (gate.py) closes on p95 "
                                           "latency "), r.json
        assert f"the champion's holdout run {CHAMP_HOLD} does not" in r.json["reason"]
        # the gating failures both holdout runs close on (counted, sealed) are the champion's too: no reason here
        assert any("gating failure(s)" in x for x in r.json["holdout"]["gate"]["shared_reasons"]), r.json
        sealed_out(r)
    assert json.loads((state / "reports" / "baseline.json").read_text())["run_id"] == CHAMP   # nothing pinned


def test_a_reason_the_champions_run_closes_on_too_is_said_not_decided(tmp_path):
    """A budget the champion's run is over as well (and the gating failures both runs close on): the
    candidate did not close the gate; the keep rule decides, and the output says the gate stays closed."""
    app, state = app_with_sealed_money(tmp_path)
    with_budget(state, 0.0001)   # every run is over it
    with FakeApp(slow_router(app)) as fake:
        champion(state, fake.url)
        new(state, "A")
        (app / "words.txt").write_text("billing: invoice want order now owed\n")
        train = measure(state, fake.url, "regression-20261201T010000Z", CHAMP)
        r = candidate(state, "keep", "--id", "A", "--training", train)
        assert r.rc == 3 and r.json["decision"] == "needs_holdout", r.stdout
        shared = r.json["training"]["gate"]["shared_reasons"]
        assert r.json["training"]["gate"]["new_reasons"] == [] and any(x.startswith("p95 latency ") for x in shared)
        assert r.json["gate_closed_note"].startswith("the training run's gate (gate.py) stays closed, as the "
                                                     f"champion's run {CHAMP}'s does: "), r.json
        assert "(the champion's run: 5 gating failure(s): " in r.json["gate_closed_note"]   # its words beside
        hold = measure(state, fake.url, "holdout-20261201T010500Z", CHAMP_HOLD)
        r = candidate(state, "keep", "--id", "A", "--training", train, "--holdout", hold)
        assert r.rc == 0 and r.json["decision"] == "kept", r.stdout
        assert "stays closed" in r.json["gate_closed_note"]
        sealed_out(r)
    assert json.loads((state / "reports" / "baseline.json").read_text())["run_id"] == "regression-20261201T010000Z"
