"""candidate.py keep: an infra error in the champion's run is no evidence of "no regression" (the optimize
loop, a trial's item: infra_error edits kept).

The champion's run met an app that crashed on the gating t-vpn (HTTP 500: infra_error, never paired).
A candidate that fixes the refund questions and sends vpn questions to billing fails t-vpn: the
comparison cannot pair it, so it read 0 broken, the keep rule passed and keep said needs_holdout
(exit 3) for a run whose own gate (assay.verdict, gate.py) is closed on t-vpn. Now a case the run
fails that its baseline run has no pass/fail verdict for is exit 2, named, with the fix. A real app
on its own port, a real git checkout, every step the scripts as a user runs them.
"""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply
from helpers import run_script
from test_candidate_evidence import candidate, make_app, new
from test_candidate_measured import CHAMP, CHAMP_HOLD, crashing_router, measure

pytestmark = pytest.mark.slow   # several runs each, in sequence (conftest: slow files first)


def test_a_fail_where_the_champions_run_had_an_infra_error_is_no_keep(tmp_path):
    app, state = make_app(tmp_path)
    flaky = {"on": True}
    routed = crashing_router(app)

    def handle(req):
        if req.method == "POST" and flaky["on"] and "vpn" in req.json["message"]:
            return Reply(500, "boom")   # the champion's run: the app crashed on t-vpn
        return routed(req)
    with FakeApp(handle) as fake:
        measure(state, fake.url, CHAMP)
        measure(state, fake.url, CHAMP_HOLD)
        (state / "reports" / "baseline.json").write_text(json.dumps(
            {"run_id": CHAMP, "dataset_version": 1, "harness_version": "0.1.0"}))
        flaky["on"] = False
        new(state, "vpn-too")
        (app / "words.txt").write_text("billing: invoice refund vpn\n")   # fixes refunds, breaks t-vpn
        training = measure(state, fake.url, "regression-20261201T010000Z", CHAMP)
    comparison = json.loads((training / "comparison.json").read_text())
    assert comparison["keep"] is True and comparison["broken_by_candidate"] == 0   # what keep trusted
    assert run_script("gate", training).rc == 1   # the run's own gate: closed on t-vpn
    r = candidate(state, "keep", "--id", "vpn-too", "--training", training)
    assert r.rc == 2, r.stdout   # was exit 3: needs_holdout, a training win
    assert (f"1 case(s) this run fails have no pass/fail verdict in its baseline run {CHAMP} (an infra error, "
            "unscored or skipped there): t-vpn") in r.json["error"], r.stdout
    assert "re-run the champion so that every case scores" in r.json["error"]
    assert json.loads((state / "reports" / "baseline.json").read_text())["run_id"] == CHAMP
