"""candidate.py keep refuses a baseline run made while another candidate was on trial (an optimize
newcomer trial).

Candidate A was measured and reverted without a keep decision (its gate looked bad); then its run was
pinned by hand as the champion. No keep row named that run, so candidate B, compared with it, read a
training win, though the "champion" had measured A's trial edit, not the app. A real app on its own
port routes by a file in a real git checkout; every step is the scripts as a user runs them.
"""

from __future__ import annotations

import json
import time

import pytest

from fakeapp import FakeApp
from test_candidate_evidence import candidate, champion, make_app, measure, new, router

pytestmark = pytest.mark.slow   # several runs in sequence (conftest: slow files first)


def test_a_run_of_a_reverted_trial_is_no_champion(tmp_path):
    app, state = make_app(tmp_path)
    with FakeApp(router(app)) as fake:
        champion(state, fake.url)
        new(state, "A")
        (app / "words.txt").write_text("billing: invoice vpn crash\n")   # breaks both tech cases
        trial = measure(state, fake.url, "regression-20261201T010000Z", "regression-20261201T000000Z")
        assert candidate(state, "revert", "--id", "A").rc == 0          # no keep: nothing in the log names its run
        (state / "reports" / "baseline.json").write_text(json.dumps(
            {"run_id": trial.name, "dataset_version": 1, "harness_version": "0.1.0"}))
        new(state, "B")
        (app / "words.txt").write_text("billing: invoice\n# tech stays tech\n")
        train = measure(state, fake.url, "regression-20261201T020000Z", trial.name)
        assert json.loads((train / "comparison.json").read_text())["keep"] is True   # "fixed" A's breaks
        r = candidate(state, "keep", "--id", "B", "--training", train)
    assert r.rc == 2, r.stdout
    assert "its baseline run regression-20261201T010000Z started" in r.json["error"], r.stdout
    assert "while candidate A was open" in r.json["error"] and "A was never kept" in r.json["error"]
    assert json.loads((state / "candidates" / "B" / "candidate.json").read_text())["status"] == "open"


def test_a_run_of_this_candidates_earlier_try_is_no_champion(tmp_path):
    """The candidate's first try broke the tech cases; its run was pinned as the champion (or named as
    the baseline), and the second try, the champion's own text again, read as a training win for
    'fixing' them. A baseline run started after the candidate's `new` measured an earlier try of it."""
    app, state = make_app(tmp_path)
    with FakeApp(router(app)) as fake:
        champion(state, fake.url)
        new(state, "A")
        (app / "words.txt").write_text("billing: invoice vpn crash\n")   # try 1: breaks both tech cases
        first = measure(state, fake.url, "regression-20261201T010000Z", "regression-20261201T000000Z")
        (state / "reports" / "baseline.json").write_text(json.dumps(
            {"run_id": first.name, "dataset_version": 1, "harness_version": "0.1.0"}))
        time.sleep(1.1)     # mtime vs the next run's start: the edit comes before it
        (app / "words.txt").write_text("billing: invoice\n# try 2\n")    # the champion's text, and a comment
        train = measure(state, fake.url, "regression-20261201T020000Z", first.name)
        assert json.loads((train / "comparison.json").read_text())["keep"] is True   # "fixed" try 1's breaks
        r = candidate(state, "keep", "--id", "A", "--training", train)
    assert r.rc == 2, r.stdout
    assert ("its baseline run regression-20261201T010000Z started" in r.json["error"]
            and "after this candidate A was made" in r.json["error"]), r.stdout
    assert "made before `new`" in r.json["error"]
    assert json.loads((state / "candidates" / "A" / "candidate.json").read_text())["status"] == "open"
