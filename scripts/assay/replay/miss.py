"""A request --replay cannot answer from the cache."""

from __future__ import annotations

REPLAY_MISS = "replay miss"
# rescore's words for a conversation it cannot replay (assay.run.rescore): like a miss, not measured
RESCORE_NOT_REPLAYED = "rescore does not replay conversations in this build"


class ReplayMiss(Exception):
    """A request --replay cannot answer from the cache; `reason` starts with `replay miss`."""

    def __init__(self, reason: str, not_scored: str = f"{REPLAY_MISS}: not scored") -> None:
        super().__init__(reason)
        self.reason = reason
        self.not_scored = not_scored   # the reason every layer of the case gives
