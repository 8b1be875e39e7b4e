"""The record a publish leaves beside a run it checked (`.assay-published.json` at the run's prefix).

`publish_run.py` / `run_cases.py --publish` publish only a run the `--verify` check passes; the
record says so, for the files it uploaded: each file's size and SHA-256, the run id and assay's
version. It is uploaded after the run's files and before `manifest.yaml` (still last). A reader
that takes a stored run as "verified at publish" (`run_history.py --store`, which reads a few
files of each run, never cases.jsonl) takes only a run whose record is there and matches what
the store holds: the same root files at the same sizes, and the same bytes for each file it
read. A run put there by hand (`aws s3 sync` of reports/, a CI artifact upload, a run dir
copied while it ran or after an edit) has no record, or one its files no longer match: it is
not taken as checked.

The record is not one of the run's files: a download of the run (`--baseline auto`, `view.py`,
the merge) leaves it out (`fetch.own_files`), so a local copy never carries it into another
upload. A name starting with '.' is never a run file (`client.files_of` skips such names).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping

from ..core.jsonio import sha256_file

MARKER = ".assay-published.json"
FORMAT = 1
FIX = ("publish the run dir with publish_run.py RUN_DIR s3://BUCKET/PREFIX (or run_cases.py --publish), "
       "not aws s3 sync / cp or an artifact upload: it checks the run and records that it did")


def record(run_id: str, files: Iterable[tuple[Path, str]]) -> bytes:
    """The record's bytes for the run's (path, key inside the run) files, checked just before."""
    from ..core.version import VERSION
    doc = {"format": FORMAT, "run_id": run_id, "check": "passed run_cases.py --verify's check at publish",
           "assay_version": VERSION,
           "files": {rel: {"size": path.stat().st_size, "sha256": sha256_file(path)} for path, rel in files}}
    return (json.dumps(doc, sort_keys=True, indent=1) + "\n").encode("utf-8")


def mismatch(run_id: str, data: bytes | None, root: Mapping[str, int], local: Path) -> str | None:
    """None when the record `data` is this run's and matches it: `root` ({name: size} of the files at the
    run's own prefix, the record left out) and each file downloaded into `local`; else why not, in words."""
    if data is None:
        return f"no {MARKER} beside it, the record publish_run.py leaves"
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return f"{MARKER} is not JSON"
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict) or doc.get("run_id") != run_id or \
            not all(isinstance(v, dict) for v in files.values()):
        return f"{MARKER} is not the record of run {run_id}"
    recorded = {rel: v.get("size") for rel, v in files.items() if "/" not in rel}
    differ = sorted(n for n in set(recorded) | set(root) if recorded.get(n) != root.get(n))
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        rel = path.relative_to(local).as_posix()
        if (files.get(rel) or {}).get("sha256") != sha256_file(path) and rel not in differ:
            differ.append(rel)
    if differ:
        return (f"its files are not the ones published and checked ({', '.join(differ[:5])}"
                f"{' ...' if len(differ) > 5 else ''} added, removed or changed since it was published: copied over by hand?)")
    return None
