"""The pure parts of run comparison: the bucket rule, the diffs, the suite version, history's series."""

from __future__ import annotations

import copy
import itertools

import pytest

from assay.compare.buckets import BUCKETS, bucket_of, headline
from assay.compare.diffs import (diff_first_line, expectation_diff, normalize_answer, trajectory_diff,
                                 word_diff)
from assay.history.runs import build_series
from assay.suite.version import suite_version

VERDICTS = (None, "pass", "fail", "unscored", "infra_error", "infra_incomplete", "skipped")


def test_every_combination_lands_in_exactly_one_known_bucket():
    for b, c, changed, judge in itertools.product(VERDICTS, VERDICTS, (True, False, None), (True, False)):
        if b is None and c is None:
            with pytest.raises(ValueError):
                bucket_of(b, c, case_changed=changed, judge_only=judge)
            continue
        assert bucket_of(b, c, case_changed=changed, judge_only=judge) in BUCKETS


@pytest.mark.parametrize("base,cand,changed,judge,want", [
    ("pass", "fail", False, False, "newly_failing"),
    ("fail", "pass", False, False, "newly_passing"),
    ("pass", "fail", False, True, "judge_flip"),
    ("pass", "fail", True, False, "expectation_changed"),
    ("pass", "fail", None, False, "newly_failing"),       # unknown version: bucketed by verdict
    ("pass", "pass", False, True, "still_passing"),
    ("fail", "fail", False, False, "still_failing"),
    ("pass", "infra_error", False, False, "changed_unscored"),
    ("skipped", "fail", False, False, "changed_unscored"),
    ("unscored", "skipped", False, False, "still_unscored"),
    (None, "pass", None, False, "only_in_candidate"),
    ("fail", None, None, False, "only_in_base"),
])
def test_bucket_rule(base, cand, changed, judge, want):
    assert bucket_of(base, cand, case_changed=changed, judge_only=judge) == want


def test_headline_words():
    counts = dict.fromkeys(BUCKETS, 0) | {"newly_failing": 2, "newly_passing": 5, "expectation_changed": 3}
    assert headline(counts, 1) == "2 newly failing, 5 newly passing, 1 judge flip, 3 cases edited"
    assert headline(dict.fromkeys(BUCKETS, 0), 0) == "no verdict changed"
    # what is still broken is said beside what changed (a fix alone read as good news)
    assert headline(dict(dict.fromkeys(BUCKETS, 0), newly_passing=1, still_failing=2), 0) == \
        "1 newly passing, 2 still failing"
    assert headline(dict(dict.fromkeys(BUCKETS, 0), still_failing=3), 0) == "no verdict changed (3 still failing)"


def test_answer_normalization_and_word_diff():
    assert normalize_answer("Cafe\u0301  is\n open ") == "Caf\u00e9 is open"
    assert normalize_answer("Open.") != normalize_answer("open.")    # case is kept
    diff = word_diff("Refund issued within 5 days.", "Refund issued within 10 days.")
    assert diff_first_line(diff) == "- 5 + 10"
    long = word_diff(" ".join(["a"] * 900), " ".join(["b"] * 900))
    assert long["truncated"] is True


def test_trajectory_first_difference():
    a = [{"name": "lookup", "arguments": {"id": 1}}, {"name": "refund", "arguments": {"amount": 5}}]
    b = [{"name": "lookup", "arguments": {"id": 1}}, {"name": "refund", "arguments": {"amount": 50}}]
    d = trajectory_diff(a, b)
    assert d["changed"] is True and d["first_difference"]["index"] == 1
    assert d["first_difference"]["kind"] == "arguments"
    assert trajectory_diff(a, a[:1])["first_difference"]["kind"] == "missing call"
    assert trajectory_diff(a, copy.deepcopy(a))["changed"] is False
    assert trajectory_diff(None, a)["changed"] is None


def test_expectation_diff_names_the_keys():
    d = expectation_diff({"answer": {"must_contain": ["a"]}, "route": "x"},
                         {"answer": {"must_contain": ["b"]}, "route": "x"})
    assert [k["key"] for k in d["keys"]] == ["answer.must_contain"]
    assert "edit is in a pinned rubric" in expectation_diff({"a": 1}, {"a": 1})["note"]


def plan(**over):
    case = {"id": "c-1", "split": ["smoke"], "review": {"by": "A"}, "title": "t", "category": "happy",
            "input": {"messages": [{"role": "user", "content": "hi"}]},
            "expect": {"answer": {"must_contain": ["hi"], "rubric": ["tone-v1"]}}}
    other = {"id": "c-2", "split": ["smoke"], "input": {"messages": [{"role": "user", "content": "yo"}]},
             "expect": {"answer": {"must_contain": ["yo"]}}}
    doc = {"cases": [case, other], "capability_matrix": {}, "scoring": {},
           "adapter": {"invocation": {"mode": "http", "base_url": "http://a", "endpoint": "POST /chat",
                                      "request_body": "{}", "response_body": '{"a": "<answer>"}'}},
           "judge": {"config": {"provider": "command", "command": ["j"], "base_url": None, "timeout_s": 5},
                     "rubrics": {"tone-v1": {"rubric_id": "tone", "version": 1, "body": "people",
                                             "nodes": [{"id": "n", "criterion": "polite"}]}}}}
    for path, value in over.items():
        target = doc
        keys = path.split(".")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        target[keys[-1]] = value
    return doc


def hashes(doc):
    return suite_version(doc)["cases"]


def test_case_sha256_covers_what_decides_the_verdict_and_nothing_else():
    base = hashes(plan())
    # bookkeeping, where the app runs, the judge's address and the rubric's prose: no change
    for same in (plan(**{"cases.0.review": {"by": "B"}}), plan(**{"cases.0.split": ["full"]}),
                 plan(**{"cases.0.title": "new"}), plan(**{"adapter.invocation.base_url": "http://b"}),
                 plan(**{"judge.config.base_url": "http://j"}), plan(**{"judge.config.timeout_s": 50}),
                 plan(**{"judge.rubrics.tone-v1.body": "other prose"})):
        assert hashes(same) == base
    # the expectation, the input, the rubric's content, the request shape, the judge: a change
    assert hashes(plan(**{"cases.0.expect": {"answer": {"must_contain": ["HI"], "rubric": ["tone-v1"]}}}))["c-1"] != base["c-1"]
    assert hashes(plan(**{"judge.rubrics.tone-v1.nodes": [{"id": "n", "criterion": "rude"}]}))["c-1"] != base["c-1"]
    request = hashes(plan(**{"adapter.invocation.request_body": '{"x": 1}'}))
    assert request["c-1"] != base["c-1"] and request["c-2"] != base["c-2"]
    judge = hashes(plan(**{"judge.config.command": ["other-judge"]}))
    assert judge["c-1"] != base["c-1"] and judge["c-2"] == base["c-2"]   # only the judged case
    # the response readers belong to the suite, not to each case
    reading = suite_version(plan(**{"adapter.invocation.response_body": '{"b": "<answer>"}'}))
    assert reading["cases"] == base and reading["suite_sha256"] != suite_version(plan())["suite_sha256"]


def run(run_id, suite, passes=1):
    return {"run_id": run_id, "mode": "smoke", "dataset_version": 1, "harness_version": "x", "k": 1,
            "suite_sha256": suite, "passes": passes, "failures": 0, "holdout": False, "verdicts": {},
            "stamp": run_id}


def test_history_starts_a_series_when_the_suite_changes_and_not_for_an_unknown_one():
    series = build_series([run("smoke-1", None), run("smoke-2", "a" * 64), run("smoke-3", "a" * 64),
                           run("smoke-4", "b" * 64)])
    assert [len(s["runs"]) for s in series] == [3, 1]
    assert series[1]["started_by"].startswith("suite aaaaaaaa → bbbbbbbb")


def test_a_sides_rows_alike_but_for_their_id_are_one_object():
    """compare.sides._rows_by_id: verdicts.jsonl rows held without case_id, equal ones shared; rows that
    differ in any value (True vs 1, another layers map) stay apart."""
    from assay.compare.sides import _rows_by_id
    layers = {"answer": "pass"}
    rows = _rows_by_id([{"case_id": "a", "verdict": "pass", "layers": layers, "gating": True},
                        {"case_id": "b", "verdict": "pass", "layers": layers, "gating": True},
                        {"case_id": "c", "verdict": "pass", "layers": layers, "gating": 1},
                        {"case_id": "d", "verdict": "pass", "layers": {"answer": "pass"}, "gating": True},
                        {"case_id": 7, "verdict": "fail"}, "not a row"])
    assert list(rows) == ["a", "b", "c", "d"]
    assert rows["a"] is rows["b"] and rows["a"] == {"verdict": "pass", "layers": layers, "gating": True}
    assert rows["c"] is not rows["a"] and rows["c"]["gating"] == 1
    assert rows["d"] is not rows["a"] and rows["d"] == rows["a"]


# --- the judge_flip bucket: only the judge's noise on the same answer and material (mutation hunt, round 2)
class _MemSide:
    """A compare Side held in memory: rows, case hashes, and each case's verdict record, answer and
    trajectory (the parts a pair reads)."""

    def __new__(cls, cases: dict):
        from pathlib import Path

        from assay.compare.sides import Side

        class MemSide(Side):
            def verdict_doc(self, case_id):
                return cases[case_id]["doc"]

            def text(self, case_id, *rel):
                return cases[case_id].get("/".join(rel))

            def json(self, case_id, *rel):
                import json as _json
                text = self.text(case_id, *rel)
                return _json.loads(text) if text is not None else None

        rows = {cid: {"verdict": c["doc"]["verdict"], "layers": {k: v["verdict"] for k, v in c["doc"]["layers"].items()}}
                for cid, c in cases.items()}
        return MemSide(run_dir=Path("mem"), results={"k": 1}, manifest={}, rows=rows,
                       case_hash={cid: "same" for cid in cases})


def _case(verdicts: dict, answer: str | None = "hi", results: list | None = None, provisional: bool = False) -> dict:
    import json as _json
    layers = {name: {"verdict": v, **({"provisional": True} if provisional and name == "judged" else {})}
              for name, v in verdicts.items()}
    verdict = "fail" if "fail" in verdicts.values() else "pass"
    out = {"doc": {"verdict": verdict, "layers": layers}}
    if answer is not None:
        out["answer.txt"] = answer
    out["trajectory.json"] = _json.dumps({"tool_calls": [{"name": "lookup", "arguments": {"q": 1}, "result": r}
                                                         for r in (results or ["r"])]})
    return out


def _bucket(base_case: dict, cand_case: dict) -> str:
    from assay.compare.pairs import compare_pair
    return compare_pair(_MemSide({"c": base_case}), _MemSide({"c": cand_case}), "c")["bucket"]


def test_a_judged_flip_on_the_same_answer_and_material_is_the_judges_noise():
    assert _bucket(_case({"judged": "pass"}), _case({"judged": "fail"})) == "judge_flip"


@pytest.mark.parametrize("why, base, cand", [
    # no answer on either side: the answer is unknown, never "unchanged"
    ("answer unknown", _case({"judged": "pass"}, answer=None), _case({"judged": "fail"}, answer=None)),
    # the tool returned something else: the judge read other material
    ("tool results changed", _case({"judged": "pass"}, results=["r"]), _case({"judged": "fail"}, results=["other"])),
    # a deterministic layer failed too: the app changed, not only the judge
    ("another layer flipped", _case({"judged": "pass", "answer": "pass"}), _case({"judged": "fail", "answer": "fail"})),
])
def test_a_regression_beside_a_judge_flip_is_newly_failing(why, base, cand):
    assert _bucket(base, cand) == "newly_failing", why


def test_a_provisional_judge_flip_does_not_make_the_pair_a_judge_flip():
    """A provisional (uncalibrated) judged layer never gates; its flip is named (judge_only) but does
    not move the pair out of newly_failing / newly_passing."""
    assert _bucket(_case({"judged": "pass"}, provisional=True), _case({"judged": "fail"}, provisional=True)) \
        == "newly_failing"
