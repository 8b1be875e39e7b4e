"""The runs a store holds, read for the readers beside the run (`--baseline auto`,
`compare_runs.py auto`, `run_history.py`, `view.py` with `--store` or $ASSAY_STORE).

A reader asks for what it needs: the run ids under the prefix (one listing), a run's
`results.json` (one small object), the few files history reads, and only the run it finally
uses whole. A run id whose prefix has no `manifest.yaml` (a publish that did not finish, or
only shards never merged) is not a run.
"""

from __future__ import annotations

import json
from pathlib import Path

from .client import Store
from .fetch import fetch_run, run_ids
from .url import MANIFEST, StoreURL

# a reader's words for a prefix that holds no run id at all (a typo'd bucket path, or the wrong variable)
NO_RUN = "no run at all is published under that prefix: is it the one publish_run.py writes to?"


def nothing_published(base: StoreURL) -> "AssayError":
    from ..core.errors import AssayError
    return AssayError(f"{base}: {NO_RUN}", 2, store=str(base))


class StoreRuns:
    def __init__(self, base: StoreURL) -> None:
        self.base = base
        self.store = Store(base)

    def ids(self) -> list[str]:
        """Run ids under the prefix, newest first."""
        return run_ids(self.store, self.base)

    def root_files(self, run_id: str) -> dict[str, int]:
        """{file name: size} at the run's own prefix (its shards' not included)."""
        loc = self.base.child(run_id)
        objects, _ = self.store.listing(loc.prefix, delimiter="/")
        return {k[len(loc.prefix):].lstrip("/"): size for k, size in objects.items()}

    def results(self, run_id: str) -> dict | None:
        """The run's results.json, or None when it is not a finished publish."""
        names = self.root_files(run_id)
        if MANIFEST not in names or "results.json" not in names:
            return None
        data = self.store.get_bytes(self.base.key(run_id, "results.json"))
        try:
            doc = json.loads(data.decode("utf-8")) if data is not None else None
        except ValueError:
            return None
        return doc if isinstance(doc, dict) else None

    def manifest(self, run_id: str) -> dict | None:
        """The run's manifest.yaml (JSON), or None when it is not there or not readable: asked only of a
        run written before runs recorded their app in results.json (its app is in the manifest)."""
        data = self.store.get_bytes(self.base.key(run_id, MANIFEST))
        try:
            doc = json.loads(data.decode("utf-8")) if data is not None else None
        except ValueError:
            return None
        return doc if isinstance(doc, dict) else None

    def differs(self, run_id: str, local: Path) -> list[str]:
        """How this machine's `local` copy of the run differs from the store's: each file the store
        holds that is missing there or of another size (the run's own files, not its shards')."""
        from .fetch import own_files
        loc = self.base.child(run_id)
        objects, _ = self.store.listing(loc.prefix)
        out = []
        for rel, size in sorted(own_files(loc, objects).items()):
            path = local / rel
            if not path.is_file():
                out.append(f"{rel} missing")
            elif path.stat().st_size != size:
                out.append(f"{rel} {path.stat().st_size} bytes, the store's {size}")
        return out

    def fetch(self, run_id: str, dest: Path, only=None) -> Path:
        """The run (or the files in `only`) downloaded into dest (replaced)."""
        return fetch_run(self.store, self.base.child(run_id), dest, only=only)

    def mirror(self, reports: Path, only: tuple[str, ...]) -> list[str]:
        """Every run's `only` files into reports/<run_id>/ (a prefix without a manifest gets an
        empty dir, which a reader names as not a finished run); the run ids mirrored. The reader
        names the files it reads (run_history: assay.history.store.STORE_FILES)."""
        names = self.ids()
        if not names:
            raise nothing_published(self.base)
        for run_id in names:
            files = self.root_files(run_id)
            if MANIFEST in files:
                self.fetch(run_id, reports / run_id, only=only)
            else:
                (reports / run_id).mkdir(parents=True, exist_ok=True)
        return names


def mirror_whole(base: StoreURL, reports: Path, wanted: list[str] | None, last: int) -> list[str]:
    """`view.py --store`: the runs named in `wanted` (else the `last` newest finished ones)
    downloaded whole into reports/ (a viewer shows only runs it can re-check whole)."""
    from ..core.errors import AssayError
    runs = StoreRuns(base)
    ids = runs.ids()
    if wanted:
        unknown = [w for w in wanted if w not in ids]
        if unknown:
            raise AssayError(f"--run {', '.join(unknown)}: no such run under {base}; its runs are: "
                             f"{', '.join(ids[:10]) or 'none'}", 2, key="--run")
        chosen = list(wanted)
    else:
        chosen = [r for r in ids if MANIFEST in runs.root_files(r)][:last]
        if not ids:
            raise nothing_published(base)
        if not chosen:
            raise AssayError(f"{base}: none of its run ids is a finished run (no {MANIFEST} at <prefix>/<run-id>/): "
                             f"{', '.join(ids[:10])}; a publish that did not finish, or a sharded run's shards (a "
                             "run once merged and published: merge_runs.py, then publish_run.py)", 2, store=str(base))
    for run_id in chosen:
        runs.fetch(run_id, reports / run_id)
    return chosen
