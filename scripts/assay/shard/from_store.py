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
from typing import Any

from ..core.errors import AssayError
from ..store.url import is_store_url
from .merge import merge_runs


def merge(plan_path: str, out_arg: str, sources: list[str], baseline_arg: str | None = None,
          attempt: str | None = None) -> tuple[int, dict]:
    remote = [s for s in sources if is_store_url(s)]
    if not remote:
        return merge_runs(plan_path, out_arg, sources, baseline_arg, attempt=attempt)
    from ..plan.shards import merge_attempt
    attempt = merge_attempt(attempt)   # a bad --attempt is said before anything is downloaded
    if len(sources) != 1:
        raise AssayError("merge_runs.py takes either shard run dirs or one s3://bucket/prefix/<run-id>/ (the "
                         "shards published there), not both or two stores", 2, key="SHARD_DIR")
    from ..run.preflight import load_plan
    from ..store.fetch import fetch_shards
    plan = load_plan(plan_path)
    if not plan.get("shards"):   # merge_runs says it in full; nothing to fetch
        return merge_runs(plan_path, out_arg, sources, baseline_arg, attempt=attempt)
    tmp = Path(tempfile.mkdtemp(prefix="assay-merge-"))
    dirs: list[str] = []
    try:
        _fold_looks(plan, remote[0])
        dirs = fetch_shards(remote[0], plan, tmp)
        code, result = merge_runs(plan_path, out_arg, dirs, baseline_arg, attempt=attempt)
        result = _in_store_words(result, dirs, remote[0], plan["shards"]["count"])
        result["from_store"] = remote[0]
        return code, result
    except AssayError as exc:   # named where the user can look: the shard's prefix, not a removed download
        raise AssayError(_in_store_words(exc.message, dirs, remote[0], plan["shards"]["count"]), exc.code,
                         **_in_store_words(exc.fields, dirs, remote[0], plan["shards"]["count"])) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fold_looks(plan, target: str) -> None:
    """A holdout plan's looks recorded in the store (its shards', any other holdout run's published
    beside them) on this machine's ledger before any shard is downloaded: the pods' ledgers were
    thrown away, and the gate counts this one (runner-contract.md section 19a)."""
    from ..plan.validate import run_plan
    from ..run.holdout_ledger import fold_store_looks, ledger_path
    from ..store.url import StoreURL, parse
    rp = run_plan(plan)
    ledger = ledger_path(rp)
    if ledger is None:
        return
    loc = parse(target, "SHARD_DIR")
    base = StoreURL(loc.bucket, loc.prefix.rpartition("/")[0])   # <prefix>/<run_id>/ -> <prefix>
    fold_store_looks(ledger, rp, base, record=False)


def _in_store_words(value: Any, dirs: list[str], url: str, count: int) -> Any:
    """`value` (a message, a result) with each downloaded shard dir named by its prefix in the store
    (`<run_id>.shard-2` under a temporary dir -> `s3://bucket/prefix/<run_id>/shard-2-of-3/`)."""
    if isinstance(value, dict):
        return {k: _in_store_words(v, dirs, url, count) for k, v in value.items()}
    if isinstance(value, list):
        return [_in_store_words(v, dirs, url, count) for v in value]
    if not isinstance(value, str):
        return value
    for d in dirs:
        index = str(d).rsplit(".shard-", 1)[-1]
        where = f"{url.rstrip('/')}/shard-{index}-of-{count}/"
        value = value.replace(str(d) + "/", where).replace(str(d), where.rstrip("/"))
    return value
