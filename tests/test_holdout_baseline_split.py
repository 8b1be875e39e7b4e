"""A holdout run compared with a training run is refused before the look is spent (an optimize newcomer
trial).

Step 7 of the optimize loop wants `--baseline-verdicts` from the champion's holdout run; a newcomer
passed `auto` (reports/baseline.json's pin: the champion's regression run) or the pinned run's file.
The holdout look was spent and recorded, and comparison.json said "no shared case ids ... check
dataset_version", which was not the cause: the two splits share no case. A real app on its own port;
the scripts as a user runs them.
"""

from __future__ import annotations

import os

import pytest

from fakeapp import FakeApp
from fixtures_authoring import run_inproc
from helpers import run_script
from test_candidate_evidence import champion, make_app, router

pytestmark = pytest.mark.slow   # two runs before the refused one

CHAMP = "regression-20261201T000000Z"


def test_a_holdout_plan_against_the_pinned_training_run_spends_no_look(tmp_path):
    app, state = make_app(tmp_path)
    work = state / "work"
    with FakeApp(router(app)) as fake:
        champion(state, fake.url)   # a regression run (pinned) and a holdout run: look 1
        ledger = (state / "datasets" / "holdout-looks.jsonl").read_text()
        plan = run_inproc("make_plan", work / "converted.json", "--mode", "holdout", "--k", "1", "--state-dir", state,
                          "-o", work / "plan.json", "--run-id", "holdout-20261201T010000Z")
        assert plan.rc == 0, plan.stdout
        env = dict(os.environ, TINY_URL=fake.url)
        for given in ("auto", state / "reports" / CHAMP / "verdicts_for_stats.jsonl"):
            r = run_script("run_cases", "--plan", work / "plan.json", "--out", state / "reports" /
                           "holdout-20261201T010000Z", "--progress", "never", "--baseline-verdicts", given, env=env)
            assert r.rc == 2, r.stdout + r.stderr
            assert "is the verdicts of a regression run, and this plan is a holdout run" in r.json["error"], r.stdout
            assert "Pass the champion's holdout run" in r.json["error"]
        # a training plan against the champion's holdout run: the same refusal the other way round
        plan = run_inproc("make_plan", work / "converted.json", "--mode", "regression", "--k", "1", "--state-dir",
                          state, "-o", work / "train.json", "--run-id", "regression-20261201T010000Z")
        assert plan.rc == 0, plan.stdout
        r = run_script("run_cases", "--plan", work / "train.json", "--out", state / "reports" /
                       "regression-20261201T010000Z", "--progress", "never", "--baseline-verdicts",
                       state / "reports" / "holdout-20261201T000000Z" / "verdicts_for_stats.jsonl", env=env)
        assert r.rc == 2 and "a run of the full split (the pinned champion's)" in r.json["error"], r.stdout
    assert (state / "datasets" / "holdout-looks.jsonl").read_text() == ledger   # no look spent
    assert not (state / "reports" / "holdout-20261201T010000Z").exists()
