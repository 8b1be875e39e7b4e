"""candidate.py keep only on runs that measured the edit the way the champion was measured (an
adversarial trial of the optimize loop).

Each of these was kept, or won on training, before (and a candidate that breaks a gating case the
champion passed, kept on the suite as a whole): a training run replayed from another run's
recording (the app was never called); a run planned with --layer (a layer the champion failed on was
simply not scored); a targeted selection or an edit that made passing cases crash (HTTP 500: infra,
dropped from the pairing, so the breaks never counted); a holdout look past the 5-look budget (the
gate closes on it, keep did not ask); and, after a kept candidate, a holdout run compared with the
original champion's holdout run instead of the kept one's (its gains counted again). A real app on
its own port routes by a config file in a real git checkout; every step is the scripts as a user
runs them.
"""

from __future__ import annotations

import json
import os

import pytest

from fakeapp import FakeApp, Reply
from fixtures_authoring import run_inproc
from helpers import run_script
from test_candidate_evidence import app_with_sealed_money, candidate, champion, git, make_app, new, router, sealed_out

pytestmark = pytest.mark.slow   # several runs each, in sequence (conftest: slow files first)

CHAMP, CHAMP_HOLD = "regression-20261201T000000Z", "holdout-20261201T000000Z"


def crashing_router(app_dir):
    """router(), and a line `crash: w1 w2` in words.txt makes those messages an HTTP 500."""
    routed = router(app_dir)

    def handle(req):
        if req.method == "POST":
            for line in (app_dir / "words.txt").read_text().splitlines():
                name, _, words = line.partition(":")
                if name.strip() == "crash" and any(w in req.json["message"].lower() for w in words.split()):
                    return Reply(500, "boom")
        return routed(req)
    return handle


def measure(state, url, run_id, baseline=None, plan=(), run=()):
    """convert, plan (k=1, one attempt) and run, with extra make_plan / run_cases arguments."""
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    env = dict(os.environ, TINY_URL=url)
    p = run_inproc("make_plan", work / "converted.json", "--mode", run_id.split("-")[0], "--k", "1",
                   "--max-attempts", "1", "--state-dir", state, "-o", work / "plan.json", "--run-id", run_id,
                   *plan)   # setup steps in this process; the run is not
    assert p.rc == 0, p.stdout + p.stderr
    extra = ["--baseline-verdicts", state / "reports" / baseline / "verdicts_for_stats.jsonl"] if baseline else []
    r = run_script("run_cases", "--plan", work / "plan.json", "--out", state / "reports" / run_id,
                   "--progress", "never", *extra, *run, env=env)
    assert r.rc in (0, 1), r.stdout + r.stderr
    return state / "reports" / run_id


def test_a_replayed_a_layer_only_or_a_partial_run_is_not_the_candidates_evidence(tmp_path):
    app, state = make_app(tmp_path)
    with FakeApp(crashing_router(app)) as fake:
        champion(state, fake.url)
        new(state, "refunds")
        (app / "words.txt").write_text("billing: invoice refund\n")
        good = measure(state, fake.url, "regression-20261201T010000Z", CHAMP, run=("--record",))
        # the same answers replayed: the app is not called, so nothing shows they are this edit's
        replay = measure(state, fake.url, "regression-20261201T020000Z", CHAMP, run=("--replay", good))
        r = candidate(state, "keep", "--id", "refunds", "--training", replay)
        assert r.rc == 2 and "REPLAYED from run regression-20261201T010000Z: the app was not called" in r.json["error"], r.stdout
        # a --layer plan scores fewer layers than the champion did: a flip there is the scoring's
        layer = measure(state, fake.url, "regression-20261201T030000Z", CHAMP, plan=("--layer", "routing"))
        assert json.loads((layer / "comparison.json").read_text())["keep"] is True
        r = candidate(state, "keep", "--id", "refunds", "--training", layer)
        assert r.rc == 2 and ("not scored as its baseline run regression-20261201T000000Z was (the capability "
                              "matrix: not the same in both runs") in r.json["error"], r.stdout
        # a targeted selection leaves the champion's other cases out: what the edit broke there cannot show
        targeted = measure(state, fake.url, "targeted-20261201T040000Z", CHAMP, plan=("--tag", "billing"))
        r = candidate(state, "keep", "--id", "refunds", "--training", targeted)
        assert r.rc == 2 and ("2 case(s) the baseline run regression-20261201T000000Z scored have no pass/fail "
                              "verdict in this run: t-crash, t-vpn") in r.json["error"], r.stdout
        # the recorded live run itself is evidence: a training win
        r = candidate(state, "keep", "--id", "refunds", "--training", good)
        assert r.rc == 3 and r.json["decision"] == "needs_holdout", r.stdout
        assert candidate(state, "revert", "--id", "refunds").rc == 0
        # an edit that fixes refunds and crashes two passing cases: 5 fixed, the 2 crashes dropped as infra
        new(state, "crashy")
        (app / "words.txt").write_text("crash: vpn crashes\nbilling: invoice refund\n")
        crashy = measure(state, fake.url, "regression-20261201T050000Z", CHAMP)
        comparison = json.loads((crashy / "comparison.json").read_text())
        assert comparison["keep"] is True and comparison["broken_by_candidate"] == 0   # what keep used to trust
        r = candidate(state, "keep", "--id", "crashy", "--training", crashy)
        assert r.rc == 2 and "2 case(s) the baseline run" in r.json["error"] and "t-crash, t-vpn" in r.json["error"]
        assert "an infra error" in r.json["error"], r.stdout
        assert json.loads((state / "reports" / "baseline.json").read_text())["run_id"] == CHAMP
        assert candidate(state, "revert", "--id", "crashy").rc == 0
        # five refund cases fixed and the gating t-vpn broken: the suite as a whole reads better (the keep
        # rule passes), but kept, the release gate closes on t-vpn; rejected, before any holdout look
        new(state, "vpn-too")
        (app / "words.txt").write_text("billing: invoice refund vpn\n")   # vpn questions now go to billing
        training = measure(state, fake.url, "regression-20261201T060000Z", CHAMP)
        assert json.loads((training / "comparison.json").read_text())["keep"] is True
        r = candidate(state, "keep", "--id", "vpn-too", "--training", training)
        assert r.rc == 1 and r.json["decision"] == "rejected", r.stdout
        assert r.json["reason"].startswith("training breaks 1 gating case(s) the champion passed (t-vpn)"), r.json
        assert "holdout was not looked at" in r.json["next"]


def test_a_holdout_look_past_the_budget_or_against_an_older_champion_decides_no_keep(tmp_path):
    app, state = app_with_sealed_money(tmp_path)
    with FakeApp(router(app)) as fake:
        champion(state, fake.url)
        # A: a real win (2 of 5 holdout billing cases), kept; its holdout run is the champion's from now on
        new(state, "A")
        (app / "words.txt").write_text("billing: invoice want order now owed\n")
        train_a = measure(state, fake.url, "regression-20261201T010000Z", CHAMP)
        assert candidate(state, "keep", "--id", "A", "--training", train_a).rc == 3
        hold_a = measure(state, fake.url, "holdout-20261201T010500Z", CHAMP_HOLD)
        r = candidate(state, "keep", "--id", "A", "--training", train_a, "--holdout", hold_a)
        assert r.rc == 0 and r.json["decision"] == "kept", r.stdout
        # 2 fixed of 8 and 2 of 5: kept on the Bayesian rule, and the decision's own line says it is not proven
        assert r.json["reason"] == ("training (improved, not proven) and then holdout (improved, not proven) "
                                    "passed the keep rule"), r.stdout
        git(app, "commit", "-qam", "A kept")
        # B wins on training against A and fixes 1 more holdout case; compared on the holdout with the
        # ORIGINAL champion's run, A's two holdout fixes read as B's: 3 fixed, a keep
        new(state, "B")
        (app / "words.txt").write_text("billing: invoice want order now owed where please back\n")
        train_b = measure(state, fake.url, "regression-20261201T020000Z", "regression-20261201T010000Z")
        assert candidate(state, "keep", "--id", "B", "--training", train_b).rc == 3
        hold_b = measure(state, fake.url, "holdout-20261201T020500Z", CHAMP_HOLD)
        assert json.loads((hold_b / "comparison.json").read_text())["keep"] is True
        r = candidate(state, "keep", "--id", "B", "--training", train_b, "--holdout", hold_b)
        assert r.rc == 2 and ("compared against holdout-20261201T000000Z, but the champion "
                              "regression-20261201T010000Z (candidate A, kept) was measured on the holdout by "
                              "holdout-20261201T010500Z") in r.json["error"], r.stdout
        assert "revert it (candidate.py revert --id B)" in r.json["error"]
        sealed_out(r)
        assert candidate(state, "revert", "--id", "B").rc == 0
        # looks 4 and 5 spend the budget; C's look is the sixth: the gate closes on it, keep refuses it
        measure(state, fake.url, "holdout-20261201T030000Z")
        measure(state, fake.url, "holdout-20261201T030500Z")
        new(state, "C")
        (app / "words.txt").write_text("billing: invoice want order now owed where please my cash\n")
        train_c = measure(state, fake.url, "regression-20261201T040000Z", "regression-20261201T010000Z")
        assert candidate(state, "keep", "--id", "C", "--training", train_c).rc == 3
        hold_c = measure(state, fake.url, "holdout-20261201T050000Z", "holdout-20261201T010500Z")
        assert json.loads((hold_c / "comparison.json").read_text())["keep"] is True
        r = candidate(state, "keep", "--id", "C", "--training", train_c, "--holdout", hold_c)
        assert r.rc == 2 and "holdout look 6 of a budget of 5" in r.json["error"], r.stdout
        assert "It decides no keep" in r.json["error"]
        sealed_out(r)
        assert json.loads((state / "reports" / "baseline.json").read_text())["run_id"] == "regression-20261201T010000Z"

