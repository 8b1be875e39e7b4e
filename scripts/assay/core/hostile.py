"""Values an app may send that JSON cannot hold: NaN, ±Infinity, a number too large for a double
(`1e400`), a lone UTF-16 surrogate. They are the app's data, not the runner's failure: each becomes
`HostileText` — a plain string to every writer (so it is recorded as text) that the scoring layers can
still recognise, so the check that reads it is unscored with the reason instead of scored on it.

One definition, used by every reader of what the app sends: response bodies (HTTP, CLI, function
results) and spans (OTLP files and the OTLP/HTTP receiver, JSON or protobuf).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class HostileText(str):
    """A hostile value recorded as text; `what` says what the app sent ("NaN", "a lone surrogate")."""
    what: str = ""

    def __new__(cls, text: str, what: str) -> "HostileText":
        obj = super().__new__(cls, text)
        obj.what = what
        return obj


def _constant(name: str) -> HostileText:
    return HostileText(name, name)


def _float(text: str) -> float | HostileText:
    value = float(text)
    return value if math.isfinite(value) else HostileText(text, f"{text} (beyond a double)")


def _visible(text: str) -> HostileText:
    return HostileText(_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text), "a lone UTF-16 surrogate")


def clean(value: Any) -> tuple[Any, list[str]]:
    """(value with every hostile leaf as HostileText, ["<path>: <what>", ...]). Iterative over
    containers, so any depth a parser let through is safe; containers are rebuilt only if touched."""
    found: list[str] = []

    def leaf(v: Any, path: str) -> Any:
        if isinstance(v, HostileText):
            found.append(f"{path or '(root)'}: {v.what}")
            return v
        if isinstance(v, float) and not math.isfinite(v):
            name = "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
            found.append(f"{path or '(root)'}: {name}")
            return HostileText(name, name)
        if isinstance(v, str) and _SURROGATE.search(v):
            found.append(f"{path or '(root)'}: a lone UTF-16 surrogate")
            return _visible(v)
        return v

    root: list[Any] = [value]
    stack: list[tuple[Any, Any, str]] = [(root, 0, "")]
    while stack:
        parent, key, path = stack.pop()
        v = parent[key]
        if isinstance(v, dict):
            items = list(v.items())
            if any(isinstance(k, str) and _SURROGATE.search(k) for k, _ in items):
                found.append(f"{path or '(root)'}: a key holding a lone UTF-16 surrogate")
                v = {(_visible(k) if isinstance(k, str) and _SURROGATE.search(k) else k): x for k, x in items}
                parent[key] = v
            for k in v:
                stack.append((v, k, f"{path}.{k}" if path else str(k)))
        elif isinstance(v, list):
            for i in range(len(v)):
                stack.append((v, i, f"{path}[{i}]"))
        elif isinstance(v, tuple):
            v = parent[key] = list(v)
            for i in range(len(v)):
                stack.append((v, i, f"{path}[{i}]"))
        else:
            new = leaf(v, path)
            if new is not v:
                parent[key] = new
    return root[0], sorted(found)


def loads(text: str) -> tuple[Any, list[str]]:
    """Parse what an app sent as JSON: (document, hostile findings). Raises ValueError (not JSON)
    and RecursionError (too deep) like json.loads; never returns a value JSON cannot hold."""
    fired: list[bool] = []

    def constant(name: str) -> HostileText:
        fired.append(True)
        return _constant(name)

    def number(token: str) -> float | HostileText:
        value = _float(token)
        if isinstance(value, HostileText):
            fired.append(True)
        return value
    doc = json.loads(text, parse_constant=constant, parse_float=number)
    if fired or _SURROGATE_ESCAPE.search(text) or _SURROGATE.search(text):
        return clean(doc)
    return doc, []


def holds(value: Any) -> HostileText | None:
    """The first hostile leaf inside `value` (a response part a check reads), else None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, HostileText):
            return v
        if isinstance(v, dict):
            stack.extend(v.values())
            stack.extend(k for k in v if isinstance(k, HostileText))
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return None


def note(found: list[str]) -> str:
    """The response note that lists what was recorded as text."""
    shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
    return f"values JSON cannot hold were recorded as text ({shown})"


def reason(what: str, value: HostileText) -> str:
    """The unscored reason for a check whose input holds a hostile value."""
    return f"{what} holds {value.what}, which JSON cannot carry: recorded as text, not scored"
