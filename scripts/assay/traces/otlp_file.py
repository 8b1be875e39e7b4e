"""Traces: the source of one case's trace (adapter `traces.source: otlp-file`; `otlp-http`
feeds the same index from `assay.traces.otlp_http`).

`OtlpFileSource`: the growing span file, read incrementally and shared by concurrent cases;
`collect(trace_id)` waits for quiescence and returns a `TraceOutcome`. The correlation helpers
and the pre-flight decision are `assay.traces.plan`.

The pure OTLP -> trajectory normalization is `assay.traces.normalize` (its public names are
re-exported here). In a file: one span document per line (the Collector's file exporter) or the
whole file as one document."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path

from ..core import hostile

from .otlp_writer import trace_doc
from .conventions import CONVENTION_NAMES
from .normalize import (  # noqa: F401  (re-exported: the public normalization API)
    BAD_DOC, AGENT_OP, ERROR, INCOMPLETE, LLM_OPS, OK, TOOL_OP, norm_id, first_agent_name, flatten_span,
    incomplete_reason, iter_raw_spans, normalize_flat, normalize_trace, root_spans,
)

INFRA_INCOMPLETE = "infra_incomplete"
_CHUNK = 4 << 20  # bytes read per step of a poll
MAX_MALFORMED_KEPT = 1000  # unparsed span lines remembered (offset, length) to explain a missing trace


# ---------------------------------------------------------------------------- the growing span file

class TraceOutcome(tuple):
    """`(status, trajectory | None, trace_doc | None)` plus `.reason`, `.checks`, `.waited_ms`.

    `status` is `ok` (trajectory usable) or `infra_incomplete` (trajectory None, `.reason` says
    why). `trace_doc` is an OTLP TracesData holding only this trace's spans (trace.json); it
    is kept on infra_incomplete too, for diagnosis, but the engine writes trace files only on ok.
    """

    def __new__(cls, status: str, trajectory: dict | None, trace_doc: dict | None, *,
                reason: str | None = None, checks: dict | None = None, waited_ms: float = 0.0):
        self = super().__new__(cls, (status, trajectory, trace_doc))
        self.status, self.trajectory, self.trace_doc = status, trajectory, trace_doc
        self.reason, self.checks, self.waited_ms = reason, checks or {}, waited_ms
        return self

    def trace_block(self, trace_id: str, correlation: str) -> dict:
        """The `trace` block of verdict.json."""
        return {"collected": self.status == OK, "trace_id": trace_id, "correlation": correlation,
                "status": self.status, "reason": self.reason, "checks": self.checks,
                "waited_ms": round(self.waited_ms, 1)}


class _Entry:
    __slots__ = ("refs", "docs", "count", "last_seen")

    def __init__(self) -> None:
        self.refs: list[tuple[int, int]] = []   # (offset, length) of the lines holding its spans
        self.docs: list[tuple[dict, dict, dict]] = []  # whole-document mode: the spans themselves
        self.count = 0
        self.last_seen = 0.0


# What the app must do when its spans arrive under trace ids of its own (traces.correlation traceparent-echo).
TRACEPARENT_FIX = ("the app does not continue the runner's traceparent header (traces.correlation traceparent-echo): "
                   "start each request's spans under it (your HTTP server's OpenTelemetry instrumentation or the "
                   "framework's middleware does; by hand, opentelemetry.propagate.extract(request headers) as the "
                   "context of the request's first span)")
TRACE_SETUP_NEW_TRACES = 2   # new trace ids, none a case's, before the run stops on TRACEPARENT_FIX


class OtlpFileSource:
    """The `otlp-file` trace store: one instance per run, shared by every concurrent case.

    `poll()` reads only the bytes appended since the last poll, parses complete lines only
    (a half-written last line waits for its newline) and indexes, per trace id, the byte
    ranges of the lines that hold its spans: O(new bytes) per poll and O(lines of one trace)
    per collect, however large the file grows. A file that is one pretty-printed document
    (first line not JSON, whole file JSON) is read whole whenever its size or mtime changes. A
    file that shrinks or is replaced (new inode) was rotated: the index starts over. Thread-safe.
    """

    def __init__(self, path: str | os.PathLike[str], convention: str = "gen_ai",
                 quiescence_ms: float = 3000, max_wait_s: float = 30, *,
                 poll_interval_s: float | None = None, written: str | None = None,
                 correlation: str | None = None) -> None:
        if convention not in CONVENTION_NAMES:
            raise ValueError(f"convention {convention!r} has no mapping; use one of {list(CONVENTION_NAMES)}")
        self.convention = convention
        self.path = Path(path)
        self.written = written  # traces.location as the adapter wrote it (e.g. ${SPANS_FILE})
        self.quiescence_s = max(0.0, float(quiescence_ms) / 1000.0)
        self.max_wait_s = max(0.0, float(max_wait_s))
        self.poll_interval_s = poll_interval_s or max(0.005, min(0.1, self.quiescence_s / 4 or 0.01))
        self._lock = threading.Lock()
        self._scored: dict[str, int] = {}   # trace id -> its span count when it was read as complete
        self._last_scored = 0.0
        self.correlation = correlation   # traces.correlation: what a trace that never came says to fix
        self._asked: set[str] = set()    # trace ids a case waited for
        self._new_since_asked: set[str] = set()   # trace ids first seen after the first case waited
        self._reset()
        self._at_start = self._signature()   # the file before any case ran (None: no file yet)

    def _signature(self) -> tuple[int, int, int] | None:
        with contextlib.suppress(OSError):
            st = self.path.stat()
            return st.st_dev, st.st_ino, st.st_size
        return None

    def setup_problem(self) -> str | None:
        """After a trace never arrived: a setup that cannot deliver any span (the engine stops the
        run, exit 3, instead of letting every case wait). The span file not existing is one; a span
        file that has not changed since the run started (empty, or another run's spans) is another."""
        if self.path.exists():
            if unreadable := self._unreadable_file():
                return f"{unreadable}; no case can get its trace"
            if self._unjoined():
                return (f"{len(self._new_since_asked)} new trace(s) were written to the span file {self.path} while "
                        f"cases waited, none of them a case's: {TRACEPARENT_FIX}; no case can get its trace")
            if self._at_start is None or self._signature() != self._at_start:
                return None
            held = f"it holds {self.spans_in_file} span(s) from before this run" if self._at_start[2] else "it is empty"
            return (f"the span file {self.path} has not changed since the run started ({held}): the app is not "
                    f"exporting to it (or not within max_wait_s={self.max_wait_s:g}: keep its batch delay, "
                    "OTEL_BSP_SCHEDULE_DELAY, below that); point the app's exporter at this file or traces.location "
                    "at the file the app writes (a relative path resolves against the state dir), then re-run")
        return (self._missing_file_note().removeprefix("; ") + "; no case can get its trace: fix "
                "traces.location or the app's exporter, then re-run")

    def _unjoined(self) -> bool:
        """traceparent-echo, and the listener got the app's traces under ids of its own: at least
        TRACE_SETUP_NEW_TRACES trace ids new since the first case waited, and no span, even a late
        one, under any id a case waited for (a slow app's late spans would carry one)."""
        with self._lock:
            return (self.correlation == "traceparent-echo" and len(self._new_since_asked) >= TRACE_SETUP_NEW_TRACES
                    and not any(tid in self._index for tid in self._asked))

    def _unreadable_file(self) -> str | None:
        """The file was written, but not one of its lines is OTLP JSON (a binary protobuf file)."""
        with self._lock:
            bad, read = self.malformed_lines, self.spans_in_file
        if read:
            return None
        if not bad:   # no complete line yet: a binary file need not hold a newline at all
            with contextlib.suppress(OSError), open(self.path, "rb") as fh:
                head = fh.read(64).lstrip()
                bad = int(bool(head) and head[:1] not in b"{[")
            if not bad:
                return None
        return (f"the span file {self.path} holds {bad} line(s) that are not OTLP JSON and not one span could be "
                "read from it: otlp-file reads OTLP JSON (one export per line, or one document), never binary "
                "protobuf (the Collector's file exporter: set format: json), or use traces.source: otlp-http")

    def _missing_file_note(self) -> str:
        """Why nothing arrived, when the reason is that the file was never written at all (or holds
        nothing readable)."""
        if self.path.exists():
            unreadable = self._unreadable_file()
            return f"; {unreadable}" if unreadable else ""
        from ..core.secrets import ENV_REF
        names = ENV_REF.findall(self.written or "")
        fix = f"; check ${names[0]}" if names else ""
        return (f"; the span file {self.path} does not exist (traces.location"
                + (f" {self.written}" if names else "")
                + f": a relative path resolves against the state dir; is the app exporting to it?{fix})")

    def _unparsed_for(self, trace_id: str) -> str | None:
        """The reason when the trace's spans are in the file but on lines that could not be parsed."""
        whys, needle = set(), trace_id.encode("ascii", "replace")
        with self._lock, contextlib.suppress(OSError), open(self.path, "rb") as fh:
            for offset, length, why in self._malformed:
                fh.seek(offset)
                whys.update([why] if needle in fh.read(length).lower() else [])
        return (f"lines of the span file hold trace id {trace_id} but could not be read ({'; '.join(sorted(whys))}"
                "): the spans are there and were skipped, not missing") if whys else None

    def _reset(self) -> None:
        self._offset = 0
        self._doc_mode = False
        self._doc_sig: tuple[int, int] | None = None
        self._inode: tuple[int, int] | None = None
        self._index: dict[str, _Entry] = {}
        self.spans_in_file = 0
        self.malformed_lines = 0
        self._malformed: list[tuple[int, int, str]] = []   # (offset, length, why) of unparsed lines

    def _add(self, entry_key: str | None, now: float) -> _Entry | None:
        if not entry_key:
            return None
        entry = self._index.get(entry_key)
        if entry is None:
            entry = self._index[entry_key] = _Entry()
            if self._asked:
                self._new_since_asked.add(entry_key)
        entry.count += 1
        entry.last_seen = now
        return entry

    def poll(self) -> int:
        """Ingest what was appended since the last poll; returns the number of new spans."""
        with self._lock:
            try:
                st = self.path.stat()
            except OSError:
                return 0
            size, inode = st.st_size, (st.st_dev, st.st_ino)
            if size < self._offset or (self._inode is not None and inode != self._inode):
                self._reset()  # truncated or replaced: rotated
            self._inode = inode
            if self._doc_mode:
                return self._poll_document((size, st.st_mtime_ns))
            if size == self._offset:
                return 0
            now, new, pos, buf = time.monotonic(), 0, self._offset, b""
            with open(self.path, "rb") as fh:
                fh.seek(pos)
                # Bounded chunks keep memory flat however much arrived since the last poll.
                while pos + len(buf) < size:
                    data = fh.read(min(_CHUNK, size - pos - len(buf)))
                    if not data:
                        break
                    buf += data
                    end = buf.rfind(b"\n")
                    if end < 0:
                        continue  # one line longer than a chunk: keep reading
                    got = self._ingest_lines(buf[: end + 1], pos, now, (size, st.st_mtime_ns))
                    if got is None:  # the file turned out to be one whole document
                        return self.spans_in_file
                    new, pos, buf = new + got, pos + end + 1, buf[end + 1:]
            self._offset = pos
            self.spans_in_file += new
            return new

    def _ingest_lines(self, block: bytes, base: int, now: float, sig: tuple[int, int]) -> int | None:
        new, pos = 0, 0
        for line in block.split(b"\n")[:-1]:
            start, pos = base + pos, pos + len(line) + 1
            if not line.strip():
                continue
            try:
                spans = list(iter_raw_spans(json.loads(line)))
            except BAD_DOC as exc:
                if start == 0 and self._try_document(sig):
                    return None
                self.malformed_lines += 1
                if len(self._malformed) < MAX_MALFORMED_KEPT:   # to say why a trace never arrived
                    self._malformed.append((start, len(line), "nested too deeply to parse"
                                            if isinstance(exc, RecursionError) else "not OTLP JSON"))
                continue
            seen: set[str] = set()
            for sp, _, _ in spans:
                tid, _ = norm_id(sp.get("traceId", sp.get("trace_id")), 16)
                entry = self._add(tid, now)
                if entry is not None and tid not in seen:
                    entry.refs.append((start, len(line)))
                    seen.add(tid)
            new += len(spans)
        return new

    def _try_document(self, sig: tuple[int, int]) -> bool:
        try:
            doc = json.loads(self.path.read_bytes())
            list(iter_raw_spans(doc))
        except (OSError, *BAD_DOC):
            return False
        self._doc_mode = True
        self._poll_document(sig)
        return True

    def _poll_document(self, sig: tuple[int, int]) -> int:
        """Whole-document mode: re-read the file whenever its (size, mtime) changes."""
        if sig == self._doc_sig:
            return 0
        try:
            triples = list(iter_raw_spans(json.loads(self.path.read_bytes())))
        except (OSError, *BAD_DOC):
            return 0  # being rewritten; try again on the next poll
        old = self.spans_in_file
        self._index, self._doc_sig, now = {}, sig, time.monotonic()
        for triple in triples:
            tid, _ = norm_id(triple[0].get("traceId", triple[0].get("trace_id")), 16)
            entry = self._add(tid, now)
            if entry is not None:
                entry.docs.append(triple)
        self.spans_in_file = len(triples)
        return max(0, self.spans_in_file - old)

    def trace_ids(self) -> list[str]:
        """Every trace id seen so far (mine_traces reads a listener's whole capture)."""
        with self._lock:
            return list(self._index)

    def raw_spans(self, trace_id: str) -> list[tuple[dict, dict, dict]]:
        """(raw span, resource, scope) of every span of one trace seen so far."""
        _, _, refs, docs = self._snapshot(trace_id)
        return self._load(trace_id, refs, docs)

    def _snapshot(self, trace_id: str) -> tuple[int, float, list[tuple[int, int]], list]:
        with self._lock:
            e = self._index.get(trace_id)
            return (0, 0.0, [], []) if e is None else (e.count, e.last_seen, list(e.refs), list(e.docs))

    def _load(self, trace_id: str, refs: list[tuple[int, int]], docs: list) -> list[tuple[dict, dict, dict]]:
        triples = list(docs)
        if refs:
            with open(self.path, "rb") as fh:
                for offset, length in refs:
                    fh.seek(offset)
                    for triple in iter_raw_spans(json.loads(fh.read(length))):
                        if norm_id(triple[0].get("traceId", triple[0].get("trace_id")), 16)[0] == trace_id:
                            triples.append(triple)
        return triples

    def late_spans(self) -> dict[str, tuple[int, int]]:
        """Traces read as complete that got more spans afterwards: {trace id: (spans scored, spans
        now)}. Waits until `quiescence_ms` has passed since the last trace was read (a batch still
        on its way for the last case gets the same time every other case's had), then polls."""
        with self._lock:
            wait = self._last_scored + self.quiescence_s - time.monotonic() if self._scored else 0.0
        if wait > 0:
            time.sleep(wait)
        self.poll()
        with self._lock:
            return {tid: (n, self._index[tid].count) for tid, n in self._scored.items()
                    if tid in self._index and self._index[tid].count > n}

    def collect(self, trace_id: str, *, parent_span_id: str | None = None) -> TraceOutcome:
        """Wait for the trace to complete, then normalize it.

        Complete = no new span for `quiescence_ms`, every root span (no parent, or the caller's
        `parent_span_id`) has ended, and the trace normalizes `ok` (no orphans). Until then keep
        polling; past `max_wait_s` the outcome is `infra_incomplete` with the reason.

        The quiet time counts from this call at the earliest (the app has answered): spans that
        ended before the answer may still sit in the app's export batch, and a trace with two
        roots (a guard call, then the agent) whose first root arrived long ago is not complete
        until the batch holding the second has had `quiescence_ms` to arrive.
        """
        wanted, _ = norm_id(trace_id, 16)
        wanted = wanted or str(trace_id).lower()
        self.poll()   # spans already in the file when this case began waiting are not new since it asked
        with self._lock:
            self._asked.add(wanted)
        started = time.monotonic()
        deadline = started + self.max_wait_s
        normalized, triples = None, []
        while True:
            self.poll()
            count, last_seen, refs, docs = self._snapshot(wanted)
            now = time.monotonic()
            if count and now - max(last_seen, started) >= self.quiescence_s:
                try:
                    triples = hostile.clean(self._load(wanted, refs, docs))[0]   # NaN etc.: text
                    flat = [flatten_span(t[0]) for t in triples]
                except (OSError, *BAD_DOC):  # rotated under us, or a hostile span: retry, then give up
                    triples, flat = [], []
                roots = root_spans(flat, parent_span_id=parent_span_id)
                normalized = normalize_flat(flat, wanted, spans_in_file=self.spans_in_file,
                                            parent_span_id=parent_span_id, convention=self.convention)
                if roots and all(r["end_ns"] for r in roots) and normalized["status"] == OK:
                    with self._lock:
                        self._scored[wanted], self._last_scored = count, time.monotonic()
                    return TraceOutcome(OK, normalized["trajectory"], trace_doc(triples),
                                        checks=normalized["checks"], waited_ms=(now - started) * 1000)
            if now >= deadline:
                waited = (now - started) * 1000
                if not count:
                    return TraceOutcome(INFRA_INCOMPLETE, None, None, waited_ms=waited, checks={
                        "spans_for_trace": 0, "spans_in_file": self.spans_in_file},
                        reason=self._unparsed_for(wanted) or f"no span with trace id {wanted} arrived in the span "
                               f"file within max_wait_s={self.max_wait_s:g}" + self._missing_file_note())
                if normalized is None:
                    why = f"spans were still arriving after max_wait_s={self.max_wait_s:g}"
                elif normalized["status"] != OK:
                    why = f"trace incomplete after max_wait_s={self.max_wait_s:g}: {incomplete_reason(normalized)}"
                else:
                    why = f"root span had not ended after max_wait_s={self.max_wait_s:g}"
                return TraceOutcome(INFRA_INCOMPLETE, None, trace_doc(triples) if triples else None,
                                    reason=why, checks=(normalized or {}).get("checks") or {
                                        "spans_for_trace": count, "spans_in_file": self.spans_in_file},
                                    waited_ms=waited)
            time.sleep(min(self.poll_interval_s, max(0.0, deadline - now)))
