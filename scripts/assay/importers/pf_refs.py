"""JSON references (`$ref`) inside a promptfoo config or test file, resolved as promptfoo does.

promptfoo dereferences the whole config (and each test file) with json-schema-ref-parser
before reading it, so `assert: [{$ref: "#/assertionTemplates/polite"}]` is the template
itself. `dereference(doc)` does the same for references inside the document (`#/a/b`, JSON
Pointer escapes `~0` `~1`); keys beside a `$ref` are merged over the target, as the parser's
extended references are. A reference to another file or URL, or one that points nowhere or
at itself, is left in place and named by `unresolved(node)`, so the caller lists it.
"""

from __future__ import annotations

import copy
from typing import Any

MAX_REF_DEPTH = 32


def _pointer(doc: Any, ref: str) -> Any:
    node = doc
    for raw in ref[2:].split("/") if ref != "#" else []:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise KeyError(ref)
    return node


def dereference(doc: Any) -> Any:
    def walk(node: Any, depth: int) -> Any:
        if depth > MAX_REF_DEPTH:
            raise RecursionError
        if isinstance(node, list):
            return [walk(v, depth) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            try:
                target = walk(copy.deepcopy(_pointer(doc, ref)), depth + 1)
            except (KeyError, RecursionError):
                return node          # points nowhere, or at itself: unresolved(node) names it
            siblings = {k: walk(v, depth) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings} if isinstance(target, dict) and siblings else target
        return {k: walk(v, depth) for k, v in node.items()}
    return walk(doc, 0)


def unresolved(node: Any) -> str | None:
    """Why a node that still holds a `$ref` was not resolved; None when it holds none."""
    if not isinstance(node, dict) or not isinstance(node.get("$ref"), str):
        return None
    ref = node["$ref"]
    if ref.startswith("#"):
        return f"$ref {ref} points at nothing in the document (or at itself)"
    return f"$ref {ref} names another file or a URL: the import follows references inside the document only"
