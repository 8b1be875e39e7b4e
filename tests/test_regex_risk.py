"""validate_cases.py warns on a catastrophic (nested-quantifier) regex before a run spends 2 s per
check on it (docs: skills/generate/references/case-format.md, `catastrophic_regex`)."""

from __future__ import annotations

import pytest

from assay.lint.regex_risk import nested_quantifier


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a*)*b", r"(\w+\s?)*$", "x(a|b+)*y", "(x+x+)+y", "((ab)*c)*"])
def test_nested_quantifiers_are_flagged(pattern):
    assert nested_quantifier(pattern)


@pytest.mark.parametrize("pattern", ["a+b+", "(ab)+", r"\d{3}-\d{4}", "(a+)?", "(?>a+)+", "(a++)+",
                                     "(a{1,3}){2}", "(a{3})+", "(", "refund|credit", r"INV-\d+"])
def test_linear_or_bounded_patterns_are_not(pattern):
    assert not nested_quantifier(pattern)
