"""What a request is keyed by: the recorded request (secrets already `${NAME}`/REDACTED) with
what differs per request masked, and a digest of the values of the `${NAME}`s that say what is
asked (`Binding`), hashed with where it sits in its case. Pure functions."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from ..core.secrets import CREDENTIAL_HEADER, PLAIN_ENV, auth_env_names, env_refs, secret_shaped_name

KEY_VERSION = 1
UUID_MASK = "<uuid>"
SESSION_MASK = "<session>"
VALUE_MASK = "<masked>"
# The key a request's `Binding.values` digest is kept under: in a replay key, and in a run's
# request.json (what rescore compares with the values the current environment gives).
VALUES_KEY = "values"

# Request headers whose values differ per request (trace propagation) or carry the session
# (cookies, which a replayed turn 1 re-sets anyway): their presence counts, their value does not.
MASKED_HEADERS = frozenset({"traceparent", "tracestate", "baggage", "cookie", "x-request-id"})
# Keys of a recorded request that say when/which attempt, not what was asked.
VOLATILE_KEYS = frozenset({"sent_at", "attempt", "turn"})


def canonical(value: Any) -> str:
    """The one JSON text a key is hashed over (sorted keys, no whitespace, non-ASCII kept)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


def normalize_request(recorded: Mapping[str, Any], *, uuid: str | None = None, session: Any = None) -> dict:
    """The recorded request with the per-request parts masked: the `<uuid>` value, a server
    session id, per-request headers (MASKED_HEADERS) and the volatile keys dropped."""
    needles = [(str(uuid), UUID_MASK)] if uuid else []
    if isinstance(session, (str, int)) and not isinstance(session, bool) and str(session):
        needles.append((str(session), SESSION_MASK))

    def mask(value: Any) -> Any:
        if isinstance(value, str):
            for needle, repl in needles:
                if needle in value:
                    value = value.replace(needle, repl)
            return value
        if isinstance(value, Mapping):
            return {str(k): mask(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [mask(v) for v in value]
        if value is not None and not isinstance(value, (int, float, bool)) and str(value) == str(session):
            return SESSION_MASK
        return value

    out = {}
    for key, value in recorded.items():
        if key in VOLATILE_KEYS:
            continue
        if key == "headers" and isinstance(value, Mapping):
            value = {str(k): (VALUE_MASK if str(k).lower() in MASKED_HEADERS else v) for k, v in value.items()}
        out[str(key)] = mask(value)
    return out


# Variables a cli or agent app may be given through `invocation.env_allowlist` whose values say where
# it runs, not what it is asked (a path, a locale, a proxy, a terminal): never bound, so a recording
# replays on another machine (a CI job) whose values differ. Besides these names: any `LC_*` or `XDG_*`,
# and any name ending in `_PATH`, `_HOME`, `_DIR`, `_DIRS` or `_ROOT` (a path's text says where, not what).
MACHINE_ENV = PLAIN_ENV | frozenset({
    "TMP", "TEMP", "HOSTNAME", "DISPLAY", "COLUMNS", "LINES", "SHLVL", "EDITOR", "PAGER", "CI",
    "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "COLORTERM", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONHOME",
    "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8", "PYTHONHASHSEED", "GOPATH", "GOROOT", "NODE_OPTIONS",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "FTP_PROXY"})
MACHINE_ENV_PREFIXES = ("LC_", "XDG_")
MACHINE_ENV_SUFFIXES = ("_PATH", "_HOME", "_DIR", "_DIRS", "_ROOT")


def machine_variable(name: str) -> bool:
    """A variable whose value says which machine the app runs on (MACHINE_ENV), never bound."""
    upper = name.upper()
    return (upper in MACHINE_ENV or upper.startswith(MACHINE_ENV_PREFIXES)
            or upper.endswith(MACHINE_ENV_SUFFIXES))


def allowlist_bound(invocation: Mapping[str, Any]) -> frozenset:
    """The `invocation.env_allowlist` names (cli, agent: the variables the app's process is given,
    agent default [PATH]) whose values a request's key binds: every one but a machine variable
    (machine_variable) and a credential-shaped name (core.secrets.secret_shaped_name: OPENAI_API_KEY, a
    rotated key still hits). The app reads them, not the request's text, so they are bound set or unset."""
    mode = invocation.get("mode")
    if mode not in ("cli", "agent"):
        return frozenset()
    names = invocation.get("env_allowlist") or (["PATH"] if mode == "agent" else [])
    if not isinstance(names, list):
        return frozenset()
    return frozenset(n for n in names if isinstance(n, str) and n
                     and not machine_variable(n) and not secret_shaped_name(n))


# Keys of a recorded request whose `${NAME}`s say who asked, not what: a case identity's token
# (`Bearer ${NAME}`) and a cli app's identity variables are keyed by name; every header that holds a
# `${NAME}` is recorded REDACTED (its variables are bound from the adapter: `Binding.of`).
WHO_KEYS = frozenset({"headers", "identity_env"})


@dataclass(frozen=True)
class Binding:
    """Which `${NAME}`s' values are part of a request's key, and their values (held in memory only).

    A request that names `${MODEL}` in its body asks another thing when MODEL changes, though its
    recorded text is the same: the key adds `values: {vars, sha256}` (the first 16 hex digits of a
    sha256 over the names and values, never a value) for the variables its body, endpoint, argv or
    stdin or agent env block (`agent_env`: ANTHROPIC_MODEL: ${MODEL}) names, plus those of the adapter's
    non-credential headers (`X-Model: ${MODEL}`), plus a cli or agent app's `env_allowlist` names
    (`given`: allowlist_bound; an unset one is bound as unset, since the app may read it or its
    absence). Never bound, so a rotated credential or another port
    still hits: the base URL's variables, an auth block's, a credential-shaped header's
    (CREDENTIAL_HEADER) or agent env entry's (core.secrets.secret_shaped_name), a case identity's token,
    and any variable whose own name is credential-shaped (APP_TOKEN, OPENAI_API_KEY), and an allowlisted
    machine variable (PATH, HOME, LANG: machine_variable)."""
    env: Mapping[str, str]
    always: frozenset = frozenset()
    never: frozenset = frozenset()
    given: frozenset = frozenset()

    @classmethod
    def of(cls, invocation: Mapping[str, Any], env: Mapping[str, str]) -> "Binding":
        headers = invocation.get("headers") if isinstance(invocation.get("headers"), Mapping) else {}
        plain = {n for name, v in headers.items() if not CREDENTIAL_HEADER.search(str(name)) for n in env_refs(v)}
        secret = {n for name, v in headers.items() if CREDENTIAL_HEADER.search(str(name)) for n in env_refs(v)}
        agent = invocation.get("agent") if invocation.get("mode") == "agent" else None
        agent_env = agent.get("env") if isinstance(agent, Mapping) and isinstance(agent.get("env"), Mapping) else {}
        # an agent's env entry whose name says it holds a secret (ANTHROPIC_API_KEY: ${KEY_VAR}): never bound
        secret |= {n for name, v in agent_env.items() if secret_shaped_name(str(name)) for n in env_refs(v)}
        never = (env_refs(invocation.get("base_url")) | env_refs(invocation.get("auth"))
                 | auth_env_names({"invocation": invocation}) | secret)
        given = allowlist_bound(invocation) - never
        return cls(dict(env), frozenset(plain) | given, frozenset(never), given)

    def wanted(self, recorded: Mapping[str, Any]) -> list[str]:
        """The variables this request's key binds, set in `env` or not (sorted)."""
        named = env_refs({k: v for k, v in recorded.items() if k not in WHO_KEYS}) | self.always
        return sorted(n for n in named - self.never if not CREDENTIAL_HEADER.search(n))

    def values(self, recorded: Mapping[str, Any]) -> dict[str, Any] | None:
        names = [n for n in self.wanted(recorded) if n in self.env or n in self.given]
        if not names:
            return None
        text = canonical({"vars": names, "values": {n: self.env.get(n) for n in names}})
        return {"vars": names, "sha256": sha256_text(text)[:16]}

    def kept(self, recorded: Any) -> Any:
        """The request as a run keeps it (request.json): the recorded request plus `values` (the
        digest above) when it names a bound variable, so a rescore under other values is a miss."""
        if not isinstance(recorded, Mapping):
            return recorded
        values = self.values(recorded)
        return recorded if values is None else dict(recorded, **{VALUES_KEY: values})


def app_address(invocation: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """Where an http app is called, for an app with no `app.name` (nothing else tells two such apps
    apart when their adapters and suites ask alike): the first 16 hex digits of a sha256 over the
    base URL as resolved (scheme, host, port and path; never user info, query or fragment). None when
    it cannot be told: not an http app, or a variable of the base URL unset (a replay with no app)."""
    from urllib.parse import urlsplit
    base = invocation.get("base_url") if invocation.get("mode", "http") == "http" else None
    if not isinstance(base, str) or not base or any(not env.get(n) for n in env_refs(base)):
        return None
    from ..core.secrets import expand
    parts = urlsplit(expand(base, env).strip())
    if not parts.hostname:
        return None
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    except ValueError:
        return None
    where = f"{parts.scheme.lower()}://{parts.hostname.lower()}:{port}{parts.path.rstrip('/')}"
    return sha256_text(canonical({"v": KEY_VERSION, "address": where}))[:16]


def app_location(app_root: Any, cache_root: Any) -> str | None:
    """Where a function, cli or agent app is, for an app with no `app.name` (its entrypoint or
    command as written is in the key, but the same `bot:handle` or `python3 bot.py` in another app
    repo is another app): the first 16 hex digits of a sha256 over the app repo (adapter.yaml
    app.repo, else the state dir's parent) as a path relative to the cache, both resolved. So the
    app and its cache moved together (another checkout, a CI job that restores `.assay/cache`)
    still replay; another app repo, or this app replayed from another app's cache, does not."""
    import os
    from pathlib import Path
    if app_root is None or cache_root is None:
        return None
    where = os.path.relpath(Path(app_root).resolve(), Path(cache_root).resolve()).replace(os.sep, "/")
    return sha256_text(canonical({"v": KEY_VERSION, "app_root": where}))[:16]


def address_named(invocation: Mapping[str, Any]) -> str:
    """How a message names the app's address: the base URL's variables, else the key itself."""
    names = sorted(env_refs(invocation.get("base_url")))
    return f"{', '.join(names)} (invocation.base_url)" if names else "invocation.base_url"


def exchange_key(case_id: str, position: int, normalized: Mapping[str, Any]) -> str:
    """The key of one app exchange: the case, the send's position in it, the normalized request."""
    return sha256_text(canonical({"v": KEY_VERSION, "case": case_id, "position": position, "request": normalized}))


def call_key(kind: str, request: Mapping[str, Any], ordinal: int) -> str:
    """The key of one model call (judge, simulator): its request and the how-many-th identical one."""
    return sha256_text(canonical({"v": KEY_VERSION, "kind": kind, "ordinal": ordinal, "request": request}))


def base_key(kind: str, request: Mapping[str, Any]) -> str:
    return sha256_text(canonical({"v": KEY_VERSION, "kind": kind, "request": request}))


def first_difference(recorded: Any, now: Any, path: str = "") -> str | None:
    """Where two normalized requests first differ, as `path: recorded … -> now …`; None if equal."""
    if isinstance(recorded, Mapping) and isinstance(now, Mapping):
        for key in sorted(set(recorded) | set(now), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in recorded:
                return f"{sub}: not in the recorded request (now {_short(now[key])})"
            if key not in now:
                return f"{sub}: recorded {_short(recorded[key])}, absent now"
            found = first_difference(recorded[key], now[key], sub)
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(now, list):
        for i, (a, b) in enumerate(zip(recorded, now)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(recorded) != len(now):
            return f"{path or '<request>'}: {len(recorded)} item(s) recorded, {len(now)} now"
        return None
    if recorded == now and type(recorded) is type(now):
        return None
    return f"{path or '<request>'}: recorded {_short(recorded)}, now {_short(now)}"


def _short(value: Any, limit: int = 80) -> str:
    text = canonical(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
