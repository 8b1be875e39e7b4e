"""A user's expect.format.json_schema checked without jsonschema (assay.schemas.user) gives exactly what
the jsonschema path gives: the answer scorer's whole output (or its ScorerInputError message) and
the expect linter's report, on thousands of generated schemas (valid and malformed, every supported
keyword, nested, $refs good, dangling and cyclic, booleans, 1.0 / True / -0 / NaN, unicode, regexes
valid and not, unknown keywords, other drafts) crossed with generated and mutated answers. The old
path is the same code with the fast path switched off, so each comparison is with today's output."""

from __future__ import annotations

import copy
import json
import math
import random

import pytest

from assay.lint import expect_rules
from assay.schemas import user
from assay.score import answer as answer_mod
from assay.score.answer import score_answer
from assay.score.base import ScorerInputError

TYPES = ["object", "array", "string", "number", "integer", "boolean", "null"]
KEYS = ["a", "b", "é", "名", "x-y", "a/b", "t~0", "0", ""]
NUMS = [0, 1, 2, 3, -1, 1.0, 2.5, -0.0, 0.5, 10**20, True, False, "1", None, float("nan"), float("inf")]
PATTERNS = ["^a", "b$", "[0-9]+", "é", "(", "[a-", "^(?i)x", "\\d{2}", "a|b", "*", ""]
VALUES = [None, True, False, 0, 1, -1, 1.0, 0.5, 2, "", "a", "b", "é", "1", [], {}, [1], {"a": 1}, [True], [1.0]]


def off(monkeypatch):
    monkeypatch.setattr(user, "user_checker", lambda schema: None)
    monkeypatch.setattr(user, "well_formed", lambda schema: False)


def check_once(monkeypatch):
    """The old path checks the schema (jsonschema's check_schema) once per answer scored; the check
    reads only the schema, so the test runs it once per schema and gives each answer the same result
    (the same None or the same ScorerInputError): nine answers a schema, nine times less of the metaschema."""
    real, memo = answer_mod._check_schema, {}

    def checked(schema):
        key = json.dumps(schema, allow_nan=True)   # key order kept: the first error named may follow it
        if key not in memo:
            try:
                memo[key] = (real(schema), None)
            except ScorerInputError as err:
                memo[key] = (None, err)
        result, err = memo[key]
        if err is not None:
            raise err
        return result
    monkeypatch.setattr(answer_mod, "_check_schema", checked)


class Gen:
    def __init__(self, rnd: random.Random) -> None:
        self.r = rnd
        self.clean = False   # a clean draw makes no malformed value on purpose (most then compile)

    def value(self, depth=0):
        r = self.r
        if depth > 2 or r.random() < 0.6:
            return copy.deepcopy(r.choice(VALUES))
        if r.random() < 0.5:
            return [self.value(depth + 1) for _ in range(r.randint(0, 3))]
        return {r.choice(KEYS): self.value(depth + 1) for _ in range(r.randint(0, 3))}

    def schema(self, depth=0, defs=()):
        r = self.r
        if depth > 3 or r.random() < 0.08:
            return r.choice([True, False, {}, {} if self.clean else r.choice([1, "x", None, []])])
        s: dict = {}
        for _ in range(r.randint(1, 4)):
            kw = r.choice(["type", "type", "properties", "required", "additionalProperties", "enum", "const",
                           "items", "minItems", "maxItems", "minLength", "maxLength", "minProperties",
                           "maxProperties", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                           "pattern", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "propertyNames",
                           "$ref", "format", "title", "description", "$comment", "default", "examples",
                           "deprecated"] if self.clean or r.random() < 0.9 else
                          ["x-unknown", "uniqueItems", "$id", "patternProperties", "prefixItems"])
            s[kw] = self.keyword(kw, depth, defs)
        if depth == 0 and r.random() < 0.1 or not self.clean and r.random() < 0.03:
            s["$schema"] = r.choice([user.DRAFT_2020_12, user.DRAFT_2020_12 + "#",
                                     "http://json-schema.org/draft-07/schema#",
                                     "http://json-schema.org/draft-04/schema#", "https://example.invalid/s", 5])
        return s

    def keyword(self, kw, depth, defs):
        r = self.r
        bad = not self.clean and r.random() < 0.1
        if kw == "type":
            if bad:
                return r.choice(["strin", [], ["string", "string"], 3, ["integer", "nope"], None])
            return r.choice(TYPES) if r.random() < 0.6 else r.sample(TYPES, r.randint(1, 3))
        if kw in ("properties", "patternProperties"):
            if bad:
                return r.choice([[], "a", {"a": 3}])
            keys = KEYS if kw == "properties" else PATTERNS[:4]
            return {k: self.schema(depth + 1, defs) for k in r.sample(keys, r.randint(1, 3))}
        if kw == "required":
            return r.choice([["a", "a"], "a", [1], {}]) if bad else r.sample(KEYS, r.randint(0, 3))
        if kw in ("additionalProperties", "items", "not", "if", "then", "else", "propertyNames"):
            return self.schema(depth + 1, defs)
        if kw == "prefixItems":
            return [self.schema(depth + 1, defs)]
        if kw == "enum":
            return r.choice(["a", {}, None]) if bad else [self.value() for _ in range(r.randint(0, 4))]
        if kw in ("const", "default"):
            return self.value()
        if kw.startswith(("min", "max")):
            if self.clean:
                return r.choice([0, 1, 2, 3, 1.0, 2.0, -0.0, 10**20])
            return r.choice(NUMS[:8] if r.random() < 0.7 else NUMS)
        if kw.startswith("exclusive"):
            return r.choice(NUMS[:10] if self.clean else NUMS)
        if kw == "pattern":
            return r.choice(PATTERNS[:4] if self.clean else PATTERNS + [3])
        if kw in ("allOf", "anyOf", "oneOf"):
            if bad:
                return r.choice([[], {}, True])
            return [self.schema(depth + 1, defs) for _ in range(r.randint(1, 3))]
        if kw == "$ref":
            if self.clean:
                return r.choice(["#/$defs/a", "#/$defs/b"] + [f"#/$defs/{d}" for d in defs])
            return r.choice(["#/$defs/a", "#/$defs/b", "#/definitions/a", "#/properties/a", "#/$defs/nope",
                             "#/", "#/allOf/0", "#a", "other.json", "#/$defs/a%20b", 3]
                            + [f"#/$defs/{d}" for d in defs])
        if kw in ("format", "title", "description", "$comment"):
            return r.choice(["date", "email", "é"] + ([] if self.clean else [3])) if kw == "format" or bad else "t"
        if kw == "examples":
            return r.choice([[1], "x"][: 1 if self.clean else 2])
        if kw in ("deprecated", "uniqueItems"):
            return r.choice([True, False, 1][: 2 if self.clean else 3])
        if kw == "$id":
            return r.choice(["https://example.invalid/x", "x#y"])
        return self.value()

    def top(self):
        self.clean = self.r.random() < 0.5
        s = self.schema()
        if isinstance(s, dict) and (self.clean or self.r.random() < 0.5):
            s["$defs"] = {"a": self.schema(2, ("b",)), "b": self.schema(2)}
        return s

    def doc(self, s, depth=0):
        """Mostly the shape the schema describes, then perhaps mutated."""
        r = self.r
        if not isinstance(s, dict) or depth > 4 or r.random() < 0.15:
            return self.value()
        if "const" in s and r.random() < 0.7:
            return copy.deepcopy(s["const"])
        if isinstance(s.get("enum"), list) and s["enum"] and r.random() < 0.7:
            return copy.deepcopy(r.choice(s["enum"]))
        for kw in ("allOf", "anyOf", "oneOf"):
            if isinstance(s.get(kw), list) and s[kw] and r.random() < 0.5:
                return self.doc(r.choice(s[kw]), depth + 1)
        t = s.get("type")
        t = r.choice(t) if isinstance(t, list) and t else t
        if t == "object" or isinstance(s.get("properties"), dict):
            props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
            out = {k: self.doc(v, depth + 1) for k, v in props.items() if r.random() < 0.85}
            if isinstance(s.get("required"), list):
                out.update({k: self.value() for k in s["required"] if isinstance(k, str) and k not in out})
            return self.mutate(out)
        if t == "array":
            return self.mutate([self.doc(s.get("items"), depth + 1) for _ in range(r.randint(0, 3))])
        if t == "string":
            return r.choice(["a", "ab", "é", "名名名", "", "12", "x" * 12, "b"])
        if t in ("number", "integer"):
            return r.choice([0, 1, 2, 3, -1, 1.0, 2.5, -0.0, 10**20, float("nan"), True])
        return self.value()

    def mutate(self, doc):
        r = self.r
        if r.random() < 0.25:
            if isinstance(doc, dict) and doc and r.random() < 0.5:
                doc.pop(r.choice(list(doc)))
            elif isinstance(doc, dict):
                doc[r.choice(KEYS)] = self.value()
            elif isinstance(doc, list):
                doc.append(self.value())
        return doc


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except ScorerInputError as err:
        return ("ScorerInputError", str(err))
    except BaseException as err:   # today's path crashes on some inputs (a `$ref` cycle,
        if isinstance(err, (KeyboardInterrupt, SystemExit)):   # where rpds panics): the same crash
            raise
        return (type(err).__name__, str(err)[:200])


def lint_report(schema):
    out = []
    expect_rules._check_format({"json_schema": schema}, "expect.format", lambda code, msg, **kw: out.append((code, msg)))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_scorer_and_linter_agree_with_the_jsonschema_path(seed, monkeypatch):
    rnd = random.Random(seed)
    g = Gen(rnd)
    counts = {"fast_schema": 0, "fast_pass": 0, "slow_schema": 0, "docs": 0, "fast_fail": 0}
    for _ in range(150):
        schema = g.top()
        docs = [g.doc(schema) for _ in range(6)] + [g.value()]
        answers = [json.dumps(d) for d in docs] + ["not json", "```json\n" + json.dumps(docs[0]) + "\n```"]
        expect = {"format": {"json_schema": schema}}
        fast_ok = user.user_checker(schema) is not None
        counts["fast_schema" if fast_ok else "slow_schema"] += 1
        if not fast_ok and counts["slow_schema"] % 8:
            # a schema it is not sure of takes the jsonschema path itself: both sides would run the
            # same code (one in eight is still compared, so a second switch would be caught); the
            # cyclic ones are most of jsonschema's time here (it recurses to the limit)
            continue
        fast_lint = lint_report(schema) if isinstance(schema, dict) else None
        new = [outcome(score_answer, a, expect) for a in answers]
        with monkeypatch.context() as m:
            off(m)
            check_once(m)
            old = [outcome(score_answer, a, expect) for a in answers]
            old_lint = lint_report(schema) if isinstance(schema, dict) else None
        assert fast_lint == old_lint, schema
        for a, n, o in zip(answers, new, old):
            assert json.dumps(n, sort_keys=True) == json.dumps(o, sort_keys=True), (schema, a, n, o)
            counts["docs"] += 1
            if fast_ok and n[0] == "ok" and n[1]["verdict"] == "pass":
                counts["fast_pass"] += 1
            if fast_ok and n[0] == "ok" and n[1]["verdict"] == "fail":
                counts["fast_fail"] += 1   # the fast check said no: jsonschema wrote the reasons
    # both sides of every comparison are exercised (else this test could not fail)
    assert counts["fast_schema"] > 40 and counts["slow_schema"] > 40, counts
    assert counts["fast_pass"] > 80 and counts["fast_fail"] > 80, counts


EDGE_SCHEMAS = [
    True, False, {}, {"type": "integer"}, {"minLength": 1.0}, {"minLength": True}, {"minLength": -0.0},
    {"minLength": -1}, {"minItems": 1.5}, {"maxLength": 10**30}, {"minimum": float("nan")},
    {"maximum": float("inf")}, {"type": ["string", "string"]}, {"type": []}, {"required": ["a", "a"]},
    {"allOf": []}, {"pattern": "("}, {"pattern": "^é+$"}, {"$ref": "#"}, {"$ref": "#/$defs/a", "$defs": {}},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"anyOf": [{"allOf": [False, {"$ref": "#"}]}, True]}, {"$schema": "http://json-schema.org/draft-07/schema#",
                                                          "type": "integer"},
    {"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 1, "exclusiveMinimum": True},
    {"$schema": user.DRAFT_2020_12, "const": 1}, {"x-extension": {"type": 5}}, {"$id": "x", "type": "string"},
    {"items": [{"type": "string"}]}, {"enum": [1, True, [1.0], {"a": -0.0}]}, {"not": {"maximum": float("nan")}},
    {"properties": {"a/b": {"type": "string"}}, "$ref": "#/properties/a~1b"}, {"format": "date"}, {"format": 3},
]
EDGE_DOCS = [None, True, 1, 1.0, -0.0, 2.5, "é", "", [1, True], {"a": 1}, {"a/b": 3}, float("nan"),
             [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]


@pytest.mark.parametrize("schema", EDGE_SCHEMAS, ids=range(len(EDGE_SCHEMAS)))
def test_edge_schemas_agree(schema, monkeypatch):
    expect = {"format": {"json_schema": schema}}
    answers = [json.dumps(d) for d in EDGE_DOCS]
    new = [outcome(score_answer, a, expect) for a in answers]
    new_lint = lint_report(schema) if isinstance(schema, dict) else None
    with monkeypatch.context() as m:
        off(m)
        old = [outcome(score_answer, a, expect) for a in answers]
        old_lint = lint_report(schema) if isinstance(schema, dict) else None
    assert new_lint == old_lint
    for a, n, o in zip(answers, new, old):
        assert json.dumps(n, sort_keys=True) == json.dumps(o, sort_keys=True), (a, n, o)


def test_only_a_sure_schema_is_vouched_for():
    assert user.user_checker({"type": "object", "required": ["a"], "properties": {"a": {"minLength": 1.0}}})
    assert user.well_formed({"$schema": user.DRAFT_2020_12, "$defs": {"n": {"type": "integer"}},
                             "items": {"$ref": "#/$defs/n"}})
    for unsure in [{"minLength": True}, {"type": "strin"}, {"pattern": "("}, {"$ref": "#"}, {"x-k": 1},
                   {"$schema": user.DRAFT_2020_12 + "#"}, {"minimum": math.nan}, {"properties": {"a": {"$id": "a"}}},
                   {"allOf": []}, {"$ref": "#/$defs/none"}, {"not": {"$schema": user.DRAFT_2020_12}}]:
        assert user.user_checker(unsure) is None and not user.well_formed(unsure), unsure


def test_the_metaschema_and_draft_are_what_the_module_assumes():
    import jsonschema
    from jsonschema import validators
    assert validators.validator_for({}) is jsonschema.Draft202012Validator
    assert validators.validator_for({"$schema": user.DRAFT_2020_12}, default=None) is jsonschema.Draft202012Validator
    # every keyword the vetting accepts is one jsonschema's 2020-12 validator knows, or an annotation
    known = set(jsonschema.Draft202012Validator.VALIDATORS) | {
        "$schema", "$defs", "definitions", "title", "description", "$comment", "default", "examples",
        "deprecated", "readOnly", "writeOnly", "then", "else"}   # then/else are read by `if`
    accepted = set(user.SCHEMA_ONE + user.SCHEMA_MAP + user.SCHEMA_LIST + user.COUNTS + user.BOUNDS
                   + user.TEXTS + user.FLAGS) | {"type", "required", "pattern", "$ref", "enum", "const"}
    assert accepted <= known, accepted - known


@pytest.mark.parametrize("bad", [5, None, True, ["https://json-schema.org/draft/2020-12/schema"]])
def test_a_root_schema_keyword_that_is_not_a_string_is_named_not_a_crash(bad):
    """jsonschema reads a root `$schema` as a URI to pick the draft; a number there was an
    AttributeError out of the scorer ('int' object has no attribute 'decode') and the same words
    from the linter. Both now say which key is wrong and what it must be."""
    schema = {"$schema": bad, "type": "object"}
    with pytest.raises(ScorerInputError) as err:
        score_answer("{}", {"format": {"json_schema": schema}})
    assert str(err.value).startswith("expect.format.json_schema is not a valid JSON Schema: "
                                     "$schema must be a string")
    assert repr(bad) in str(err.value)
    assert lint_report(schema) == [("bad_expect_shape", str(err.value))]   # the same words from the linter
