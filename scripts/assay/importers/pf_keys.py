"""promptfoo's config and test keys, and the near misses of the keys that carry checks.

promptfoo drops a key it does not know, so `asserts:` (for `assert`), `var:` (`vars`), `test:`
(`tests`) or `defaultTests:` (`defaultTest`) runs with no checks (or no tests, no inputs) and passes.
The import refuses such a key (exit 2) naming the file, line and key and the key it meant; any other
unknown key is left to the readers that list what they do not convert.
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.errors import AssayError

TOP_KEYS = frozenset({"description", "prompts", "providers", "targets", "tests", "defaultTest", "scenarios",
                      "evaluateOptions", "commandLineOptions", "outputPath", "sharing", "nunjucksFilters", "env",
                      "derivedMetrics", "extensions", "metadata", "redteam", "writeLatestResults", "tags",
                      "tracing"})
TEST_KEYS = frozenset({"description", "vars", "provider", "providers", "prompts", "providerOutput", "assert",
                       "assertScoringFunction", "options", "threshold", "metadata"})
TOP_CARRYING = ("tests", "defaultTest")
TEST_CARRYING = ("assert", "vars")


def _squash(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def refuse_near_misses(doc: dict[str, Any], known: frozenset[str], carrying: tuple[str, ...],
                       where_of: Callable[[str], Any], owner: str) -> None:
    """Exit 2 on a key of `doc` not in `known` that is a near miss of one of `carrying`. Keys starting
    `_` (the import's own) or `x-` (a home for YAML anchors) are never refused."""
    from ..core.suggest import closest
    by_squashed = {_squash(k): k for k in carrying}
    for key in doc:
        if not isinstance(key, str) or key in known or key.startswith(("_", "x-")):
            continue
        hit = closest(_squash(key), by_squashed)
        if hit is None:
            continue
        meant, at = by_squashed[hit], where_of(key)
        raise AssayError(f"{at}: {owner} has the key {key!r}, which promptfoo does not know (did you mean "
                         f"{meant!r}?): promptfoo ignores it and runs without what it holds; rename it {meant!r} "
                         f"and import again", 2, file=at.file, line=at.line, key=key)
