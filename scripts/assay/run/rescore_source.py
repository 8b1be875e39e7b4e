"""The source run's stored answers, for rescore (`assay.run.rescore`): each case's n-th request
answered with its stored n-th `response.json` (an agent case's with its stored transcript and
`workdir.json`), and the stored trajectory given back as that request's trace."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..core import casestore
from ..core.errors import AssayError
from ..core.jsonio import dumps, loads, read_json
from ..invoke.fixture_digest import FIXTURE_DIGEST_KEY
from ..invoke.outcome import CONNECTION, RESPONSE, Outcome
from ..replay.miss import REPLAY_MISS, RESCORE_NOT_REPLAYED, ReplayMiss
from ..schemas import validate

NOT_SENT = "not sent in the source run: no stored response to rescore"
NOT_REPLAYED = f"a conversation (input.turns): {RESCORE_NOT_REPLAYED}"
# A stored answer is to the request the source run sent: a case whose request is rendered otherwise
# now (its input, identity or the adapter's request shape edited since), or that the source run never
# held (added to the suite since), is not measured by a rescore: a replay miss, never a pass.
RUN_IT_LIVE = "rescore re-scores stored answers only: run the case live (run_cases.py)"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

@dataclass
class Stored:
    request: Any
    response: dict
    trajectory: dict | None = None
    trace_doc: Any = None
    trace: dict | None = None
    workdir: dict | None = None     # agent mode: workdir.json, what the agent left (diff, files, check)
    repeated_5xx: dict | None = None  # the source case's: the same 5xx on every attempt (one is stored)


def _read(path: Path) -> Any:
    try:
        return read_json(path)
    except (OSError, ValueError):
        return None


def parse_json(data: bytes | None) -> Any:
    try:
        return loads(data.decode("utf-8")) if data is not None else None
    except (ValueError, RecursionError):
        return None


def load_source(run_dir: Path) -> tuple[dict, dict[str, dict], dict[tuple[str, int], Stored]]:
    """(manifest, verdict by case id, stored repeat by (case id, n))."""
    manifest = _read(run_dir / "manifest.yaml")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("cases"), list):
        raise AssayError(f"{run_dir}: not a run directory (no readable manifest.yaml)", 2, run_dir=str(run_dir))
    verdicts: dict[str, dict] = {}
    stored: dict[tuple[str, int], Stored] = {}
    store = casestore.open_store(run_dir)
    for entry in manifest["cases"]:
        cid = entry.get("id") if isinstance(entry, dict) else None
        case = store.load(cid) if isinstance(cid, str) else None
        if case is None:
            continue
        v = case.verdict
        source = store.where(cid)
        validate(v, "verdict", source=source)   # a hand edit: exit 2 naming the file and key

        def _art(rel: str, case: casestore.CaseRecord = case) -> Any:
            return parse_json(case.read(rel))
        verdicts[cid] = v
        if not v.get("sent", True) or v.get("verdict") == "skipped":
            continue
        k = int(v.get("k") or 1)
        repeats = v.get("repeats") or [{"n": 1, "verdict": v.get("verdict")}]
        chosen = next((r["n"] for r in repeats if r.get("verdict") == v.get("verdict")), repeats[-1]["n"])
        for n in range(1, k + 1):
            base = "" if k == 1 else f"repeats/{n}/"
            response = _art(base + "response.json")
            if not isinstance(response, dict):
                continue
            st = Stored(request=_art(base + "request.json"), response=response,
                        repeated_5xx=v.get("repeated_5xx") if isinstance(v.get("repeated_5xx"), dict) else None)
            rv = v if k == 1 else _art(base + "verdict.json")
            if isinstance(rv, dict) and rv.get("workdir_measured"):
                wd = _art(base + "workdir.json")
                st.workdir = wd if isinstance(wd, dict) else None
            if k > 1 and isinstance(rv, dict) and isinstance(rv.get("trace"), dict):
                # every repeat's own trace (run dirs since repeats/<n>/ holds trajectory.json)
                st.trace = rv["trace"]
                if rv.get("trace_collected"):
                    st.trajectory, st.trace_doc = _art(base + "trajectory.json"), _art(base + "trace.json")
            elif n == chosen:   # k = 1, or an older run dir: only the chosen repeat's trace was kept
                st.trajectory = _art("trajectory.json")
                st.trace_doc = _art("trace.json")
                st.trace = v.get("trace") if isinstance(v.get("trace"), dict) else None
            stored[(cid, n)] = st
    return manifest, verdicts, stored


def stored_outcome(response: Mapping[str, Any]) -> Outcome:
    """The final attempt of a stored response.json as an Outcome (no retry: it is what happened)."""
    kind = response.get("outcome") or RESPONSE
    body, fmt = response.get("body"), response.get("body_format")
    if fmt == "json":
        text = dumps(body, indent=None)
        return Outcome(RESPONSE, status=response.get("status"), headers=dict(response.get("headers") or {}),
                       body_text=text, body_json=body, json_ok=True, latency_ms=response.get("latency_ms") or 0.0,
                       notes=list(response.get("notes") or []), error=response.get("error"), cli=response.get("cli"))
    if kind != RESPONSE:
        return Outcome(kind, status=response.get("status"), error=response.get("error"),
                       latency_ms=response.get("latency_ms") or 0.0, cli=response.get("cli"),
                       body_text=body if isinstance(body, str) else None)
    return Outcome(RESPONSE, status=response.get("status"), headers=dict(response.get("headers") or {}),
                   body_text=body if isinstance(body, str) else None, latency_ms=response.get("latency_ms") or 0.0,
                   notes=list(response.get("notes") or []), error=response.get("error"), cli=response.get("cli"))


def agent_outcome(st: Stored) -> Outcome:
    """An agent run's stored repeat as the invoker's outcome: the result text is the answer (as the
    agent invoker gives it), the stored transcript the trace, workdir.json what the agent left."""
    response = st.response
    body = response.get("body") if isinstance(response.get("body"), dict) else {}
    text = body.get("result") if isinstance(body.get("result"), str) else None
    out = Outcome(RESPONSE, status=response.get("status"), body_text=text, body_json=body or None, json_ok=bool(body),
                  latency_ms=response.get("latency_ms") or 0.0, notes=list(response.get("notes") or []),
                  error=response.get("error"), cli=response.get("cli"),
                  answer_withheld=None if text is not None else
                  f"the agent stopped without an answer ({body.get('subtype')})")
    if st.trajectory is None:
        why = (st.trace or {}).get("reason") or "rescore: the source run stored no transcript for this request"
        out.agent = {"status": "incomplete", "reason": why, "trajectory": None, "workdir": st.workdir}
    else:
        out.agent = {"status": "ok", "reason": None, "trajectory": st.trajectory, "events": st.trace_doc,
                     "workdir": st.workdir}
    return out


class ReplayInvoker:
    """Answers each case's n-th request with the source run's stored n-th response."""

    def __init__(self, mode: str, stored: dict[tuple[str, int], Stored], source: "ReplayTraceSource",
                 conversation_ids: frozenset[str] = frozenset(), invocation: Mapping[str, Any] | None = None, *,
                 render: Any = None, added: Mapping[str, str] | None = None, source_run: Any = None,
                 binding: Any = None, fixture_digests: Any = None) -> None:
        self.mode = mode
        # assay.replay.key.Binding over the rescore's REAL environment (never render's filled-in one): the
        # values of the `${NAME}`s a request names, compared with the digest the source's request.json kept
        self.binding = binding
        self.render = render            # (case, uuid, extra_headers) -> the request as it would be recorded now
        self.added = dict(added or {})  # case id -> the split it was added to since the source run
        self.source_run = source_run
        self.stored = stored
        self.source = source
        self.conversation_ids = conversation_ids  # each turn arrives as a one-message case: known by id
        self.invocation = dict(invocation or {})  # the source manifest's invocation block
        # agent mode: the render's fixture digests (assay.invoke.fixture_digest), shared with the manifest's
        # case hashes so a rescore reads each fixture once
        self.fixture_digests = fixture_digests
        self._next: dict[str, int] = {}
        self._lock = threading.Lock()

    def manifest(self) -> dict[str, Any]:
        """cli / agent: the source run's invocation facts (the command, the agent's keys), as it ran."""
        return {k: v for k, v in self.invocation.items()
                if k not in ("mode", "timeout_s", "timeout_enforced", "max_concurrency")}

    def prepare(self, case: Mapping[str, Any], uuid: str, extra_headers: Mapping[str, str] | None = None, **kw: Any):
        if case.get("id") in self.conversation_ids or (isinstance(case.get("input"), Mapping)
                                                       and case["input"].get("turns")):
            return {"key": None}, {"mode": "rescore", "note": NOT_REPLAYED}
        with self._lock:
            n = self._next.get(case["id"], 0) + 1
            self._next[case["id"]] = n
        st = self.stored.get((case["id"], n))
        miss = self._miss(case, n, st, uuid, extra_headers)
        if miss is not None:
            return {"key": None, "miss": miss}, {"mode": "rescore", "note": miss}
        tp = (extra_headers or {}).get("traceparent")
        if st is not None and tp:
            self.source.register(tp.split("-")[1], case["id"], n)
        return {"key": (case["id"], n)}, (st.request if st is not None else {"mode": "rescore", "note": NOT_SENT})

    def _miss(self, case: Mapping[str, Any], n: int, st: Stored | None, uuid: str,
              extra_headers: Mapping[str, str] | None) -> str | None:
        """Why the source run holds no answer to this request (a replay miss), or None."""
        cid = case["id"]
        if cid in self.added:
            return (f"{REPLAY_MISS}: case {cid}: not in the source run {self.source_run} (added to the "
                    f"{self.added[cid]} split since): no stored answer; {RUN_IT_LIVE}")
        if st is None or not isinstance(st.request, Mapping):
            return None
        from ..core import writer
        from ..replay.key import VALUES_KEY, first_difference
        stored = {k: v for k, v in st.request.items() if k != VALUES_KEY}
        now: Mapping[str, Any] = stored
        if self.render is not None:   # every mode (http, function, cli, agent): the current adapter's request
            now = writer.redact_value(self.render(case, uuid, extra_headers))
            if now.get("mode") == "agent" and "fixture" not in stored:   # its workdir.json: of which fixture?
                return (f"{REPLAY_MISS}: case {cid}: request {n}: the source run {self.source_run}'s request.json "
                        "names no fixture (a run dir written before an agent's request named its fixture and env), "
                        "so its stored workdir may be of another fixture than the case's now, "
                        f"{now.get('fixture')}; {RUN_IT_LIVE}")
            if now.get("mode") == "agent" and FIXTURE_DIGEST_KEY not in stored:   # of the fixture's files now?
                return (f"{REPLAY_MISS}: case {cid}: request {n}: the source run {self.source_run}'s request.json "
                        "names no digest of the fixture's files (a run dir written before an agent's request named "
                        "it), so its stored workdir may be of other files than the fixture "
                        f"{now.get('fixture')} holds now; {RUN_IT_LIVE}")
            diff = first_difference(_comparable(stored), _comparable(now))
            if diff is not None:
                return (f"{REPLAY_MISS}: case {cid}: request {n} differs from the source run {self.source_run}'s at "
                        f"{diff}; {RUN_IT_LIVE}")
        return self._values_miss(cid, n, st.request.get(VALUES_KEY), now)

    def _values_miss(self, cid: str, n: int, recorded: Any, now: Mapping[str, Any]) -> str | None:
        """Why the same request text asks another thing now: a `${NAME}` it names (body, endpoint,
        argv, stdin, a non-credential header) is unset, or has another value than in the source run
        (compared by the digest its request.json kept, never a value), or the source kept none."""
        if self.binding is None:
            return None
        wanted = self.binding.wanted(now)
        where = f"{REPLAY_MISS}: case {cid}: request {n}"
        if not wanted:
            if recorded is None:
                return None
            was = recorded.get("vars") if isinstance(recorded, Mapping) else None
            return (f"{where}: the source run {self.source_run}'s request named {_names(was)}, "
                    f"which the current adapter no longer puts in it; {RUN_IT_LIVE}")
        # an allowlisted variable (env_allowlist) is bound set or unset: another state is a value miss below
        unset = [v for v in wanted if v not in self.binding.env and v not in self.binding.given]
        if unset:
            return (f"{where} names {_names(unset)}, not set now: the source run {self.source_run} answered the "
                    "value(s) it had then (its request.json keeps a digest, never a value); export the same "
                    "value(s) and rescore again, or run the case live (run_cases.py)")
        if not isinstance(recorded, Mapping):
            return (f"{where} names {_names(wanted, self.binding.given)}, but the source run {self.source_run} kept no record of "
                    "their values (a run dir written before request.json kept their digest), so its answer may "
                    f"be to other values; {RUN_IT_LIVE}")
        now_values = self.binding.values(now)
        if now_values == dict(recorded):
            return None
        was = [str(v) for v in recorded.get("vars") or []]
        if was != wanted:
            return (f"{where} names {_names(wanted, self.binding.given)} now, the source run {self.source_run}'s "
                    f"named {_names(was, self.binding.given)}; {RUN_IT_LIVE}")
        shown = _names(wanted, self.binding.given)
        what = (f"the value of {shown} differs" if len(wanted) == 1
                else f"the values of {shown} differ (at least one)")
        return (f"{where}: {what} from the source run {self.source_run}'s (compared by digest): its stored "
                f"answer is to another request; {RUN_IT_LIVE}")

    def send(self, wire: Mapping[str, Any]) -> Outcome:
        if wire.get("miss"):
            raise ReplayMiss(wire["miss"])
        if wire["key"] is None:
            return Outcome(CONNECTION, error=NOT_REPLAYED)
        st = self.stored.get(wire["key"])
        if st is None:
            return Outcome(CONNECTION, error=NOT_SENT)
        if self.mode == "agent" and (st.response.get("outcome") or RESPONSE) == RESPONSE:
            return agent_outcome(st)
        out = stored_outcome(st.response)
        out.repeated_5xx = st.repeated_5xx   # its attempts were not stored, only that they were the same 5xx
        if st.trace and st.trace.get("trace_id"):
            out.trace_id = st.trace["trace_id"]   # the stored request's trace, whatever the correlation
        return out

    def close(self) -> None:
        pass


def _names(names: Any, given: Any = frozenset()) -> str:
    """`${NAME}` for a variable the request names; `NAME (invocation.env_allowlist)` for one the app is given."""
    return ", ".join(f"{n} (invocation.env_allowlist)" if n in given else f"${{{n}}}"
                     for n in (names or [])) or "no variable"


def _comparable(request: Mapping[str, Any]) -> Any:
    """A recorded request as replay keys it (per-request headers masked, volatile keys dropped), with
    every uuid masked: the source's per-request `<uuid>` is not known, only that one was sent. A cli or
    agent request is its argv, stdin mode, cwd and identity variables: its trace context (`TRACEPARENT`,
    `TRACESTATE`: per-request) and `env` (which allowlisted variables the runner's environment set: the
    app's environment, not what it was asked; the `${NAME}`s it names and the allowlisted values the app is
    given are compared by value, Binding) are dropped."""
    from ..invoke.cli import TRACE_ENV
    from ..replay.key import UUID_MASK, normalize_request
    if request.get("mode") in ("cli", "agent"):
        request = {k: v for k, v in request.items() if k != "env" and k not in TRACE_ENV.values()}

    def mask(value: Any) -> Any:
        if isinstance(value, str):
            return _UUID.sub(UUID_MASK, value)
        if isinstance(value, Mapping):
            return {k: mask(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mask(v) for v in value]
        return value
    return mask(normalize_request(request))


@dataclass
class _Collected:
    status: str
    trajectory: Any = None
    trace_doc: Any = None
    reason: str | None = None


class ReplayTraceSource:
    """Gives back the stored trajectory of the request a trace id belongs to."""

    def __init__(self, stored: dict[tuple[str, int], Stored]) -> None:
        self.stored = stored
        self.by_trace: dict[str, tuple[str, int]] = {}
        for key, st in stored.items():
            tid = (st.trace or {}).get("trace_id")
            if tid:
                self.by_trace[tid] = key
        self._lock = threading.Lock()

    def register(self, trace_id: str, case_id: str, n: int) -> None:
        with self._lock:
            self.by_trace[trace_id] = (case_id, n)

    def collect(self, trace_id: str, parent_span_id: str | None = None) -> _Collected:
        with self._lock:
            key = self.by_trace.get(trace_id)
        st = self.stored.get(key) if key else None
        if st is None or st.trace is None:
            return _Collected("incomplete", reason="rescore: the source run stored no trace for this request (a "
                                                   "run dir written before every repeat's trace was kept)")
        if st.trajectory is None:
            return _Collected("incomplete", reason=st.trace.get("reason") or "trace incomplete in the source run")
        return _Collected("ok", st.trajectory, st.trace_doc, None)
