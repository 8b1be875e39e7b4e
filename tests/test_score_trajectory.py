"""score_trajectory: subset / order modes, forbidden tools, errored calls, precision/recall, bad input."""

from __future__ import annotations

import pytest

from assay.score.base import ScorerInputError
from assay.score.trajectory import score_trajectory
from otlp_util import tool_call, trajectory


def traj(*names, errors=()):
    return trajectory(*(tool_call(n, {}, {}, error="Boom" if i in errors else None) for i, n in enumerate(names)))


def score(t, tools, **kw):
    return score_trajectory(t, {"tools": tools}, **kw)


def test_subset_is_default_and_duplicates_count():
    t = traj("search", "get", "search")
    out = score(t, {"subset": ["get", "search", "search"]})
    assert out["verdict"] == "pass" and out["mode"] == "subset"
    out = score(t, {"subset": ["get", "get"]})
    assert out["verdict"] == "fail" and out["detail"]["missing"] == ["get"]


@pytest.mark.parametrize("mode, order, verdict", [
    ("in_order", ["search", "get"], "pass"),
    ("in_order", ["get", "search"], "pass"),      # search, get, search contains get..search
    ("in_order", ["get", "get"], "fail"),
    ("exact", ["search", "get", "search"], "pass"),
    ("exact", ["search", "get"], "fail"),
    ("any_order", ["search", "search", "get"], "pass"),
    ("any_order", ["search", "get"], "fail"),
    (None, ["search", "search"], "pass"),          # in_order by default
    (None, ["get", "search", "get"], "fail"),
])
def test_order_modes(mode, order, verdict):
    tools = {"order": order, **({"order_mode": mode} if mode else {})}
    out = score(traj("search", "get", "search"), tools)
    assert out["verdict"] == verdict and out["mode"] == (mode or "in_order")


def test_order_wins_over_subset_with_a_warning():
    out = score(traj("a", "b"), {"subset": ["zzz"], "order": ["a", "b"], "order_mode": "exact"})
    assert out["verdict"] == "pass" and out["mode"] == "exact" and "order wins" in out["warning"]


def test_forbidden_tool_fails_even_when_the_rest_passes():
    out = score(traj("search", "delete", "delete"), {"subset": ["search"], "forbidden": ["delete", "drop"]})
    assert out["verdict"] == "fail" and out["forbidden_violations"] == [{"tool": "delete", "calls": 2}]
    out = score(traj("search"), {"forbidden": ["delete"]})
    assert out["verdict"] == "pass" and out["mode"] == "forbidden" and out["precision"] is None


def test_errored_calls_reported_and_fail_only_on_request():
    t = traj("search", "get", errors=(1,))
    out = score(t, {"subset": ["get"]})
    assert out["verdict"] == "pass" and out["errored_calls"] == [{"index": 1, "tool": "get", "error": "Boom"}]
    assert score(t, {"subset": ["get"]}, fail_on_errored_calls=True)["verdict"] == "fail"


def test_precision_recall_are_multiset():
    out = score(traj("a", "a", "b", "c"), {"subset": ["a", "b", "d"]})
    assert out["precision"] == 0.5 and out["recall"] == round(2 / 3, 4)
    out = score(traj(), {"subset": ["a"]})
    assert out["precision"] is None and out["recall"] == 0.0 and out["verdict"] == "fail"


@pytest.mark.parametrize("tools", [
    None, "search", {}, {"subset": []}, {"subset": None}, {"order": []}, {"subset": "search"},
    {"order": ["a"], "order_mode": "sometimes"}, {"order_mode": "exact"}, {"subset": ["a"], "sequence": ["a"]},
    {"forbidden": [""]},
])
def test_malformed_blocks_raise(tools):
    with pytest.raises(ScorerInputError):
        score(traj("a"), tools)


def test_exact_order_is_the_call_list_in_its_order():
    """Mutation round 3: `exact` read as the same multiset passed the right calls in the wrong order."""
    traj = trajectory(tool_call("a"), tool_call("b"))
    assert score_trajectory(traj, {"tools": {"order": ["a", "b"], "order_mode": "exact"}})["verdict"] == "pass"
    assert score_trajectory(traj, {"tools": {"order": ["b", "a"], "order_mode": "exact"}})["verdict"] == "fail"
