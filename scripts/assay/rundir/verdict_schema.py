"""--verify's JSON Schema pass over every verdict record, fast (rundir.completeness_case calls it).

A yes/no answer per record: the envelope through the compiled check (assay.schemas.fast), each
layer's answer memoized by what the layer schema reads of it. A record found invalid is validated
in full by the caller, so every problem is worded by the full validation.
"""

from __future__ import annotations

import json
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
    object) through the yes/no check (per shape of record: schemas.shapes.Shaped), then each layer
    against `$defs/layer` (compiled, its answer memoized by the values of the few keys it reads,
    schemas.shapes.ByValues; with jsonschema instead, cached by its canonical JSON: most layers of
    a run are the same few objects). Only a yes/no: any doc found invalid goes through the full validation, so
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
        from ..schemas.shapes import ByValues, Shaped, reads
        try:  # the yes/no check without jsonschema (assay.schemas.fast), else jsonschema's
            compiler = Compiler(load_schema)
            try:   # the same answers, per shape of record (schemas.shapes)
                self.envelope_valid = Shaped(compiler, "verdict", envelope)
            except Unsupported:
                self.envelope_valid = compiler.compile("verdict", envelope)
            self.layer_valid = compiler.compile("verdict", layer_schema)
            self.cache = None   # a compiled layer check needs no cache keyed by the whole layer
            read = reads(layer_schema)
            if read is not None:   # its answer is a function of a few keys: memoized by their values
                self.by_values = ByValues(self.layer_valid, read)
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
            by_values, alone = getattr(self, "by_values", self.layer_valid), self.alone
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
                elif not by_values(layer):
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
