"""A JSON document with one long list written as a stream: the manifest's `cases` rows of a
100,000-case run are never held as dicts, nor as one encoded text (peak memory flat).

The bytes are exactly `writer.write_json(path, dict(doc, **{key: list(rows)}))`'s (the test
compares them): the document is encoded with a marker in the list's place, the rows are encoded
one by one at the list's nesting level and written between the two halves, every piece through
the writer's redaction (a row holding a secret is re-encoded from its redacted value, as `dumps`
does for a whole document)."""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Mapping

from . import writer

_MARK = "\u0000assay-rows\u0000"
_BATCH = 512   # rows per chunk handed to the writer (a chunk ends between two rows: a line boundary)


def write_json_with_rows(path: Any, doc: Mapping[str, Any], key: str, rows: Iterable[Any], *,
                         indent: int = 2) -> str:
    """Write `doc` with `doc[key]` = the rows (a top-level key); returns the sha256 of the bytes."""
    text = writer.dumps(dict(doc, **{key: _MARK}), indent=indent)
    mark = json.dumps(_MARK, ensure_ascii=False)
    if text.count(mark) != 1:   # the marker occurs in a value of the document itself: write it whole
        return writer.write_chunks(path, [writer.encode(writer.dumps(dict(doc, **{key: list(rows)}),
                                                                     indent=indent) + "\n")])
    head, _, tail = text.partition(mark)
    return writer.write_chunks(path, _chunks(head, tail + "\n", rows, indent))


def _chunks(head: str, tail: str, rows: Iterable[Any], indent: int) -> Iterator[bytes]:
    inner = "\n" + " " * (2 * indent)     # a top-level key's list items sit at nesting level 2
    parts: list[str] = [head]
    first = True
    for row in rows:
        parts.append(("[" if first else ",") + inner + writer.dumps(row, indent=indent).replace("\n", inner))
        first = False
        if len(parts) >= _BATCH:
            yield writer.encode("".join(parts))
            parts = []
    parts.append("[]" if first else "\n" + " " * indent + "]")
    parts.append(tail)
    yield writer.encode("".join(parts))
