"""Run history over the runs published to a store (`run_history.py --store`).

A run publish_run.py published carries its record (`assay.store.published`: the run passed the
`--verify` check at publish, each file's size and SHA-256): when the record is there and the store's
files match it, only the run's few files are mirrored into a temporary reports/ and read as a
local run's, without the check (it was checked when published). A run without a matching record
(copied there by hand: `aws s3 sync` of reports/, a CI artifact upload, a run dir copied while it
ran or after an edit; or one published before publishes left the record) is downloaded whole and
checked here in full, as a local run is: one that fails is an excluded run whose reason names it
and the fix (publish it with publish_run.py), never a point of any trend nor an open gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .flaky import REPEATS_FILE
from .runs import history

# what history reads of a published run (load_run without --verify): its verdicts, and at k > 1 the
# repeats the flaky rule reads (a read without them named no case whose repeats disagreed, and called
# a break fixed a run later flaky); a file a run does not have (k = 1) is not asked for
STORE_FILES = ("results.json", "manifest.yaml", "verdicts_for_stats.jsonl", "verdicts.jsonl", REPEATS_FILE)


def mirror_checked(runs: Any, reports: Path) -> dict[str, str]:
    """Every run of the store (a StoreRuns) into reports/<run_id>/: STORE_FILES of a run whose publish
    record matches them, the whole run otherwise (checked in full by the caller); a prefix without a
    manifest gets an empty dir (named as not a finished run). {run id: why it was not taken as checked}."""
    from ..store.published import MARKER, mismatch
    from ..store.runs import nothing_published
    from ..store.url import MANIFEST
    names = runs.ids()
    if not names:
        raise nothing_published(runs.base)
    whole: dict[str, str] = {}
    for run_id in names:
        files, dest = runs.root_files(run_id), reports / run_id
        if MANIFEST not in files:
            dest.mkdir(parents=True, exist_ok=True)
            continue
        runs.fetch(run_id, dest, only=STORE_FILES)
        record = runs.store.get_bytes(runs.base.key(run_id, MARKER)) if MARKER in files else None
        why = mismatch(run_id, record, {n: s for n, s in files.items() if n != MARKER}, dest)
        if why is not None:
            whole[run_id] = why
            runs.fetch(run_id, dest)
    return whole


def history_from_store(store: Any, state_dir: Path, *, decide: Callable[[Path, bool], dict]) -> dict:
    """`history` over the runs published to a store (a StoreURL). `decide(run_dir, verify)` is the one
    decision (assay.verdict), asked with the check (`verify`) for a run that has no matching record."""
    import shutil
    import tempfile

    from ..store.published import FIX
    from ..store.runs import StoreRuns
    tmp = Path(tempfile.mkdtemp(prefix="assay-history-"))
    try:
        (tmp / "reports").mkdir()
        whole = mirror_checked(StoreRuns(store), tmp / "reports")
        doc = history(tmp, verify=False, decide=lambda run_dir: decide(run_dir, run_dir.name in whole))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for excluded in doc["excluded_runs"]:
        if excluded["run_id"] in whole:
            excluded["reason"] = (f"{excluded['reason']}; the store's copy is no run publish_run.py checked "
                                  f"({whole[excluded['run_id']]}); "
                                  f"{FIX}")
    # a run whose record matched was checked by run_cases.py --verify at publish, on these very bytes:
    # verified, not a hollow point marked "not verified" beside a method that says "at publish"
    for series in doc["series"]:
        for run in series["runs"]:
            if run["run_id"] not in whole:
                run["verified"], run["verified_at"] = True, "publish"
    doc["runs_verified"] = sum(1 for s in doc["series"] for r in s["runs"] if r.get("verified"))
    doc["state_dir"], doc["store"] = str(state_dir), str(store)
    doc["checked_here"] = [{"run_id": r, "why": why} for r, why in sorted(whole.items())]
    doc["method"]["verified"] = ("at publish (publish_run.py's record beside each run, matched to the files read)"
                                 + (f"; {len(whole)} run(s) without a matching record (put there by hand, or "
                                    "published before publishes left it) downloaded whole and checked here in full "
                                    "(checked_here)" if whole else ""))
    return doc
