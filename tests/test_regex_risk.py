"""validate_cases.py warns on a catastrophic (nested-quantifier) regex before a run spends 2 s per
check on it (docs: skills/generate/references/case-format.md, `catastrophic_regex`), and refuses a
`must_contain` regex found in every answer (`vacuous_regex`)."""

from __future__ import annotations

import re

import pytest

from assay.lint.regex_risk import matches_every_text, nested_quantifier


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a*)*b", r"(\w+\s?)*$", "x(a|b+)*y", "(x+x+)+y", "((ab)*c)*"])
def test_nested_quantifiers_are_flagged(pattern):
    assert nested_quantifier(pattern)


@pytest.mark.parametrize("pattern", ["a+b+", "(ab)+", r"\d{3}-\d{4}", "(a+)?", "(?>a+)+", "(a++)+",
                                     "(a{1,3}){2}", "(a{3})+", "(", "refund|credit", r"INV-\d+"])
def test_linear_or_bounded_patterns_are_not(pattern):
    assert not nested_quantifier(pattern)


# an anchor no longer exempts a pattern: `/^/` and `/.*$/` are found in every answer (the hand-written-suite
# trial); only one whose empty match depends on the text around it (`^$`, `\b`, a lookaround) is a check
@pytest.mark.parametrize("pattern, every", [
    (".*", True), ("(refund)?", True), ("x|", True), ("", True), ("^", True), ("$", True), ("^.*", True),
    (".*$", True), (r"\A", True), (r"\Z", True), (r"\s*$", True), ("(?m)^", True), ("^a?", True),
    ("^$", False), (r"^\s*$", False), (r"\b", False), ("(?=x)", False), (r"(a)\1?", False), ("^refund", False),
    ("refund$", False), ("^(?!refund)", False), ("^[^#]*$", False), ("^|$", False), ("a+", False)])
def test_matches_every_text_holds_on_every_text(pattern, every):
    assert matches_every_text(pattern) is every
    if every:   # what the rule claims, checked on texts of every shape
        for text in ("", "abc", "\n", "a\nb\n", "refund #x", "ü"):
            assert re.search(pattern, text) is not None, (pattern, text)
