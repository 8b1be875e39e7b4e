"""Strict YAML: one document in, plain JSON-able data out, or a clear AssayError(2).

PyYAML's own constructor expands aliases without limit (a "billion laughs" file
takes the machine down) and silently keeps the last of two duplicate keys. So we
let PyYAML only *compose* the node graph (aliases stay shared, so composing is
cheap) and build the Python values ourselves, counting every node we emit:

- duplicate keys, NaN/inf, unsupported tags, merge keys (`<<`), non-scalar keys,
  several documents in one file -> error with file and line;
- more than MAX_NODES emitted values, or nesting deeper than MAX_DEPTH (which
  also catches recursive aliases) -> error, never a blow-up;
- dates and timestamps become ISO strings; integer keys (status maps) become strings.

`load(path, label)` returns `(value, lines)` where `lines` maps a key path tuple
to the 1-based line of that key, for schema errors (`line_of`).
"""

from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path
from typing import Any

from ..core.errors import AssayError

MAX_BYTES = 2_000_000     # a case file is a few KB; anything this large is a mistake
MAX_NODES = 200_000       # values emitted after alias expansion
MAX_DEPTH = 64

_STR = "tag:yaml.org,2002:str"
_SCALAR_TAGS = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp",
}
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


class LineIndex(dict):
    """key path tuple -> line; `line_of(path)` answers for the deepest known prefix."""

    def line_of(self, path: list[Any] | tuple[Any, ...]) -> int | None:
        path = tuple(path)
        while path:
            if path in self:
                return self[path]
            path = path[:-1]
        return self.get((), None)


def _fail(label: str, node: Any, message: str, fix: str = "") -> AssayError:
    line = node.start_mark.line + 1 if node is not None and getattr(node, "start_mark", None) else None
    where = f"{label}:{line}" if line else label
    return AssayError(f"{where}: {message}" + (f"; {fix}" if fix else ""), 2, file=label, line=line)


class _Builder:
    def __init__(self, label: str, loader: Any) -> None:
        self.label = label
        self.loader = loader
        self.count = 0
        self.lines = LineIndex()

    def build(self, node: Any, path: tuple[Any, ...], depth: int) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise _fail(self.label, node, f"the document expands to more than {MAX_NODES} values "
                        "(a YAML alias bomb?)", "write the values out without anchors/aliases")
        if depth > MAX_DEPTH:
            raise _fail(self.label, node, f"nesting deeper than {MAX_DEPTH} levels (or a recursive alias)",
                        "flatten the structure")
        import yaml

        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ:
                raise _fail(self.label, node, f"unsupported YAML tag {node.tag!r}", "use a plain list")
            out = []
            for i, child in enumerate(node.value):
                self.lines.setdefault(path + (i,), child.start_mark.line + 1)
                out.append(self.build(child, path + (i,), depth + 1))
            return out
        if isinstance(node, yaml.MappingNode):
            if node.tag != _MAP:
                raise _fail(self.label, node, f"unsupported YAML tag {node.tag!r}", "use a plain mapping")
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self.key(key_node)
                if key in out:
                    first = self.lines.get(path + (key,))
                    raise _fail(self.label, key_node, f"duplicate key {key!r}"
                                + (f" (first at line {first})" if first else ""),
                                "keep one of them: YAML would silently drop the first")
                self.lines[path + (key,)] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, path + (key,), depth + 1)
            return out
        raise _fail(self.label, node, "unsupported YAML node")  # pragma: no cover

    def key(self, node: Any) -> str:
        import yaml

        if not isinstance(node, yaml.ScalarNode):
            raise _fail(self.label, node, "a mapping key must be a plain scalar", "quote the key")
        if node.tag == "tag:yaml.org,2002:merge":
            raise _fail(self.label, node, "merge keys (<<) are not supported", "write the keys out")
        value = self.scalar(node)
        if isinstance(value, bool) or value is None or isinstance(value, float):
            raise _fail(self.label, node, f"key {node.value!r} reads as {type(value).__name__}, not text",
                        f"quote it: \"{node.value}\"")
        return str(value)

    def scalar(self, node: Any) -> Any:
        if node.tag not in _SCALAR_TAGS:
            raise _fail(self.label, node, f"unsupported YAML tag {node.tag!r}",
                        "use plain strings, numbers, booleans and null")
        if node.tag == _STR:
            return node.value
        try:
            value = self.loader.construct_object(node, deep=True)
        except Exception as exc:  # yaml.constructor.ConstructorError, ValueError on bad ints/dates
            raise _fail(self.label, node, f"cannot read scalar {node.value!r}: {exc}") from None
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            raise _fail(self.label, node, f"{node.value!r} is NaN or infinite, which JSON cannot carry",
                        "write a finite number or quote it as text")
        if isinstance(value, (_dt.date, _dt.datetime)):
            return value.isoformat()
        return value


def loads(text: str, label: str) -> tuple[Any, LineIndex]:
    """Parse one YAML document from text. Empty text -> (None, {})."""
    import yaml

    # libyaml (when PyYAML was built with it) composes ~10x faster and caps nesting at 1000 levels
    # itself; our builder below is the same either way.
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            # PyYAML composes nested collections recursively; thousands of `[` exhaust the stack
            raise AssayError(f"{label}: nesting deeper than {MAX_DEPTH} levels; flatten the structure", 2,
                             file=label) from None
        except yaml.composer.ComposerError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark else None
            if "expected a single document" in str(exc):
                msg = "more than one YAML document (---) in one file"
                fix = "put one case per file"
            else:
                msg = f"{exc.context or ''} {exc.problem or ''}".strip()
                fix = "fix the YAML"
            raise AssayError(f"{label}:{line}: {msg}; {fix}", 2, file=label, line=line) from None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark else None
            problem = " ".join(p for p in (exc.context, exc.problem) if p)
            lines = text.splitlines()
            if line and "flow" in problem and any("${" in x for x in lines[max(0, line - 2):line]):
                # `{location: ${SPANS}}`: YAML reads the ${ as the start of a nested flow mapping
                problem += ('; a ${VAR} inside {...} or [...] must be quoted, e.g. {location: "${VAR}"} '
                            "(or write the mapping in block style)")
            raise AssayError(f"{label}:{line}: invalid YAML: {problem}", 2, file=label, line=line) from None
        except yaml.YAMLError as exc:
            raise AssayError(f"{label}: invalid YAML: {exc}", 2, file=label) from None
        if node is None:
            return None, LineIndex()
        builder = _Builder(label, loader)
        builder.lines[()] = node.start_mark.line + 1
        value = builder.build(node, (), 0)
        return value, builder.lines
    finally:
        loader.dispose()


def load(path: Path, label: str) -> tuple[Any, LineIndex]:
    """Read and parse a YAML file; `label` (a path relative to the state dir) names it in errors."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise AssayError(f"{label}: file is {size} bytes, over the {MAX_BYTES}-byte limit for one YAML file",
                             2, file=label)
        data = path.read_bytes()
    except OSError as exc:
        raise AssayError(f"{label}: cannot read: {exc.strerror or exc}", 2, file=label) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AssayError(f"{label}: not UTF-8 (byte {exc.start}); save the file as UTF-8", 2, file=label) from None
    return loads(text, label)
