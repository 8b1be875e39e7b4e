"""--verify's JSON Schema pass over every verdict record, fast (rundir.completeness_case calls it).

A yes/no answer per record: the envelope through the compiled check (assay.schemas.fast), each
layer's answer memoized by what the layer schema reads of it. A record found invalid is validated
in full by the caller, so every problem is worded by the full validation.
"""

from __future__ import annotations

import json
from itertools import repeat
from typing import Any

from ..schemas import iter_errors


def _schema_problem(doc: Any, name: str, enabled: bool = True) -> str | None:
    if not enabled:
        return None
    errors = iter_errors(doc, name)
    if not errors:
        return None
    e = errors[0]
    return f"does not match the {name} schema at {e['key']}: {e['message']}"


class _VerdictSchema:
    """--verify's JSON Schema pass over every verdict.json: the envelope (with `layers` taken as any
    object) through the yes/no check, then each layer against `$defs/layer` (compiled, its answer
    memoized by the values of the few keys it reads, `_reads`; with jsonschema instead, cached by
    its canonical JSON: most layers of a run are the same few objects). Only a yes/no: any doc found invalid goes through the full validation, so
    the problem reported is exactly the full one's. Falls back to the full validation for every
    doc when the schema's `layers` part is not the shape this relies on.
    """

    CACHE_MAX = 20000

    def __init__(self) -> None:
        import copy

        from ..schemas import load_schema
        schema = load_schema("verdict")
        layers = (schema.get("properties") or {}).get("layers") or {}
        props = layers.get("properties") or {}
        layer_def = (schema.get("$defs") or {}).get("layer")
        self.names = frozenset(props)
        # the layers every verdict has; the agent layers (skills, files, check, permissions) are
        # optional, so runs written before them stay valid
        self.required = frozenset(layers.get("required") or ())
        self.ok = (set(layers) == {"type", "additionalProperties", "required", "properties"}
                   and layers["type"] == "object" and layers["additionalProperties"] is False
                   and self.required <= self.names
                   and all(v == {"$ref": "#/$defs/layer"} for v in props.values())
                   and isinstance(layer_def, dict) and "$ref" not in json.dumps(layer_def)
                   and json.dumps(schema).count('"$ref"') == len(props))
        if not self.ok:
            return
        envelope = copy.deepcopy(schema)
        envelope["properties"]["layers"] = {"type": "object"}
        layer_schema = {"$schema": schema.get("$schema"), **layer_def}
        self.cache: dict[str, bool] | None = {}
        self.alone: dict[str, bool] = {}   # `{"verdict": s}` -> its answer, by s
        from ..schemas.fast import Compiler, Unsupported
        try:  # the yes/no check without jsonschema (assay.schemas.fast), else jsonschema's
            compiler = Compiler(load_schema)
            self.envelope_valid = compiler.compile("verdict", envelope)
            self.layer_valid = compiler.compile("verdict", layer_schema)
            self.cache = None   # a compiled layer check needs no cache keyed by the whole layer
            reads = _reads(layer_schema)
            if reads is not None:   # its answer is a function of a few keys: memoized by their values
                self.by_value, self.by_presence = tuple(sorted(reads[0])), tuple(sorted(reads[1] - reads[0]))
                self.memo: dict[tuple, bool] = {}
            return
        except Unsupported:
            pass
        import jsonschema
        cls = jsonschema.validators.validator_for(schema)
        self.envelope_valid = cls(envelope, format_checker=cls.FORMAT_CHECKER).is_valid
        self.layer_valid = cls(layer_schema, format_checker=cls.FORMAT_CHECKER).is_valid

    def problem(self, rec: Any) -> str | None:
        try:
            valid = self.ok and self._valid(rec)
        except RecursionError:  # a hand-made deep document: the full validation names it
            valid = False
        if valid:
            return None
        return _schema_problem(rec, "verdict")

    def _valid(self, rec: Any) -> bool:
        layers = rec.get("layers") if isinstance(rec, dict) else None
        if not isinstance(layers, dict) or not self.required <= set(layers) <= self.names \
                or not self.envelope_valid(rec):
            return False
        if self.cache is None:
            memo = getattr(self, "memo", None)
            key_of, alone = self._key, self.alone
            for layer in layers.values():
                # most layers are `{"verdict": "<string>"}` alone: their answer kept by that string
                if type(layer) is dict and len(layer) == 1 and type(layer.get("verdict")) is str:
                    ok = alone.get(layer["verdict"])
                    if ok is None:
                        if len(alone) >= self.CACHE_MAX:
                            alone.clear()
                        ok = alone[layer["verdict"]] = bool(self.layer_valid(layer))
                    if not ok:
                        return False
                    continue
                key = key_of(layer) if memo is not None else None
                if key is None:
                    if not self.layer_valid(layer):
                        return False
                    continue
                ok = memo.get(key)
                if ok is None:
                    if len(memo) >= self.CACHE_MAX:
                        memo.clear()
                    ok = memo[key] = bool(self.layer_valid(layer))
                if not ok:
                    return False
            return True
        for layer in layers.values():
            key = json.dumps(layer, sort_keys=True, ensure_ascii=False, allow_nan=True)
            ok = self.cache.get(key)
            if ok is None:
                if len(self.cache) >= self.CACHE_MAX:
                    self.cache.clear()
                ok = self.cache[key] = self.layer_valid(layer)
            if not ok:
                return False
        return True


    def _key(self, layer: Any) -> tuple | None:
        """What the layer check reads of `layer` (see `_reads`): the values of the keys its
        `properties` name (each with its type: True == 1 in a dict key) and whether the keys its
        `required` lists are present. None (check it directly) when a value is not a plain scalar."""
        if type(layer) is not dict:   # (a dict subclass, never parsed JSON, is checked directly)
            return None
        if len(self.by_value) == 1:   # the shipped schema: one value (`verdict`), a few presences
            value = layer.get(self.by_value[0], _ABSENT)
            kind = type(value)
            return ((value,), (kind,), tuple([name in layer for name in self.by_presence])) if kind in _SCALARS \
                else None
        values = tuple(map(layer.get, self.by_value, repeat(_ABSENT)))
        types = tuple(map(type, values))
        if not _SCALARS.issuperset(types):
            return None
        return values, types, tuple(map(layer.__contains__, self.by_presence))


class _Absent:
    """A key the layer does not have (its own type in the memo key)."""


_ABSENT = _Absent()
_SCALARS = frozenset({str, int, float, bool, type(None), _Absent})
# keywords whose answer on an object depends only on the keys `properties` and `required` name
_BY_KEYS = frozenset({"type", "required", "properties", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
                      "description", "title", "$comment", "$schema"})


def _reads(schema: Any) -> tuple[set[str], set[str]] | None:
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
        got = _reads(sub)
        if got is None:
            return None
        values |= got[0]
        present |= got[1]
    return values, present
