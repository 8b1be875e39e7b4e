"""A JSON document written with its long lists encoded item by item (compare.json at 100,000
pairs is never one string): the same bytes as `writer.write_json`, through the same file rules."""

from __future__ import annotations

import os
from typing import Any, Iterator

from .indent import indented
from .writer import _encoder, _replace_with, dumps, encode, has_secrets, refuse_symlink, write_json


def write_json_streamed(path: Any, value: dict, outer: str, *, indent: int = 2) -> None:
    """`write_json(path, value, indent=indent)`, the same bytes, without one string of it all: the
    lists in `value[outer]` (a dict of lists, e.g. compare.json's buckets) are encoded item by item
    and written as they come (a 100,000-pair compare.json is never one string). With a secret
    registered: `write_json` (its redaction)."""
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
    shared: dict = {}   # the text of each small part the items share (core.indent)
    pad = "\n" + " " * (indent * 3)    # a list's items sit three levels down: value -> outer -> key

    def chunks() -> Iterator[bytes]:
        rest = text
        while by_token:
            at, found = min(((rest.find(t), t) for t in by_token), key=lambda x: x[0] if x[0] >= 0 else len(rest) + 1)
            if at < 0:
                break
            items = value[outer][by_token.pop(found)]
            buf = [rest[:at], "["]
            for i, item in enumerate(items):
                one = indented(item, indent, shared)   # the encoder's text, sooner (core.indent)
                buf.append(("," if i else "") + pad + (one if one is not None else enc.encode(item)).replace("\n", pad))
                if len(buf) >= 512:
                    yield encode("".join(buf))
                    buf = []
            buf.append(pad[:-indent] + "]")
            yield encode("".join(buf))
            rest = rest[at + len(found):]
        yield encode(rest + "\n")
    path = os.fspath(path)
    refuse_symlink(path)
    _replace_with(path, chunks())

