"""The yes/no check of an object schema (schemas.fast) for documents that come in a few shapes.

--verify checks every verdict record of a run against the verdict schema (300,000 at 100,000
cases, on two processes), and a run's records come in a handful of shapes: the same keys, each
value of the same type. `Shaped` keeps, per shape (the keys in order, the exact type of each
value), what the check's answer depends on beyond the shape, and the same answer as the compiled
check (`Compiler.compile`) with less work:

- `type`, `required`, `additionalProperties: false`: functions of the keys and of the document
  being a dict: answered once per shape.
- a property whose schema is only a type test of types whose answer is the value's type's
  (string, object, array, boolean, null, number; never integer: 1.0 is one, 1.5 is not):
  answered once per shape (every value is of an exact built-in type, or the full check runs).
- a property whose value is a scalar (its answer then a function of its type, fixed by the shape,
  and value): answered per distinct values (`ByValues`'s reasoning); strings and floats only
  when the schema is a closed list (enum, const) or the rest of the schema reads them, since a
  run's ids and latencies are all different.
- the other keywords (allOf, if, ...): with the values they read (`reads`) scalars of the shape,
  answered with those values; else run on each document.
- the rest of the properties (a nested object or list): checked on each document, by their
  compiled check (with `ByValues` when theirs is a function of a few scalar values).

Anything else (a document that is not exactly a dict, a value of another type, more shapes than
HELD) goes to the full compiled check. Equal scalars of one type get one answer from every keyword
fast.py compiles (-0.0 and 0.0 included: compared numerically, is_integer alike; NaN is found
again only as the same object). tests/test_schema_shapes.py checks the answers against the full check.
"""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter
from typing import Any, Callable

from .fast import ANNOTATIONS, Compiler, Unsupported

Check = Callable[[Any], bool]

HELD = 256          # shapes kept at most (each with its memo; a cache, never a leak)
MEMO_MAX = 4096     # answers kept per memo before it starts over


class _Absent:
    """A key the object does not have (its own type in a memo key)."""


ABSENT = _Absent()
SCALARS = frozenset({str, int, float, bool, type(None), _Absent})
_EXACT = frozenset({str, int, float, bool, type(None), dict, list})
_BY_TYPE = frozenset({"string", "object", "array", "boolean", "null", "number"})
# keywords whose answer on an object depends only on the keys `properties` and `required` name
_BY_KEYS = frozenset({"type", "required", "properties", "allOf", "anyOf", "oneOf", "not", "if", "then", "else"}) \
    | ANNOTATIONS


def reads(schema: Any) -> tuple[set[str], set[str]] | None:
    """(names whose values an object's validity reads, names whose presence it reads) for a schema
    built only of `_BY_KEYS` at the object level (a `properties` subschema may read its value in any
    way: the value is the memo key); None for any other schema (it may read every key)."""
    if isinstance(schema, bool):
        return set(), set()
    if not isinstance(schema, dict) or not set(schema) <= _BY_KEYS:
        return None
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(props, dict) or not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    values, present = set(props), set(required)
    subs = [*(schema.get("allOf") or []), *(schema.get("anyOf") or []), *(schema.get("oneOf") or []),
            *(schema[k] for k in ("not", "if", "then", "else") if k in schema)]
    for sub in subs:
        got = reads(sub)
        if got is None:
            return None
        values |= got[0]
        present |= got[1]
    return values, present


class ByValues:
    """A compiled check whose answer on an object is a function of what `reads` found it reads,
    memoized by that: the values of the keys its `properties` name (each with its type: True == 1
    as a dict key) and whether the keys its `required` lists are present. A value that is not a
    plain scalar, or a document that is not exactly a dict, is checked directly."""

    def __init__(self, check: Check, read: tuple[set[str], set[str]]) -> None:
        self.check = check
        self.by_value, self.by_presence = tuple(sorted(read[0])), tuple(sorted(read[1] - read[0]))
        self.memo: dict[tuple, bool] = {}

    def key(self, x: Any) -> tuple | None:
        if type(x) is not dict:   # (a dict subclass, never parsed JSON, is checked directly)
            return None
        if len(self.by_value) == 1:   # e.g. a layer: one value (`verdict`), a few presences
            value = x.get(self.by_value[0], ABSENT)
            kind = type(value)
            return ((value,), (kind,), tuple(map(x.__contains__, self.by_presence))) if kind in SCALARS else None
        values = tuple(map(x.get, self.by_value, repeat(ABSENT)))
        types = tuple(map(type, values))
        if not SCALARS.issuperset(types):
            return None
        return values, types, tuple(map(x.__contains__, self.by_presence))

    def __call__(self, x: Any) -> bool:
        key = self.key(x)
        if key is None:
            return bool(self.check(x))
        ok = self.memo.get(key)
        if ok is None:
            if len(self.memo) >= MEMO_MAX:
                self.memo.clear()
            ok = self.memo[key] = bool(self.check(x))
        return ok


def _by_type(s: Any) -> bool:
    """True when `s` says only `type`, of types whose answer is the value's type's (see the module docstring)."""
    if not isinstance(s, dict) or "type" not in s or not set(s) <= ANNOTATIONS | {"type"}:
        return False
    names = [s["type"]] if isinstance(s["type"], str) else s["type"]
    return isinstance(names, list) and bool(names) and all(isinstance(n, str) and n in _BY_TYPE for n in names)


def _closed(s: Any) -> bool:
    """A schema whose valid strings are a few listed ones (a run's values of it repeat)."""
    return isinstance(s, dict) and ("enum" in s or "const" in s)


class Shaped:
    """The compiled check of the object schema `s`, per shape (see the module docstring). Raises
    Unsupported for a schema it does not split (`additionalProperties` a schema, `patternProperties`)."""

    _NO = object()   # a shape whose answer is False whatever the values

    def __init__(self, compiler: Compiler, doc: str, s: Any) -> None:
        if not isinstance(s, dict) or not isinstance(s.get("properties", {}), dict) \
                or s.get("additionalProperties", False) is not False or "patternProperties" in s:
            raise Unsupported("not an object schema this splits by shape")
        self.full = compiler.compile(doc, s)
        props = s.get("properties") or {}
        head = {k: s[k] for k in ("type", "required", "additionalProperties") if k in s}
        self.head = compiler.compile(doc, dict(head, properties={k: True for k in props}))
        self.props: dict[str, tuple[Any, Check]] = {}
        for k, sub in props.items():
            self.props[k] = (sub, self._nested(compiler, doc, sub))
        rest = {k: v for k, v in s.items() if k not in ("type", "required", "additionalProperties", "properties")}
        self.rest = compiler.compile(doc, rest)
        self.rest_reads = reads(rest)
        self.plans: dict[tuple, Any] = {}

    @classmethod
    def _nested(cls, compiler: Compiler, doc: str, sub: Any) -> Check:
        """A property's check: by shape too when it is an object with properties of its own (a
        record's `trace`), by its few scalar values when `reads` finds them, else compiled."""
        if isinstance(sub, dict) and sub.get("type") == "object" and isinstance(sub.get("properties"), dict):
            try:
                return cls(compiler, doc, sub)
            except Unsupported:
                pass
        read = reads(sub)
        return ByValues(compiler.compile(doc, sub), read) if read is not None and not _by_type(sub) \
            else compiler.compile(doc, sub)

    def __call__(self, x: Any) -> bool:
        if type(x) is not dict:
            return self.full(x)
        shape = (tuple(x), tuple(map(type, x.values())))
        plan = self.plans.get(shape)
        if plan is None:
            plan = self._plan(x, shape)
            if plan is None:
                return self.full(x)
        if plan is self._NO:
            return False
        direct, get, keyed, memo, rest_each = plan
        for k, check in direct:
            if not check(x[k]):
                return False
        if get is not None:
            values = get(x)
            ok = memo.get(values)
            if ok is None:
                if len(memo) >= MEMO_MAX:
                    memo.clear()
                ok = memo[values] = all(check(x[k]) for k, check in keyed) and (rest_each or bool(self.rest(x)))
            if not ok:
                return False
        return bool(self.rest(x)) if rest_each else True

    def _plan(self, x: dict, shape: tuple) -> Any:
        """What a document of this shape is checked by (None: the full check, for any document of it):
        (checks run on each value, the getter of the memo key's values, the checks the memo answers,
        the memo, whether `rest` runs on each document)."""
        if len(self.plans) >= HELD or not _EXACT.issuperset(shape[1]):
            return None
        if not self.head(x):
            self.plans[shape] = self._NO
            return self._NO
        direct, keyed = [], []
        wanted = self.rest_reads[0] if self.rest_reads is not None else set()
        for k, kind in zip(*shape):
            if k not in self.props:
                continue
            sub, check = self.props[k]
            if sub is True:
                continue
            if _by_type(sub):   # its answer is that of the value's type, the shape's
                if not check(x[k]):
                    self.plans[shape] = self._NO
                    return self._NO
            elif kind in SCALARS and (kind not in (str, float) or k in wanted or _closed(sub)):
                keyed.append((k, check))
            else:
                direct.append((k, check))
        names = [k for k, _ in keyed]
        # `rest` answered with the memo's when every value it reads is a scalar of this shape (its
        # presences are the shape's): those values join the key; none at all: answered here, once
        rest_each = self.rest_reads is None or any(k in wanted and kind not in SCALARS for k, kind in zip(*shape))
        if not rest_each:
            names += [k for k, kind in zip(*shape) if k in wanted and k not in names]
            if not names:
                if not self.rest(x):
                    self.plans[shape] = self._NO
                    return self._NO
        get = itemgetter(*names) if names else None
        plan = self.plans[shape] = (tuple(direct), get, tuple(keyed), {}, rest_each)
        return plan
