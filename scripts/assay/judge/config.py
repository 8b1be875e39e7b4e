"""The judge config `<state>/judge/judge.yaml` (schema `judge.schema.json`), defaults filled.

`${VAR}` stays unresolved here (the plan carries it as written); the runner resolves it at
pre-flight with the adapter's rules (`assay.core.secrets`).
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


def load_judge_config(state: Path) -> dict[str, Any] | None:
    """judge.yaml validated, or None when the file is absent."""
    return load_model_config(state, JUDGE_CONFIG, "judge")


def load_model_config(state: Path, rel: str, schema: str) -> dict[str, Any] | None:
    """A model config in the state dir (judge.yaml; the simulator's simulator.yaml, same providers)
    validated against its schema, or None when the file is absent."""
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
    validate(doc, schema, source=rel, what=rel, line_of=lambda p: lines.line_of(p) if p else lines.get(()))
    return doc


def effective(config: dict[str, Any], defaults: dict[str, Any] = DEFAULTS) -> dict[str, Any]:
    """The config with defaults filled (base_url per provider); `${VAR}` untouched."""
    out = dict(defaults)
    out.update(config)
    if out["provider"] in DEFAULT_BASE_URL and not out.get("base_url"):
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


SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".mjs", ".ts", ".rb", ".pl")


def check_command(config: dict[str, Any], cwd: Path, environ: Any = None, source: str = JUDGE_CONFIG) -> None:
    """A `command` judge can be started (pre-flight, exit 3): argv[0] is on PATH or an executable
    path, and a script handed to an interpreter (`[python3, judge.py]`) exists. Paths are relative to
    `cwd`, the state dir the command runs in. Without this a typo shows up only as judge outages."""
    if config.get("provider") != "command":
        return
    argv = [str(a) for a in config.get("command") or []]
    exe = argv[0]
    where = "a relative path is relative to the state dir, the judge command's working directory"
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
    script = argv[1] if len(argv) > 1 else ""
    if script.endswith(SCRIPT_SUFFIXES) and not script.startswith("-"):
        path = Path(script) if os.path.isabs(script) else Path(cwd) / script
        if not path.is_file():
            raise AssayError(f"pre-flight: {source}: command[1] {script!r} resolves to {path}, which does not exist; "
                             f"{where}", 3, key="command")


def manifest_view(config: dict[str, Any]) -> dict[str, Any]:
    """What the manifest records: no key, no header values, `${VAR}` unresolved."""
    return {"provider": config.get("provider"), "model": config.get("model"),
            "base_url": config.get("base_url"), "command": config.get("command"),
            "max_concurrency": config.get("max_concurrency"), "timeout_s": config.get("timeout_s"),
            "max_tokens": config.get("max_tokens"), "structured_output": config.get("structured_output"),
            "header_names": sorted((config.get("headers") or {}).keys()),
            **({"env_allowlist": list(config["env_allowlist"])} if config.get("env_allowlist") else {})}
