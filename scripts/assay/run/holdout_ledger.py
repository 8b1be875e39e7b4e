"""The holdout ledger: where it is (confined to the state dir) and the one look a run appends."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..core import writer
from ..core.errors import AssayError
from ..core.ids import utc_now_iso
from ..core.jsonio import loads
from ..core.runplan import RunPlan
from .run_paths import inside, state_dir_of


def ledger_path(plan: RunPlan) -> Path | None:
    """The holdout ledger for a holdout-touching plan, confined to the state dir."""
    if plan.selecting_split != "holdout" and plan.mode != "holdout":
        return None
    state = state_dir_of(plan)
    raw = Path(plan.paths["holdout_ledger"])
    path = raw if raw.is_absolute() else state / raw
    real = Path(os.path.realpath(path))
    if not inside(real, state):
        raise AssayError(f"plan paths.holdout_ledger {str(raw)!r} resolves outside the state dir "
                         f"{str(state)!r}; use datasets/holdout-looks.jsonl", 2, key="paths.holdout_ledger")
    writer.refuse_symlinks_between(path, state, "the holdout ledger path")
    return real


def look_row(plan: RunPlan) -> dict[str, Any]:
    """The ledger line of this run's one look."""
    reason = plan.manifest_extra.get("holdout_reason") or "run_cases.py holdout run"
    return {"run_id": plan.run_id, "date": utc_now_iso(), "mode": plan.mode, "reason": reason}


def append_ledger(path: Path, plan: RunPlan, stderr=None, note: str | None = None) -> int:
    """Append one look for this run id (never a second); return the running look count.

    The line is on disk (fsync'd, and the directory entry of a new ledger too) when this returns:
    the caller makes no holdout result readable before it. The read and the append are under an
    exclusive lock on the ledger, so two shards of one plan starting together write one line. `note`
    (`unpublished_note`) is said on stderr after the count."""
    stderr = stderr or sys.stderr
    rows, _ = _append_missing(path, [look_row(plan)])
    looks = len(rows)
    stderr.write(f"assay: holdout look {looks} recorded in {path.name} (run {plan.run_id}); "
                 f"{looks} look(s) so far{' - a reseal is due after 5' if looks >= 5 else ''}\n")
    if note:
        stderr.write(f"assay: note: {note}\n")
    return looks


def in_ci(environ: Any) -> bool:
    """The run is a CI job (`CI=true`, as GitHub Actions, GitLab CI and most CI services set it): its
    checkout, and the ledger in it, are thrown away when the job ends."""
    return str(environ.get("CI") or "").strip().lower() in ("true", "1", "yes")


def unpublished_note(path: Path, state: Path, run_id: str) -> str:
    """Said (stderr and the runner's summary `notes`) by a holdout run under CI without --publish
    (runner-contract.md section 4, step 9): the look went only into this checkout's ledger, which the job
    throws away unless the file is committed. Never an error: the look is recorded."""
    try:
        name = Path(path).relative_to(Path(os.path.realpath(state))).as_posix()
    except ValueError:
        name = str(path)
    return (f"holdout run {run_id} (CI=true, no --publish): its look is recorded only in this checkout's ledger, "
            f"{path}: commit {name} from this job (or run holdout runs with --publish s3://BUCKET/PREFIX, where "
            f"the store records each look), or the look is counted nowhere once the job's checkout is thrown "
            f"away and the budget of 5 looks never runs out")


def require_look_on_ledger(path: Path, plan: RunPlan, shard_dirs: list[str]) -> None:
    """The merge of a holdout plan's shards (runner-contract.md section 19): their look must already be
    on this state dir's ledger, put there by a shard that ran against it or folded in from the store
    (a merge from the store, or shards run with --publish). Otherwise the shards ran on other machines
    and appended the look to their own ledgers (a CI matrix passing run dirs as artifacts: those
    checkouts are thrown away, and this merge job's with them), so the look would be counted nowhere
    and the budget would never run out: exit 2 before anything is written."""
    try:
        rows = _rows(writer.read_bytes(path).decode("utf-8")) if path.exists() else []
    except (OSError, UnicodeDecodeError) as exc:
        raise AssayError(f"the holdout ledger {path} cannot be read ({exc}); the merge cannot show this holdout "
                         "run's look is counted", 2, key="paths.holdout_ledger", file=str(path)) from None
    if any(r.get("run_id") == plan.run_id for r in rows if isinstance(r, dict)):
        return
    raise AssayError(
        f"holdout run {plan.run_id}: its look is not on the ledger {path} ({len(rows)} look(s) there): its shards "
        f"ran on other machines and each recorded the look in its own state dir's ledger, which this merge "
        f"cannot see (on a CI matrix those checkouts are thrown away), so the look would be counted nowhere and "
        f"the budget of 5 looks would never run out. Run a sharded holdout plan's shards with --publish "
        f"s3://BUCKET/PREFIX (the store records every look before the first case) and merge from the store "
        f"(merge_runs.py --plan PLAN --out OUT s3://BUCKET/PREFIX/{plan.run_id}/), or run the shards on this "
        f"machine against this state dir; these shards' look is spent: count it by adding their ledger line "
        f"(in any shard machine's datasets/holdout-looks.jsonl) to {path} and committing it. Nothing was written",
        2, key="SHARD_DIR", ledger=str(path), shard_dirs=[str(d) for d in shard_dirs])


def fold_store_looks(path: Path, plan: RunPlan, base: Any, *, record: bool, stderr=None) -> int:
    """A holdout plan meets a store (`base`, a StoreURL): its look is recorded there first when
    `record` (a run that will publish, before its pre-flight), then every look the store holds of
    the plan's dataset_version is appended to the ledger at `path` (one line per run id, as ever).
    On a cluster the pods' ledgers are thrown away: the store's records are what counts a look
    (section 19a); the merge from the store folds them before anything of the merged run exists.
    Returns how many lines the fold added."""
    from ..core.runplan import dataset_version_of
    from ..store import looks
    from ..store.client import Store
    store = Store(base)
    version = dataset_version_of(plan.manifest_extra)
    if record:
        looks.record(base, dict(look_row(plan), dataset_version=version), store)
    return fold_looks(path, base, version, store=store, stderr=stderr)


def fold_looks(path: Path, base: Any, version: int, *, store: Any = None, stderr=None) -> int:
    """Append to the ledger at `path` every look the store `base` holds of dataset_version `version`
    (a record without one counts for any), one line per run id; how many lines it added. The one
    fold: a holdout run that publishes, the merge from the store, and `holdout.py looks --store`."""
    from ..store import looks
    stderr = stderr or sys.stderr
    found = [r for r in looks.read(base, store) if r.get("dataset_version") in (None, version)]
    rows, added = _append_missing(path, found)
    if added:
        stderr.write(f"assay: {added} holdout look(s) recorded in {base}{looks.LOOKS}/ added to {path.name}; "
                     f"{len(rows)} look(s) so far\n")
    return added


def _append_missing(path: Path, new_rows: list[dict[str, Any]]) -> tuple[list, int]:
    """Append each row whose run id the ledger lacks, under an exclusive lock, fsync'd; (every row
    now in the ledger, how many were added)."""
    import fcntl
    path.parent.mkdir(parents=True, exist_ok=True)
    created = not (path.exists() or path.is_symlink())
    fd = writer.open_append(path)
    added = 0
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        rows = _rows(writer.read_bytes(path).decode("utf-8"))
        have = {r.get("run_id") for r in rows if isinstance(r, dict)}
        fresh = [r for r in new_rows if r.get("run_id") not in have]
        if fresh:
            data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in fresh).encode("utf-8")
            writer.write_all(fd, data, path)
            os.fsync(fd)
            rows.extend(fresh)
            added = len(fresh)
    finally:
        os.close(fd)   # releases the lock
    if created:
        _fsync_dir(path.parent)
    return rows, added


def _rows(text: str) -> list[Any]:
    """The ledger's JSON lines (a line that is not JSON is skipped, as the append does)."""
    rows = []
    for line in text.splitlines():
        try:
            rows.append(loads(line))
        except ValueError:
            continue
    return rows


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
