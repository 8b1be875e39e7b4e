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
import re
from pathlib import Path
from typing import Any

from ..core.errors import AssayError

MAX_BYTES = 2_000_000     # a case file is a few KB; anything this large is a mistake
MAX_NODES = 200_000       # values emitted after alias expansion
MAX_DEPTH = 64
MAX_FLOW_DEPTH = 1000     # brackets open at once: checked on the text, before any parser recurses

_STR = "tag:yaml.org,2002:str"
_SCALAR_TAGS = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp",
}
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


# YAML 1.2's core schema, as js-yaml (promptfoo's reader) resolves plain scalars: `yes`, `off`, `y`,
# `1:30`, `1_000` and `017` are text or decimal there, not YAML 1.1's booleans, sexagesimals and octals.
_CORE_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_CORE_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_CORE_INT = re.compile(r"^(?:0o[0-7]+|0x[0-9a-fA-F]+|[-+]?[0-9]+)$")
_CORE_FLOAT = re.compile(r"^(?:[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9]+(?:[eE][-+]?[0-9]+)?|"
                         r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_CORE_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$|"
                        r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
                        r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?$")


class YamlTimestamp(str):
    """A plain scalar YAML reads as a date or time, kept as its text (a reader that must treat
    it as a date, as js-yaml does, can tell)."""


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
    def __init__(self, label: str, loader: Any, core: bool = False) -> None:
        self.label = label
        self.loader = loader
        self.core = core
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
        if self.core and not node.style and node.tag in _SCALAR_TAGS:   # plain (libyaml: "", PyYAML: None)
            return self.core_scalar(node)
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

    def core_scalar(self, node: Any) -> Any:
        text = node.value
        if _CORE_NULL.match(text):
            return None
        if text in _CORE_BOOL:
            return _CORE_BOOL[text]
        if _CORE_INT.match(text):
            return int(text[2:], 8) if text.startswith("0o") else int(text[2:], 16) if text.startswith("0x") \
                else int(text, 10)
        if _CORE_FLOAT.match(text):
            value = float(text.replace("inf", "Inf").replace("INF", "Inf").replace(".Inf", "inf")
                          .lower().replace(".nan", "nan"))
            if math.isnan(value) or math.isinf(value):
                raise _fail(self.label, node, f"{text!r} is NaN or infinite, which JSON cannot carry",
                            "write a finite number or quote it as text")
            return value
        if _CORE_DATE.match(text):
            return YamlTimestamp(text)
        return text


def check_flow_depth(text: str, label: str, limit: int = MAX_FLOW_DEPTH) -> None:
    """Refuse text whose `[`/`{` brackets nest deeper than MAX_FLOW_DEPTH, before a parser sees it:
    libyaml's composer recurses in C (100,000 `[` overflow the process's stack: a crash, not an
    exception) and json's raises RecursionError. Counted on the raw text (a bracket inside a string
    counts too, an unmatched closer never lowers the count below zero), so a real document is far
    below the limit."""
    if text.count("[") + text.count("{") <= limit:
        return
    depth = deepest = 0
    for ch in re.findall(r"[\[\]{}]", text):
        if ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    raise AssayError(f"{label}: nesting deeper than {limit} levels of brackets (a document "
                                     "nested this deep is not a config); flatten the structure", 2, file=label)
        elif depth:
            depth -= 1


def loads(text: str, label: str, core: bool = False) -> tuple[Any, LineIndex]:
    """Parse one YAML document from text. Empty text -> (None, {}). `core=True` reads plain
    scalars by YAML 1.2's core schema (as js-yaml does), not PyYAML's YAML 1.1."""
    import yaml

    check_flow_depth(text, label)

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
        builder = _Builder(label, loader, core)
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
