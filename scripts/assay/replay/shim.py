"""The replay invoker: the one point every app request passes (http, function, cli, and each
turn of a conversation, which sends through the same `send`).

It renders the request with the real invoker (`prepare`), keys it (assay.replay.key), and then
either sends it and keeps the exchange (record) or answers it from the cache without any
connection (replay). Per case, on the worker thread that runs it: the sends in order (repeats,
retries, turns), written at `finish_case` with the case's index (what a miss is diffed against)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..core.ids import utc_now_iso
from ..core.vocab import is_holdout
from ..invoke.templates import UNSET
from ..traces.collect import NOT_COLLECTED, CaseTrace
from .entries import outcome_doc, outcome_from, trace_doc, trace_from
from .key import SESSION_MASK, VALUES_KEY, Binding, exchange_key, first_difference, normalize_request
from .miss import REPLAY_MISS, ReplayMiss


@dataclass
class ReplayWire:
    inner: Any
    case_id: str
    request: dict
    turn: int
    holdout: bool = False


@dataclass
class _CaseState:
    case_id: str
    position: int = 0
    prepares: Counter = field(default_factory=Counter)
    pending: list = field(default_factory=list)
    index: list | None = None      # replay: the recorded requests, read on the first miss
    whole: tuple | None = None      # replay of a bare cache: (the run its case index names, its keys)


class ReplayInvoker:
    def __init__(self, inner: Any, session: Any, binding: Binding | None = None, *, address: str | None = None,
                 address_named: str = "invocation.base_url", app_repo: str | None = None) -> None:
        self.inner = inner
        self.session = session
        self.binding = binding
        # an app with no app.name: where it is called (an http app's key.app_address), or where its code
        # is (a function, cli or agent app's key.app_location: `app_repo` names that directory)
        self.address = address
        self.address_named = address_named   # how a miss names an http app's address (its variable)
        self.app_repo = app_repo
        self.cache = session.cache
        self._local = threading.local()

    def __getattr__(self, name: str) -> Any:   # mode, close, health_url, manifest, ... of the real invoker
        return getattr(self.inner, name)

    # ---- per case ----------------------------------------------------------------
    def _state(self, case_id: str) -> _CaseState:
        st = getattr(self._local, "case", None)
        if st is None or st.case_id != case_id:
            st = self._local.case = _CaseState(case_id)
        return st

    def prepare(self, case: Mapping[str, Any], uuid: str, extra_headers: Mapping[str, str] | None = None,
                session: Any = UNSET):
        wire, recorded = self.inner.prepare(case, uuid, extra_headers, session=session)
        cid = str(case.get("id"))
        st = self._state(cid)
        st.prepares[uuid] += 1
        if session is UNSET or session is None:
            request = normalize_request(recorded, uuid=uuid)
        else:   # keyed by where the session goes, never by its value (which the writer may redact on
            # record when it equals a secret's value, so the replayed turn would send `<redacted>`)
            request = normalize_request(self.inner.prepare(case, uuid, extra_headers, session=SESSION_MASK)[1],
                                        uuid=uuid)
        values = self.binding.values(recorded) if self.binding is not None else None
        if values is not None:   # what the request's ${NAME}s resolved to (a digest): another value, another request
            request[VALUES_KEY] = values
        # a conversation renders each turn with the same uuid: the n-th prepare of a uuid is turn n
        holdout = is_holdout(case)
        return ReplayWire(wire, cid, request, st.prepares[uuid], holdout), recorded

    def retrace(self, wire: ReplayWire, recorded: dict, trace_headers: Mapping[str, str]) -> bool:
        """A retry's fresh trace headers on the real request (its key masks them: same exchange key)."""
        inner = getattr(self.inner, "retrace", None)
        return bool(inner is not None and inner(wire.inner, recorded, trace_headers))

    def send(self, wire: ReplayWire):
        st = self._state(wire.case_id)
        position = st.position
        st.position += 1
        key = exchange_key(wire.case_id, position, wire.request)
        if wire.holdout:   # sealed: a holdout case's input never goes into a cache that may be shared
            if self.session.app == "replay":
                raise ReplayMiss(f"{REPLAY_MISS}: a holdout case is never recorded or replayed (sealed); run the "
                                 "holdout live")
            return self.inner.send(wire.inner)
        if self.session.app == "replay" and wire.case_id not in self.session.live_cases:
            doc = self.cache.read_entry(self.cache.exchange_path(key), "response", dict, "the recorded response, an object")
            if doc is None:
                self.session.count("app_misses")
                raise ReplayMiss(self._miss(st, position, wire))
            overwritten = (self._not_the_source_runs(doc, position, wire) or self._not_this_app(doc, position, wire)
                           or self._not_the_cases_recording(st, doc, position, wire))
            if overwritten:
                self.session.count("app_misses")
                raise ReplayMiss(overwritten)
            self.session.count("app_hits")
            out = outcome_from(doc["response"])
            out._replay = {"replayed": True, "trace": doc.get("trace")}
            return out
        out = self.inner.send(wire.inner)
        entry = {"key": key, "run_id": self.session.run_id, "app_name": self.session.app_name,
                 "address": self.address, "case_id": wire.case_id, "position": position,
                 "turn": wire.turn, "request": wire.request, "response": outcome_doc(out), "recorded_at": utc_now_iso()}
        st.pending.append(entry)
        out._replay = entry
        return out

    def finish_case(self, case_id: str, passed: bool) -> None:
        st = getattr(self._local, "case", None)
        if st is not None and st.case_id == case_id:
            if st.pending:   # recorded (--record, or a live case of a --changed-since replay)
                self.cache.mark_app(self.session.app_name)
                for entry in st.pending:
                    self.cache.write(self.cache.exchange_path(entry["key"]), entry)
                self.cache.write(self.cache.case_path(case_id), {   # last: it says the case's recording is whole
                    "case_id": case_id, "run_id": self.session.run_id, "recorded_at": utc_now_iso(),
                    "requests": [{"key": e["key"], "turn": e["turn"], "request": e["request"]} for e in st.pending]})
                self.session.count("app_recorded", len(st.pending))
            self._local.case = None
        inner_finish = getattr(self.inner, "finish_case", None)
        if inner_finish is not None:
            inner_finish(case_id, passed)

    # ---- a miss, explained ---------------------------------------------------------
    def _not_the_source_runs(self, doc: Mapping[str, Any], position: int, wire: ReplayWire) -> str | None:
        """--replay RUN_DIR: why this cache entry is not that run's answer (None when it is). The cache
        is keyed by request and shared by every run of the state dir, so a later --record (another app
        build, or a --changed-since run's live case) writes over the same key: answering with it would
        say "replayed from run X" while scoring another run's answer."""
        source = self.session.source_run
        if source is None or doc.get("run_id") == source:
            return None
        where = f"{REPLAY_MISS}: case {wire.case_id}: request {position + 1}"
        if wire.turn and wire.turn > 1:
            where += f" (turn {wire.turn})"
        by = doc.get("run_id")
        if not by:
            return (f"{where}: the cache's answer names no recording run (recorded at {doc.get('recorded_at')}), so it "
                    f"cannot be shown to be run {source}'s: replay the cache (--replay {self.cache.root}), or record "
                    "again with --record")
        return (f"{where}: the cache's answer was recorded by run {by} (at {doc.get('recorded_at')}), not by run "
                f"{source} (the cache keeps one answer per request: the last recording of it, by any run); replay "
                f"run {by} or the cache (--replay {self.cache.root}), or record again with --record")

    def _not_the_cases_recording(self, st: _CaseState, doc: Mapping[str, Any], position: int,
                                 wire: ReplayWire) -> str | None:
        """A bare cache: why this entry is not of the case's last whole recording of this request (None
        when it is). A case's exchanges are written, then its index: a run stopped between them (killed,
        the disk full) leaves some requests answered by its recording and the rest by an older one, a
        conversation that never happened. The index names the run whose recording of the case is whole:
        an entry at a key the index holds at this position, written by another run, is such a leftover."""
        if self.session.source_run is not None or not doc.get("run_id"):
            return None    # a run dir SOURCE ties every answer to its run already; an entry naming no run
        if st.whole is None:
            index = self.cache.read_entry(self.cache.case_path(wire.case_id), "requests", list,
                                          "a list of the recorded requests (objects)") or {}
            st.whole = (str(index.get("run_id") or ""), [r.get("key") for r in index.get("requests") or []])
        run, keys = st.whole
        if not run or doc["run_id"] == run or position >= len(keys) or keys[position] != doc.get("key"):
            return None
        where = f"{REPLAY_MISS}: case {wire.case_id}: request {position + 1}"
        if wire.turn and wire.turn > 1:
            where += f" (turn {wire.turn})"
        return (f"{where}: the cache's answer was written by run {doc['run_id']} (at {doc.get('recorded_at')}), whose "
                f"recording of this case never finished (the case's index in {self.cache.root} names run {run}: the "
                f"run stopped while writing the case), so its answers would mix two recordings; replay run {run} "
                "(--replay <its run dir>), or record the case again with --record")

    def _not_this_app(self, doc: Mapping[str, Any], position: int, wire: ReplayWire) -> str | None:
        """Why this cache entry is not an answer of the plan's app (None when it is). The key holds no
        app: another app's recording whose request looks alike (same case id, same body) would answer
        for this one. An entry written before entries named their app is tied to it only through a
        run dir SOURCE (its run id, whose manifest's app was checked at pre-flight)."""
        where = f"{REPLAY_MISS}: case {wire.case_id}: request {position + 1}"
        if wire.turn and wire.turn > 1:
            where += f" (turn {wire.turn})"
        mine = self.session.app_name
        if mine is None and doc.get("app_name") is None and self.address is not None:
            return self._not_this_address(doc, where)   # no name on either side: the address is the tie
        if "app_name" not in doc:
            if self.session.source_run is not None:
                return None
            return (f"{where}: the cache's answer names no app (recorded at {doc.get('recorded_at')}, before "
                    f"recordings named their app), so it cannot be shown to be an answer of app {mine!r}: replay the "
                    "run that recorded it (--replay <its run dir>), or record again with --record")
        if doc.get("app_name") == mine:
            return None
        theirs, ours = (f"app {n!r}" if n is not None else "an app with no app.name" for n in (doc.get("app_name"), mine))
        return (f"{where}: the cache's answer was recorded from {theirs}, and this plan is of {ours} "
                f"(adapter.yaml app.name): a recording answers only for the app it recorded; replay this "
                "app's own recording, or record it with --record")

    def _not_this_address(self, doc: Mapping[str, Any], where: str) -> str | None:
        """An app with no app.name: why this entry is not an answer of the app the plan points at now
        (None when it is, or when this replay cannot tell where it points: its base URL unset). With
        no name, two apps whose adapters and suites ask alike key alike; only the address differs."""
        if self.address is None:
            return None
        fix = ("name the app (adapter.yaml app.name) and record it with --record (a named app's recording "
               "replays at any address), or record this app with --record, or run live")
        if self.app_repo is not None:
            return self._not_this_repo(doc, where, fix)
        if "address" not in doc:
            return (f"{where}: the cache's answer names no address (recorded at {doc.get('recorded_at')}, before "
                    "recordings of an app with no app.name named where they called it), so it cannot be shown to be "
                    f"an answer of the app {self.address_named} points at now: {fix}")
        if doc.get("address") == self.address:
            return None
        return (f"{where}: the cache's answer was recorded from an app with no app.name at another address than "
                f"the one {self.address_named} gives now: with no name an app is known only by its address, so "
                f"this may be another app's answer; set {self.address_named} to the address it was recorded "
                f"at, or {fix}")

    def _not_this_repo(self, doc: Mapping[str, Any], where: str, fix: str) -> str | None:
        """A function, cli or agent app with no app.name: its entrypoint or command as written is in the
        key, so the same `bot:handle` in another app repo (adapter.yaml app.repo pointed elsewhere, or
        this app replayed from another app's cache) keys alike; where its code is tells them apart."""
        mode = self.inner.mode if isinstance(getattr(self.inner, "mode", None), str) else "this"
        if doc.get("address") is None:
            return (f"{where}: the cache's answer names no app repo (recorded at {doc.get('recorded_at')}, before "
                    f"recordings of a {mode} app with no app.name named where its code is), so it cannot be shown "
                    f"to be an answer of the app in {self.app_repo}: {fix}")
        if doc.get("address") == self.address:
            return None
        return (f"{where}: the cache's answer was recorded from a {mode} app with no app.name in another app repo "
                f"than this plan's, {self.app_repo} (adapter.yaml app.repo, else the state dir's parent; seen from "
                f"the cache {self.cache.root}): with no name an app is known only by where its code is, so this may "
                f"be another app's answer; point app.repo at the repo it was recorded from, or {fix}")

    def _miss(self, st: _CaseState, position: int, wire: ReplayWire) -> str:
        where = f"{REPLAY_MISS}: case {wire.case_id}: request {position + 1}"
        if wire.turn and wire.turn > 1:
            where += f" (turn {wire.turn})"
        if st.index is None:
            st.index = (self.cache.read_entry(self.cache.case_path(wire.case_id), "requests", list,
                                              "a list of the recorded requests (objects)") or {}).get("requests")
        if st.index is None:
            return f"{where}: this case was never recorded in {self.cache.root} (record it with --record)"
        if position >= len(st.index):
            return (f"{where}: the recording of this case has only {len(st.index)} request(s) (the app is asked "
                    "more often than when it was recorded: k, a retry or a turn differs)")
        diff = first_difference(st.index[position].get("request"), wire.request)
        if diff is None:
            return f"{where}: the recorded entry is gone from {self.cache.root} (pruned?); record again"
        return f"{where} differs from the recording at {diff}"


def trace_through(outcome: Any, collect: Callable[[], CaseTrace]) -> CaseTrace:
    """The trace of one answered request: the recorded one on replay (never waiting on a trace
    source no app writes to), what `collect()` found otherwise (kept with the exchange on record)."""
    entry = getattr(outcome, "_replay", None)
    if entry is None:
        return collect()
    if entry.get("replayed"):
        doc = entry.get("trace")
        if doc is None:
            return CaseTrace(NOT_COLLECTED, None, None, "replayed: no trace was recorded with this exchange")
        return trace_from(doc)
    got = collect()
    entry["trace"] = trace_doc(got)
    return got
