"""merge_runs.py's entry: shard dirs on this machine, or one `s3://bucket/prefix/<run-id>/` whose
shards a Kubernetes Indexed Job (or a CI matrix) published there.

From the store, the shards are listed first (a shard of another count, a missing shard and a
shard whose publish did not finish are refused, named, before any download), downloaded into
a temporary directory as `<run_id>.shard-<I>`, and merged by `merge.merge_runs` with every
check it makes on local dirs (same plan, --verify, every case once); the download is removed
afterwards, whatever the outcome.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..core.errors import AssayError
from ..store.url import is_store_url
from .merge import merge_runs


def merge(plan_path: str, out_arg: str, sources: list[str], baseline_arg: str | None = None) -> tuple[int, dict]:
    remote = [s for s in sources if is_store_url(s)]
    if not remote:
        return merge_runs(plan_path, out_arg, sources, baseline_arg)
    if len(sources) != 1:
        raise AssayError("merge_runs.py takes either shard run dirs or one s3://bucket/prefix/<run-id>/ (the "
                         "shards published there), not both or two stores", 2, key="SHARD_DIR")
    from ..run.preflight import load_plan
    from ..store.fetch import fetch_shards
    plan = load_plan(plan_path)
    if not plan.get("shards"):   # merge_runs says it in full; nothing to fetch
        return merge_runs(plan_path, out_arg, sources, baseline_arg)
    tmp = Path(tempfile.mkdtemp(prefix="assay-merge-"))
    try:
        dirs = fetch_shards(remote[0], plan, tmp)
        code, result = merge_runs(plan_path, out_arg, dirs, baseline_arg)
        result["from_store"] = remote[0]
        return code, result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
