"""The holdout looks a store holds: `<prefix>/holdout-looks/<run-id>.json`, one per holdout run
published under that prefix (docs/runner-contract.md section 19a, "Holdout looks in the store").

On a cluster each pod's state dir is its own and thrown away, the merge Job's too: a ledger line
appended there outlives no pod. So a holdout run that publishes records its look here before any
of its results can be (`run_cases.py --publish`: before the pre-flight; `publish_run.py`: before
the first file), and whoever reads holdout results from the store (`merge_runs.py` from the
store, a holdout run with --publish) folds the looks recorded here into its ledger first
(`assay.run.holdout_ledger.fold_store_looks`). A look is one run id (a shard's record and its
merge's are one). A record the store holds but cannot give back as JSON still counts (its run id
is its key's name).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from .client import Store
from .url import StoreURL

LOOKS = "holdout-looks"
SUFFIX = ".json"


def key_of(base: StoreURL, run_id: str) -> str:
    return base.key(LOOKS, f"{run_id}{SUFFIX}")


def record(base: StoreURL, row: Mapping[str, Any], store: Store | None = None) -> str:
    """Put this run's look under `base` (the first record of a run id stands); its URL."""
    store = store or Store(base)
    key = key_of(base, str(row["run_id"]))
    if store.get_bytes(key) is None:
        store.put_bytes((json.dumps(dict(row), sort_keys=True) + "\n").encode("utf-8"), key)
    return f"s3://{base.bucket}/{key}"


def read(base: StoreURL, store: Store | None = None) -> list[dict[str, Any]]:
    """Every look recorded under `base`, in run-id order: {run_id, date, mode, reason,
    dataset_version, recorded_in}."""
    store = store or Store(base)
    objects, _ = store.listing(base.key(LOOKS))
    rows = []
    for key in sorted(objects):
        name = key.rsplit("/", 1)[-1]
        if not name.endswith(SUFFIX) or name == SUFFIX:
            continue
        run_id = name[:-len(SUFFIX)]
        data = store.get_bytes(key)
        try:
            doc = json.loads(data.decode("utf-8")) if data is not None else None
        except (UnicodeDecodeError, ValueError):
            doc = None
        doc = doc if isinstance(doc, dict) else {"reason": "a look recorded in the store (its record unreadable)"}
        rows.append({"run_id": run_id, "date": doc.get("date"), "mode": doc.get("mode"), "reason": doc.get("reason"),
                     "dataset_version": doc.get("dataset_version"), "recorded_in": f"s3://{base.bucket}/{key}"})
    return rows


def row_of_manifest(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """The look a published run dir stands for, from its manifest: None unless it holds holdout
    results (a holdout mode, or any case of the holdout set)."""
    cases = manifest.get("cases") if isinstance(manifest.get("cases"), list) else []
    if manifest.get("mode") != "holdout" and not any(isinstance(c, dict) and c.get("set") == "holdout"
                                                     for c in cases):
        return None
    extra = manifest.get("manifest_extra") if isinstance(manifest.get("manifest_extra"), dict) else {}
    return {"run_id": manifest.get("run_id"), "date": manifest.get("started_at"), "mode": manifest.get("mode"),
            "reason": extra.get("holdout_reason") or "publish_run.py holdout run",
            "dataset_version": manifest.get("dataset_version")}
