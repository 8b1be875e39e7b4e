"""candidate.py keep refuses a training run whose champion never ran part of its selection (an optimize
newcomer trial).

The pinned champion was a smoke run (a newcomer's first run, pinned as the run skill's first-run
branch says). A candidate fixed three smoke cases and broke the gating t-vpn, which only the full
split holds: the comparison paired the four smoke cases, the break never paired, and keep read a
training win (exit 3, on to the holdout and a pin). A real app on its own port routes by a file in a
real git checkout; every step is the scripts as a user runs them.
"""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp
from fixtures_authoring import run_inproc
from helpers import run_script, write_yaml
from test_candidate_evidence import candidate, make_app, new, router
from test_rescore_changed_requests import case_yaml

pytestmark = pytest.mark.slow   # two runs in sequence (conftest: slow files first)

SMOKE = [("r-refund-1", "I want a refund"), ("r-refund-2", "refund my order"), ("r-refund-3", "where is my refund"),
         ("b-invoice", "my invoice")]


def measure(state, url, run_id, baseline=None):
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    p = run_inproc("make_plan", work / "converted.json", "--mode", run_id.split("-")[0], "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", run_id, *(("--k", "1") if baseline else ()))
    assert p.rc == 0, p.stdout
    extra = ["--baseline-verdicts", state / "reports" / baseline / "verdicts_for_stats.jsonl"] if baseline else []
    r = run_script("run_cases", "--plan", work / "plan.json", "--out", state / "reports" / run_id,
                   "--progress", "never", *extra, env={"TINY_URL": url})
    assert r.rc == 0, r.stdout + r.stderr
    return state / "reports" / run_id


def test_a_smoke_champion_never_vouches_for_the_full_split(tmp_path):
    app, state = make_app(tmp_path)
    for cid, text in SMOKE:
        write_yaml(state / "datasets" / f"{cid}.yaml", case_yaml(cid, text, "billing", "sent to billing", "[full, smoke]"))
    with FakeApp(router(app)) as fake:
        measure(state, fake.url, "smoke-20261201T000000Z")
        (state / "reports" / "baseline.json").write_text(json.dumps(
            {"run_id": "smoke-20261201T000000Z", "dataset_version": 1, "harness_version": "0.1.0"}))
        new(state, "refunds")
        (app / "words.txt").write_text("billing: invoice refund vpn\n")   # 3 smoke fixes; t-vpn (full only) broken
        train = measure(state, fake.url, "regression-20261201T010000Z", "smoke-20261201T000000Z")
        comparison = json.loads((train / "comparison.json").read_text())
        assert comparison["keep"] is True and comparison["broken_by_candidate"] == 0   # what keep used to trust
        r = candidate(state, "keep", "--id", "refunds", "--training", train)
    assert r.rc == 2, r.stdout
    assert ("4 case(s) of this run were not in its baseline run smoke-20261201T000000Z's selection (a smoke run): "
            "r-refund-4, r-refund-5, t-crash, t-vpn") in r.json["error"], r.stdout
    assert "run the champion on the full split" in r.json["error"]
    assert json.loads((state / "candidates" / "refunds" / "candidate.json").read_text())["status"] == "open"
