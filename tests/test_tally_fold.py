"""The counts folded one record at a time (stats.tally): the same summary in any finish order."""

from __future__ import annotations

import json
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


# ----------------------------------------------------------------- per layer shape (score.layershape)
def shaped_records(seed: int) -> list[dict]:
    """Records in few shapes (each shape many times, so the later ones take the kept work), hostile
    values among them: odd entries, verdicts and titles of every type, sentinel-like text, 1 vs True."""
    rnd = random.Random(seed)
    base = synthetic(60, seed)
    odd_text = ["", "é", "a\"b", "\x00assay:case_id\x00", "\x00assay:title\x00", "\ud800", "\u2028", "NaN", "😀"]
    verdicts = ["pass", "fail", "unscored", "skipped", "infra_error", 1, True, 1.0, None, "\x00assay:case_id\x00"]
    shapes = [{"http": {"verdict": "pass"}, "answer": {"verdict": "pass", "checks": []}, "routing": {"verdict": "n/a"}},
              {"http": {"verdict": "pass"}, "answer": {"verdict": "fail"}, "judged": {"verdict": "unscored",
                                                                                    "reason": "unjudged (smoke)"}},
              {"http": {"verdict": "pass"}, "execution": {"verdict": "unscorable", "blocked_by": "b"}},
              {"http": {"verdict": "pass"}, "trajectory": {"verdict": "unscored", "reason": "no trace"}},
              {"answer": {"verdict": "\x00assay:case_id\x00"}, "extra": {"verdict": "pass"}},
              {"answer": {"verdict": "pass"}, "trajectory": []}, {"answer": {"verdict": "pass"}, "http": None},
              {"answer": MappingProxyType({"verdict": "pass"}), "http": {"verdict": "pass"}},
              {"answer": {"verdict": "pass"}, "http": {"verdict": "pass"}}, {}]   # the last two: a type apart
    out = []
    for i in range(600):
        def odd(rate=0.15):   # each field hostile on its own, else as a common record has it
            return rnd.random() < rate
        rec = dict(rnd.choice(base)) if odd() else {
            "verdict": rnd.choice(verdicts if odd() else verdicts[:2]),
            "canary": rnd.choice([False, True, 0, "yes"] if odd() else [False, False, True]),
            "holdout": rnd.choice([False, True, 1] if odd() else [False, False, True]),
            "gating": rnd.choice([True, None, False, 0] if odd() else [True, True, False]),
            "layers": {name: (dict(e) if type(e) is dict else e)
                       for name, e in rnd.choice(shapes if odd(0.3) else shapes[:3]).items()}}
        rec["case_id"] = rnd.choice([f"c-{i:04d}" + rnd.choice(odd_text), i, None]) if odd() else f"c-{i:04d}"
        rec["title"] = rnd.choice([rnd.choice(odd_text), 5, ["x"], False]) if odd() else rnd.choice([None, f"t {i}"])
        if odd():
            rec.update(multi_turn=True, failed_turn=rnd.choice([None, 0, 2, 2]))
        if odd(0.02):
            del rec["case_id"]
        out.append(rec)
    return out


def folded(records, order, *, every=0, shapes=True):
    """Tally and HollowFold fed as the completeness check feeds them (verdicts and shape handed over;
    `shapes=False`: no shape, each record read), the summary also taken midway (`every`): the counts
    kept per shape are added each time."""
    from assay.score.layershape import layer_shape
    tally, hollow = Tally(), HollowFold()
    for n, i in enumerate(order, 1):
        rec = records[i]
        verdicts = layer_verdicts(rec["layers"])
        shape = layer_shape(rec["layers"], verdicts) if shapes else None
        tally.add(i, rec, verdicts, shape)
        hollow.add(i, rec, verdicts, shape)
        if every and n % every == 0:
            tally.summary(status="ok", missing_artifacts=[])
            hollow.result()
    return tally.summary(status="ok", missing_artifacts=[]), hollow.result()


@pytest.mark.parametrize("held", [None, 0, 2])
def test_the_folds_kept_per_shape_answer_as_each_record_read(monkeypatch, held):
    """The layer table and the hollow fold counting a shape's later records by their shape alone give
    the summary and the hollow layers each record read gives (the same key order: a verdict's first
    sight in fold order), in any order, read midway or not; with no shape kept (the cache full) or a few."""
    from assay.score import layershape
    if held is not None:
        monkeypatch.setattr(layershape, "_SHAPES", {})
        monkeypatch.setattr(layershape, "_HELD", held)
    for seed in range(6):
        records = [r for r in shaped_records(seed) if "case_id" in r]
        expected = summarize(records, status="ok", missing_artifacts=[])
        order = list(range(len(records)))
        random.Random(seed).shuffle(order)
        read = folded(records, order, shapes=False)   # each record read: the reference, key order too
        assert read[0] == expected and read[1] == hollow_layers(records)
        for every in (0, 37):
            summary, hollow = folded(records, order, every=every)
            assert json.dumps(summary) == json.dumps(read[0]) and json.dumps(hollow) == json.dumps(read[1])


def old_lines(record, verdicts):
    """The derived lines as Finished._fold rendered them before per-shape templates (the reference)."""
    from assay.rundir import derived
    from assay.rundir.rowline import line_of
    layers = derived.layer_strings(record, verdicts)
    srow = derived.stats_row(record)
    return (line_of(derived.verdict_row(record, layers)), line_of(srow) if srow else None,
            None if record.get("holdout") else line_of(derived.results_row(record, layers)))


def outcome(fn):
    try:
        return fn()
    except Exception as exc:   # the same refusal either way (a record with no case_id, a list entry)
        return type(exc)


def test_a_records_lines_from_its_shapes_template_are_the_row_builders_lines():
    """rundir.shaped: each line from a template equals the one the row builders render for the
    record (hostile ids, titles and verdicts; the sentinel's own text as an id, a title or a verdict),
    and a record the template cannot take is rendered by the builders (the same error too)."""
    from assay.rundir.shaped import ShapedLines
    from assay.score.layershape import layer_shape
    shaped = ShapedLines()
    layers = {"http": {"verdict": "pass"}, "answer": {"verdict": "pass"}}
    equal_keys = [{"case_id": f"e-{i}", "verdict": v, "layers": layers} for i, v in enumerate([1, True, 1.0, "1"] * 2)]
    for rec in shaped_records(11) * 2 + equal_keys:   # equal_keys: verdicts equal as keys, not as text
        verdicts = layer_verdicts(rec["layers"])
        shape = layer_shape(rec["layers"], verdicts)
        want = outcome(lambda: old_lines(rec, verdicts))
        assert outcome(lambda: shaped.lines(rec, verdicts, shape)) == want, rec
        if type(want) is tuple:
            assert want[0] == json.dumps(json.loads(want[0]), sort_keys=True, ensure_ascii=False).encode(
                "utf-8", "backslashreplace") + b"\n" or "\\ud800" in str(rec)
    kept = [v for v in shaped._shapes.values() if v is not None]
    assert len(kept) >= 20 and None in shaped._shapes.values()   # templates, and a sentinel verdict refused
