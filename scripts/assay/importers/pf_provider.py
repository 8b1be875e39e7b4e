"""promptfoo's `http` provider -> adapter.yaml's `invocation` (the adapter contract).

`http_adapter(cfg, constant_vars, app_url_env, conversation)` picks the config's first http
provider and maps url (base_url + endpoint), method, headers, body (`{{prompt}}` becomes
`<user turn>`) and a `transformResponse` that reads one field, `json.<path>` or a function returning
its first parameter's `.<path>` (response_body); any other code is `answer_lost` (every case with an
answer check carries it in `not_converted`: the answer is the whole body, looser than promptfoo's).
A header that is exactly one per-test var (`X-User: "{{user}}"`) becomes `identity_map`
(the case carries the value as its `identity`). A provider that does not talk JSON (a text
or form body, a non-JSON Content-Type) is refused whole: no invocation, never a JSON body
under a form header. Every other provider, and every http setting with no adapter
equivalent, comes back as a `Skipped` with its line. A literal credential in a header is never written: the header
becomes `${PF_<NAME>}` and the import names the variable to export; `{{env.X}}` becomes `${X}`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from ..suite.convert import CREDENTIAL_HEADER
from .pf_load import Config, Skipped, Where
from .pf_render import Unrenderable, references, render

HTTP_IDS = ("http", "https")
MAPPED_KEYS = ("url", "method", "headers", "body", "transformResponse", "queryParams")
# Settings that change nothing assay measures (the runner has its own timeouts and retries).
HARMLESS_KEYS = ("maxRetries", "timeout", "validateStatus", "tokenEstimation", "useHttps")
TOKEN_VALUE = re.compile(r"^(bearer|basic|token)\s+\S{6,}$|^(sk|pk|rk|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{8,}$|"
                         r"^[A-Za-z0-9_\-]{32,}$", re.IGNORECASE)
_JSON_PATH = re.compile(r"^json((?:\.[A-Za-z_$][A-Za-z0-9_$]*|\[\d+\]|\[\"[^\"]+\"\]|\['[^']+'\])*)$")


class NotJson(Exception):
    """The provider does not talk JSON: it is refused whole (never a JSON body under a form header)."""


@dataclass
class AdapterResult:
    invocation: dict[str, Any] | None
    provider_where: Where | None
    secrets: list[dict[str, str]] = field(default_factory=list)   # {header, env, where}
    env_vars: list[str] = field(default_factory=list)             # variables the adapter reads
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    answer_lost: list[Skipped] = field(default_factory=list)   # code that rewrites the answer: checks are looser
    identity: dict[str, str] = field(default_factory=dict)        # identity key -> the var it carries
    identity_map: dict[str, str] = field(default_factory=dict)    # identity key -> header
    secret_values: list[str] = field(default_factory=list, repr=False)   # in memory only, never written


def _providers(cfg: Config) -> list[tuple[str, dict[str, Any], Where]]:
    return [(pid, conf, where) for pid, conf, where, _ in _provider_items(cfg)]


def _provider_items(cfg: Config) -> list[tuple[str, dict[str, Any], Where, dict[str, Any]]]:
    """(id, config, where, the provider's own keys beside id and config) for each provider."""
    raw = cfg.doc.get("providers", cfg.doc.get("targets"))
    key = "providers" if "providers" in cfg.doc else "targets"
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else [raw]
    out = []
    for i, item in enumerate(items):
        where = cfg.where(key, i) if isinstance(raw, list) else cfg.where(key)
        if isinstance(item, str):
            if item.startswith("file://"):
                from .pf_load import read_data
                for f in cfg.resolve(item, where):
                    doc, _ = read_data(f, cfg.rel(f))
                    for d in (doc if isinstance(doc, list) else [doc]):
                        if isinstance(d, dict):
                            out.append((str(d.get("id", "")), d.get("config") or {}, Where(cfg.rel(f), 1), d))
                continue
            out.append((item, {}, where, {}))
        elif isinstance(item, dict):
            if "id" in item:
                out.append((str(item["id"]), item.get("config") or {}, where, item))
            elif len(item) == 1:       # {provider-id: {config: ...}}
                pid, body = next(iter(item.items()))
                body = body if isinstance(body, dict) else {}
                out.append((str(pid), body.get("config") or {}, where, body))
        else:
            out.append((repr(item), {}, where, {}))
    return out


def is_http(pid: str) -> bool:
    return pid in HTTP_IDS or pid.startswith(("http://", "https://"))


def _env_name(header: str) -> str:
    return "PF_" + re.sub(r"[^A-Za-z0-9]+", "_", header).strip("_").upper()


_IDENT = r"[A-Za-z_$][A-Za-z0-9_$]*"
_PARAMS = rf"\(\s*({_IDENT})\s*(?:,\s*({_IDENT})\s*)?(?:,\s*{_IDENT}\s*)*\)"
# The function forms promptfoo calls (its test: `(...) =>` or `function (...)`); `json => ...`, a named
# or an async function is evaluated as an expression there, its value the function itself.
# `return (.*)}` is greedy, its `;` and blanks cut after (_plain_path): a lazy group between two runs of blanks
# tried every split of a long run (cubic: a 2 KB transformResponse with a run of blanks ~4 s, 10 KB ~8 min)
_ARROW = re.compile(rf"^{_PARAMS}\s*=>\s*(?:\{{\s*return\s(.*)\}}|(.*))$", re.DOTALL)
_FUNCTION = re.compile(rf"^function\s*{_PARAMS}\s*\{{\s*return\s(.*)\}}$", re.DOTALL)
_UNCALLED = re.compile(rf"^(?:async\b|{_IDENT}\s*=>|function\s+{_IDENT})")
WHOLE_BODY = "<whole body>"
CODE_FIX = ("give adapter.yaml a response_body path for the answer (references/adapter-contract.md), or rewrite "
            "transformResponse as json.<path>, then import again; or delete this entry to gate on the whole body")


def _plain_path(text: str) -> str | None:
    """`json.<path>` (or `json`, the parsed body; or WHOLE_BODY for the raw text) for a transformResponse
    that only reads the response: `json.a[0]`, `text`, `(data, text) => data.a`, `(r) => { return r.a; }`,
    `function (r) { return r.a; }` (any parameter names); None for any other code."""
    if _JSON_PATH.match(text):
        return text
    if text == "text":
        return WHOLE_BODY
    m = _ARROW.match(text) or _FUNCTION.match(text)
    if not m:
        return None
    first, second, returned = m.group(1), m.group(2), m.group(3)     # `return x;`: one `;` is not the body
    body = returned.strip().removesuffix(";").rstrip() if returned is not None else m.group(4).strip()
    if second is not None and body == second and second != first:
        return WHOLE_BODY
    rest = body[len(first):] if body.startswith(first) else None
    if rest is None or (rest and rest[0] not in ".[") or not _JSON_PATH.match("json" + rest):
        return None
    return "json" + rest


def _response_path(transform: Any) -> tuple[str | None, str | None]:
    """(response_body template, None) for `json.a.b[0]` or a function returning its first parameter's
    `.a.b[0]`; (None, None) when the answer is the whole body (`json`, `text`); (None, why) for code."""
    text = transform.strip() if isinstance(transform, str) else None
    path = _plain_path(text) if text is not None and not text.startswith("file://") else None
    if path is None:
        shown = f"{text[:60]!r}" if text is not None else f"({type(transform).__name__})"
        if text is not None and _UNCALLED.match(text):
            shown += (" (promptfoo calls only `(json) => ...` and `function (json) {...}` forms; this one's value is "
                      "the function itself, so its assertions error: write `(json) => json.<path>`)")
        return None, (f"transformResponse {shown} is code, not a json.<path>: promptfoo checks what it returns, "
                      "assay reads the answer at one declared path, so until then the answer is the whole response "
                      "body and every answer check of this suite is looser than promptfoo's (a text anywhere in "
                      f"the body passes): {CODE_FIX}")
    if path in ("json", WHOLE_BODY):
        return None, None
    segs: list[Any] = []
    for seg in re.findall(r"\.([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\[\"([^\"]+)\"\]|\['([^']+)'\]", path[4:]):
        name, idx, dq, sq = seg
        segs.append(int(idx) if idx else (name or dq or sq))
    node: Any = "<answer>"
    for seg in reversed(segs):
        node = ([None] * seg + [node]) if isinstance(seg, int) else {seg: node}
    return json.dumps(node), None


def _secret(res: AdapterResult, kind: str, name: str, value: str, where: Where) -> str:
    """A literal credential -> `${PF_<KIND>_<NAME>}` (the value is kept in memory only, to redact)."""
    env = _env_name(f"{kind}_{name}" if kind else name)
    res.secrets.append({"header" if not kind else kind.lower(): name, "env": env, "where": str(where)})
    res.secret_values.append(value.strip())
    return "${" + env + "}"


def _credential(name: Any, value: Any) -> bool:
    return isinstance(value, str) and "{{" not in value and "${" not in value and bool(
        CREDENTIAL_HEADER.search(str(name)) or TOKEN_VALUE.match(value.strip()))


def _body(body: Any, constant_vars: dict[str, Any], where: Where, res: AdapterResult) -> Any:
    """The body as a JSON template; None (with a Skipped) when it cannot be one. A literal
    credential in it (an `api_key` field, a token-shaped value) becomes a `${VAR}`."""
    skipped = res.skipped
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            raise NotJson("its body is text or form data (promptfoo sends the string with the prompt pasted in, as "
                          "application/x-www-form-urlencoded unless a header says otherwise); assay sends a JSON "
                          "body") from None
    bad: list[str] = []

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {walk(k): (_secret(res, "BODY", str(k), v, where) if _credential(k, v) else walk(v))
                    for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, str):
            return node
        names = references(node) - {"prompt", "env"}
        per_test = sorted(n for n in names if n not in constant_vars)
        if per_test:
            bad.extend(per_test)
            return node
        text = re.sub(r"\{\{-?\s*prompt\s*-?\}\}", "<user turn>", node)
        try:
            return render(text, constant_vars, env_as="${}")
        except Unrenderable as exc:
            bad.append(str(exc))
            return node

    out = walk(body)
    if bad:
        skipped.append(Skipped(where, "http body", f"it reads {', '.join(sorted(set(bad)))} per test; assay's "
                               "request_body is one template where only the user turn (<user turn>) varies"))
        return None
    return out


def http_adapter(cfg: Config, constant_vars: dict[str, Any], app_url_env: str | None,
                 conversation: bool) -> AdapterResult:
    providers = _provider_items(cfg)
    chosen = None
    res = AdapterResult(None, None)
    for pid, conf, where, own in providers:
        if not is_http(pid) and "{{" in pid:
            res.skipped.append(Skipped(where, f"provider {pid}", "an address made by a template without its "
                                       "scheme: write it http(s)://... (e.g. https://{{env.APP_HOST}}/chat), or give "
                                       "--app-url-env and keep only the path"))
        elif not is_http(pid):
            res.skipped.append(Skipped(where, f"provider {pid}", "not an http provider: assay calls the app over "
                                       "HTTP, as a function or a command (write adapter.yaml for it by hand)"))
        elif chosen is not None:
            res.skipped.append(Skipped(where, f"provider {pid}", "a second http provider: a state dir tests one "
                                       "app; import the config again for each"))
        else:
            chosen = (pid, conf if isinstance(conf, dict) else {}, where, own)
    if chosen is None:
        return res
    pid, conf, where, own = chosen
    _provider_keys(cfg, own, where, res)
    res.provider_where = where
    if len(providers) > 1:   # never a silent pick: the others are listed as skipped, with why
        res.notes.append(f"the app under test is provider {pid} ({where}), one of the config's {len(providers)}; "
                         "check it is the one you meant (the others are listed as not converted)")
    for key in conf:
        if key not in MAPPED_KEYS and key not in HARMLESS_KEYS:
            res.skipped.append(Skipped(Where(where.file, cfg.lines.line_of(_conf_path(cfg, where, key)) or where.line),
                                       f"http config.{key}", "has no adapter.yaml equivalent"))
    url = conf.get("url") or (pid if pid.startswith(("http://", "https://")) else None)
    if not isinstance(url, str) or not url:
        res.skipped.append(Skipped(where, f"provider {pid}", "has no url"))
        return res
    url = render(url, {}, env_as="${}") if "{{" in url else url
    parts = urlsplit(url) if url.startswith(("http://", "https://")) else None
    if parts is not None:
        base, path = f"{parts.scheme}://{parts.netloc}", parts.path or "/"
        query = parts.query
    else:     # "${APP_URL}/chat"
        m = re.match(r"^(\$\{[A-Za-z_][A-Za-z0-9_]*\})(/.*)?$", url)
        if not m:
            res.skipped.append(Skipped(where, "http url", f"{url[:60]!r} is not an http(s) URL"))
            return res
        base, path, query = m.group(1), (m.group(2) or "/").split("?")[0], ("?" in (m.group(2) or "")
                                                                            and m.group(2).split("?", 1)[1] or "")
    params = dict(parse_qsl(query, keep_blank_values=True))
    if isinstance(conf.get("queryParams"), dict):
        params.update({k: render(str(v), constant_vars, env_as="${}") for k, v in conf["queryParams"].items()})
    params = {k: (_secret(res, "QUERY", k, v, where) if _credential(k, v) else v) for k, v in params.items()}
    query = "&".join(f"{quote(k, safe='')}={v if v.startswith('${') else quote(v, safe='')}"
                     for k, v in params.items())
    if app_url_env:
        res.notes.append(f"base_url is ${{{app_url_env}}}: export {app_url_env}={base} (the config's address) or "
                         "the address of the app under test")
        base = "${" + app_url_env + "}"
    method = str(conf.get("method") or "GET").upper()    # promptfoo's default: GET, the body is not sent
    body = None
    if method not in ("POST", "PUT", "PATCH", "DELETE"):
        unset = "" if conf.get("method") else " (the config names no method: promptfoo's default is GET)"
        res.skipped.append(Skipped(where, f"http method {method}", f"the prompt travels in the URL{unset}; assay "
                                   "sends it in a JSON request body: adapter.yaml says POST with a skeleton body "
                                   "until you write the app's endpoint"))
        method = "POST"
    elif "body" not in conf:    # promptfoo itself refuses an http provider without a body
        res.skipped.append(Skipped(where, "http body", "the provider has no body; request_body is the skeleton "
                                   '{"prompt": "<user turn>"} until you write the app\'s'))
    else:
        try:
            ctype = next((str(v) for k, v in (conf.get("headers") or {}).items()
                          if str(k).lower() == "content-type"), "application/json")
            if "json" not in ctype.lower():
                raise NotJson(f"its Content-Type is {ctype!r}; assay sends a JSON body")
            body = _body(conf["body"], constant_vars, where, res)
        except NotJson as exc:
            res.skipped.append(Skipped(where, f"provider {pid}", f"not converted: {exc}; adapter.yaml is the "
                                       "skeleton until you write the app's endpoint (or give the app a JSON route)"))
            return res
    endpoint = f"{method} {path}" + (f"?{query}" if query else "")
    inv: dict[str, Any] = {"mode": "http", "base_url": base, "endpoint": endpoint, "auth": {"type": "none"},
                           "request_body": json.dumps(body if body is not None else {"prompt": "<user turn>"},
                                                      ensure_ascii=False)}
    headers = _headers(conf.get("headers"), cfg, where, res, constant_vars)
    if headers:
        inv["headers"] = headers
    if res.identity_map:
        inv["identity_map"] = dict(res.identity_map)
    template, why = _response_path(conf["transformResponse"]) if "transformResponse" in conf else (None, None)
    if template:
        inv["response_body"] = template
    elif why:     # every case with an answer check carries it in not_converted (pf_build)
        tr_where = Where(where.file, cfg.lines.line_of(_conf_path(cfg, where, "transformResponse")) or where.line)
        res.answer_lost.append(Skipped(tr_where, "http transformResponse", why))
        res.skipped.append(res.answer_lost[-1])
    else:
        res.notes.append(("no transformResponse" if "transformResponse" not in conf else
                          f"transformResponse {str(conf['transformResponse']).strip()[:40]!r}")
                         + ": promptfoo's output is the parsed JSON body (or the text), assay's answer the whole "
                         "body text as sent (docs/importing.md: where the two texts differ); add response_body "
                         "to read one field")
    if conversation:
        if "<uuid>" in inv["request_body"]:
            inv["conversation"] = {"style": "client-id", "memory": "session"}
        else:
            res.notes.append("conversation cases need invocation.conversation: the request body has no <uuid> "
                             "session field, so they are skipped until adapter.yaml declares how the app keeps a "
                             "conversation (references/adapter-contract.md)")
    res.invocation = inv
    res.env_vars = sorted(set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", json.dumps(inv))))
    return res


# The provider's own keys (beside `config`) that change nothing assay measures.
OWN_HARMLESS = ("id", "label", "config", "delay", "env")


def _provider_keys(cfg: Config, own: dict[str, Any], where: Where, res: AdapterResult) -> None:
    """The chosen provider's keys beside `config`: `transform` rewrites every output before the assertions
    (answer_lost: every case with an answer check carries it), anything else is listed."""
    for key in own:
        if key in OWN_HARMLESS:
            continue
        path = _conf_path(cfg, where, key)[:2]      # (providers, i) -> the key beside its config
        at = Where(where.file, (cfg.lines.line_of(path + (key,)) if path else None) or where.line)
        if key == "transform":
            shown = str(own[key]).strip()[:60]
            res.answer_lost.append(Skipped(at, "provider transform", (
                f"transform {shown!r} rewrites the app's output with code before every assertion: promptfoo checks "
                "what it returns, assay checks the answer as the app sent it, so every answer check of this suite "
                "differs from promptfoo's (a text the transform cuts away passes here); give adapter.yaml a "
                "response_body path for the part the transform kept, or delete this entry to gate on the whole "
                "answer")))
            res.skipped.append(res.answer_lost[-1])
        else:
            res.skipped.append(Skipped(at, f"provider {key}", "has no adapter.yaml equivalent"
                                       + ("; the import makes every prompt's cases for this provider, promptfoo "
                                          "runs only the prompts it names" if key == "prompts" else "")))


def _conf_path(cfg: Config, where: Where, key: str) -> tuple[Any, ...]:
    for pkey in ("providers", "targets"):
        items = cfg.doc.get(pkey)
        if isinstance(items, list):
            for i, _ in enumerate(items):
                if cfg.where(pkey, i) == where:
                    return (pkey, i, "config", key)
    return ()


IDENTITY_KEYS = ("user", "role")     # case identity keys that carry one text value each as a header
_ONE_VAR = re.compile(r"^\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}$")


def _headers(headers: Any, cfg: Config, provider_where: Where, res: AdapterResult,
             constant_vars: dict[str, Any]) -> dict[str, str]:
    """Static headers; a header that is exactly one per-test var (`X-User: "{{user}}"`) is sent per
    case through the case's `identity` and `invocation.identity_map` (at most two: user, role)."""
    out: dict[str, str] = {}
    if not isinstance(headers, dict):
        return out
    base = _conf_path(cfg, provider_where, "headers")
    for name, value in headers.items():
        text = str(value)
        where = Where(provider_where.file, (cfg.lines.line_of(base + (name,)) if base else None) or provider_where.line)
        if "{{" in text:
            per_test = sorted(references(text) - {"env"} - set(constant_vars))
            one = _ONE_VAR.match(text.strip())
            if per_test and one and len(res.identity) < len(IDENTITY_KEYS):
                key = IDENTITY_KEYS[len(res.identity)]
                res.identity[key] = one.group(1)
                res.identity_map[key] = str(name)
                continue
            if per_test:
                res.skipped.append(Skipped(where, f"http header {name}", f"reads {', '.join(per_test)} per test; "
                                           "only a header that is exactly one var ({{user}}), two at most, is sent "
                                           "per case (as the case's identity): this header is not sent"))
                continue
            try:
                out[str(name)] = render(text, constant_vars, env_as="${}")
            except Unrenderable as exc:
                res.skipped.append(Skipped(where, f"http header {name}", f"uses {exc}"))
            continue
        if _credential(name, text):
            out[str(name)] = _secret(res, "", str(name), text, where)
        else:
            out[str(name)] = text
    return out
