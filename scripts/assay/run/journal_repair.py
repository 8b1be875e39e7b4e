"""--resume's repair of a run's case journal (cases.jsonl)."""

from __future__ import annotations

from ..core import casestore, writer
from ..core.casestore import CaseStore


def keep_only(store: CaseStore, keep: set[str] | None) -> None:
    """--resume's repair of a journal: rewrite it with the first committed line of each id in
    `keep` (None: keep every committed line and only cut a torn tail)."""
    path = store.run_dir / casestore.JOURNAL
    if keep is not None:
        lines = []
        for off, line in casestore.iter_lines(path):
            cid = casestore.head_of(line)[0]
            if cid in keep and store.offset_of(cid) == off:
                lines.append(line)
        writer.write_bytes(path, b"".join(lines))
    elif store.torn:
        writer.truncate(path, store.size)
