"""The JSON Schemas every file shape ships as, and the one function that validates against them.

Each `<name>.schema.json` beside this file is a contract. Readers call
`validate(doc, "<name>", source=path)` at their boundary; a violation raises
AssayError(2) whose message names the file, the key path and (for YAML sources,
when a line lookup is given) the line.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from ..core.errors import AssayError
from ..core.suggest import did_you_mean

SCHEMA_DIR = Path(__file__).resolve().parent
MAX_REPORTED = 10


def schema_names() -> list[str]:
    return sorted(p.name[: -len(".schema.json")] for p in SCHEMA_DIR.glob("*.schema.json"))


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    path = SCHEMA_DIR / f"{name}.schema.json"
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@lru_cache(maxsize=None)
def _validator(name: str):
    import jsonschema
    from referencing import Registry, Resource

    resources = []
    for other in schema_names():
        doc = load_schema(other)
        resources.append((f"{other}.schema.json", Resource.from_contents(doc)))
        if "$id" in doc:
            resources.append((doc["$id"], Resource.from_contents(doc)))
    registry = Registry().with_resources(resources)
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    # The shipped schemas are checked once by the test suite (tests/test_schemas_docs.py),
    # not here: check_schema costs ~0.2 s per schema in every process.
    return cls(schema, registry=registry, format_checker=cls.FORMAT_CHECKER)


@lru_cache(maxsize=None)
def fast_checker(name: str) -> "Callable[[Any], bool] | None":
    """The compiled yes/no check of `<name>.schema.json` (assay.schemas.fast), or None when the
    schema uses a keyword that module does not implement (then jsonschema decides every document)."""
    from .fast import Compiler, Unsupported
    try:
        return Compiler(load_schema).ref(name, "")
    except (Unsupported, KeyError, TypeError, re.error):
        return None


def key_path(path: Iterable[Any]) -> str:
    """`cases[3].expect.answer` style path; `(root)` for the document itself."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(root)"


def iter_errors(instance: Any, name: str) -> list[dict[str, Any]]:
    """All violations as `{path: [...], key: "a.b[0]", message}`, sorted by path."""
    from ..core.jsonio import MAX_DEPTH, too_deep
    deep = too_deep(instance, MAX_DEPTH)
    if deep is not None:  # checked before jsonschema, which recurses with the document
        return [{"path": [], "key": deep if len(deep) <= 120 else deep[:60] + " … " + deep[-40:],
                 "message": f"nested deeper than {MAX_DEPTH} levels (a hand edit or a hostile file; "
                            "assay never writes such a document)"}]
    fast = fast_checker(name)
    try:
        if fast is not None and fast(instance):
            return []   # valid: jsonschema is never imported (it words the errors of an invalid one)
    except RecursionError:
        return [{"path": [], "key": "(root)", "message": "nested too deeply to check"}]
    errors = []
    try:
        for err in _validator(name).iter_errors(instance):
            path = list(err.absolute_path)
            errors.append({"path": path, "key": key_path(path), "message": _plain(err)})
    except RecursionError:
        return [{"path": [], "key": "(root)", "message": "nested too deeply to check"}]
    errors.sort(key=lambda e: (e["key"], e["message"]))
    return errors


def _plain(err: Any) -> str:
    if err.validator == "additionalProperties":
        known = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(known))
        allowed = ", ".join(known) or "none"
        hints = "".join(f" ({key!r}{did_you_mean(key, known)})" for key in extra if did_you_mean(key, known))
        return f"unknown key(s) {', '.join(map(repr, extra))} (allowed: {allowed}){hints}"
    if err.validator == "required":
        return err.message.replace("is a required property", "is required but missing")
    msg = err.message
    if err.validator == "pattern" and isinstance(err.instance, str) and isinstance(err.schema.get("description"), str):
        # a regex says nothing to the person who wrote `$APP_URL`: the field's own description does
        msg = f"{err.instance!r} is not in the form this key takes: {err.schema['description'].rstrip('.')}"
        bare = _BARE_VAR.fullmatch(err.instance.strip())
        if bare and "${" in err.schema["description"]:
            msg += f" (write the variable as ${{{bare.group(1)}}})"
        elif bare and err.schema["pattern"] == _NAME_ONLY:
            msg += f" (the variable's name only: {bare.group(1)})"
    if err.validator == "type" and isinstance(err.instance, str) and _YAML_TEXT_NUMBER.fullmatch(err.instance.strip()):
        types = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        if "number" in types or "integer" in types:   # YAML 1.1 reads 1e-3 (no dot) as text
            msg += f" (YAML reads {err.instance.strip()} as text: write it with a dot, {_with_dot(err.instance)}, or as a decimal)"
    if err.validator == "enum" and isinstance(err.instance, str) and isinstance(err.validator_value, list):
        hint = did_you_mean(err.instance, [v for v in err.validator_value if isinstance(v, str)])
        msg += f" ({hint[2:]})" if hint else ""
    if len(msg) > 300:
        msg = msg[:300] + "…"
    return msg


_YAML_TEXT_NUMBER = re.compile(r"[-+]?[0-9]+[eE][-+]?[0-9]+")   # 1e-3: a number to JSON, text to YAML 1.1


def _with_dot(text: str) -> str:
    mantissa, exp = re.split(r"[eE]", text.strip(), maxsplit=1)
    return f"{mantissa}.0e{exp}"


_BARE_VAR = re.compile(r"\$?\{?\s*\$?([A-Za-z_][A-Za-z0-9_]*)\s*\}?")
_NAME_ONLY = "^[A-Za-z_][A-Za-z0-9_]*$"   # the schemas' pattern for an environment variable's name
_UNKNOWN = re.compile(r"^unknown key\(s\) (.*?) \(allowed")
_BAD_NAME = re.compile(r"^'([^']*)' is not one of \[")


def _schema_at(schema: dict[str, Any], path: list[Any]) -> dict[str, Any] | None:
    """The sub-schema describing the value at `path` (properties / items only; None if unknown)."""
    node: Any = schema
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get("items") if isinstance(part, int) else (node.get("properties") or {}).get(part)
    return node if isinstance(node, dict) else None


def _plainer(error: dict[str, Any], name: str) -> str:
    """A oneOf miss says only "not valid under any of the given schemas": name the allowed forms instead."""
    if "is not valid under any of the given schemas" not in error["message"]:
        return error["message"]
    sub = _schema_at(load_schema(name), error["path"]) or {}
    listed = " or ".join(f for f in (alt.get("description", "") for alt in sub.get("oneOf", [])) if f)
    return f"matches none of its allowed forms: {listed}" if listed else error["message"]


def _line(error: dict[str, Any], line_of: Callable[[list[Any]], int | None]) -> int | None:
    """The line to point at: an unknown key's own line, else the value's (or its nearest parent's)."""
    m = _UNKNOWN.match(error["message"])
    if m:
        for key in re.findall(r"'([^']*)'", m.group(1)):
            line = line_of(list(error["path"]) + [key])
            if line is not None:
                return line
    m = _BAD_NAME.match(error["message"])
    if m:  # a propertyNames miss (`'routng' is not one of [...]` at the mapping): the key's own line
        line = line_of(list(error["path"]) + [m.group(1)])
        if line is not None:
            return line
    return line_of(error["path"])


def validate(
    instance: Any,
    name: str,
    *,
    source: str | Path,
    line_of: Callable[[list[Any]], int | None] | None = None,
    code: int = 2,
    what: str | None = None,
) -> None:
    """Raise AssayError(code) naming file, key path and line for every violation found (first 10).

    `line_of(path)` maps a key path to a source line (YAML readers pass their line index);
    `what` names the document in the message (default "<name> file <source>").
    """
    errors = iter_errors(instance, name)
    if not errors:
        return
    shown, violations = [], []
    for e in errors[:MAX_REPORTED]:
        e["message"] = _plainer(e, name)
        line = _line(e, line_of) if line_of else None
        where = f"{source}:{line}" if line is not None else f"{source}"
        shown.append(f"{where}: {e['key']}: {e['message']}")
        violations.append({"key": e["key"], "message": e["message"], "line": line})
    more = f" (and {len(errors) - MAX_REPORTED} more)" if len(errors) > MAX_REPORTED else ""
    label = what or f"{name} file {source}"
    is_yaml = str(source).endswith((".yaml", ".yml"))
    raise AssayError(
        f"{label} does not match its schema: " + "; ".join(shown) + more
        + f". Fix the {'YAML' if is_yaml else 'file'} and re-run.",
        code,
        file=str(source),
        schema=name,
        violations=violations,
    )
