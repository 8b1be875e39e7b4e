"""A request --replay cannot answer from the cache."""

from __future__ import annotations

REPLAY_MISS = "replay miss"


class ReplayMiss(Exception):
    """A request --replay cannot answer from the cache; `reason` starts with `replay miss`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
