"""Which app a run (or a plan) is of: the one definition every reader asks (compare's "different
apps" note, the history's series, `--baseline auto`, `--replay`/`--changed-since` of a recorded run)."""

from __future__ import annotations

from typing import Any, Mapping


def app_name(doc: Any) -> str | None:
    """The app of a run's manifest.yaml or results.json head, or of a plan: its top-level `app` when
    the key is there (what the runner records since runs name their app: adapter.yaml `app.name`, or
    null when unnamed); else, for a run written before that or a plan, `manifest_extra.app.name`
    (make_plan.py's record), else the plan's `adapter.app.name`. None when it names none."""
    if not isinstance(doc, Mapping):
        return None
    if "app" in doc and not isinstance(doc["app"], Mapping):
        app = doc["app"]
        return app if isinstance(app, str) and app else None
    for block in (doc.get("manifest_extra"), doc.get("adapter")):
        app = block.get("app") if isinstance(block, Mapping) else None
        if isinstance(app, Mapping) and isinstance(app.get("name"), str) and app["name"]:
            return app["name"]
    return None
