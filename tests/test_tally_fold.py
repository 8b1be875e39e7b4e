"""The counts folded one record at a time (stats.tally): the same summary in any finish order."""

from __future__ import annotations

import random
from types import MappingProxyType

import pytest

from assay.rundir.derived import layer_strings
from assay.score.hollow import (AbsenceFold, HollowFold, hollow_layers, layer_verdicts, passed_on_presence,
                                verdict_of)
from assay.score.rollup import failed_layers
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


# entries a record's layer map may hold, the odd ones included (a tampered record, a Mapping that is no dict)
ODD_ENTRIES = [{"verdict": "pass"}, {"verdict": "fail", "reason": "r"}, {"reason": "no verdict key"}, {},
               {"verdict": None}, {"verdict": 3}, "pass", "n/a", "", None, 0, 7, [], ["pass"], True,
               MappingProxyType({"verdict": "unscorable", "blocked_by": "b"}), MappingProxyType({"verdict": "pass"})]


def test_layer_verdicts_is_verdict_of_for_every_entry_in_its_order():
    layers = {f"layer{i}": entry for i, entry in enumerate(ODD_ENTRIES)}
    got = layer_verdicts(layers)
    assert list(got) == list(layers)
    assert got == {name: verdict_of(entry) for name, entry in layers.items()}
    assert all(type(v) is str for v in got.values())


def test_the_folds_answer_the_same_with_the_verdicts_handed_over():
    """Tally, the hollow and absence folds and layer_strings, each given a case's layer verdicts once
    (the completeness check's fold), answer as when each reads the layers itself, odd entries included;
    the layer table still counts a Mapping that is no dict as itself, as it always has."""
    rnd = random.Random(7)
    names = ["http", "answer", "trajectory", "authz", "skills", "files", "permissions", "judged", "extra"]
    records = synthetic(80, 3)
    for i in range(200):
        layers = {name: rnd.choice(ODD_ENTRIES) for name in rnd.sample(names, rnd.randint(0, len(names)))}
        records.append({"case_id": f"odd-{i}", "verdict": rnd.choice(VERDICTS), "layers": layers,
                        "canary": rnd.random() < 0.1, "holdout": rnd.random() < 0.2})
        if i % 20 == 0:   # a layer asserted and never scored: a hollow layer
            layers["never"] = rnd.choice([{"verdict": "unscored", "reason": f"r{i % 3}"}, "unscored",
                                          MappingProxyType({"verdict": "unscored", "reason": "r1"})])
    given, read = Tally(), Tally()
    hollow_given, hollow_read, absence_given, absence_read = HollowFold(), HollowFold(), AbsenceFold(), AbsenceFold()
    for i, rec in enumerate(records):
        verdicts = layer_verdicts(rec["layers"])
        given.add(i, rec, verdicts)
        read.add(i, rec)
        hollow_given.add(i, rec, verdicts)
        hollow_read.add(i, rec)
        absence_given.add(i, rec, verdicts)
        absence_read.add(i, rec)
        assert passed_on_presence(rec["layers"], verdicts) == passed_on_presence(rec["layers"])
        try:
            strings = layer_strings(rec)
        except AttributeError:   # a truthy entry that is no mapping: refused with or without the verdicts
            with pytest.raises(AttributeError):
                layer_strings(rec, verdicts)
        else:
            assert layer_strings(rec, verdicts) == strings
            assert failed_layers(strings) == [name for name, v in strings.items() if v == "fail"]
    summary = given.summary(status="ok", missing_artifacts=[])
    assert summary == read.summary(status="ok", missing_artifacts=[])
    assert summary == summarize(records, status="ok", missing_artifacts=[])
    assert hollow_given.result() == hollow_read.result() == hollow_layers(records)
    assert hollow_given.result() and absence_given.result()   # both folds had something to say
    assert absence_given.result() == absence_read.result()
    # the counts table's own rule for a Mapping that is no dict: str(entry), not its verdict
    tally = Tally()
    proxy = MappingProxyType({"verdict": "pass"})
    tally.add(0, {"case_id": "p", "verdict": "pass", "layers": {"answer": proxy}}, layer_verdicts({"answer": proxy}))
    assert tally.summary(status="ok", missing_artifacts=[])["layers"]["answer"] == {str(proxy): 1}
