"""The counts folded one record at a time (stats.tally): the same summary in any finish order."""

from __future__ import annotations

import random

from assay.stats.counts import summarize
from assay.stats.tally import Tally

VERDICTS = ["pass", "fail", "unscored", "skipped", "infra_error", "infra_incomplete"]


def synthetic(n: int, seed: int) -> list[dict]:
    """Records exercising every block of the summary, with ties between reasons and several
    candidates for each first-in-plan-order figure."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        v = rnd.choice(VERDICTS)
        kind = rnd.choice(["single", "single", "conv", "sim"])
        layers = {
            "http": {"verdict": rnd.choice(["pass", "fail", "infra_error"])},
            "answer": {"verdict": rnd.choice(["pass", "n/a", "unscored"]), "reason": rnd.choice(["r1", "r2", None])},
            "execution": {"verdict": rnd.choice(["unscorable", "n/a"]), "blocked_by": rnd.choice([None, "b1", "b2"])},
            "trajectory": {"verdict": rnd.choice(["unscored", "unscorable"]), "reason": rnd.choice(["t1", "t2"])},
            "routing": {"verdict": rnd.choice(["pass", "fail", "n/a"]), "observed_from": rnd.choice([None, "trace"]),
                        "response_path": rnd.choice([None, {"path": rnd.choice(["", "route", "r2"]),
                                                            "found": rnd.random() < 0.5}])},
            "judged": rnd.choice([
                {"verdict": "unscored", "reason": rnd.choice(["unjudged (mode: smoke)", "unjudged (no key)"])},
                {"verdict": rnd.choice(["pass", "fail"]), "provisional_verdict": rnd.choice(["pass", "fail"]),
                 "judge_unstable": rnd.random() < 0.3,
                 "rubrics": [{"pin": rnd.choice(["p@1", "p@2"]), "provisional": rnd.random() < 0.5,
                              "why_provisional": rnd.choice(["w1", "w2"]), "judged": 3, "unstable": rnd.randint(0, 3)},
                             {"pin": "pw@1", "kind": "pairwise", "outcome": rnd.choice(["win", "tie", "loss", "x"]),
                              "baseline_run_id": rnd.choice(["base-a", "base-b", None]),
                              "provisional": rnd.random() < 0.2}]}]),
        }
        rec = {"case_id": f"c-{i:04d}", "verdict": v, "canary": rnd.random() < 0.1, "holdout": rnd.random() < 0.2,
               "gating": rnd.choice([True, False, None]), "crashed": rnd.random() < 0.1,
               "repeated_5xx": rnd.random() < 0.1, "scorer_errors": rnd.choice([0, 0, 1]),
               "rate_limited_retries": rnd.choice([0, 2]), "layers": layers,
               "judge_usage": rnd.choice([None, {"calls": 2, "input_tokens": 10, "output_tokens": 5}]),
               "undeclared_tools": rnd.choice([None, [], ["t1"], ["t1", "t2"]])}
        if rec["undeclared_tools"]:
            layers["authz"] = {"verdict": "unscored", "undeclared_tools": ["t1"]}
        if kind != "single":
            rec.update(multi_turn=True, failed_turn=rnd.choice([None, 1, 2, 10]), memory=rnd.choice([None, "user"]),
                       unscored_reason=rnd.choice([None, "u1", "u2", "u3"]))
        if kind == "sim":
            rec.update(simulated=True, simulator={"outcome": rnd.choice(["goal_met", "gave_up", "simulator_error"])})
        out.append(rec)
    return out


def test_fold_in_any_finish_order_equals_the_plan_order_summary():
    for seed in range(12):
        records = synthetic(60, seed)
        expected = summarize(records, status="ok", missing_artifacts=[])
        order = list(range(len(records)))
        random.Random(seed).shuffle(order)
        tally = Tally()
        for i in order:
            tally.add(i, records[i])
        assert tally.summary(status="ok", missing_artifacts=[]) == expected
        assert tally.count == len(records)


def test_ties_go_to_the_first_record_in_plan_order():
    base = {"verdict": "unscored", "canary": False, "multi_turn": True, "layers": {}}
    records = [dict(base, case_id="a", unscored_reason="late"), dict(base, case_id="b", unscored_reason="early"),
               dict(base, case_id="c", unscored_reason="early"), dict(base, case_id="d", unscored_reason="late")]
    tally = Tally()
    for i in (3, 2, 1, 0):   # finished last-first
        tally.add(i, records[i])
    got = tally.summary(status="ok", missing_artifacts=[])["by_kind"]["conversation"]["top_unscored_reason"]
    assert got == "late" == summarize(records, status="ok", missing_artifacts=[])["by_kind"]["conversation"][
        "top_unscored_reason"]
