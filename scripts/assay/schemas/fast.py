"""A yes/no check of a document against one of the shipped schemas, without jsonschema.

Importing jsonschema costs every process that validates anything about 0.2 s of CPU, three
times a bare interpreter's start, and almost every document a script reads is valid. So a
shipped schema is compiled here once into plain closures that say only whether a document is
valid, for the keywords of JSON Schema 2020-12 that the schemas use, each with jsonschema's
own semantics (booleans are not numbers, 1.0 is an integer, `pattern` is re.search, enum and
const compare 1 == 1.0 but never True == 1). A schema with any other keyword is not compiled
(`assay.schemas.fast_checker()` returns None) and every check of it goes to jsonschema. A document found invalid
goes to jsonschema too, which writes the messages: this module never words an error.
tests/test_schema_fast.py checks both agree on every fixture and on mutated documents.
"""

from __future__ import annotations

import re
from itertools import repeat
from typing import Any, Callable

Check = Callable[[Any], bool]

# keywords that only annotate (no effect on validity)
ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "definitions", "title", "description",
                         "examples", "default", "deprecated", "readOnly", "writeOnly"})
BASE = "https://assay.invalid/schemas/"


class Unsupported(Exception):
    """A keyword (or a $ref form) this module does not implement: use jsonschema for the schema."""


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_integer(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


TYPES: dict[str, Check] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "number": _is_number,
    "integer": _is_integer,
}


def equal(a: Any, b: Any) -> bool:
    """jsonschema's equality for enum/const."""
    if a is b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


_PLAIN_TYPES = {"string": str, "object": dict, "array": list, "boolean": bool}


def _plain_type(s: Any) -> type | None:
    """The Python type a schema that says only `{"type": "string"}` (object, array, boolean) is an
    isinstance test for (never number or integer: a bool is not one), else None."""
    if isinstance(s, dict) and set(s) <= {"type", "description", "title", "$comment"} \
            and isinstance(s.get("type"), str):
        return _PLAIN_TYPES.get(s["type"])
    return None


def _plain_types(s: Any) -> tuple[type, ...] | None:
    """The isinstance tuple a schema that says only `{"type": ...}` of plain types (string, object,
    array, boolean, null) is, else None."""
    if not isinstance(s, dict) or not set(s) <= {"type", "description", "title", "$comment"}:
        return None
    names = [s.get("type")] if isinstance(s.get("type"), str) else s.get("type")
    if not isinstance(names, list) or not names or not all(n in _PLAIN_TYPES or n == "null" for n in names):
        return None
    return tuple(_PLAIN_TYPES[n] if n != "null" else type(None) for n in names)


def _all_of(checks: list[Check]) -> Check:
    """One check that holds when every one of `checks` does (a plain loop: the hot path of a check)."""
    if not checks:
        return lambda x: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda x: first(x) and second(x)
    checks = tuple(checks)

    def every(x: Any) -> bool:
        for c in checks:
            if not c(x):
                return False
        return True
    return every


class Compiler:
    """Compiles the schemas one document at a time; `$ref`s resolve lazily (by file and pointer)."""

    def __init__(self, load: Callable[[str], dict]) -> None:
        self.load = load
        self.done: dict[tuple[str, str], Check] = {}

    def ref(self, doc_name: str, ref: str) -> Check:
        target, _, pointer = ref.partition("#")
        if target.startswith(BASE):
            target = target[len(BASE):]
        if target and not (target.endswith(".schema.json") and "/" not in target):
            raise Unsupported(f"$ref {ref!r}")
        name = target[: -len(".schema.json")] if target else doc_name
        key = (name, pointer)
        if key not in self.done:
            holder: list[Check] = []
            self.done[key] = lambda x: holder[0](x)     # a recursive ref resolves through this
            node: Any = self.load(name)
            for part in [p for p in pointer.split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, dict) or part not in node:
                    raise Unsupported(f"$ref {ref!r}: no {part!r}")
                node = node[part]
            holder.append(self.compile(name, node))
            self.done[key] = holder[0]
        return self.done[key]

    def compile(self, doc: str, s: Any) -> Check:
        if s is True:
            return lambda x: True
        if s is False:
            return lambda x: False
        if not isinstance(s, dict):
            raise Unsupported("a schema that is not an object")
        checks: list[Check] = []
        for kw, v in s.items():
            if kw in ANNOTATIONS or kw in ("then", "else"):
                continue
            make = getattr(self, "k_" + kw.lstrip("$"), None)
            if make is None:
                raise Unsupported(kw)
            checks.append(make(doc, v, s))
        return _all_of(checks)

    # --- keywords (each returns the check for its value) -------------------------------------
    def k_ref(self, doc, v, s):
        return self.ref(doc, v)

    def k_type(self, doc, v, s):
        names = [v] if isinstance(v, str) else list(v)
        tests = [TYPES[n] for n in names]
        if len(tests) == 1:
            return tests[0]
        plain = tuple(_PLAIN_TYPES[n] for n in names if n in _PLAIN_TYPES) + \
            ((type(None),) if "null" in names else ())
        others = [TYPES[n] for n in names if n not in _PLAIN_TYPES and n != "null"]
        if not others:   # e.g. ["string", "null"]: one isinstance
            return lambda x: isinstance(x, plain)
        if len(others) == 1:
            other = others[0]
            return lambda x: isinstance(x, plain) or other(x)
        return lambda x: any(t(x) for t in tests)

    def k_enum(self, doc, v, s):
        if isinstance(v, list) and v and all(isinstance(e, str) or e is None for e in v):
            # equal() of a string is ==, never true for a non-string; of None, `is`
            strings, none = frozenset(e for e in v if e is not None), None in v
            return lambda x: (isinstance(x, str) and x in strings) or (none and x is None)
        return lambda x: any(equal(x, e) for e in v)

    def k_const(self, doc, v, s):
        if isinstance(v, str):
            return lambda x: isinstance(x, str) and x == v
        return lambda x: equal(x, v)

    def k_properties(self, doc, v, s):
        props = tuple((k, self.compile(doc, sub)) for k, sub in v.items())
        if len(props) <= 4:   # few properties: look each up
            def few(x: Any) -> bool:
                if not isinstance(x, dict):
                    return True
                for k, c in props:
                    if k in x and not c(x[k]):
                        return False
                return True
            return few
        # many: walk the document's keys (fewer than the schema's, as a rule); a property that is only
        # a type test (`{"type": "boolean"}`, `{"type": ["string", "null"]}`) is an isinstance inline
        typed = {k: t for k, t in ((k, _plain_types(sub)) for k, sub in v.items()) if t is not None}
        table = {k: c for k, c in props if k not in typed}

        def many(x: Any) -> bool:
            if not isinstance(x, dict):
                return True
            for k, val in x.items():
                t = typed.get(k)
                if t is not None:
                    if not isinstance(val, t):
                        return False
                    continue
                c = table.get(k)
                if c is not None and not c(val):
                    return False
            return True
        return many

    def k_required(self, doc, v, s):
        names = frozenset(v)
        return lambda x: not isinstance(x, dict) or x.keys() >= names

    def k_additionalProperties(self, doc, v, s):
        if "patternProperties" in s:
            raise Unsupported("patternProperties")
        known = frozenset(s.get("properties") or ())
        if v is False:
            return lambda x: not isinstance(x, dict) or known.issuperset(x)
        kind = _plain_type(v)
        if kind is not None and not known:   # e.g. {"type": "string"} for every value: one C-level pass
            return lambda x: not isinstance(x, dict) or all(map(isinstance, x.values(), repeat(kind)))
        sub = self.compile(doc, v)
        return lambda x: not isinstance(x, dict) or all(sub(val) for k, val in x.items() if k not in known)

    def k_propertyNames(self, doc, v, s):
        sub = self.compile(doc, v)
        return lambda x: not isinstance(x, dict) or all(sub(k) for k in x)

    def k_minProperties(self, doc, v, s):
        return lambda x: not isinstance(x, dict) or not len(x) < v

    def k_maxProperties(self, doc, v, s):
        return lambda x: not isinstance(x, dict) or not len(x) > v

    def k_items(self, doc, v, s):
        if "prefixItems" in s or isinstance(v, list):
            raise Unsupported("prefixItems")
        kind = _plain_type(v)
        if kind is not None:   # e.g. {"type": "string"} for every item: one C-level pass
            return lambda x: not isinstance(x, list) or all(map(isinstance, x, repeat(kind)))
        sub = self.compile(doc, v)

        def items(x: Any) -> bool:
            if not isinstance(x, list):
                return True
            for i in x:
                if not sub(i):
                    return False
            return True
        return items

    def k_minItems(self, doc, v, s):
        return lambda x: not isinstance(x, list) or not len(x) < v

    def k_maxItems(self, doc, v, s):
        return lambda x: not isinstance(x, list) or not len(x) > v

    def k_minLength(self, doc, v, s):
        return lambda x: not isinstance(x, str) or not len(x) < v

    def k_maxLength(self, doc, v, s):
        return lambda x: not isinstance(x, str) or not len(x) > v

    def k_pattern(self, doc, v, s):
        rx = re.compile(v)
        return lambda x: not isinstance(x, str) or rx.search(x) is not None

    def k_minimum(self, doc, v, s):
        return lambda x: not _is_number(x) or not x < v

    def k_maximum(self, doc, v, s):
        return lambda x: not _is_number(x) or not x > v

    def k_exclusiveMinimum(self, doc, v, s):
        return lambda x: not _is_number(x) or not x <= v

    def k_exclusiveMaximum(self, doc, v, s):
        return lambda x: not _is_number(x) or not x >= v

    def k_allOf(self, doc, v, s):
        return _all_of([self.compile(doc, x) for x in v])

    def k_anyOf(self, doc, v, s):
        subs = [self.compile(doc, x) for x in v]
        return lambda x: any(c(x) for c in subs)

    def k_oneOf(self, doc, v, s):
        subs = tuple(self.compile(doc, x) for x in v)

        def one(x: Any) -> bool:
            hits = 0
            for c in subs:
                if c(x):
                    hits += 1
                    if hits > 1:
                        return False
            return hits == 1
        return one

    def k_not(self, doc, v, s):
        sub = self.compile(doc, v)
        return lambda x: not sub(x)

    def k_if(self, doc, v, s):
        cond = self.compile(doc, v)
        then = self.compile(doc, s["then"]) if "then" in s else (lambda x: True)
        other = self.compile(doc, s["else"]) if "else" in s else (lambda x: True)
        return lambda x: then(x) if cond(x) else other(x)


class UserCompiler(Compiler):
    """Compiles one user's schema (expect.format.json_schema), already vetted by
    assay.schemas.user: `$ref`s are `#...` pointers into it, and `format` only annotates, as in
    the scorer's jsonschema validator, which is built without a format checker."""

    def __init__(self, schema: Any) -> None:
        super().__init__(lambda name: schema)

    def k_format(self, doc, v, s):
        return lambda x: True
