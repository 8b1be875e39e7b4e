"""candidate.py keep decides by the keep rule of each run it reads, on real runs of a real app: a
training run within noise is no keep (the holdout never read), a holdout within noise is no keep,
and a holdout that wins overall while breaking a gating holdout case is no keep, counted and never
named. (Each decision was taken away by a mutation the other candidate tests did not see.)"""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp
from fixtures_authoring import run_inproc
from test_candidate import app_repo, run_dir
from test_candidate_evidence import app_with_sealed_money, candidate, champion, measure, new, router, sealed_out

pytestmark = pytest.mark.slow   # several runs in sequence (conftest: slow files first)

CHAMP, CHAMP_HOLD = "regression-20261201T000000Z", "holdout-20261201T000000Z"


def won_training(app, state, url: str, cid: str, words: str, hour: str):
    """Candidate `cid` (the router's words), measured on training (a win: keep exit 3), then on the
    holdout: (training run, holdout run)."""
    new(state, cid)
    (app / "words.txt").write_text(words)
    train = measure(state, url, f"regression-20261201T{hour}0000Z", CHAMP)
    assert candidate(state, "keep", "--id", cid, "--training", train).rc == 3
    return train, measure(state, url, f"holdout-20261201T{hour}0500Z", CHAMP_HOLD)


def test_no_keep_on_a_training_or_holdout_run_that_does_not_pass_the_keep_rule(tmp_path):
    app, state = app_with_sealed_money(tmp_path)
    with FakeApp(router(app)) as fake:
        champion(state, fake.url)
        # A fixes one refund case of five: within noise (P(better) 0.75 < 0.8): rejected, the holdout unread
        new(state, "A")
        (app / "words.txt").write_text("billing: invoice want\n")
        train = measure(state, fake.url, "regression-20261201T010000Z", CHAMP)
        assert json.loads((train / "comparison.json").read_text())["keep"] is False
        r = candidate(state, "keep", "--id", "A", "--training", train, "--holdout", tmp_path / "never-read")
        assert r.rc == 1 and r.json["decision"] == "rejected" and "holdout" not in r.json, r.stdout
        assert "does not pass the keep rule" in r.json["reason"]
        assert candidate(state, "revert", "--id", "A").rc == 0
        # B wins on training; on the holdout it fixes nothing: rejected by the holdout
        train, hold = won_training(app, state, fake.url, "B", "billing: invoice refund\n", "02")
        r = candidate(state, "keep", "--id", "B", "--training", train, "--holdout", hold)
        assert r.rc == 1 and r.json["decision"] == "rejected", r.stdout
        assert r.json["reason"].startswith("won on training but the holdout does not pass the keep rule")
        sealed_out(r)
        assert candidate(state, "revert", "--id", "B").rc == 0
        # C wins on training and on the holdout (4 fixed, 1 broken: keep) but breaks a gating holdout case
        train, hold = won_training(app, state, fake.url, "C", "billing: invoice refund money black\n", "03")
        assert json.loads((hold / "comparison.json").read_text())["keep"] is True
        r = candidate(state, "keep", "--id", "C", "--training", train, "--holdout", hold)
        assert r.rc == 1 and r.json["decision"] == "rejected", r.stdout
        assert r.json["reason"] == ("won on training but breaks 1 gating holdout case(s) the champion passed: "
                                    "kept, the release gate would close on them")
        sealed_out(r)
    assert json.loads((state / "reports" / "baseline.json").read_text())["run_id"] == CHAMP   # nothing pinned


def test_a_run_that_did_not_finish_is_not_evidence(tmp_path):
    app, state = app_repo(tmp_path)
    assert run_inproc("candidate", "new", state, "--id", "ok", "--surface", "prompts.py").rc == 0
    (app / "prompts.py").write_text("ROUTER = 'edited'\n")
    train = run_dir(state, "regression-20261130T010000Z-bbbb", mode="regression", fixed=8, broken=0, baseline="b")
    results = json.loads((train / "results.json").read_text())
    (train / "results.json").write_text(json.dumps(dict(results, summary={"status": "aborted"})))
    r = run_inproc("candidate", "keep", state, "--id", "ok", "--training", train)
    assert r.rc == 2 and "run status is 'aborted', not ok" in r.json["error"], r.stdout
