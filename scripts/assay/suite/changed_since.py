"""`make_plan.py --changed-since RUN`: which cases of a plan run live (new, or their case_sha256
differs from RUN's manifest) and which are replayed from RUN's recording. The plan keeps every
case; its `replay` block names the live ones (docs/runner-contract.md §22). The run side of the
block is `assay.replay.changed.live_cases`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..core.errors import AssayError
from ..core.jsonio import read_json


def changed_since(plan: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """The plan's `replay` block: {changed_since, source, live, replayed}. Holdout cases always run
    live (they are never recorded)."""
    from .version import suite_version
    try:
        manifest = read_json(Path(run_dir) / "manifest.yaml")
    except (OSError, ValueError) as exc:
        raise AssayError(f"--changed-since {run_dir}: no readable manifest.yaml there ({exc}); pass a run dir "
                         "(reports/<run-id>) recorded with run_cases.py --record", 2, key="--changed-since") from None
    rec = manifest.get("replay") if isinstance(manifest, dict) else None
    if not isinstance(rec, dict) or rec.get("app") != "record":
        raise AssayError(f"--changed-since {run_dir}: run {manifest.get('run_id')} was not recorded, so nothing of it "
                         "can be replayed; record one with run_cases.py --record", 2, key="--changed-since")
    from ..core.runapp import app_name
    recorded, app = app_name(manifest), app_name(plan)
    if app and recorded and recorded != app:   # the runner refuses it too: say so at plan time
        raise AssayError(f"--changed-since {run_dir}: run {manifest.get('run_id')} recorded app {recorded!r}, and this "
                         f"plan is of app {app!r} (adapter.yaml app.name): a recording answers only for the app it "
                         "recorded; pass a recorded run of this app, or plan without --changed-since (all live)", 2,
                         key="--changed-since")
    before = {row.get("id"): row.get("case_sha256") for row in manifest.get("cases") or [] if isinstance(row, dict)}
    now = suite_version(plan)["cases"]
    live = sorted(cid for cid, sha in now.items()
                  if before.get(cid) != sha or _holdout(plan, cid))
    return {"changed_since": manifest.get("run_id"), "source": str(run_dir), "live": live,
            "replayed": len(now) - len(live)}


def _holdout(plan: Mapping[str, Any], cid: str) -> bool:
    from . import holdout
    return any(c["id"] == cid and holdout.is_holdout(c) for c in plan["cases"])

