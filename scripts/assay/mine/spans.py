"""Span files -> one observed request per trace, through the runner's own normalization.

`read_requests(paths)` reads OTLP JSON (a TracesData document, a list, or JSON lines of
them: what `otlp-file` apps write); `listen_requests(address, seconds)` receives exports on
the runner's own otlp-http listener (assay.traces.otlp_http) for a while. Both
group spans by trace id, normalizes each trace with assay.traces.normalize (convention
`auto`) and reads the user's message and the final answer from the LLM spans' captured
messages (assay.traces.conventions.message_texts). A trace without captured content has
no user text and is counted, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.jsonio import MAX_DEPTH, loads
from ..traces import conventions
from ..traces.normalize import LLM_KIND, first_agent_name, flatten_span, iter_raw_spans, normalize_flat

MAX_BYTES = 200_000_000


@dataclass
class Observed:
    trace_id: str
    user_text: str | None
    earlier_user_turns: int
    answer: str | None
    route: str | None
    tools: list[dict[str, Any]] = field(default_factory=list)   # {name, arguments, arguments_captured}
    start_ns: int = 0
    failed: list[str] = field(default_factory=list)        # spans that reported an error (status ERROR)
    other_orders: list[list[str]] = field(default_factory=list)   # tool orders of near-duplicate requests


def _docs(path: Path) -> list[tuple[int | None, Any]]:
    """(line number, document) for each JSON line; (None, document) for a file that is one document."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise AssayError(f"{path}: cannot read it ({exc.strerror or exc})", 2, file=str(path)) from None
    if path.is_dir():
        raise AssayError(f"{path}: is a directory; give the span files in it (e.g. {path}/*.jsonl)", 2, file=str(path))
    if size > MAX_BYTES:
        raise AssayError(f"{path}: {size} bytes is over the {MAX_BYTES}-byte limit; split the file", 2, file=str(path))
    text = path.read_text("utf-8", errors="replace")
    if not text.strip():
        raise AssayError(f"{path}: the file is empty (no spans): point the app's OTLP JSON file exporter at it and "
                         "send the app requests first, or give the file it writes", 2, file=str(path))
    try:   # jsonio.loads: too deep is a ValueError (never a RecursionError), refused past MAX_DEPTH
        return [(None, loads(text, max_depth=MAX_DEPTH))]
    except ValueError as exc:
        whole = exc
    docs = []
    lines = text.splitlines()
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=0)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            docs.append((n, loads(line, max_depth=MAX_DEPTH)))
        except ValueError as exc:
            if n == 1 and last > 1 and _cut_short(whole, text):
                why = (f"one JSON document that ends before it closes (line {last} is its last); the file was cut "
                       "short: copy or export it again whole")
                n = last
            elif n == last and _cut_short(exc, line):
                why = ("this last line ends before its JSON does (the file was cut short, or the exporter was "
                       "still writing it): drop the line, or mine a complete export")
            else:
                why = ("not OTLP JSON" + (f" ({exc})" if "nested" in str(exc) else "") + "; a span file holds a "
                       "TracesData object per line, or one document (export it again with the OTLP JSON file exporter)")
            raise AssayError(f"{path}:{n}: {why}", 2, file=str(path), line=n) from None
    return docs


def _cut_short(exc: ValueError, text: str) -> bool:
    """The JSON text ended before its value did (a truncated file), not a wrong character inside it."""
    pos = getattr(exc, "pos", None)
    return "Unterminated string" in str(exc) or (pos is not None and pos >= len(text.rstrip()))


def read_requests(paths: list[str]) -> tuple[list[Observed], dict[str, int]]:
    """The requests in OTLP JSON span files."""
    by_trace: dict[str, list[dict]] = {}
    for p in paths:
        path = Path(p)
        for n, doc in _docs(path):
            try:
                _group(iter_raw_spans(doc), by_trace)
            except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
                where = {"file": str(path), **({"line": n} if n else {})}
                raise AssayError(f"{path}{f':{n}' if n else ''}: not an OTLP span document ({type(exc).__name__}: "
                                 f"{exc}); a span file holds a TracesData object (resourceSpans) or a span per line",
                                 2, **where) from None
    return observe(by_trace)


def listen_requests(address: str, seconds: float, capture: str | None = None,
                    announce: Any = None) -> tuple[list[Observed], dict[str, int]]:
    """Receive OTLP/HTTP exports on `address` for `seconds` (the runner's own otlp-http listener),
    then the requests they hold. `capture` also writes them as OTLP JSON lines (unredacted: the
    file is the user's, asked for by name)."""
    import time

    from ..traces.otlp_http import OtlpHttpSource
    try:
        source = OtlpHttpSource(address)
    except (OSError, ValueError) as exc:
        raise AssayError(f"--listen {address}: {exc}", 2) from None
    try:
        if announce:
            announce(source.address)
        time.sleep(seconds)
    finally:
        source.server.shutdown()
        source.server.server_close()
    by_trace: dict[str, list[dict]] = {}
    lines = []
    for tid in source.trace_ids():
        triples = source.raw_spans(tid)
        _group(triples, by_trace)
        if capture:
            lines.append({"resourceSpans": [{"resource": r, "scopeSpans": [{"scope": sc, "spans": [sp]}]}
                                            for sp, r, sc in triples]})
    if capture:
        from ..core import writer
        writer.write_jsonl(capture, lines)
    observed, stats = observe(by_trace)
    stats["exports_received"] = source.exports
    return observed, stats


def _group(triples: Any, by_trace: dict[str, list[dict]]) -> None:
    for sp, _, _ in triples:
        flat = flatten_span(sp)
        if flat["trace_id"]:
            by_trace.setdefault(flat["trace_id"], []).append(flat)


def observe(by_trace: dict[str, list[dict]]) -> tuple[list[Observed], dict[str, int]]:
    """One Observed per trace, through the runner's normalization (convention `auto`)."""
    out: list[Observed] = []
    stats = {"traces": len(by_trace), "without_user_text": 0}
    for trace_id, spans in by_trace.items():
        norm = normalize_flat(spans, trace_id, convention="auto")
        traj = norm.get("trajectory") or {}
        conv, _ = conventions.pick("auto", spans)
        llm = sorted((s for s in spans if conv.kind_of(s["attributes"]) == LLM_KIND), key=lambda s: s["start_ns"] or 0)
        user_text, earlier, answer = None, 0, None
        if llm:
            users = [t for role, t in conventions.message_texts(conv, llm[0]["attributes"], "input") if role == "user"]
            if users:
                user_text, earlier = users[-1], len(users) - 1
            outs = [t for role, t in conventions.message_texts(conv, llm[-1]["attributes"], "output")
                    if role == "assistant"]
            answer = outs[-1] if outs else None
        if not user_text:
            stats["without_user_text"] += 1
        tools = [{"name": t.get("name"), "arguments": t.get("arguments"),
                  "arguments_captured": bool(t.get("arguments_captured"))}
                 for t in traj.get("tool_calls") or [] if t.get("name")]
        failed = [str(s["name"] or "a span") for s in sorted(spans, key=lambda s: s["start_ns"] or 0)
                  if s["status_code"] == 2]
        out.append(Observed(trace_id, user_text, earlier, answer, first_agent_name(traj), tools,
                            min((s["start_ns"] or 0) for s in spans), failed))
    out.sort(key=lambda o: (o.start_ns, o.trace_id))
    return out, stats
