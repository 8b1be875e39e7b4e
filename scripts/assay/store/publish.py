"""Publishing a finished, verified run dir to the store (`run_cases.py --publish`, `publish_run.py`).

Order, so a reader never sees half a run: the prefix's old `manifest.yaml` is deleted first
(a retried publish makes its shard unfinished before it changes a byte), every other file is
uploaded, keys left from an earlier publish of the same prefix are deleted (never another
shard's: a shard's prefix holds only itself, and an unsharded run's leaves `shard-*/` alone),
the record that the run passed the check (`published.MARKER`: each file's size and SHA-256, read by
`run_history.py --store`) is put, and `manifest.yaml` goes last. A publish killed anywhere leaves a prefix without a manifest,
which every reader refuses as unfinished; publishing again completes it.

`run_cases.py --publish` also deletes that manifest when the run starts (`claim`, before the
pre-flight): an attempt that then fails or is killed before it publishes leaves its prefix
unfinished, never an earlier attempt's shard of the same plan for the merge to take as this one's.
It is also the store's first call, so a wrong bucket or missing credentials stop the run before
its first case.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import AssayError
from ..core.jsonio import read_json
from . import url as store_url
from .client import Store, files_of, parallel
from .looks import record, row_of_manifest
from .published import MARKER, record as checked_record

# The exit codes of a run that finished (complete, or stopped with every finished case intact):
# such a run is published, so the merge names its abort instead of a missing shard.
FINISHED_CODES = (0, 4, 5, 7)


def check_publishable(run_dir: Path) -> tuple[dict, str]:
    """(manifest, status) of a run dir the --verify check passes and whose run finished; else
    AssayError: 2 for something that is not a run dir, 6 for an unfinished or incomplete one."""
    from ..rundir.completeness import ABORTED, RunDirError, check_run_dir
    try:
        problems, _, manifest = check_run_dir(run_dir)
    except RunDirError as exc:
        raise AssayError(f"publish: {exc}; pass a run directory (<state>/reports/<run-id>)", 2) from None
    try:
        status = ((read_json(run_dir / "results.json") or {}).get("summary") or {}).get("status")
    except (OSError, ValueError, AttributeError, AssayError):
        status = None
    if problems or status not in ("ok", *ABORTED):
        why = f"{len(problems)} --verify problem(s), first: {problems[0]}" if problems else f"status {status!r}"
        fix = ("its files fail the check although the run finished (edited or removed since?): restore them, or "
               "run the plan again" if status in ("ok", *ABORTED) else "finish it (run_cases.py --resume)")
        raise AssayError(f"publish refused: {run_dir.name} is not a finished, complete run ({why}); {fix} and "
                         "publish again: a store never holds half a run", 6, run_dir=str(run_dir), status=status)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("run_id"), str):
        raise AssayError(f"publish: {run_dir}/manifest.yaml names no run_id; pass a run directory", 2)
    return manifest, status


def claim(target: str, run_id: str, shard: dict | None) -> str:
    """Make the prefix this run will publish to unfinished (its manifest.yaml deleted), before the
    run sends anything; the prefix's URL. AssayError 2 (bucket, credentials) or 5 as the client's."""
    base = store_url.parse(target, "--publish")
    loc = store_url.run_location(base, run_id, shard)
    Store(base).delete([loc.key(store_url.MANIFEST)])
    return str(loc)


def publish_run(run_dir: Path, target: str, arg: str = "--publish") -> dict:
    """Upload `run_dir` under `target` (s3://bucket/prefix); the result names where it went. `arg`: what
    the user gave `target` as (run_cases.py's --publish, publish_run.py's positional `store`)."""
    base = store_url.parse(target, arg)
    store = Store(base)   # the extra and the client first: a big run is not verified for nothing
    run_dir = Path(run_dir)
    manifest, status = check_publishable(run_dir)
    shard = manifest.get("shard") if isinstance(manifest.get("shard"), dict) else None
    loc = store_url.run_location(base, manifest["run_id"], shard)
    files = list(files_of(run_dir))
    checked = checked_record(manifest["run_id"], files)   # the files the check just passed, hashed before any upload
    look = row_of_manifest(manifest)
    if look is not None:   # a holdout run's look is in the store before any of its results (looks.py)
        record(base, look, store)
    body = [(p, k) for p, k in files if k != store_url.MANIFEST]
    last = [(p, k) for p, k in files if k == store_url.MANIFEST]
    store.delete([loc.key(store_url.MANIFEST)])
    parallel(body, lambda job: store.put_file(job[0], loc.key(job[1])))
    store.put_bytes(checked, loc.key(MARKER))
    wanted = {loc.key(k) for _, k in files} | {loc.key(MARKER)}
    existing, _ = store.listing(loc.prefix)
    stale = [k for k in existing if k not in wanted and not _other_shard(k, loc.prefix)]
    if stale:
        store.delete(stale)
    for path, key in last:
        store.put_file(path, loc.key(key))
    return {"published": str(loc), "run_id": manifest["run_id"], "status": status,
            "shard": shard, "files": len(files), "bytes": sum(p.stat().st_size for p, _ in files)}


def _other_shard(key: str, prefix: str) -> bool:
    """A key under `<prefix>/shard-<I>-of-<N>/`: another shard's, never this run's to delete."""
    first = key[len(prefix):].lstrip("/").split("/", 1)[0]
    return store_url.SHARD_RE.fullmatch(first) is not None and "/" in key[len(prefix):].lstrip("/")
