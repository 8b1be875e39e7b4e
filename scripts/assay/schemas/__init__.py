"""The JSON Schemas every file shape ships as, and the one function that validates against them.

Each `<name>.schema.json` beside this file is a contract. Readers call
`validate(doc, "<name>", source=path)` at their boundary; a violation raises
AssayError(2) whose message names the file, the key path and (for YAML sources,
when a line lookup is given) the line.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from ..core.errors import AssayError

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
    cls.check_schema(schema)
    return cls(schema, registry=registry, format_checker=cls.FORMAT_CHECKER)


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
    errors = []
    for err in _validator(name).iter_errors(instance):
        path = list(err.absolute_path)
        errors.append({"path": path, "key": key_path(path), "message": _plain(err)})
    errors.sort(key=lambda e: (e["key"], e["message"]))
    return errors


def _plain(err: Any) -> str:
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        allowed = ", ".join(sorted(err.schema.get("properties", {}))) or "none"
        return f"unknown key(s) {', '.join(map(repr, extra))} (allowed: {allowed})"
    if err.validator == "required":
        return err.message.replace("is a required property", "is required but missing")
    msg = err.message
    if len(msg) > 300:
        msg = msg[:300] + "…"
    return msg


def validate(
    instance: Any,
    name: str,
    *,
    source: str | Path,
    line_of: Callable[[list[Any]], int | None] | None = None,
    code: int = 2,
    what: str | None = None,
) -> None:
    """Raise AssayError(code) naming file, key path and line for every violation found."""
    errors = iter_errors(instance, name)
    if not errors:
        return
    shown = []
    for e in errors[:MAX_REPORTED]:
        line = line_of(e["path"]) if line_of else None
        if line is not None:
            e["line"] = line
        where = f"{source}:{line}" if line is not None else f"{source}"
        shown.append(f"{where}: {e['key']}: {e['message']}")
    more = f" (and {len(errors) - MAX_REPORTED} more)" if len(errors) > MAX_REPORTED else ""
    label = what or f"{name} file"
    raise AssayError(
        f"{label} {source} does not match its schema: " + "; ".join(shown) + more
        + f". Fix the {'YAML' if str(source).endswith(('.yaml', '.yml')) else 'file'} and re-run.",
        code,
        file=str(source),
        schema=name,
        violations=[{k: v for k, v in e.items() if k != "path"} for e in errors[:MAX_REPORTED]],
    )
