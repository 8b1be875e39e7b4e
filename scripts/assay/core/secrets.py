"""`${NAME}` references (contracts §5.3): resolved for the wire only, never written to disk.

The recorded form of a request keeps `${NAME}` literally (bodies, URLs, endpoints) and
replaces every header that came from an env reference or an auth block with REDACTED (a case
identity's token header keeps its variable's name, `Bearer ${NAME}`: who asked is part of a replay key).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from .errors import AssayError

ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
REDACTED = "<redacted>"
# Variables a child process (a cli app, a command judge) may be given whose values are not
# secrets; every other variable it is given is registered as one (redacted from every artifact).
PLAIN_ENV = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
                       "TERM", "TZ", "TMPDIR", "PWD", "PYTHONPATH", "PYTHONIOENCODING", "PYTHONUNBUFFERED"})
# Header names that carry a credential: a value written out under one of them is a secret on disk.
# The same words in a variable's name (APP_TOKEN, API_KEY) say it holds a credential.
CREDENTIAL_HEADER = re.compile(r"^(authorization|proxy-authorization|cookie)$|api[-_]?key|token|secret|passw|credential",
                               re.IGNORECASE)


def secret_shaped_name(name: str) -> bool:
    """An agent's `env` entry whose name says it holds a secret (given by `${VAR}` only, never bound
    into a replay key): KEY, TOKEN, SECRET, PASSWORD, or a credential-shaped header's words."""
    return any(w in name.upper() for w in ("KEY", "TOKEN", "SECRET", "PASSWORD")) or bool(CREDENTIAL_HEADER.search(name))


def env_refs(value: Any) -> set[str]:
    """Every NAME referenced as `${NAME}` anywhere inside a JSON-like value."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.update(ENV_REF.findall(item))
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return found


def has_env_ref(value: Any) -> bool:
    return isinstance(value, str) and ENV_REF.search(value) is not None


def auth_env_names(adapter: Mapping[str, Any]) -> set[str]:
    """Names an auth block reads directly (`token_env`, `cookie_env`), beyond `${...}` refs."""
    auth = ((adapter.get("invocation") or {}).get("auth")) or {}
    names = set()
    for key in ("token_env", "cookie_env"):
        if isinstance(auth.get(key), str) and auth[key]:
            names.add(auth[key])
    return names


def case_env_names(cases: Iterable[Mapping[str, Any]]) -> set[str]:
    names = set()
    for case in cases:
        ident = case.get("identity")
        if isinstance(ident, Mapping) and isinstance(ident.get("token_env"), str):
            names.add(ident["token_env"])
    return names


def env_ref_paths(value: Any, prefix: str) -> dict[str, str]:
    """{NAME: the first dotted key path that references `${NAME}`} inside a JSON-like value."""
    found: dict[str, str] = {}
    stack = [(prefix, value)]
    while stack:
        path, item = stack.pop(0)
        if isinstance(item, str):
            for name in ENV_REF.findall(item):
                found.setdefault(name, path)
        elif isinstance(item, Mapping):
            stack.extend((f"{path}.{k}" if path else str(k), v) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(item))
    return found


def resolve(names: Iterable[str], environ: Mapping[str, str],
            where: Mapping[str, str] | None = None) -> dict[str, str]:
    """Values for every name; all missing or empty names at once -> AssayError(3).
    `where` maps a name to the file and key that reference it, shown beside the name."""
    names = sorted(set(names))
    missing = [n for n in names if not environ.get(n)]
    if missing:
        where = where or {}
        shown = [f"{n} ({where[n]})" if where.get(n) else n for n in missing]
        raise AssayError(
            f"pre-flight: environment variable(s) not set or empty: {', '.join(shown)}. "
            "Export them before running (a value is never read from a file and never written to one).",
            3, missing_env=missing, referenced_by={n: where[n] for n in missing if where.get(n)})
    return {n: environ[n] for n in names}


def expand(text: str, env: Mapping[str, str]) -> str:
    """Substitute `${NAME}` with its resolved value (for the wire only)."""
    return ENV_REF.sub(lambda m: env[m.group(1)], text)


def expand_deep(value: Any, env: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return expand(value, env) if "${" in value else value
    if isinstance(value, dict):
        return {k: expand_deep(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_deep(v, env) for v in value]
    return value


def url_credentials(url: Any) -> list[str]:
    """The parts of a URL that may carry a credential, each as it travels on its own: the userinfo
    (`user:password`) and its password, the query and the fragment (what makes a base URL's variable
    a secret, `address_vars`). A server that quotes the path it was asked for (`Cannot POST
    /v1?key=...`) echoes the query, never the whole URL the variable holds. [] for a value that is
    not a URL (no `://`)."""
    from urllib.parse import urlsplit
    if not isinstance(url, str) or "://" not in url:
        return []
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return [url]   # not even a URL: all of it
    userinfo = parts.netloc.rpartition("@")[0]
    found = [userinfo, userinfo.partition(":")[2], parts.query, parts.fragment]
    return list(dict.fromkeys(p for p in found if p))


def url_address(url: str) -> str:
    """A URL's address: scheme, host, port (when given) and path, never its userinfo, query or fragment
    (a credential, `url_credentials`): what an error or a judge's binding shows of a base_url."""
    from urllib.parse import urlsplit, urlunsplit
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url.split("?")[0].split("#")[0].rsplit("@", 1)[-1]
    if not parts.netloc:
        return url.split("?")[0].split("#")[0]
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, host + (f":{port}" if port else ""), parts.path, "", ""))


def address_vars(adapter: Mapping[str, Any], env: Mapping[str, str]) -> set[str]:
    """Variables that hold only the app's address or its span file: named in `invocation.base_url`
    and/or `traces.location` and nowhere else in the adapter, with a value that carries no
    credentials (no `user@`, no query or fragment).

    Their values are not secrets: error messages show the resolved URL with its port (wave 2 §1),
    so "connection refused on http://127.0.0.1:8766" says which port was tried, and a span file
    that does not exist is named by its resolved path.
    """
    inv = adapter.get("invocation") or {}
    traces = adapter.get("traces") if isinstance(adapter.get("traces"), Mapping) else {}
    named = env_refs([v for v in (inv.get("base_url"), traces.get("location")) if isinstance(v, str)])
    if not named:
        return set()
    elsewhere = env_refs({k: v for k, v in inv.items() if k != "base_url"}) | env_refs(
        {k: v for k, v in adapter.items() if k not in ("invocation", "traces")}) | env_refs(
        {k: v for k, v in traces.items() if k != "location"}) | auth_env_names(adapter)
    return {name for name in named - elsewhere
            if name in env and not any(ch in env[name] for ch in "@?#")}


def run_file_words() -> frozenset[str]:
    """The words assay itself writes into every run: the keys, enums and required names of the run
    files' schemas (verdict, results, manifest), the layer names, JSON's literals (a secret is redacted
    wherever it occurs, so a value inside one of these would rewrite the run's own structure)."""
    if not _WORDS:
        import json
        from pathlib import Path as _Path
        from .vocab import LAYER_ORDER
        words: set[str] = {"true", "false", "null", *LAYER_ORDER}

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for key, value in node.items():
                    if key in ("properties", "patternProperties") and isinstance(value, dict):
                        words.update(k for k in value if isinstance(k, str))
                    elif key in ("enum", "required") and isinstance(value, list):
                        words.update(v for v in value if isinstance(v, str))
                    elif key == "const" and isinstance(value, str):
                        words.add(value)
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)
        for name in ("verdict", "results", "manifest"):
            path = _Path(__file__).resolve().parents[1] / "schemas" / f"{name}.schema.json"
            walk(json.loads(path.read_text(encoding="utf-8")))
        _WORDS.append(frozenset(w for w in words if w))
    return _WORDS[0]


_WORDS: list[frozenset[str]] = []


def colliding_values(env: Mapping[str, str], min_len: int) -> dict[str, str]:
    """{name: why} for each value that cannot be redacted without corrupting a run file: all digits (a
    port, a year: every count, latency and timestamp holds digits), or occurring inside a word
    `run_file_words` lists. The value itself is never in `why`."""
    out: dict[str, str] = {}
    words = run_file_words()
    for name, value in sorted(env.items()):
        if not isinstance(value, str) or len(value) < min_len:
            continue
        if value.isdigit():
            out[name] = "its value is a number, and numbers are in every run file (counts, latencies, times)"
            continue
        hit = next((w for w in sorted(words) if value in w), None)
        if hit is not None:
            out[name] = f"its value occurs in {hit!r}, a word assay writes into its run files"
    return out
