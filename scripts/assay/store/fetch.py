"""Reading runs back from the store: one run's files (all, or only the ones a reader needs),
the run ids under a prefix, and a sharded run's shards for the merge.

A prefix is a run only once its `manifest.yaml` is there (publish writes it last); a file
fetched is checked against the size the listing gave, so a truncated download is refused.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.errors import AssayError
from ..core.ids import parse_run_id
from . import url as store_url
from .client import Store, parallel
from .url import MANIFEST, SHARD_RE, StoreURL


def fetch_run(store: Store, loc: StoreURL, dest: Path, only: Iterable[str] | None = None,
              objects: Mapping[str, int] | None = None) -> Path:
    """Download the run at `loc` into `dest` (replaced): every file of it, or the names in `only`
    that exist. Refused (exit 6) when the prefix has no manifest.yaml (a publish that did not finish)."""
    if objects is None:
        objects, _ = store.listing(loc.prefix)
    mine = own_files(loc, objects)
    if MANIFEST not in mine:
        raise AssayError(f"{loc}: no {MANIFEST} there: a publish that did not finish (or no run at all); publish "
                         "it again (publish_run.py, or retry the shard's index)", 6, store=str(loc))
    wanted = sorted(mine) if only is None else sorted(set(only) & set(mine) | {MANIFEST})
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)

    def get(rel: str) -> None:
        path = dest / rel
        if ".." in Path(rel).parts or rel.startswith("/"):
            raise AssayError(f"{loc}{rel}: a key that leaves its run's prefix; refused", 2)
        path.parent.mkdir(parents=True, exist_ok=True)
        store.get_file(loc.key(rel), path)
        if path.stat().st_size != mine[rel]:
            raise AssayError(f"{loc}{rel}: downloaded {path.stat().st_size} bytes of {mine[rel]}; retry", 5)

    parallel(wanted, get)
    return dest


def own_files(loc: StoreURL, objects: Mapping[str, int]) -> dict[str, int]:
    """{path inside the run: size} of the keys under `loc` that are the run's own (not its shards', nor the
    record its publish left beside it: `published.MARKER`, never a file of a run dir)."""
    from .published import MARKER
    mine = {k[len(loc.prefix):].lstrip("/"): size for k, size in objects.items()}
    return {rel: size for rel, size in mine.items() if not _in_shard(rel) and rel != MARKER}


def _in_shard(rel: str) -> bool:
    return "/" in rel and SHARD_RE.fullmatch(rel.split("/", 1)[0]) is not None


def run_ids(store: Store, base: StoreURL) -> list[str]:
    """The run ids with a prefix under `base` (newest first by their UTC stamp)."""
    _, prefixes = store.listing(base.prefix, delimiter="/")
    found = []
    for p in prefixes:
        name = p.rstrip("/").rsplit("/", 1)[-1]
        parsed = parse_run_id(name)
        if parsed:
            found.append((parsed[1], name))
    return [name for _, name in sorted(found, reverse=True)]


def fetch_shards(target: str, plan: Mapping[str, Any], dest: Path) -> list[str]:
    """merge_runs.py s3://bucket/prefix/<run-id>/: every shard published there, downloaded into
    dest/<run_id>.shard-<I>. Refused before any download: a run id that is not the plan's (2), a
    shard of another count (2), and, all at once, missing and unfinished shards (6)."""
    from ..plan.shards import shard_dir_name
    loc = store_url.parse(target, "SHARD_DIR")
    run_id, count = plan["run_id"], plan["shards"]["count"]
    if loc.prefix.rsplit("/", 1)[-1] != run_id:
        raise AssayError(f"{loc}: not this plan's run ({run_id}); give s3://<bucket>/<prefix>/{run_id}/", 2,
                         key="SHARD_DIR")
    store = Store(loc)
    objects, _ = store.listing(loc.prefix)
    shards: dict[int, dict[str, int]] = {}
    foreign = set()
    for key, size in objects.items():
        rel = key[len(loc.prefix):].lstrip("/")
        first = rel.split("/", 1)[0]
        m = SHARD_RE.fullmatch(first)
        if m is None or "/" not in rel:
            continue   # the merged run's own files beside its shards
        if int(m.group(2)) != count or not 1 <= int(m.group(1)) <= count:
            foreign.add(first)
            continue
        shards.setdefault(int(m.group(1)), {})[key] = size
    if foreign:
        raise AssayError(f"merge refused: {', '.join(sorted(foreign))} under {loc} are not shards of this plan "
                         f"(it has {count}): a shard from another plan; remove them or re-run with that plan", 2,
                         foreign_shards=sorted(foreign))
    missing = [i for i in range(1, count + 1) if i not in shards]
    unfinished = [i for i in sorted(shards) if loc.key(store_url.shard_part(i, count), MANIFEST) not in shards[i]]
    if missing or unfinished:
        parts = []
        if missing:
            parts.append(f"missing shard(s) {', '.join(map(str, missing))} (nothing published under {loc}"
                         f"shard-<I>-of-{count}/: a missing shard is a failure, not an absence); run "
                         + ", ".join(f"shard {i} (the Job's index {i - 1}: JOB_COMPLETION_INDEX={i - 1})" for i in missing)
                         + " again (its pod's log says why it stopped; by hand: run_cases.py --plan PLAN --shard I "
                         "--publish <prefix>), then merge again"
                         + ("; nothing at all is under that prefix: is it the one the shards published to "
                            "(run_cases.py --publish, the Job's ASSAY_SHARDS)?" if not objects else "")
                         + _missing_why(loc, objects, shards, missing, count))
        if unfinished:
            parts.append(f"unfinished shard(s) {', '.join(map(str, unfinished))} (no {MANIFEST}: the publish did "
                         "not finish; retry the index, or publish_run.py its run dir)")
        raise AssayError("merge refused: " + "; ".join(parts), 6, run_id=run_id, missing_shards=missing,
                         unfinished_shards=unfinished)
    out = []
    for i in sorted(shards):
        part = loc.child(store_url.shard_part(i, count))
        out.append(str(fetch_run(store, part, dest / shard_dir_name(run_id, i), objects=shards[i])))
    return out


def _missing_why(loc: StoreURL, objects: Mapping[str, int], shards: Mapping[int, Any], missing: list[int],
                 count: int) -> str:
    """What missing shards say about the Job: a whole (unsharded) run of the plan published at the
    run's own prefix (its pods ran without --shard), or only the plan's last shards missing (a Job
    whose completions is fewer than the plan's shards never starts those indexes)."""
    if MANIFEST in own_files(loc, objects):
        return (f"; a whole, unsharded run of this plan is published at {loc} itself (its {MANIFEST}, no "
                "shard-<I>-of-<N>/): it ran without --shard, so it is no shard; add --shard auto to the Job's args")
    ran = max(shards, default=0)
    if ran and missing == list(range(ran + 1, count + 1)):
        return (f"; only the plan's last shard(s) are missing: if no pod ran index(es) {ran}..{count - 1} at all, "
                f"the Job's completions ({ran}?) is fewer than the plan's {count} shards: set completions to "
                f"{count} (= make_plan.py --shards)")
    return ""
