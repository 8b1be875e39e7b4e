"""The run side of a `make_plan.py --changed-since` plan (assay.suite.changed_since builds its
`replay` block): which cases a --replay run sends live."""

from __future__ import annotations

from typing import Any, Mapping

from ..core.errors import AssayError


def live_cases(plan: Mapping[str, Any], replaying: bool) -> set[str] | None:
    """The case ids a --replay run sends live (None: replay every case). A plan made with
    --changed-since must be run with --replay: otherwise it is refused, never half-replayed silently."""
    block = plan.get("replay")
    if block is None:
        return None
    if not replaying:
        raise AssayError(f"this plan was made with make_plan.py --changed-since {block.get('changed_since')}: run it "
                         f"with --replay {block.get('source')} (the changed cases go live, the rest are replayed), or "
                         "make a plan without --changed-since for an all-live run", 2, key="--replay")
    return set(block.get("live") or [])
