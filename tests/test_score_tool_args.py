"""score_tool_args: present / from_tool_result / literal; scopes any, all, first; bad input."""

from __future__ import annotations

import pytest

from assay.score.base import ScorerInputError
from assay.score.tool_args import score_tool_args, values_equal
from otlp_util import tool_call, trajectory


def score(t, args):
    return score_tool_args(t, {"args": args})


def statuses(out):
    return [(c["tool"], c["arg"], c["call_index"], c["status"]) for c in out["checks"]]


def test_present_and_literal():
    t = trajectory(tool_call("get", {"id": "INV-1", "limit": 5, "note": ""}, {}))
    assert score(t, {"get": {"id": "present", "limit": 5}})["verdict"] == "pass"
    out = score(t, {"get": {"note": "present"}})
    assert out["verdict"] == "fail" and "missing or empty" in out["checks"][0]["reason"]
    out = score(t, {"get": {"limit": "5"}})                   # type-aware: "5" is not 5
    assert out["verdict"] == "fail" and "expected" in out["checks"][0]["reason"]
    assert score(t, {"get": {"absent": 1}})["checks"][0]["reason"] == "argument 'absent' was not passed"


def test_literal_comparison_rules():
    assert values_equal("Cafe\u0301", "Caf\u00e9")               # NFC
    assert not values_equal(True, 1) and not values_equal(0, False)
    assert values_equal(1, 1.0) and not values_equal("1", 1)
    assert values_equal({"a": [1, "x"]}, {"a": [1, "x"]}) and not values_equal({"a": 1}, {"a": 1, "b": 2})
    assert values_equal(None, None) and not values_equal(None, "")


def test_from_tool_result_needs_an_earlier_result():
    t = trajectory(
        tool_call("lookup", {"name": "Ada"}, {"ids": ["INV-77", "INV-78"]}),
        tool_call("get", {"id": "INV-78"}, {}),
        tool_call("get", {"id": "INV-7"}, {}),        # not a whole token of INV-77
    )
    out = score(t, {"get": {"id": "from_tool_result", "calls": "all"}})
    assert statuses(out) == [("get", "id", 1, "pass"), ("get", "id", 2, "fail")] and out["verdict"] == "fail"
    assert score(t, {"get": {"id": "from_tool_result"}})["verdict"] == "pass"    # any


def test_from_tool_result_fails_on_the_first_call_and_is_unscorable_without_evidence():
    first = trajectory(tool_call("get", {"id": "INV-1"}, {"id": "INV-1"}))
    out = score(first, {"get": {"id": "from_tool_result"}})
    assert out["verdict"] == "fail" and "first tool call" in out["checks"][0]["reason"]
    uncaptured = trajectory(tool_call("lookup", {}), tool_call("get", {"id": "INV-1"}, {}))
    out = score(uncaptured, {"get": {"id": "from_tool_result"}})
    assert out["verdict"] == "unscored" and "no earlier tool result of any tool was captured" in out["reason"]
    short = trajectory(tool_call("lookup", {}, {"n": 42}), tool_call("get", {"id": 42}, {}))
    out = score(short, {"get": {"id": "from_tool_result"}})
    assert out["verdict"] == "unscored" and "under 3 characters" in out["checks"][0]["reason"]


def test_mapping_forms_of_the_keywords():
    t = trajectory(
        tool_call("search", {"q": "x"}, {"hits": ["INV-5"]}),
        tool_call("lookup", {"name": "Ada"}, {"invoice": {"id": "INV-7"}, "other": "INV-5"}),
        tool_call("refund", {"invoice_id": "INV-7", "amount": 3}, {}),
        tool_call("refund", {"invoice_id": "INV-5"}, {}),
    )
    ok = {"invoice_id": {"from_tool_result": "lookup.invoice.id"}, "amount": {"present": True}}
    assert score(t, {"refund": {**ok, "calls": "first"}})["verdict"] == "pass"
    out = score(t, {"refund": {"invoice_id": {"from_tool_result": "lookup.invoice.id"}, "calls": "all"}})
    assert statuses(out)[1][3] == "fail" and "of lookup.invoice.id" in out["checks"][1]["reason"]
    assert score(t, {"refund": {"invoice_id": {"from_tool_result": "search"}, "calls": "all"}})["verdict"] == "fail"
    assert score(t, {"refund": {"invoice_id": {"from_tool_result": "lookup"}, "calls": "all"}})["verdict"] == "pass"
    out = score(t, {"refund": {"invoice_id": {"from_tool_result": "nosuchtool"}}})
    assert out["verdict"] == "unscored" and "of nosuchtool" in out["reason"]
    assert score(t, {"refund": {"amount": {"present": False}, "calls": "all"}})["verdict"] == "fail"
    assert score(t, {"search": {"page": {"present": False}}})["verdict"] == "pass"
    # any other mapping is a literal
    t = trajectory(tool_call("f", {"filter": {"present": "yes"}}, {}))
    assert score(t, {"f": {"filter": {"present": "yes"}}})["verdict"] == "pass"


def test_uncaptured_arguments_are_unscorable():
    t = trajectory(tool_call("get", result={}))
    out = score(t, {"get": {"id": "present"}})
    assert out["verdict"] == "unscored" and out["unscorable"] == 1


def test_tool_not_called_fails():
    out = score(trajectory(tool_call("other", {}, {})), {"get": {"id": "present"}})
    assert out["verdict"] == "fail" and out["checks"][0]["reason"] == "tool_not_called"


def test_scopes():
    t = trajectory(tool_call("get", {"id": "A-1"}, {}), tool_call("get", {"id": "B-2"}, {}))
    assert score(t, {"get": {"id": "B-2"}})["verdict"] == "pass"                     # any
    assert score(t, {"get": {"id": "B-2", "calls": "first"}})["verdict"] == "fail"
    assert score(t, {"get": {"id": "A-1", "calls": "first"}})["verdict"] == "pass"
    assert score(t, {"get": {"id": "present", "calls": "all"}})["verdict"] == "pass"
    out = score(t, {"get": {"id": "A-1", "calls": "all"}})
    assert statuses(out) == [("get", "id", 0, "pass"), ("get", "id", 1, "fail")]
    # any: a call must meet EVERY expectation; two half-matching calls do not add up
    t = trajectory(tool_call("q", {"a": 1, "b": 0}, {}), tool_call("q", {"a": 0, "b": 2}, {}))
    out = score(t, {"q": {"a": 1, "b": 2}})
    assert out["verdict"] == "fail" and len(out["checks"]) == 4


def test_partially_unscored_pass_is_flagged():
    t = trajectory(tool_call("lookup", {}), tool_call("get", {"id": "INV-1", "x": 1}, {}))
    out = score(t, {"get": {"x": 1, "id": "from_tool_result"}})
    assert out["verdict"] == "pass" and out["partially_unscored"] is True


@pytest.mark.parametrize("args", [
    None, [], {}, {"get": "present"}, {"get": {"calls": "any"}}, {"get": {}}, {"get": {"id": "present", "calls": "most"}},
])
def test_malformed_blocks_raise(args):
    with pytest.raises(ScorerInputError):
        score(trajectory(tool_call("get", {"id": 1}, {})), args)


def test_a_list_argument_must_have_every_element():
    """Mutation round 3: without the length check a list literal matched any prefix of itself."""
    assert not values_equal([1, 2], [1, 2, 3]) and not values_equal([1, 2, 3], [1, 2])
    traj = trajectory(tool_call("tag", {"labels": ["a"]}))
    assert score_tool_args(traj, {"args": {"tag": {"labels": ["a", "b"]}}})["verdict"] == "fail"
