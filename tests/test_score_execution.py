"""assay.score.execution: extracting the actual result from declared sources, and comparing it."""

from __future__ import annotations

import pytest

from assay.score.base import ScorerInputError
from assay.score.execution import compare_rows, extract_actual, score_execution, values_equal


# ------------------------------------------------------------------ extract_actual

RESPONSE = {"data": {"value": 42, "rows": [{"id": 1, "n": 2}, {"id": 2, "n": 3}], "obj": {"a": 1},
                     "list": [10, 20]}}


def test_response_path_scalar_and_rows():
    assert extract_actual({"result_from_response": "data.value"}, RESPONSE, None) == \
        {"scalar": 42, "source": "result_from_response"}
    got = extract_actual({"result_from_response": "data.rows"}, RESPONSE, None)
    assert got == {"rows": [{"id": 1, "n": 2}, {"id": 2, "n": 3}], "source": "result_from_response"}
    assert extract_actual({"result_from_response": "data.list.1"}, RESPONSE, None)["scalar"] == 20


def test_response_path_absent_or_object_is_missing():
    got = extract_actual({"result_from_response": "data.nope"}, RESPONSE, None)
    assert got["missing"] is True and got["source"] == "result_from_response"
    assert "'data.nope' is absent" in got["reason"]
    got = extract_actual({"result_from_response": "data.obj"}, RESPONSE, None)
    assert got["missing"] is True and "is an object" in got["reason"]
    got = extract_actual({"result_from_response": "data.value"}, None, "text answer")
    assert got["missing"] is True and "not JSON" in got["reason"]


def test_pattern_group_one_is_a_string_scalar():
    got = extract_actual({"result_pattern": r"total: (\d+)"}, None, "the total: 42 items")
    assert got == {"scalar": "42", "source": "result_pattern"}


def test_pattern_failures_are_missing_with_reason():
    assert "did not match" in extract_actual({"result_pattern": r"total: (\d+)"}, None, "nothing")["reason"]
    assert "capture group" in extract_actual({"result_pattern": r"total"}, None, "total")["reason"]
    assert "invalid regex" in extract_actual({"result_pattern": r"(x"}, None, "x")["reason"]
    assert "no answer text" in extract_actual({"result_pattern": r"(x)"}, None, None)["reason"]
    got = extract_actual({"result_pattern": r"((a+)+)$"}, None, "a" * 40 + "b", regex_timeout_s=0.3)
    assert got["missing"] is True and "timed out" in got["reason"]


TOOL_CALLS = [
    {"name": "sql", "arguments": {"q": "1"}, "result": [{"n": 1}], "error": None},
    {"name": "calc", "arguments": {}, "result": '{"total": 7, "rows": [[1, 2]]}', "error": None},
    {"name": "sql", "arguments": {"q": "2"}, "result": [{"n": 2}], "error": None},
    {"name": "broken", "arguments": {}, "result": None, "error": "boom"},
]


def test_tool_result_last_call_wins():
    got = extract_actual({"result_from_tool": {"tool": "sql"}}, None, None, TOOL_CALLS)
    assert got == {"rows": [{"n": 2}], "source": "result_from_tool"}


def test_tool_result_field_and_json_text():
    got = extract_actual({"result_from_tool": {"tool": "calc", "field": "total"}}, None, None, TOOL_CALLS)
    assert got == {"scalar": 7, "source": "result_from_tool"}
    got = extract_actual({"result_from_tool": {"tool": "calc", "field": "rows"}}, None, None, TOOL_CALLS)
    assert got["rows"] == [[1, 2]]


def test_tool_result_missing_cases():
    inv = {"result_from_tool": {"tool": "sql"}}
    assert "no trace" in extract_actual(inv, None, None, None)["reason"]
    assert "'nope' was not called" in extract_actual({"result_from_tool": {"tool": "nope"}}, None, None,
                                                     TOOL_CALLS)["reason"]
    got = extract_actual({"result_from_tool": {"tool": "broken"}}, None, None, TOOL_CALLS)
    assert "no captured result" in got["reason"] and "boom" in got["reason"]
    got = extract_actual({"result_from_tool": {"tool": "calc", "field": "zzz"}}, None, None, TOOL_CALLS)
    assert "no field 'zzz'" in got["reason"]


def test_priority_tool_then_response_then_pattern():
    inv = {"result_from_tool": {"tool": "sql"}, "result_from_response": "data.value", "result_pattern": r"(\d+)"}
    assert extract_actual(inv, RESPONSE, "7", TOOL_CALLS)["source"] == "result_from_tool"
    got = extract_actual(inv, RESPONSE, "7", [])
    assert got["source"] == "result_from_response" and got["scalar"] == 42
    assert "result_from_tool" in got["notes"][0]
    got = extract_actual(inv, {}, "7", [])
    assert got == {"scalar": "7", "source": "result_pattern", "notes": got["notes"]}
    assert len(got["notes"]) == 2


def test_nothing_declared_is_missing():
    got = extract_actual({"mode": "http"}, RESPONSE, "answer 42")
    assert got["missing"] is True and got["source"] is None
    assert "declares no result source" in got["reason"]


def test_all_declared_sources_failing_is_missing_with_every_reason():
    got = extract_actual({"result_from_response": "x", "result_pattern": r"(\d+)"}, {}, "none")
    assert got["missing"] is True and got["source"] == "result_from_response"
    assert "result_from_response" in got["reason"] and "result_pattern" in got["reason"]


# ------------------------------------------------------------------ equality

@pytest.mark.parametrize("expected,actual,equal", [
    (3, 3, True), (3, 3.0, True), (3, "3", True), ("3", 3, True), (3, " 3.00 ", True), (3, "1e0", False),
    (1000, "1e3", True), (1000, "1,000", False), (3, "three", False), (3, "nan", False),
    ("3", "3.0", False), ("abc", "abc", True), ("abc", "ABC", False),
    (True, True, True), (True, 1, False), (1, True, False), (False, 0, False), (True, "true", False),
    (None, None, True), (None, 0, False), (None, "", False),
    ([1, "a"], [1.0, "a"], True), ([1], [1, 2], False),
    ({"a": 1}, {"a": "1"}, True), ({"a": 1}, {"a": 1, "b": 2}, False),
])
def test_values_equal(expected, actual, equal):
    assert values_equal(expected, actual) is equal


def test_nfc_string_equality():
    assert values_equal("café", "cafe\u0301")


def test_tolerance_is_absolute_and_inclusive():
    assert values_equal(1.0, 1.1, 0.1)
    assert values_equal(0.3, 0.1 + 0.2, 1e-9)
    assert not values_equal(0.3, 0.1 + 0.2)
    assert not values_equal(1.0, 1.2, 0.1)
    assert values_equal(10, "10.05", 0.1)
    assert not values_equal(True, 1, 5)


# ------------------------------------------------------------------ rows

def test_rows_multiset_ignores_order_but_counts_duplicates():
    assert compare_rows([{"a": 1}, {"a": 2}], [{"a": 2}, {"a": 1}])[0]
    equal, diff = compare_rows([{"a": 1}, {"a": 1}], [{"a": 1}, {"a": 2}])
    assert not equal
    assert diff["missing_rows"] == [{"a": 1}] and diff["unexpected_rows"] == [{"a": 2}]


def test_rows_ordered():
    equal, diff = compare_rows([[1], [2]], [[2], [1]], ordered=True)
    assert not equal and diff["first_mismatch_index"] == 0
    assert compare_rows([[1], [2]], [[1], [2]], ordered=True)[0]
    equal, diff = compare_rows([[1]], [[1], [2]], ordered=True)
    assert not equal and "expected 1 rows, got 2" in diff["summary"]


def test_rows_restricted_to_columns():
    expected = [{"id": 1, "name": "a"}]
    actual = [{"id": 1, "name": "a", "created": "2026-01-01"}]
    assert not compare_rows(expected, actual)[0]
    assert compare_rows(expected, actual, columns=["id", "name"])[0]
    assert not compare_rows([{"id": 1}], [{"name": "a"}], columns=["id"])[0]  # column absent in actual


def test_tolerance_matching_is_maximum_not_greedy():
    # 1.0 fits {1.04, 0.95}; 1.09 fits {1.04} only: pairing 1.0 with its first fit would fail.
    assert compare_rows([1.0, 1.09], [1.04, 0.95], tolerance=0.05)[0] is True
    equal, diff = compare_rows([1.0, 1.2], [1.04, 0.95], tolerance=0.05)
    assert not equal and diff["missing_rows"] == [1.2] and diff["unexpected_count"] == 1


def test_identical_rows_pair_then_augment():
    # An identical pair (5 = 5) must be reassigned for a full matching to exist.
    assert compare_rows([5, 5.04], [5, 4.98], tolerance=0.05)[0] is True


# ------------------------------------------------------------------ score_execution

def test_scalar_pass_and_fail():
    r = score_execution({"scalar": 42}, {"scalar": "42", "source": "result_pattern"})
    assert r["verdict"] == "pass" and r["source"] == "result_pattern"
    assert r["expected"] == {"scalar": 42} and r["actual"]["scalar"] == "42"
    r = score_execution({"scalar": 42}, {"scalar": 41})
    assert r["verdict"] == "fail" and r["diff"]["difference"] == -1
    assert r["diff"]["summary"] == "expected 42, got 41"


def test_bool_never_equals_number():
    assert score_execution({"scalar": True}, {"scalar": 1})["verdict"] == "fail"


def test_tolerance_from_case_beats_plan():
    assert score_execution({"scalar": 1.0}, {"scalar": 1.04}, float_tolerance=0.05)["verdict"] == "pass"
    assert score_execution({"scalar": 1.0, "float_tolerance": 0.01}, {"scalar": 1.04},
                           float_tolerance=0.05)["verdict"] == "fail"
    assert score_execution({"scalar": 1.0}, {"scalar": 1.04})["verdict"] == "fail"


def test_missing_actual_is_unscored_never_fail():
    r = score_execution({"scalar": 1}, {"missing": True, "reason": "path 'x' is absent", "source": "result_from_response"})
    assert r["verdict"] == "unscored"
    assert "path 'x' is absent" in r["reason"]


def test_scalar_against_single_cell_rows():
    assert score_execution({"scalar": 3}, {"rows": [{"count": 3}]})["verdict"] == "pass"
    r = score_execution({"scalar": 3}, {"rows": [{"count": 3}, {"count": 4}]})
    assert r["verdict"] == "fail" and "2 row(s)" in r["diff"]["summary"]


def test_rows_against_scalar_fails():
    assert score_execution({"rows": [[1]]}, {"scalar": 1})["verdict"] == "fail"


def test_rows_with_columns_and_order():
    exp = {"rows": [{"id": 2, "v": 1.0}, {"id": 1, "v": 2.0}], "columns": ["id", "v"], "float_tolerance": 0.01}
    act = {"rows": [{"id": 1, "v": 2.001, "x": 0}, {"id": 2, "v": 0.999, "x": 9}]}
    assert score_execution(exp, act)["verdict"] == "pass"
    assert score_execution(dict(exp, ordered=True), act)["verdict"] == "fail"


@pytest.mark.parametrize("bad", [
    {}, {"scalar": 1, "rows": []}, {"rows": "x"}, {"rows": [], "ordered": "yes"},
    {"rows": [{"a": 1}], "columns": []}, {"rows": [[1]], "columns": ["a"]},
    {"scalar": 1, "float_tolerance": -1}, {"scalar": 1, "float_tolerance": True}, "scalar",
])
def test_malformed_expectation_is_scorer_input_error(bad):
    with pytest.raises(ScorerInputError):
        score_execution(bad, {"scalar": 1})


def test_unordered_rows_fail_on_an_extra_actual_row():
    """Mutation round 3: a multiset comparison that only looked for missing rows passed extra ones."""
    equal, diff = compare_rows([{"a": 1}], [{"a": 1}, {"a": 2}])
    assert not equal and diff["unexpected_rows"] == [{"a": 2}] and diff["missing_count"] == 0


def test_columns_never_match_a_row_that_is_not_an_object():
    """Mutation round 3: a non-object actual row projected as itself could equal an expected row."""
    assert not compare_rows([{"a": 1}], [{"a": 1}, [1]], columns=["a"])[0]
    assert not compare_rows([1], [1], columns=["a"])[0]


def test_a_tolerance_equal_to_the_expected_value_is_refused():
    """Mutation round 3: tolerance == |expected| lets 0 pass; it is refused, as one just above it is."""
    with pytest.raises(ScorerInputError, match="float_tolerance"):
        score_execution({"scalar": 2.0, "float_tolerance": 2.0}, {"scalar": 0})
    assert score_execution({"scalar": 2.0, "float_tolerance": 1.99}, {"scalar": 0})["verdict"] == "fail"
