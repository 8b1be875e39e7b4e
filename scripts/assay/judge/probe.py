"""The judge's pre-flight probe and the words every judge error carries.

`target(config, var)`: "POST <resolved url> (key $VAR)" — where the runner sends judge
calls, with the variable the key comes from (never the key; a URL's user:password@, query and
fragment are left out, so a base_url that carries a credential still says where it posted). `hint(config, status, var)`:
the likely fix for a status (a 404 is almost always base_url's `/v1`; 401/403 the key).

`probe(runtime)`: one cheap call before any case is sent (the real endpoint, model and headers,
a one-line prompt, max_tokens 16, no structured output, one attempt). A 2xx in the provider's wire
format passes (`wire_problem`: a Messages reply's `content` list, a Chat Completions reply's
`choices[0].message`). A refusal that is configuration (4xx other than 408/429), a 2xx that is not
that format (an HTML page, an empty body: base_url points at something else) or nothing listening
is pre-flight exit 3 naming the URL, the status and the key variable. A transient outcome (429, 5xx, timeout) does not stop
the run — the judge's outage during a run is infra, never a fail — and the manifest records it.
The command provider is not probed (pre-flight already resolved its argv).

`probe_config(config, var, who)` is the probe of one resolved provider config: the judge's
(`probe(runtime)`) and the simulator's (assay.simulate.build, `SIMULATOR`) are the same call and
the same words, each naming its own file and key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..core.errors import AssayError
from ..core.jsonio import dumps
from ..core.writer import clip
from .providers import build_request
from . import transport
from ..invoke.outcome import CONNECTION, RESPONSE
from ..core.secrets import env_refs, url_address, url_credentials

PROBE_SYSTEM = "assay pre-flight probe: reply with the single word ok."
PROBE_USER = "ok?"
PROBE_MAX_TOKENS = 16


@dataclass(frozen=True)
class Who:
    """Whose provider config is probed: its name in messages, its file in the state dir, its plan key."""
    name: str
    file: str
    key: str


JUDGE = Who("judge", "judge/judge.yaml", "judge")
SIMULATOR = Who("simulator", "simulator/simulator.yaml", "simulator")


def key_variable(unresolved: Mapping[str, Any]) -> str | None:
    """'$VAR' when the (unresolved) config's api_key is `${VAR}`; None otherwise."""
    names = sorted(env_refs(unresolved.get("api_key") or ""))
    return f"${names[0]}" if names else None


def target(config: Mapping[str, Any], var: str | None) -> str:
    """'POST http://host/v1/chat/completions (key $OPENAI_API_KEY)'; the command provider: its argv[0]."""
    if config.get("provider") == "command":
        argv = config.get("command") or ["?"]
        return f"command {argv[0]}"
    url = build_request(dict(config), "", "")[0]
    if url_credentials(url):   # a base_url with user:password@ or a ?key=: its host and path, never those
        url = url_address(url)
    return f"POST {url} ({'key ' + var if var else 'no api_key'})"


def model_not_found(config: Mapping[str, Any], status: int | None, body: str | None) -> bool:
    """A 404 whose body names the configured model: the provider does not serve that model (Anthropic
    `not_found_error` "model: <name>", OpenAI `model_not_found`, vLLM, Ollama), not a wrong base_url."""
    model = str(config.get("model") or "")
    return status == 404 and bool(model) and model in (body or "")


def hint(config: Mapping[str, Any], status: int | None, var: str | None, who: Who = JUDGE,
         body: str | None = None) -> str:
    provider = config.get("provider")
    if model_not_found(config, status, body):
        return (f"; the provider does not serve the model {config.get('model')!r}: check "
                f"{who.file.rsplit('/', 1)[-1]} model (a typo, or a name this endpoint does not offer)")
    if status == 404:
        if provider == "openai":
            return ("; the runner posts to <base_url>/chat/completions, so an OpenAI-compatible base_url "
                    "usually ends in /v1 (e.g. http://localhost:8000/v1)")
        if provider == "anthropic":
            return "; the runner posts to <base_url>/v1/messages, so base_url is the host without /v1"
        return ""
    if status in (401, 403):
        short = who.file.rsplit("/", 1)[-1]
        return f"; check the {who.name}'s key{' in ' + var if var else f' ({short} api_key)'}"
    if status == 400:
        return f"; check {who.file.rsplit('/', 1)[-1]} model (and max_tokens) for this provider"
    return ""


WIRE = {"anthropic": ("an Anthropic Messages reply", "a JSON object with a `content` list"),
        "openai": ("an OpenAI Chat Completions reply", "a JSON object with `choices[0].message`")}


def wire_problem(provider: Any, body_json: Any, body_text: str | None) -> str | None:
    """Why a 2xx body is not a reply in the provider's wire format, or None. Only the shape is
    asked (a reply cut at max_tokens, or refused, is still the provider answering), so a judge the
    runner can talk to passes and a web page or an empty 200 does not."""
    if provider not in WIRE:
        return None
    if provider == "anthropic":
        ok = isinstance(body_json, dict) and isinstance(body_json.get("content"), list)
    else:
        choices = body_json.get("choices") if isinstance(body_json, dict) else None
        ok = isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict) \
            and isinstance(choices[0].get("message"), dict)
    if ok:
        return None
    name, shape = WIRE[provider]
    if not (body_text or "").strip():
        got = "an empty body"
    elif body_json is None:
        got = "a body that is not JSON"
    else:
        got = "a JSON body"
    return f"{got}, not {name} ({shape})"


def _values(config: Mapping[str, Any]) -> list[Any]:
    """The config's credentials: its api_key and header values (not yet registered at pre-flight)."""
    return [config.get("api_key"), *(config.get("headers") or {}).values()]


def _redact(text: str, config: Mapping[str, Any]) -> str:
    return clip(text, len(text), also=_values(config))


def _api_hint(config: Mapping[str, Any]) -> str:
    if config.get("provider") == "openai":
        return " (the runner posts to <base_url>/chat/completions; e.g. http://localhost:8000/v1)"
    return " (the runner posts to <base_url>/v1/messages; base_url is the host without /v1)"


def probe(runtime: Any, judge: int = 0) -> dict[str, Any]:
    """Probe one judge (see the module docstring); the manifest's `judge.probe`. Raises AssayError(3)."""
    return probe_config(runtime.judges[judge], runtime._key_var(judge), JUDGE)


def probe_config(cfg: Mapping[str, Any], var: str | None, who: Who = JUDGE) -> dict[str, Any]:
    """Probe one resolved provider config (the module docstring); its manifest block. Raises AssayError(3)."""
    if cfg.get("provider") == "command":
        return {"ok": None, "reason": f"command {who.name}: not probed (its argv was resolved at pre-flight)"}
    probe_cfg = dict(cfg, structured_output=False, max_tokens=PROBE_MAX_TOKENS)
    url, headers, body = build_request(probe_cfg, PROBE_SYSTEM, PROBE_USER)
    out = transport.post(url, headers, dumps(body, indent=None).encode("utf-8"), float(cfg["timeout_s"]),
                         bool(cfg.get("insecure_tls")))
    where = target(cfg, var)
    wrong = (wire_problem(cfg.get("provider"), out.body_json, out.body_text)
             if out.kind == RESPONSE and out.status is not None and 200 <= out.status < 300 else None)
    if wrong:   # a web page, a proxy's splash, an empty 200: every judge call would be unreadable
        body = clip(out.body_text or "", 200, also=_values(cfg))
        raise AssayError(_redact(f"pre-flight: {who.name} probe {where} got HTTP {out.status} with {wrong}"
                                 f"{': ' + body if body.strip() else ''}; {who.file} base_url must name the "
                                 f"{cfg.get('provider')} API itself{_api_hint(cfg)}; no case was sent", cfg),
                         3, key=f"{who.key}.base_url", **{f"{who.key}_status": out.status})
    if out.kind == RESPONSE and out.status is not None and 200 <= out.status < 300:
        from .served import served_model_of
        model = served_model_of(out.body_json)   # the model that answered, beside the one configured
        return {"ok": True, "status": out.status, "target": where, **({"served_model": model} if model else {})}
    if out.kind == CONNECTION or (out.kind == RESPONSE and out.status is not None and 400 <= out.status < 500
                                  and out.status not in (408, 429)):
        got = (f"HTTP {out.status}: {clip(out.body_text or '', 200, also=_values(cfg))}" if out.kind == RESPONSE
               else clip(out.error or "", 200, also=_values(cfg)))
        key = ("model" if model_not_found(cfg, out.status, out.body_text)
               else "api_key" if out.status in (401, 403) else "base_url")
        raise AssayError(_redact(f"pre-flight: {who.name} probe {where} got {got}"
                                 f"{hint(cfg, out.status, var, who, out.body_text)} ({who.file}); no case was sent", cfg),
                         3, key=f"{who.key}.{key}", **{f"{who.key}_status": out.status})
    return {"ok": False, "status": out.status, "target": where,
            "reason": _redact(f"the {who.name} was unavailable at pre-flight ({out.describe()}); the run goes on and "
                              f"{who.name} outages are infra", cfg)}
