"""candidate.py keep reads no decision from files edited after the runs (an adversarial trial of the
optimize loop).

Each of these was a training win before: a candidate that changed nothing the suite sees (a comment),
measured against a champion whose verdicts_for_stats.jsonl had been edited by hand (four passes made
fails: four "fixed by the candidate"); a losing run whose comparison.json was edited to `keep: true`;
and an edit changed again after its training run (the run measured text that is not the one kept).
A real app on its own port routes by a config file in a real git checkout; every step is the scripts
as a user runs them.
"""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp
from test_candidate_evidence import candidate, championed, copy_championed, measure, new, router  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow   # several runs each, in sequence (conftest: slow files first)

CHAMP_RUN = "regression-20261201T000000Z"


def test_an_edited_champion_or_comparison_decides_no_keep(championed, tmp_path):
    app, state = copy_championed(championed, tmp_path)
    with FakeApp(router(app)) as fake:
        stats = state / "reports" / CHAMP_RUN / "verdicts_for_stats.jsonl"
        original = stats.read_text()
        stats.write_text(original.replace('"pass"', '"fail"', 3))   # three champion passes now read as fails
        new(state, "noop")
        (app / "words.txt").write_text("billing: invoice\n# nothing the router reads\n")
        train = measure(state, fake.url, "regression-20261201T010000Z", CHAMP_RUN)
        assert json.loads((train / "comparison.json").read_text())["keep"] is True   # what keep used to trust
        r = candidate(state, "keep", "--id", "noop", "--training", train)
        assert r.rc == 2 and f"its baseline run {CHAMP_RUN} fails the completeness check" in r.json["error"], r.stdout
        assert "verdicts_for_stats.jsonl" in r.json["error"]
        # the champion restored: the comparison written against the edited verdicts no longer holds
        stats.write_text(original)
        r = candidate(state, "keep", "--id", "noop", "--training", train)
        assert r.rc == 2 and "comparison.json is not the comparison of this run's verdicts" in r.json["error"], r.stdout
        assert "keep true (the verdicts give false)" in r.json["error"]
        # a run measured against the real champion, its comparison.json edited to a win
        again = measure(state, fake.url, "regression-20261201T020000Z", CHAMP_RUN)
        doc = json.loads((again / "comparison.json").read_text())
        assert doc["keep"] is False
        (again / "comparison.json").write_text(json.dumps(dict(doc, keep=True, fixed_by_candidate=3)))
        r = candidate(state, "keep", "--id", "noop", "--training", again)
        assert r.rc == 2 and "fixed_by_candidate 3 (the verdicts give 0)" in r.json["error"], r.stdout
        assert json.loads((state / "candidates" / "noop" / "candidate.json").read_text())["status"] == "open"


def test_an_edit_changed_after_its_training_run_is_not_kept_on_it(championed, tmp_path):
    app, state = copy_championed(championed, tmp_path)
    with FakeApp(router(app)) as fake:
        new(state, "refunds")
        (app / "words.txt").write_text("billing: invoice refund\n")
        train = measure(state, fake.url, "regression-20261201T010000Z", CHAMP_RUN)
        (app / "words.txt").write_text("billing: invoice refund vpn crash\n")   # never measured
        r = candidate(state, "keep", "--id", "refunds", "--training", train)
        assert r.rc == 2 and "surface words.txt was changed at" in r.json["error"], r.stdout
        assert "after the run started" in r.json["error"] and "did not measure the text being kept" in r.json["error"]
        # measured as it is now: the run is evidence again (it breaks the two tech cases: rejected)
        train = measure(state, fake.url, "regression-20261201T020000Z", CHAMP_RUN)
        r = candidate(state, "keep", "--id", "refunds", "--training", train)
        assert r.rc == 1 and r.json["decision"] == "rejected", r.stdout


def test_a_change_outside_the_surfaces_is_never_credited_to_the_candidate(championed, tmp_path):
    """Another tracked file changed beside the candidate's surface (a second candidate in flight, a
    stray edit): the training run measured both, and keep credited the candidate with the other's."""
    app, state = copy_championed(championed, tmp_path)
    with FakeApp(router(app)) as fake:
        new(state, "noop")
        (app / "words.txt").write_text("billing: invoice\n# a comment only\n")
        (app / "other.txt").write_text("something else\n")   # tracked, not this candidate's surface
        train = measure(state, fake.url, "regression-20261201T010000Z", CHAMP_RUN)
        r = candidate(state, "keep", "--id", "noop", "--training", train)
    assert r.rc == 2 and "file(s) outside its surfaces differ from HEAD (other.txt)" in r.json["error"], r.stdout
    assert r.json["outside"] == ["other.txt"]
    assert json.loads((state / "candidates" / "noop" / "candidate.json").read_text())["status"] == "open"
