"""A keep's `n` is the pairs its statistics are over, never a canary.

A canary (split `canary`) is planted to catch a broken harness; it never counts toward a verdict's
statistics (compare_runs.py's paired statistics leave it out). The runner's comparison.json, which
`candidate.py keep` decides on, paired every pass/fail row of verdicts_for_stats.jsonl, canaries in:
a keep on 8 cases said n=11 (three always-passing canaries as three more concordant pairs), a smaller
delta and more evidence than it had, and stats.py said the same. Here a real app on its own port,
the scripts as a user runs them.
"""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp
from helpers import run_script, write_yaml
from test_candidate_evidence import TRAIN, candidate, champion, make_app, measure, new, router
from test_rescore_changed_requests import case_yaml

pytestmark = pytest.mark.slow   # several runs in sequence

CANARIES = [("k-canary-1", "my invoice please", "billing"), ("k-canary-2", "an invoice copy", "billing"),
            ("k-canary-3", "invoice for June", "billing")]


def test_keep_n_and_statistics_leave_canaries_out(tmp_path):
    app, state = make_app(tmp_path)
    for cid, text, route in CANARIES:   # always pass: the champion's words route "invoice" to billing
        write_yaml(state / "datasets" / f"{cid}.yaml", case_yaml(cid, text, route, f"sent to {route}",
                                                                 "[smoke, full, canary]"))
    with FakeApp(router(app)) as fake:
        champion(state, fake.url)
        new(state, "c1")
        (app / "words.txt").write_text("billing: invoice refund\n")   # fixes the 5 refund cases
        train = measure(state, fake.url, "regression-20261201T010000Z", "regression-20261201T000000Z")
    base = state / "reports" / "regression-20261201T000000Z"
    comparison = json.loads((train / "comparison.json").read_text())
    assert comparison["n"] == len(TRAIN), comparison            # 8 cases, not 8 + 3 canaries
    assert comparison["fixed_by_candidate"] == 5 and comparison["delta"] == round(5 / len(TRAIN), 4)
    # the same population as compare_runs.py's paired statistics
    cmp = run_script("compare_runs", base, train)
    assert cmp.rc == 0, cmp.stdout
    assert cmp.json["stats"]["n"] == comparison["n"] and cmp.json["stats"]["delta"] == comparison["delta"]
    # stats.py over the two runs' verdicts_for_stats.jsonl says the same
    st = run_script("stats", base / "verdicts_for_stats.jsonl", train / "verdicts_for_stats.jsonl")
    assert st.rc == 0 and st.json["n"] == len(TRAIN) and st.json["delta"] == comparison["delta"], st.stdout
    # and keep, which recounts comparison.json, reads the same n and reports it
    r = candidate(state, "keep", "--id", "c1", "--training", train)
    assert r.rc == 3 and r.json["training"]["n"] == len(TRAIN), r.stdout
