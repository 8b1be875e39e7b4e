"""A regular expression compiled on its first use, not when its module is imported.

Every command imports modules whose patterns only some of its paths use (the simulated user's
character check, a 5xx body's masking, a judge reply's date suffix): compiled at import, each
process pays for all of them. `lazy_pattern(...)` returns a function that compiles once and then
returns the same `re.Pattern`: write `_WORDS = lazy_pattern(r"...")`, use `_WORDS().search(text)`.
"""

from __future__ import annotations

import re
from typing import Callable


def lazy_pattern(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A function returning `re.compile(pattern, flags)`, compiled on its first call."""
    compiled: list[re.Pattern[str]] = []

    def get() -> re.Pattern[str]:
        if not compiled:
            compiled.append(re.compile(pattern, flags))
        return compiled[0]
    return get
