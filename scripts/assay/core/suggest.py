"""The closest known name to a typo, for "did you mean" hints (case keys, expect keys, schema keys)."""

from __future__ import annotations

from typing import Iterable


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name nearest to `name` (difflib ratio >= 0.6), or None."""
    import difflib   # only when a name is unknown: every script imports this module
    found = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean 'x'?` or an empty string."""
    hit = closest(name, known)
    return f"; did you mean {hit!r}?" if hit else ""
