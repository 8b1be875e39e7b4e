"""The judge config `<state>/judge/judge.yaml` (schema `judge.schema.json`), defaults filled.

`${VAR}` stays unresolved here (the plan carries it as written); the runner resolves it at
pre-flight with the adapter's rules (`assay.core.secrets`).

One judge is a provider block at the top level. An ensemble is `judges: [<provider block>, ...]`
with `aggregate: majority | unanimous` (and `max_concurrency`, `repeats` at the top level):
`members(config)` is the one way to read either form as a list of provider blocks. `repeats: N`
asks each judge each node N times (`judge_unstable` when the answers differ).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..core.errors import AssayError

JUDGE_CONFIG = "judge/judge.yaml"
PROVIDERS = ("anthropic", "openai", "command")
DEFAULTS: dict[str, Any] = {"max_concurrency": 4, "timeout_s": 60, "max_tokens": 1024, "structured_output": True,
                            "insecure_tls": False}
DEFAULT_BASE_URL = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
AGGREGATES = ("majority", "unanimous")
ENSEMBLE_KEYS = ("judges", "aggregate", "repeats", "max_concurrency")   # the top level of an ensemble


def load_judge_config(state: Path) -> dict[str, Any] | None:
    """judge.yaml validated, or None when the file is absent."""
    return load_model_config(state, JUDGE_CONFIG, "judge", shape=check_shape)


def load_model_config(state: Path, rel: str, schema: str, shape: Any = None) -> dict[str, Any] | None:
    """A model config in the state dir (judge.yaml; the simulator's simulator.yaml, same providers)
    validated against its schema (and `shape`, the rules between keys), or None when absent."""
    from ..schemas import validate
    from ..core.strict_yaml import load

    path = Path(state) / rel
    if not path.is_file():
        return None
    if not os.path.realpath(path).startswith(os.path.realpath(state) + os.sep):
        raise AssayError(f"{rel}: is a symlink that leaves the state dir; refusing to read it", 2, file=rel)
    doc, lines = load(path, rel)
    if not isinstance(doc, dict):
        raise AssayError(f"{rel}: must be a YAML mapping with provider (anthropic | openai | command) "
                         "and model", 2, file=rel)
    if shape is not None:
        shape(doc, lambda p: lines.line_of(p) if p else lines.get(()))
    validate(doc, schema, source=rel, what=rel, line_of=lambda p: lines.line_of(p) if p else lines.get(()))
    refuse_literal_keys(doc, lambda p: lines.line_of(p) if p else lines.get(()), rel)
    return doc


def refuse_literal_keys(doc: dict[str, Any], line_of: Any, rel: str) -> None:
    """Secrets are `${VAR}` references only, as in adapter.yaml: an `api_key`, or a credential-shaped
    header (`x-api-key`, `Authorization`), written out in judge.yaml or simulator.yaml (or one of its
    ensemble's judges) would be copied into the converted suite and the plan. Exit 2 naming the file,
    line and key, never the value."""
    from ..core.secrets import CREDENTIAL_HEADER
    members = [((), doc)] + [(("judges", i), m) for i, m in enumerate(doc.get("judges") or [])
                              if isinstance(m, dict)]
    for at, member in members:
        found = [(("api_key",), "api_key")] if isinstance(member.get("api_key"), str) else []
        headers = member.get("headers") if isinstance(member.get("headers"), dict) else {}
        found += [(("headers", name), f"headers.{name}") for name in headers if CREDENTIAL_HEADER.search(str(name))]
        for path, key in found:
            value = member.get("api_key") if path == ("api_key",) else headers[path[1]]
            if not isinstance(value, str) or "${" in value or not value.strip():
                continue
            shown = ".".join([*map(str, at), key]) if at else key
            line = line_of(list(at + path))
            raise AssayError(f"{rel}{f':{line}' if line else ''}: {shown} holds a literal value; secrets are "
                             "${VAR} references only (a literal would be copied into the converted suite and the "
                             f"plan). Export it and write {key.split('.')[-1]}: \"${{MY_VAR}}\"", 2, file=rel,
                             line=line, key=shown)


def check_shape(doc: dict[str, Any], line_of: Any = lambda p: None, source: str = JUDGE_CONFIG) -> None:
    """The rules between keys the schema cannot say plainly (exit 2 naming file, line and key): one
    judge or an ensemble, never both; `aggregate` only with `judges`, and `majority` only over an odd
    number of judges (an even count can tie, and a tie is no verdict)."""
    def fail(key: str, path: list, text: str) -> None:
        line = line_of(path)
        raise AssayError(f"{source}{f':{line}' if line else ''}: {key}: {text}", 2, file=source, line=line, key=key)

    judges = doc.get("judges")
    if judges is None:
        if "aggregate" in doc:
            fail("aggregate", ["aggregate"], "combines the verdicts of several judges, but there is no `judges:` "
                 "list; list the judges (each a provider block) or drop aggregate")
        if "provider" not in doc:
            fail("provider", [], "missing: give one judge (provider: anthropic | openai | command, and model) or "
                 "an ensemble (judges: [<provider block>, ...] and aggregate: majority | unanimous)")
        return
    stray = [k for k in doc if k not in ENSEMBLE_KEYS]
    if stray:
        fail(stray[0], [stray[0]], "an ensemble's top level holds only judges, aggregate, repeats and "
             f"max_concurrency; move {', '.join(map(str, stray))} into each judge's block under judges:")
    if not isinstance(judges, list) or len(judges) < 2:
        fail("judges", ["judges"], "an ensemble lists 2 or more judges (each a provider block); for one judge, "
             "write its keys at the top level instead")
    if "aggregate" not in doc:
        fail("aggregate", ["judges"], "missing: say how the judges' verdicts combine (majority with an odd "
             "number of judges, or unanimous)")
    if doc["aggregate"] == "majority" and len(judges) % 2 == 0:
        fail("aggregate", ["aggregate"], f"majority over {len(judges)} judges can tie (no verdict); list an odd "
             "number of judges, or use aggregate: unanimous")
    for i, member in enumerate(judges):
        if isinstance(member, dict) and "max_concurrency" in member:
            fail(f"judges[{i}].max_concurrency", ["judges", i, "max_concurrency"],
                 "the ensemble shares one pool; set max_concurrency at the top level")


def members(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The judges a config names, each a provider block (an ensemble's members with the shared
    defaults filled; one judge: the config itself)."""
    if isinstance(config.get("judges"), list):
        return [effective(m) for m in config["judges"]]
    return [config]


def aggregate_of(config: dict[str, Any]) -> str:
    """`single`, `majority` or `unanimous`."""
    return str(config.get("aggregate") or "majority") if isinstance(config.get("judges"), list) else "single"


def repeats_of(config: dict[str, Any]) -> int:
    value = config.get("repeats")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def effective(config: dict[str, Any], defaults: dict[str, Any] = DEFAULTS) -> dict[str, Any]:
    """The config with defaults filled (base_url per provider; an ensemble: in each judge's block);
    `${VAR}` untouched."""
    if isinstance(config.get("judges"), list):
        return {"max_concurrency": defaults["max_concurrency"], **config,
                "judges": [{k: v for k, v in effective(m, defaults).items() if k != "max_concurrency"}
                           for m in config["judges"]]}
    out = dict(defaults)
    out.update(config)
    if out.get("provider") in DEFAULT_BASE_URL and not out.get("base_url"):
        out["base_url"] = DEFAULT_BASE_URL[out["provider"]]
    return out


def check_resolved(config: dict[str, Any], source: str = JUDGE_CONFIG) -> None:
    """Pre-flight checks on a resolved config (exit 3, naming the key)."""
    provider = config["provider"]
    if provider == "command":
        argv = config.get("command") or []
        exe = argv[0] if argv else ""
        if not exe:
            raise AssayError(f"{source}: command is empty; give the argv list, e.g. [python3, judge.py]", 3,
                             key="command")
        return
    base = str(config.get("base_url") or "")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AssayError(f"{source}: base_url {base!r} is not an http(s) URL (e.g. "
                         f"{DEFAULT_BASE_URL[provider]})", 3, key="base_url")
    if not config.get("api_key") and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise AssayError(f"{source}: api_key is missing for provider {provider} at {base}; set "
                         "api_key: ${ANTHROPIC_API_KEY} (or your variable) and export it", 3, key="api_key")


SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".rb", ".pl")


def check_command(config: dict[str, Any], cwd: Path, environ: Any = None, source: str = JUDGE_CONFIG,
                  who: str = "judge") -> None:
    """A `command` judge can be started (pre-flight, exit 3): argv[0] is on PATH or an executable
    path, and a script handed to an interpreter (`[python3, judge.py]`) exists. Paths are relative to
    `cwd`, the state dir the command runs in. Without this a typo shows up only as judge outages.
    `who` names the command (the judge, the simulator)."""
    if config.get("provider") != "command":
        return
    argv = [str(a) for a in config.get("command") or []]
    exe = argv[0]
    where = f"a relative path is relative to the state dir, the {who} command's working directory"
    if "/" in exe:
        path = Path(exe) if os.path.isabs(exe) else Path(cwd) / exe
        if not (path.is_file() and os.access(path, os.X_OK)):
            what = "does not exist" if not path.exists() else "is not an executable file (chmod +x it)"
            raise AssayError(f"pre-flight: {source}: command[0] {exe!r} resolves to {path}, which {what}; {where}",
                             3, key="command")
    else:
        search = (environ if environ is not None else os.environ).get("PATH", os.defpath)
        if shutil.which(exe, path=search) is None:
            raise AssayError(f"pre-flight: {source}: command[0] {exe!r} is not found on PATH ({search}); install it "
                             f"or give its path ({where})", 3, key="command")
    from .argv import script_index
    at = script_index(argv)   # past the interpreter's options: [python3, -u, judge.py] runs judge.py
    script = argv[at] if at is not None else ""
    if script.endswith(SCRIPT_SUFFIXES) and not script.startswith("-"):
        path = Path(script) if os.path.isabs(script) else Path(cwd) / script
        if not path.is_file():
            raise AssayError(f"pre-flight: {source}: command[{at}] {script!r} resolves to {path}, which does not "
                             f"exist; {where}", 3, key="command")


def manifest_view(config: dict[str, Any]) -> dict[str, Any]:
    """What the manifest records: no key, no header values, `${VAR}` unresolved. An ensemble: the
    first judge's keys at the top level (as one judge's), every judge under `judges`."""
    if isinstance(config.get("judges"), list):
        views = [_member_view(m) for m in config["judges"]]
        return dict(views[0], max_concurrency=config.get("max_concurrency"), judges=views,
                    aggregate=aggregate_of(config), repeats=repeats_of(config))
    view = _member_view(config)
    if config.get("repeats") is not None:
        view["repeats"] = repeats_of(config)
    return view


def _member_view(config: dict[str, Any]) -> dict[str, Any]:
    return {"provider": config.get("provider"), "model": config.get("model"),
            "base_url": config.get("base_url"), "command": config.get("command"),
            "max_concurrency": config.get("max_concurrency"), "timeout_s": config.get("timeout_s"),
            "max_tokens": config.get("max_tokens"), "structured_output": config.get("structured_output"),
            "header_names": sorted((config.get("headers") or {}).keys()),
            **({"env_allowlist": list(config["env_allowlist"])} if config.get("env_allowlist") else {}),
            **({"served_model": config["served_model"]} if config.get("served_model") else {})}
