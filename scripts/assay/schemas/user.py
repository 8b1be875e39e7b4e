"""A user's JSON Schema (a case's `expect.format.json_schema`) checked without jsonschema, when provably safe.

`user_checker(schema)` returns the compiled yes/no check of assay.schemas.fast (UserCompiler) only
when the schema is one jsonschema would read as Draft 2020-12 (no `$schema`, or exactly
DRAFT_2020_12) and `Draft202012Validator.check_schema` would accept it: every keyword one fast.py
implements, each value of the type 2020-12's metaschema gives it (`type` a known name or a non-empty
list of unique known names, `required` unique strings, min*/max* non-negative integers where 1.0 is
an integer and True is not, `pattern` a regex `re` compiles, allOf/anyOf/oneOf non-empty lists of
schemas), `$ref` only a plain `#/...` pointer to a schema inside it, no cycle through `$ref`s, and
every value plain JSON. Anything else -- another draft, an unknown keyword, `$id`, an anchor, a
number that is NaN or infinite, a schema nested past MAX_JSON_DEPTH or MAX_DEPTH -- returns None: "not sure", and the
caller takes the jsonschema path exactly as before (so a malformed schema gets jsonschema's own
SchemaError). `well_formed(schema)` is the same test for the linter, which only asks that question.

The check only ever says "valid": a document it rejects goes to jsonschema, which words the errors.
A document nested deeper than MAX_DOC_DEPTH goes to jsonschema too (`doc_in_bounds`), so a
RecursionError there (a deep repr in an error message of a failing anyOf branch) is met as before.
tests/test_schema_user.py holds this module to jsonschema's answers on generated schemas and documents.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..core.jsonio import MISSING, dig
from .fast import TYPES, Check, UserCompiler

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
# the drafts jsonschema validates, as their metaschemas spell them (a trailing "#" is the same URI)
KNOWN_DRAFTS = (DRAFT_2020_12, "https://json-schema.org/draft/2019-09/schema",
                "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-06/schema#",
                "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-03/schema#")
MAX_JSON_DEPTH = 64  # nesting of the schema as JSON
MAX_DEPTH = 32       # nesting of its subschemas, unfolded through $refs
MAX_DOC_DEPTH = 48   # nesting of a document the fast check may call valid

SCHEMA_ONE = ("additionalProperties", "propertyNames", "items", "not", "if", "then", "else")
SCHEMA_MAP = ("properties", "$defs", "definitions")
SCHEMA_LIST = ("allOf", "anyOf", "oneOf")
COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
TEXTS = ("$comment", "title", "description", "format")
FLAGS = ("deprecated", "readOnly", "writeOnly")
_REF = re.compile(r"#(?:/(?:[A-Za-z0-9_.$-]|~[01])+)*")


class _NotSure(Exception):
    pass


def _plain_json(node: Any, depth: int = 0) -> None:
    """Only dict (str keys) / list / str / int / finite float / bool / None, at most MAX_JSON_DEPTH deep."""
    if depth > MAX_JSON_DEPTH:
        raise _NotSure
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(k, str):
                raise _NotSure
            _plain_json(v, depth + 1)
    elif isinstance(node, list):
        for v in node:
            _plain_json(v, depth + 1)
    elif isinstance(node, float):
        if not math.isfinite(node):
            raise _NotSure
    elif not (node is None or isinstance(node, (str, int, bool))):
        raise _NotSure


def _count(v: Any) -> bool:
    """The metaschema's nonNegativeInteger under jsonschema's 2020-12 integer (1.0 yes, True no)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return (isinstance(v, int) or v.is_integer()) and not v < 0


class _Walk:
    def __init__(self) -> None:
        self.at: dict[tuple, Any] = {}            # schema position (keys only) -> its node
        self.kids: dict[tuple, list[tuple]] = {}  # schema position -> subschema positions
        self.refs: dict[tuple, tuple] = {}        # position holding a $ref -> target position

    def schema(self, node: Any, path: tuple) -> None:
        self.at[path] = node
        self.kids[path] = kids = []
        if isinstance(node, bool):
            return
        if not isinstance(node, dict):
            raise _NotSure
        for kw, v in node.items():
            if kw == "$schema":
                if path or v != DRAFT_2020_12:
                    raise _NotSure
            elif kw in SCHEMA_ONE:
                if kw == "items" and "prefixItems" in node:
                    raise _NotSure
                kids.append(path + (kw,))
                self.schema(v, path + (kw,))
            elif kw in SCHEMA_MAP:
                if not isinstance(v, dict):
                    raise _NotSure
                for name, sub in v.items():
                    kids.append(path + (kw, name))
                    self.schema(sub, path + (kw, name))
            elif kw in SCHEMA_LIST:
                if not isinstance(v, list) or not v:
                    raise _NotSure
                for i, sub in enumerate(v):
                    kids.append(path + (kw, i))
                    self.schema(sub, path + (kw, i))
            elif kw == "type":
                names = [v] if isinstance(v, str) else v
                if not isinstance(names, list) or not names or len(set(map(str, names))) != len(names) \
                        or not all(isinstance(n, str) and n in TYPES for n in names):
                    raise _NotSure
            elif kw == "required":
                if not isinstance(v, list) or not all(isinstance(n, str) for n in v) or len(set(v)) != len(v):
                    raise _NotSure
            elif kw in COUNTS:
                if not _count(v):
                    raise _NotSure
            elif kw in BOUNDS:
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise _NotSure
            elif kw == "pattern":
                if not isinstance(v, str):
                    raise _NotSure
                try:
                    re.compile(v)
                except (re.error, RecursionError, OverflowError, ValueError):
                    raise _NotSure from None
            elif kw == "$ref":
                if not isinstance(v, str) or not _REF.fullmatch(v):
                    raise _NotSure
                self.refs[path] = _ref_parts(v)
            elif kw in TEXTS:
                if not isinstance(v, str):
                    raise _NotSure
            elif kw in FLAGS:
                if not isinstance(v, bool):
                    raise _NotSure
            elif kw == "examples":
                if not isinstance(v, list):
                    raise _NotSure
            elif kw not in ("enum", "const", "default") or (kw == "enum" and not isinstance(v, list)):
                raise _NotSure    # an unknown or unsupported keyword, an anchor, an $id, ...

    def unfolded_depth(self) -> int:
        """The deepest chain of subschemas (through $refs); _NotSure on a $ref cycle or a dangling one."""
        memo: dict[tuple, int] = {}
        active: set[tuple] = set()

        def depth(path: tuple) -> int:
            if path in memo:
                return memo[path]
            if path in active or len(active) > MAX_DEPTH:
                raise _NotSure
            active.add(path)
            nexts = list(self.kids[path])
            if path in self.refs:
                target = self.refs[path]
                if target not in self.at:
                    raise _NotSure
                nexts.append(target)
            memo[path] = 1 + max((depth(p) for p in nexts), default=0)
            active.discard(path)
            return memo[path]

        return max(depth(p) for p in list(self.at))


def _vetted(schema: Any) -> bool:
    try:
        _plain_json(schema)
        walk = _Walk()
        walk.schema(schema, ())
        return walk.unfolded_depth() <= MAX_DEPTH
    except (_NotSure, RecursionError):
        return False


def well_formed(schema: Any) -> bool:
    """True only when Draft202012Validator.check_schema(schema) is sure to pass (False: not sure)."""
    return _vetted(schema)


def user_checker(schema: Any) -> Check | None:
    """The fast yes/no check of a user's schema, or None (not sure: use jsonschema for everything)."""
    if not _vetted(schema):
        return None
    try:
        return UserCompiler(schema).ref("user", "#")
    except Exception:   # fast.Unsupported, or anything unforeseen: jsonschema decides
        return None


def doc_in_bounds(doc: Any) -> bool:
    """Whether a document is shallow enough (MAX_DOC_DEPTH) for the fast check to call it valid."""
    stack = [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DOC_DEPTH:
            return False
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return True


def dialect_problem(schema: Any) -> str | None:
    """Why jsonschema cannot pick the draft `schema` names, or None. A `$schema` that is not a string
    (jsonschema reads it as a URI and fails with an AttributeError), or a string that is no draft
    jsonschema knows: it would validate under the latest draft without a word (a DeprecationWarning
    at most), so a typo'd draft-07 URI would silently drop draft-07's `additionalItems` or
    `dependencies` -- a pass the author did not ask for. The answer scorer and the expect linter both
    ask this before jsonschema validates, so each says what is wrong instead of guessing."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return None
    uri = schema["$schema"]
    if not isinstance(uri, str):
        return (f"$schema must be a string (a draft's URI, e.g. {DRAFT_2020_12}), "
                f"got {type(uri).__name__} {uri!r}")
    from jsonschema import validators  # only reached off the fast path, which imports it next anyway

    if validators.validator_for(schema, default=None) is None:
        return (f"$schema {uri!r} is not a JSON Schema draft jsonschema knows; use one of "
                f"{', '.join(KNOWN_DRAFTS)}, or leave $schema out for {DRAFT_2020_12}")
    return None


def _ref_parts(ref: str) -> tuple[str, ...]:
    """The keys of a `#/...` pointer (matched by _REF), `~1` and `~0` unescaped."""
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in ref[1:].split("/") if p)


def _pointer(schema: Any, ref: Any) -> Any:
    """The subschema a local `#/...` pointer names (None: not a local pointer, or it names nothing)."""
    if not isinstance(ref, str) or not _REF.fullmatch(ref):
        return None
    node = dig(schema, _ref_parts(ref))
    return None if node is MISSING else node


def always_loops(schema: Any) -> str | None:
    """The `$ref` chain that sends jsonschema round in a circle on EVERY answer, or None.

    From the root, only through what a full check always applies to the answer at the same place
    (a `$ref` to a `#...` pointer, each `allOf` branch): coming back to a schema already on the
    way is endless recursion whatever the answer is. A loop that steps into a property or an item,
    or sits behind anyOf/oneOf/not/if (which can stop early), is not reported: the scorer names
    those on the answer that meets them (score/answer.py LOOPING_SCHEMA)."""
    on_way: dict[int, str] = {}   # id of each schema on the way -> where it was reached (in order)
    seen: set[int] = set()        # schemas already walked to the end without a loop

    def walk(node: Any, at: str) -> str | None:
        if not isinstance(node, dict) or id(node) in seen:
            return None
        if id(node) in on_way:
            ids = list(on_way)
            return " -> ".join(list(on_way.values())[ids.index(id(node)):] + [at])
        on_way[id(node)] = at
        nexts = [(_pointer(schema, node.get("$ref")), node.get("$ref"))]
        branches = node.get("allOf")
        if isinstance(branches, list):
            nexts.extend((b, f"{at}/allOf/{i}") for i, b in enumerate(branches))
        for sub, where in nexts:
            found = walk(sub, where)
            if found:
                return found
        del on_way[id(node)]
        seen.add(id(node))
        return None

    try:
        return walk(schema, "#")
    except RecursionError:
        return None


# Keywords JSON Schema reads beside a draft's validators (jsonschema's VALIDATORS): annotations,
# identifiers, containers of schemas, and the companions another keyword's validator reads. With the
# validators: what is not ignored, in any draft jsonschema knows.
ANNOTATIONS = ("$schema", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "$comment",
               "$defs", "definitions", "title", "description", "default", "examples", "deprecated", "readOnly",
               "writeOnly", "contentMediaType", "contentEncoding", "contentSchema",
               # read by another keyword's validator: then/else by `if`, min/maxContains by `contains`;
               # draft-04's boolean exclusiveMinimum/Maximum by minimum/maximum, its `id`; draft-03's
               # boolean `required` by `properties`
               "then", "else", "minContains", "maxContains", "exclusiveMinimum", "exclusiveMaximum", "id", "required")
_ONE = SCHEMA_ONE + ("contains", "additionalItems", "unevaluatedItems", "unevaluatedProperties", "contentSchema")
_MAP = SCHEMA_MAP + ("patternProperties", "dependentSchemas", "dependencies")
_LIST = SCHEMA_LIST + ("prefixItems",)


def ignored_keywords(schema: Any, validators: Any) -> list[tuple[str, str]]:
    """(where, keyword) for every key of `schema` or of a subschema in it that its draft does not know
    (`validators`: the draft's keyword names), in document order. JSON Schema ignores such a key: a
    typo'd `requird` or `tyep` checks nothing, and every answer passes what it was meant to check."""
    known = set(validators) | set(ANNOTATIONS)
    found: list[tuple[str, str]] = []

    def walk(node: Any, at: str, depth: int) -> None:
        if not isinstance(node, dict) or depth > MAX_JSON_DEPTH:
            return
        for key, value in node.items():
            if key not in known:
                found.append((at or "(root)", str(key)))
                continue
            if key in _LIST or (key == "items" and isinstance(value, list)):   # draft-07's tuple items too
                for i, sub in enumerate(value if isinstance(value, list) else []):
                    walk(sub, f"{at}/{key}/{i}", depth + 1)
            elif key in _ONE:
                walk(value, f"{at}/{key}", depth + 1)
            elif key in _MAP and isinstance(value, dict):
                for name, sub in value.items():
                    walk(sub, f"{at}/{key}/{name}", depth + 1)
    walk(schema, "", 0)
    return found
