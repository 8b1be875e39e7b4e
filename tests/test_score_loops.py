"""score_loops: identical repeats, flailing, call budget, thresholds."""

from __future__ import annotations

import pytest

from assay.score.base import ScorerInputError
from assay.score.loops import score_loops
from otlp_util import tool_call, trajectory


def calls(*pairs):
    return trajectory(*(tool_call(name, args, {}) for name, args in pairs))


def test_clean_trajectory_passes():
    out = score_loops(calls(("a", {"x": 1}), ("a", {"x": 1}), ("b", {})))
    assert out["verdict"] == "pass" and out["findings"] == [] and out["total_calls"] == 3
    assert score_loops(trajectory())["verdict"] == "pass"


def test_identical_repeat_loop_at_threshold():
    t = calls(*[("search", {"q": "x", "page": 1})] * 3)
    out = score_loops(t)
    assert out["verdict"] == "fail"
    assert [f["kind"] for f in out["findings"]] == ["identical-repeat-loop"]
    assert out["identical_repeats"][0]["calls"] == 3 and out["heavy_tools"] == {"search": 3}
    # key order in the arguments does not make calls different
    t = calls(("s", {"a": 1, "b": 2}), ("s", {"b": 2, "a": 1}))
    assert score_loops(t, repeat_threshold=2)["verdict"] == "fail"
    assert score_loops(t, repeat_threshold=3)["verdict"] == "pass"


def test_possible_flailing_counts_distinct_argument_sets():
    t = calls(*[("search", {"q": i}) for i in range(6)])
    out = score_loops(t)
    assert [f["kind"] for f in out["findings"]] == ["possible-flailing"]
    assert out["findings"][0]["distinct_argument_sets"] == 6
    assert score_loops(calls(*[("search", {"q": i}) for i in range(5)]))["verdict"] == "pass"


def test_call_budget():
    t = calls(*[(f"t{i}", {}) for i in range(16)])
    out = score_loops(t)
    assert [f["kind"] for f in out["findings"]] == ["call-budget-exceeded"] and out["total_calls"] == 16
    assert score_loops(t, call_budget=16)["verdict"] == "pass"


def test_uncaptured_arguments_do_not_prove_a_loop():
    t = trajectory(*[tool_call("search") for _ in range(4)])
    out = score_loops(t)
    assert out["verdict"] == "pass" and out["uncaptured_argument_calls"] == 4


@pytest.mark.parametrize("kw", [{"repeat_threshold": 1}, {"repeat_threshold": True}, {"call_budget": 0},
                                {"call_budget": 2.5}])
def test_bad_thresholds_raise(kw):
    with pytest.raises(ScorerInputError):
        score_loops(trajectory(), **kw)
