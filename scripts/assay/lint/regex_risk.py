"""Static checks of author regexes: the ones that can backtrack catastrophically (validate_cases WARN
`catastrophic_regex`) and the ones found in every text (`matches_every_text`, the ERROR `vacuous_regex`).
The runner still bounds every search (core.regex_guard: 2 s, then the check is unscorable); the first
only says so before a run.

The shape flagged is a nested quantifier: an unbounded (or 16+) repeat whose body itself holds a
variable-length repeat, as in `(a+)+`, `(a*)*b`, `(\\w+\\s?)*$`; `(a{1,3}){2}` is bounded and not
flagged. It is a heuristic: `(?:ab+)+` is flagged though the `a` keeps it linear. Possessive repeats and atomic
groups (`(?>...)`, `a++`) cannot backtrack and are not flagged. Alternations of overlapping
branches (`(a|a)*`) are not detected.
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    from re import _constants as sre_c, _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older interpreters
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

_REPEATS = {sre_c.MAX_REPEAT, sre_c.MIN_REPEAT}


def _items(node):
    """Child subpatterns of one parsed (op, av) item, never entering an atomic group or a
    possessive repeat (they do not backtrack)."""
    op, av = node
    if op is sre_c.SUBPATTERN:
        return [av[-1]]
    if op is sre_c.BRANCH:
        return list(av[1])
    if op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
        return [av[1]]
    if op in _REPEATS:
        return [av[2]]
    if op is getattr(sre_c, "GROUPREF_EXISTS", None):
        return [p for p in av[1:] if p is not None]
    return []


def _has_repeat(sub) -> bool:
    """A variable-length repeat anywhere inside (`+`, `*`, `{1,3}`; not `{3}`)."""
    stack = [sub]
    while stack:
        for node in stack.pop():
            if node[0] in _REPEATS and node[1][1] > 1 and node[1][1] != node[1][0]:
                return True
            stack.extend(_items(node))
    return False


def nested_quantifier(pattern: str) -> bool:
    """True when `pattern` repeats without bound something that itself repeats. False for a pattern that does
    not parse (the linter's `bad_regex` names that)."""
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - re.error and parser limits alike: not ours to judge
        return False
    stack = [parsed]
    while stack:
        for node in stack.pop():
            op, av = node
            if op in _REPEATS and (av[1] == sre_c.MAXREPEAT or av[1] >= 16) and _has_repeat(av[2]):
                return True
            stack.extend(_items(node))
    return False


_ASSERTIONS = {sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT, sre_c.GROUPREF,
               getattr(sre_c, "GROUPREF_EXISTS", None), getattr(sre_c, "GROUPREF_IGNORE", None)} - {None}


_START = {sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_STRING, sre_c.AT_BEGINNING_LINE}
_END = {sre_c.AT_END, sre_c.AT_END_STRING, sre_c.AT_END_LINE}


def _assertion_kinds(tree) -> set[str]:
    """The zero-width conditions the parsed pattern holds anywhere: `start` (`^`, `\\A`), `end` (`$`,
    `\\Z`), `other` (`\\b`, `\\B`, a lookaround, a back reference)."""
    kinds: set[str] = set()
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple) and len(item) == 2 and item[0] in _ASSERTIONS:
            at = item[1] if item[0] is sre_c.AT else None
            kinds.add("start" if at in _START else "end" if at in _END else "other")
        if isinstance(item, (list, tuple)) or hasattr(item, "data"):
            stack.extend(getattr(item, "data", item))
    return kinds


def matches_every_text(pattern: str) -> bool:
    """True when `pattern` is found in any text at all: it matches the empty text and its only zero-width
    conditions are all start anchors or all end anchors (or none): `.*`, `a*`, `(refund)?`, `x|`, the empty
    pattern, `^`, `^.*`, `.*$`, `\\s*$`. The empty match found in the empty text then holds at the start (or
    the end) of every answer, where those anchors hold too. `^$`, `^\\s*$`, `\\b`, `(?=x)`, `(a)\\1?` are not
    flagged (their empty match depends on the text around it). False for a pattern that does not parse
    (`bad_regex` names that)."""
    try:
        parsed = sre_parse.parse(pattern)
        kinds = _assertion_kinds(parsed)
        return re.compile(pattern).search("") is not None and kinds in (set(), {"start"}, {"end"})
    except Exception:  # noqa: BLE001 - re.error and parser limits alike: not ours to judge
        return False
