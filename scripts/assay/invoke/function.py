"""The `function` invoker: `module:callable`, imported at pre-flight, called in-process.

The callable receives the filled request body (default `{"message": "<user turn>",
"session_id": "<uuid>"}`) and returns a str or `{text, status, trace_id}`. An exception is
infra (retried, then infra_error), never a fail. The timeout is enforced: each call runs on
a daemon thread (one per case worker) and a call still running at `timeout_s` is a `timeout` outcome; the
call is abandoned (Python cannot stop a thread; it may still finish in the background) and
the case worker goes on, so the run keeps its concurrency.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
import time
from queue import SimpleQueue
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import hostile
from ..core.errors import AssayError
from ..core.jsonio import sha256_bytes
from ..core import secrets
from . import templates
from .http import placeholder_values
from .outcome import EXCEPTION, RESPONSE, TIMEOUT, Outcome


def import_entrypoint(entrypoint: Any, root: Path) -> Callable[..., Any]:
    if not isinstance(entrypoint, str) or entrypoint.count(":") != 1:
        raise AssayError(f"pre-flight: invocation.entrypoint must be 'module:callable' (got {entrypoint!r})",
                         3, key="invocation.entrypoint")
    module_name, attr = entrypoint.split(":")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # an import error in user code is a pre-flight failure, not a crash
        raise AssayError(f"pre-flight: cannot import {module_name!r} for invocation.entrypoint "
                         f"{entrypoint!r} (app root {root}): {type(exc).__name__}: {exc}", 3,
                         key="invocation.entrypoint")
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
    if not callable(target):
        raise AssayError(f"pre-flight: {entrypoint!r} is not a callable in module {module_name!r}", 3,
                         key="invocation.entrypoint")
    return target


class FunctionInvoker:
    mode = "function"

    def __init__(self, invocation: Mapping[str, Any], env: Mapping[str, str], fn: Callable[..., Any], *,
                 timeout_s: float | None = None) -> None:
        self.timeout_s = None if timeout_s is None else float(timeout_s)
        self._callers = threading.local()  # one calling thread per case worker, replaced after a timeout
        self.entrypoint = invocation.get("entrypoint")
        body = invocation.get("request_body")
        self.body_recorded = (templates.parse_template(body, "invocation.request_body") if body is not None
                              else templates.DEFAULT_FUNCTION_BODY)
        self.body_wire = secrets.expand_deep(self.body_recorded, env)
        self.fn = fn

    def prepare(self, case: Mapping[str, Any], uuid: str, extra_headers: Mapping[str, str] | None = None,
                session: Any = templates.UNSET):
        values = placeholder_values(case, uuid, session)
        wire = {"body": templates.fill(self.body_wire, values)}
        recorded = {"mode": "function", "entrypoint": self.entrypoint, "body": templates.fill(self.body_recorded, values)}
        return wire, recorded

    def send(self, wire: Mapping[str, Any]) -> Outcome:
        start = time.perf_counter()
        if self.timeout_s is None:
            box = _call(self.fn, wire["body"])
        else:
            caller = getattr(self._callers, "caller", None)
            if caller is None:
                caller = self._callers.caller = _Caller()
            box = caller.call(self.fn, wire["body"], self.timeout_s)
            if box is None:
                self._callers.caller = None  # that thread is busy with the abandoned call: never reused
                return Outcome(TIMEOUT, error=f"no return within {self.timeout_s:g} s (the call was abandoned "
                               "and may still be running)", latency_ms=_ms(start))
        latency = _ms(start)
        if "error" in box:
            return Outcome(EXCEPTION, error=box["error"], latency_ms=latency)
        result = box.get("result")
        if isinstance(result, str):
            result = hostile.clean(result)[0]
            return Outcome(RESPONSE, status=200, body_text=result, body_json=None, json_ok=False,
                           latency_ms=latency, body_sha=sha256_bytes(result.encode("utf-8", "replace")))
        if isinstance(result, Mapping):
            status = result.get("status", 200)
            if not isinstance(status, int) or isinstance(status, bool):
                status = 200
            text = result.get("text")
            notes: list[str] = []
            try:  # NaN, Infinity and lone surrogates are the app's data: recorded as text (core.hostile)
                doc, found = hostile.loads(json.dumps(result, sort_keys=True, ensure_ascii=True, default=str))
                canon = json.dumps(doc, sort_keys=True, ensure_ascii=False, allow_nan=False)
                if found:
                    notes.append(hostile.note(found))
            except (TypeError, ValueError, RecursionError):
                doc, canon = None, hostile.clean(repr(result))[0]
            if isinstance(text, str):
                text = hostile.clean(text)[0]
            trace_id = result.get("trace_id") if isinstance(result.get("trace_id"), str) else None
            return Outcome(RESPONSE, status=status, body_text=text if isinstance(text, str) else None,
                           body_json=doc if isinstance(doc, dict) else None, json_ok=True, notes=notes,
                           trace_id=hostile.clean(trace_id)[0] if trace_id else None,
                           latency_ms=latency, body_sha=sha256_bytes(canon.encode("utf-8")))
        return Outcome(EXCEPTION, error=f"entrypoint returned {type(result).__name__}; expected str or "
                       "{text, status, trace_id}", latency_ms=latency)

    def close(self) -> None:
        pass


class _Caller:
    """A daemon thread that makes the calls of one case worker, so the worker can stop waiting
    at the timeout (a thread per call cost ~100 us; this ~35 us)."""

    def __init__(self) -> None:
        self._work: SimpleQueue = SimpleQueue()
        threading.Thread(target=self._loop, name="assay-function-call", daemon=True).start()

    def _loop(self) -> None:
        while True:
            fn, body, box, done = self._work.get()
            box.update(_call(fn, body))
            done.set()

    def call(self, fn: Callable[..., Any], body: Any, timeout_s: float) -> dict[str, Any] | None:
        """The call's result box, or None when it is still running at the timeout."""
        box: dict[str, Any] = {}
        done = threading.Event()
        self._work.put((fn, body, box, done))
        return box if done.wait(timeout_s) else None


def _call(fn: Callable[..., Any], body: Any) -> dict[str, Any]:
    try:
        return {"result": fn(body)}
    except (Exception, SystemExit) as exc:  # app code calling sys.exit() is an app failure, not ours
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {"error": f"entrypoint raised {last}"}


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)
