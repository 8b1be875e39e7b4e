"""A JSON document written with its long lists encoded item by item (compare.json at 100,000
pairs is never one string): the same bytes as `writer.write_json`, through the same file rules.
A big document's later items are encoded by a forked child meanwhile (`APART_ABOVE`)."""

from __future__ import annotations

import gc
import os
from typing import Any, Iterator

from .indent import indented
from .writer import _encoder, _replace_with, dumps, encode, has_secrets, refuse_symlink, write_json

APART_ABOVE = 20_000   # items: from this many on, the second half is encoded by a forked child meanwhile
PIECE = 1 << 20


def write_json_streamed(path: Any, value: dict, outer: str, *, indent: int = 2) -> None:
    """`write_json(path, value, indent=indent)`, the same bytes, without one string of it all: the
    lists in `value[outer]` (a dict of lists, e.g. compare.json's buckets) are encoded item by item
    and written as they come (a 100,000-pair compare.json is never one string). With a secret
    registered: `write_json` (its redaction). With APART_ABOVE items or more (`_Apart`), the second
    half of them is encoded by a forked child while this process encodes and writes the first."""
    if has_secrets() or not isinstance(value.get(outer), dict):
        write_json(path, value, indent=indent)
        return
    enc = _encoder(indent)
    tokens = {}
    shell_inner = {}
    for key, items in value[outer].items():
        if isinstance(items, list) and items:
            tokens[key] = f"assay-list-{os.getpid()}-{id(items)}-{len(tokens)}"
            shell_inner[key] = tokens[key]
        else:
            shell_inner[key] = items
    text = dumps(dict(value, **{outer: shell_inner}), indent=indent)
    by_token = {enc.encode(tok): key for key, tok in tokens.items()}
    pad = "\n" + " " * (indent * 3)    # a list's items sit three levels down: value -> outer -> key
    written = sorted((text.find(t), key) for t, key in by_token.items())   # the lists in the text's order
    apart = _Apart([value[outer][key] for at, key in written if at >= 0], _Texts(indent, pad, enc))

    def chunks() -> Iterator[bytes]:
        rest = text
        n = 0   # the lists written so far
        while by_token:
            at, found = min(((rest.find(t), t) for t in by_token), key=lambda x: x[0] if x[0] >= 0 else len(rest) + 1)
            if at < 0:
                break
            items = value[outer][by_token.pop(found)]
            yield encode(rest[:at] + "[")
            yield from apart.texts(n, items)
            n += 1
            yield encode(pad[:-indent] + "]")
            rest = rest[at + len(found):]
        yield encode(rest + "\n")
    path = os.fspath(path)
    refuse_symlink(path)
    try:
        _replace_with(path, chunks())
    finally:
        apart.close()


class _Texts:
    """The text of a list's items as they sit in the document: each the encoder's (core.indent's,
    sooner), a comma before all but the first, in chunks of ~512 items."""

    def __init__(self, indent: int, pad: str, enc: Any) -> None:
        self.indent, self.pad, self.enc = indent, pad, enc
        self.shared: dict = {}   # the text of each small part the items share (core.indent)

    def __call__(self, items: list, start: int, stop: int) -> Iterator[bytes]:
        buf: list[str] = []
        pad, shared = self.pad, self.shared
        for i in range(start, stop):
            one = indented(items[i], self.indent, shared)
            buf.append(("," if i else "") + pad + (one if one is not None else self.enc.encode(items[i]))
                       .replace("\n", pad))
            if len(buf) >= 512:
                yield encode("".join(buf))
                buf = []
        if buf:
            yield encode("".join(buf))


class _Apart:
    """The items from the middle on (of all the lists, in the order written), encoded by a forked
    child into an unnamed temporary file while this process encodes the first half; each list's
    part is copied from there when the writing reaches it. An item's text is a function of the item
    alone, so the bytes are the same; a child that fails in any way (killed, an exception, a short
    answer) leaves its items to this process, which encodes them as it always did (and raises what
    the encoder raises). Not below APART_ABOVE items, nor where a fork is unsafe (another thread)."""

    def __init__(self, lists: list[list], texts: _Texts) -> None:
        self.lists, self.make = lists, texts
        self.cut: tuple[int, int] | None = None    # (list, item): where the child's items begin
        self.sizes: list[int] | None = None        # the child's bytes of each list from the cut's
        self.child: Any = None
        self.fd = -1
        total = sum(len(items) for items in lists)
        from .forked import Child, fork_safe
        if total < APART_ABOVE or not fork_safe():
            return
        import tempfile
        half = total // 2
        for j, items in enumerate(lists):
            if half < len(items):
                self.cut = (j, half)
                break
            half -= len(items)
        self.fd, name = tempfile.mkstemp(prefix="assay-items-")
        os.unlink(name)
        gc.freeze()   # what is alive now stays out of the collector's writes while the child shares it
        self.child = Child(self._encode_later)

    def _encode_later(self) -> list[int]:
        """(the child) Each list's items from the cut on, written to the file; their sizes."""
        from .writer import write_all
        j0, i0 = self.cut
        sizes = []
        for j in range(j0, len(self.lists)):
            items, size = self.lists[j], 0
            for chunk in self.make(items, i0 if j == j0 else 0, len(items)):
                write_all(self.fd, chunk, "a temporary file")
                size += len(chunk)
            sizes.append(size)
        return sizes

    def texts(self, j: int, items: list) -> Iterator[bytes]:
        """List j's items: this process's part encoded here, the child's copied from its file."""
        if self.cut is None or j < self.cut[0]:
            yield from self.make(items, 0, len(items))
            return
        mine = self.cut[1] if j == self.cut[0] else 0
        yield from self.make(items, 0, mine)
        if self.sizes is None:
            answer = self.child.result()
            gc.unfreeze()
            ok = isinstance(answer, list) and len(answer) == len(self.lists) - self.cut[0] and \
                all(type(n) is int and n >= 0 for n in answer)
            self.sizes = answer if ok else []
        k = j - self.cut[0]
        if k >= len(self.sizes):   # no answer from the child: encoded here
            yield from self.make(items, mine, len(items))
            return
        at, end = sum(self.sizes[:k]), sum(self.sizes[:k + 1])
        while at < end:
            piece = os.pread(self.fd, min(PIECE, end - at), at)
            if not piece:
                raise OSError(f"the temporary file of the encoded items ended {end - at} byte(s) early")
            yield piece
            at += len(piece)

    def close(self) -> None:
        if self.child is not None and self.sizes is None:
            self.child.cancel()
            gc.unfreeze()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
