"""How a run reads traces, decided at pre-flight, and how a case's trace is found.

`trace_plan(adapter)` turns adapter.yaml's `traces` block into the decision the trace branch
(`assay.traces.collect`) acts on; `make_traceparent` / `trace_id_from_response` are the two
correlations (the runner's traceparent echoed, or a trace id the app returns). The sources
themselves are `assay.traces.otlp_file` and `assay.traces.otlp_http`; this module imports
neither.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core import writer
from ..core.jsonio import MISSING, dig
from ..core.vocab import QUERYABLE_TRACE_SOURCES, TRACE_DEPENDENT_LAYERS

QUERYABLE_SOURCES = QUERYABLE_TRACE_SOURCES
RESERVED_STORES = ("jaeger", "tempo", "clickhouse")
TRACELESS_SOURCES = ("none", "view-only")
DEFAULT_ADDRESS = "127.0.0.1:4318"


# ---------------------------------------------------------------------------- ids & correlation

def make_traceparent() -> tuple[str, str]:
    """A fresh W3C traceparent header value (sampled) and the trace id it carries."""
    import secrets   # only a traced run's requests carry one; a run without traces never loads it
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id


def trace_id_from_response(response_json: Any, field: str) -> tuple[str | None, str | None]:
    """(trace_id, None) from the dotted `field` of the response JSON, or (None, why not)."""
    node = dig(response_json, field.split("."))
    if node is MISSING:
        return None, f"response has no field {field!r} (correlation response-field:{field})"
    from .normalize import norm_id   # only a traced run's: a trace-less plan never loads the span model
    tid, _ = norm_id(node, 16)
    if not tid or len(tid) != 32:
        return None, f"response field {field!r} is not a 32-hex trace id: {writer.clip(node, 80)!r}"
    return tid, None


def parse_address(value: Any) -> tuple[str, int] | None:
    """`host:port` (or `http://host:port[/...]`) -> (host, port); None when it is not one."""
    if value in (None, ""):
        value = DEFAULT_ADDRESS
    if not isinstance(value, str):
        return None
    text = value.strip()
    if "://" in text:
        scheme, _, text = text.partition("://")
        if scheme != "http":
            return None
        text = text.split("/", 1)[0]
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        return None
    return host.strip("[]"), int(port)



# ---------------------------------------------------------------------------- pre-flight decision

def trace_plan(adapter: dict | None, *, state_dir: str | os.PathLike[str] | None = None) -> dict:
    """Decide, from adapter.yaml's `traces` block (env refs already resolved), how traces are read.

    Returns `{queryable, reason, disabled_layers, refusal, source, location, correlation,
    response_field, convention, quiescence_ms, max_wait_s}`. `refusal` (a message) means
    pre-flight must exit 3 naming it: a reserved store (jaeger/tempo/clickhouse), an unknown
    source or correlation, an unknown convention, a mapping_shim (shims are not executed by
    this runner: the conventions are built in), a bad completeness value, or an otlp-file
    location that cannot be read (otlp-http: a location that is not host:port). Else trace-less (`queryable: false`, `disabled_layers` = the
    trace-dependent layers) when the source is none/view-only/absent or the correlation is
    missing/none.
    """
    t = (adapter or {}).get("traces")
    t = t if isinstance(t, dict) else {}
    comp = t.get("completeness") if isinstance(t.get("completeness"), dict) else {}
    out: dict[str, Any] = {
        "queryable": False, "reason": None, "disabled_layers": list(TRACE_DEPENDENT_LAYERS), "refusal": None,
        "source": t.get("source"), "location": t.get("location"), "correlation": t.get("correlation"),
        "response_field": None, "convention": t.get("convention") or "gen_ai",
        "quiescence_ms": comp.get("quiescence_ms", 3000), "max_wait_s": comp.get("max_wait_s", 30)}

    def refuse(msg: str) -> dict:
        out["refusal"] = msg
        out["reason"] = msg
        return out

    source, corr = t.get("source"), t.get("correlation")
    if source in RESERVED_STORES:
        return refuse(f"traces.source {source!r} is reserved and not queryable by this runner; "
                      "otlp-file (a span file the app exports to) and otlp-http (the runner receives the "
                      "app's OTLP/HTTP exports) are, or set traces.source: none to run trace-less")
    if source not in (None, *QUERYABLE_SOURCES, *TRACELESS_SOURCES):
        return refuse(f"traces.source {source!r} is unknown; use otlp-file, otlp-http, view-only or none")
    if corr not in (None, "none", "traceparent-echo") and not (
            isinstance(corr, str) and corr.startswith("response-field:") and corr.split(":", 1)[1].strip()):
        return refuse(f"traces.correlation {corr!r} is unknown; use traceparent-echo or "
                      "response-field:<dotted path> (heuristic joins are not allowed)")
    if source in (None, *TRACELESS_SOURCES):
        out["reason"] = f"traces.source is {source or 'absent'}: run is trace-less"
        return out
    if corr in (None, "none"):
        out["reason"] = "traces.correlation is missing or none: spans cannot be joined to cases"
        return out
    from .conventions import CONVENTION_NAMES
    if out["convention"] not in CONVENTION_NAMES:
        hint = "; openllmetry-legacy is now openllmetry" if out["convention"] == "openllmetry-legacy" else ""
        return refuse(f"traces.convention {out['convention']!r} is unknown; use one of "
                      f"{', '.join(CONVENTION_NAMES)}{hint}")
    if t.get("mapping_shim"):
        return refuse(f"traces.mapping_shim is not supported by this runner; the conventions "
                      f"{', '.join(CONVENTION_NAMES)} are built in: remove mapping_shim")
    for key, val in (("quiescence_ms", out["quiescence_ms"]), ("max_wait_s", out["max_wait_s"])):
        if isinstance(val, bool) or not isinstance(val, (int, float)) or val < 0:
            return refuse(f"traces.completeness.{key} must be a number >= 0, got {val!r}")
    loc = t.get("location")
    if source == "otlp-http":
        parsed = parse_address(loc)
        if parsed is None or (isinstance(loc, str) and "${" in loc):
            return refuse(f"traces.location {loc!r} must be the host:port the runner listens on for "
                          f"OTLP/HTTP (default {DEFAULT_ADDRESS})")
        address = f"{parsed[0]}:{parsed[1]}"
        out.update(queryable=True, location=address, disabled_layers=[],
                   reason=f"otlp-http on {address}, correlation {corr}")
        if corr.startswith("response-field:"):
            out["response_field"] = corr.split(":", 1)[1].strip()
        return out
    if not isinstance(loc, str) or not loc.strip() or "${" in loc:
        return refuse(f"traces.location {loc!r} must be the path of the OTLP JSON span file")
    path = Path(loc)
    if not path.is_absolute() and state_dir is not None:
        path = Path(state_dir) / path
    if path.is_dir() or not path.parent.is_dir() or (path.exists() and not os.access(path, os.R_OK)):
        return refuse(f"traces.location {loc!r} is not a readable file (nor creatable in an existing directory)")
    out.update(queryable=True, location=str(path), disabled_layers=[],
               reason=f"otlp-file {path.name}, correlation {corr}")
    if corr.startswith("response-field:"):
        out["response_field"] = corr.split(":", 1)[1].strip()
    return out
