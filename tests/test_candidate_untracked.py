"""candidate.py keep never credits a candidate with a new untracked file (an optimize newcomer trial).

The candidate's recorded surface got a cosmetic edit while the change that moved the cases was a new,
untracked prompt file the app reads: the training run measured it, `git status --untracked-files=no`
did not show it, and keep read a training win (exit 3: on to the holdout, then kept and pinned) for a
candidate whose revert can never remove that file. A real app on its own port reads the file; every
step is the scripts as a user runs them.
"""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply
from test_candidate_evidence import candidate, champion, make_app, measure, new, router

pytestmark = pytest.mark.slow   # several runs in sequence (conftest: slow files first)

CHAMP = "regression-20261201T000000Z"


def reads_extra(app_dir):
    """router(), and any word of app_dir/extra.txt (when it exists) routes a message to billing."""
    routed = router(app_dir)

    def handle(req):
        extra = app_dir / "extra.txt"
        if req.method == "POST" and extra.is_file():
            if any(w in req.json["message"].lower() for w in extra.read_text().split()):
                return Reply(200, {"answer": "sent to billing", "route": "billing"})
        return routed(req)
    return handle


def test_a_new_untracked_file_the_app_reads_is_never_credited_to_the_candidate(tmp_path):
    app, state = make_app(tmp_path)
    (app / "notes.txt").write_text("an untracked file from before the candidate\n")
    with FakeApp(reads_extra(app)) as fake:
        champion(state, fake.url)
        new(state, "cosmetic")
        (app / "words.txt").write_text("billing: invoice\n# reworded\n")   # the recorded surface: no effect
        (app / "extra.txt").write_text("refund\n")                          # the change that fixes 5 cases
        train = measure(state, fake.url, "regression-20261201T010000Z", CHAMP)
        assert json.loads((train / "comparison.json").read_text())["fixed_by_candidate"] == 5
        r = candidate(state, "keep", "--id", "cosmetic", "--training", train)
    assert r.rc == 2, r.stdout
    assert "outside its surfaces differ from HEAD (extra.txt (untracked, new since `new`))" in r.json["error"]
    assert "delete a new file" in r.json["error"], r.stdout
    assert r.json["outside"] == ["extra.txt"]   # notes.txt predates the candidate: not this run's change
    assert json.loads((state / "candidates" / "cosmetic" / "candidate.json").read_text())["status"] == "open"
    assert json.loads((state / "reports" / "baseline.json").read_text())["run_id"] == CHAMP
