"""Run history over the runs published to a store (`run_history.py --store`): each run's few files
mirrored into a temporary reports/ and read as a local one, without --verify (the store holds only
runs that passed it when they were published)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .flaky import REPEATS_FILE
from .runs import history

# what history reads of a published run (load_run without --verify): its verdicts, and at k > 1 the
# repeats the flaky rule reads (a read without them named no case whose repeats disagreed, and called
# a break fixed a run later flaky); a file a run does not have (k = 1) is not asked for
STORE_FILES = ("results.json", "manifest.yaml", "verdicts_for_stats.jsonl", "verdicts.jsonl", REPEATS_FILE)


def history_from_store(store: Any, state_dir: Path, *, decide: Callable[[Path], dict] | None = None) -> dict:
    """`history` over the runs published to a store (a StoreURL): each run's STORE_FILES only."""
    import shutil
    import tempfile

    from ..store.runs import StoreRuns
    tmp = Path(tempfile.mkdtemp(prefix="assay-history-"))
    try:
        (tmp / "reports").mkdir()
        StoreRuns(store).mirror(tmp / "reports", STORE_FILES)
        doc = history(tmp, verify=False, decide=decide)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    doc["state_dir"], doc["store"] = str(state_dir), str(store)
    doc["method"]["verified"] = "at publish (the store holds only runs that passed --verify)"
    return doc
