"""A regular expression compiled on its first use, not when its module is imported.

Every command imports modules whose patterns only some of its paths use (the simulated user's
character check, a 5xx body's masking, a judge reply's date suffix): compiled at import, each
process pays for all of them. `lazy_pattern(...)` returns a function that compiles once and then
returns the same `re.Pattern`: write `_WORDS = lazy_pattern(r"...")`, use `_WORDS().search(text)`.
"""

from __future__ import annotations

import re
from typing import Callable

# An e-mail address (the report's and the miner's redaction: one definition). The lookbehind starts a match
# only where a run of address characters starts, so a long run with no `@` (a base64 blob in an answer)
# is read in linear time: without it, each position of the run was tried again, quadratic in its length.
EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")


def lazy_pattern(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A function returning `re.compile(pattern, flags)`, compiled on its first call."""
    compiled: list[re.Pattern[str]] = []

    def get() -> re.Pattern[str]:
        if not compiled:
            compiled.append(re.compile(pattern, flags))
        return compiled[0]
    return get
