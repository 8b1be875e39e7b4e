"""One case, end to end: safety gates, k repeats (invoke + retry + score), the case dir.

`CaseWorker.run(case, index) -> record` is called from worker threads; it touches only
`cases/<id>/` and writes `verdict.json` last. The record it returns is exactly the
verdict.json it wrote.
"""

from __future__ import annotations

import os
import threading
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..core import writer
from ..core.jsonio import sha256_bytes
from ..core.vocab import ADVERSARIAL_CATEGORIES, ERROR, INFRA_ERROR, INFRA_INCOMPLETE, LAYER_ORDER, PASS, SKIPPED
from ..score.rollup import case_verdict, fold_repeats, unscored_reason
from . import templates
from .caseinfo import case_title, input_text
from .layers import RepeatEvidence, ScoreContext, score_repeat, skipped_layers, stopped_layers
from .outcome import RESPONSE, Outcome, attempt_with_retries
from .runlog import RunLog, case_ref
from .secrets import REDACTED
from .tracing import NOT_COLLECTED, TraceConfig, collect_case_trace, not_sent_block, request_trace_headers

MULTI_TURN_REASON = ("unsupported input: multi-turn conversations (input.turns) are built in their own "
                     "issue and not run yet")


@dataclass
class CaseWorker:
    out: Path
    k: int
    invoker: Any
    adapter: Mapping[str, Any]
    execution: Mapping[str, Any]
    score_ctx: ScoreContext
    trace: TraceConfig
    safety: Mapping[str, Any]
    runlog: RunLog
    # At most `invocation.max_concurrency` requests are at the app at once: a slot is held only
    # while a request is being sent and answered (not during backoff waits, trace collection,
    # scoring or writing), so finishing one case overlaps the next requests. None: no gate.
    app_slots: threading.Semaphore | None = None

    def skip_reason(self, case: Mapping[str, Any]) -> str | None:
        return skip_reason(case, self.adapter, self.safety, getattr(self.invoker, "mode", ""))

    # ------------------------------------------------------------ one case
    def run(self, case: Mapping[str, Any], index: int) -> dict[str, Any]:
        cid = case["id"]
        cdir = self.out / "cases" / cid
        try:
            os.mkdir(cdir)
        except FileExistsError:  # a leftover from an interrupted attempt: start the case over
            writer.remove_tree(cdir)
            os.mkdir(cdir)
        ref = case_ref(case, index)
        self.runlog.event("case_start", **ref)
        expect = case.get("expect") if case.get("expect") is not None else {}
        files: dict[str, bytes] = {}
        self._put(files, cdir, "expect.json", case_json(expect))
        base = _base_record(case, self.k)
        reason = self.skip_reason(case)
        if reason:
            record = dict(base, verdict=SKIPPED, skip_reason=reason, sent=False, attempts=0, retry_count=0,
                          layers=skipped_layers(reason))
        else:
            record = self._run_repeats(case, cdir, files, base, ref)
        record["artifact_sha256"] = {name: sha256_bytes(data) for name, data in sorted(files.items())}
        # The record returned is the one written: redacted here, so every run-level file derived
        # from it in memory (routing, results, verdicts.jsonl) is as clean as verdict.json.
        record = writer.redact_value(record)
        write_case_file(cdir / "verdict.json", (case_json(record)).encode("utf-8"))
        return record

    def _run_repeats(self, case, cdir: Path, files: dict, base: dict, ref: dict) -> dict:
        repeats = []
        for n in range(1, self.k + 1):
            repeats.append(self._one_repeat(case, n, ref))
        verdicts = [r["verdict"] for r in repeats]
        folded = fold_repeats(verdicts)
        chosen = next((r for r in repeats if r["verdict"] == folded), repeats[-1])
        if self.k > 1:
            for r in repeats:
                rdir = cdir / "repeats" / str(r["n"])
                rdir.mkdir(parents=True)
                self._put(files, rdir, "request.json", case_json(r["request"]), prefix=f"repeats/{r['n']}/")
                self._put(files, rdir, "response.json", case_json(r["response"]), prefix=f"repeats/{r['n']}/")
                self._put(files, rdir, "verdict.json", case_json(_repeat_verdict(case, r)), prefix=f"repeats/{r['n']}/")
        self._put(files, cdir, "request.json", case_json(chosen["request"]))
        self._put(files, cdir, "response.json", case_json(chosen["response"]))
        self._put(files, cdir, "answer.txt", chosen["answer_text"] or "")
        if (case.get("expect") or {}).get("result"):
            actual = chosen["actual"] or {"missing": True, "reason": chosen["actual_reason"]}
            self._put(files, cdir, "actual.json", case_json(actual))
        if chosen["trajectory"] is not None:
            self._put(files, cdir, "trajectory.json", case_json(chosen["trajectory"]))
            self._put(files, cdir, "trace.json", case_json(chosen["raw_spans"]))
        finish = getattr(self.invoker, "finish_case", None)
        if finish is not None:  # cli: a passing case's scratch dirs go, any other case's stay
            finish(case["id"], folded == PASS)
        attempts = sum(len(r["outcomes"]) for r in repeats)
        infra_reason = chosen["infra_reason"]
        if folded == INFRA_INCOMPLETE and infra_reason is None:
            infra_reason = self._scrub(chosen["trace"]["reason"]) or "trace incomplete"
        return dict(
            base, verdict=folded, sent=True, attempts=attempts, retry_count=attempts - len(repeats),
            crashed=any(o.crashed for r in repeats for o in r["outcomes"]),
            repeated_5xx=_repeated_5xx(repeats), infra_reason=infra_reason, trace=chosen["trace"],
            latency_ms=chosen["response"].get("latency_ms"), layers=chosen["layers"],
            unscored_reason=unscored_reason(chosen["layers"], folded),
            repeats=[{"n": r["n"], "verdict": r["verdict"]} for r in repeats] if self.k > 1 else None,
            scorer_errors=sum(1 for r in repeats for v in r["layers"].values() if v.get("verdict") == ERROR),
            trace_collected=chosen["trajectory"] is not None, trace_status=chosen["trace_status"])

    def _send(self, wire: Any) -> Outcome:
        if self.app_slots is None:
            return self.invoker.send(wire)
        with self.app_slots:
            return self.invoker.send(wire)

    def _one_repeat(self, case, n: int, ref: dict) -> dict:
        trace_headers, sent_trace_id = request_trace_headers(self.trace)
        wire, recorded = self.invoker.prepare(case, str(uuidlib.uuid4()), trace_headers)

        def on_retry(attempt: int, out: Outcome, wait: float) -> None:
            self.runlog.event("retry", **ref, repeat=n, attempt=attempt, outcome=self._scrub(out.describe()),
                              wait_s=round(wait, 3))
        outcomes = attempt_with_retries(lambda: self._send(wire), max_attempts=int(self.execution["max_attempts"]),
                                        backoff_s=list(self.execution["backoff_s"]), on_retry=on_retry)
        final = outcomes[-1]
        response = self._response_record(outcomes)
        result: dict[str, Any] = {"n": n, "request": recorded, "response": response, "outcomes": outcomes,
                                  "answer_text": None, "actual": None, "actual_reason": None, "trajectory": None,
                                  "raw_spans": None, "trace_status": NOT_COLLECTED, "infra_reason": None}
        if final.retriable:
            reason = attempts_reason(outcomes)
            result["infra_reason"] = self._scrub(reason)
            result["trace"] = not_sent_block(self.trace, f"no answer ({INFRA_ERROR}): no trace was looked for")
            result["actual_reason"] = f"no response ({INFRA_ERROR})"
            result["layers"] = stopped_layers("http", {"verdict": INFRA_ERROR, "reason": result["infra_reason"],
                                                       "status": final.status}, "transport failure: not scored")
            result["verdict"] = INFRA_ERROR
            return result
        answer, note = self._answer(final)
        got = collect_case_trace(self.trace, {
            "sent_trace_id": sent_trace_id, "sent_traceparent": trace_headers.get("traceparent"),
            "response_json": final.body_json, "function_trace_id": final.trace_id})
        trace_status, trajectory, raw, trace_reason = got
        result["trace"] = got.block()
        ev = RepeatEvidence(status=final.status, response_json=final.body_json, answer=answer, answer_note=note,
                            trace_status=trace_status, trajectory=trajectory, trace_reason=trace_reason)
        layers, actual = score_repeat(case, self.score_ctx, ev)
        result.update(answer_text=self._scrub(answer) if answer is not None else None, actual=actual,
                      actual_reason="the execution layer did not run (not applicable or disabled)",
                      trajectory=trajectory, raw_spans=raw, trace_status=trace_status, layers=layers,
                      verdict=case_verdict(layers, skipped=False))
        return result

    # ------------------------------------------------------------ helpers
    def _answer(self, out: Outcome) -> tuple[str | None, str | None]:
        if out.answer_withheld:
            return None, out.answer_withheld
        tmpl_raw = (self.adapter.get("invocation") or {}).get("response_body")
        if tmpl_raw is None:  # no template declared: the whole body is the answer
            return out.body_text, None
        tmpl = templates.parse_template(tmpl_raw, "invocation.response_body")
        path = templates.find_mark(tmpl, templates.ANSWER_MARK)
        if out.body_json is None:
            if self.invoker.mode == "function" and out.body_text is not None and not out.json_ok:
                return out.body_text, None
            why = "; ".join(out.notes) or "the response body is not JSON"
            return None, f"no answer at the adapter's <answer> path: {why}"
        found, value = templates.lookup(out.body_json, path or [])
        if not found:
            return None, "no answer at the adapter's <answer> path (path absent in the response)"
        return templates.as_text(value), None

    def _scrub(self, text: str | None) -> str | None:
        """Replace any resolved secret value an app echoed back with REDACTED (core.writer)."""
        return writer.redact_text(text)

    def _response_record(self, outcomes: list[Outcome]) -> dict[str, Any]:
        final = outcomes[-1]
        body: Any = None
        body_format = None
        if final.kind == RESPONSE:
            text = final.body_text
            scrubbed = self._scrub(text)
            if final.json_ok and scrubbed == text and final.body_json is not None:
                body, body_format = final.body_json, "json"
            elif text is not None:
                body, body_format = scrubbed, "text"
        headers = {k: (self._scrub(v) if k.lower() not in ("set-cookie", "authorization") else REDACTED)
                   for k, v in sorted(final.headers.items()) if k.lower() not in ("date",)}
        extra = {}
        if final.cli is not None:  # cli mode: exit code, signal, stderr, caps, scratch dir
            extra["cli"] = {k: self._scrub(v) if isinstance(v, str) else v for k, v in final.cli.items()}
        return {
            **extra,
            "status": final.status, "outcome": final.kind, "headers": headers, "body": body,
            "body_format": body_format, "notes": list(final.notes), "error": self._scrub(final.error),
            "attempts": len(outcomes), "retry_count": len(outcomes) - 1, "crashed": any(o.crashed for o in outcomes),
            "latency_ms": final.latency_ms,
            "attempt_log": [{"attempt": i + 1, "outcome": o.kind, "status": o.status,
                             "error": self._scrub(o.error), "latency_ms": o.latency_ms}
                            for i, o in enumerate(outcomes)],
        }

    def _put(self, files: dict, directory: Path, name: str, text: str, prefix: str = "") -> None:
        files[prefix + name] = write_case_file(directory / name, text.encode("utf-8"))


def case_json(value: Any) -> str:
    """Case-dir JSON: sorted keys, one line (the C encoder; indenting costs ~0.4 ms a case), redacted."""
    return writer.dumps(value, indent=None) + "\n"


def write_case_file(path: Path, data: bytes) -> bytes:
    """Through the one writer (core.writer: redacted, atomic, never via a symlink); returns the
    bytes written, which are what artifact_sha256 records."""
    return writer.write_bytes(path, data)


def attempts_reason(outcomes: list[Outcome]) -> str:
    """What every attempt of an exhausted request got, honestly: `X on all N attempt(s)` only
    when all were X; else the last outcome plus each earlier one (a crash stays visible)."""
    said = [o.describe() for o in outcomes]
    if len(set(said)) == 1:
        return f"{said[-1]} on all {len(said)} attempt(s)"
    earlier = "; ".join(f"attempt {i}: {d}" for i, d in enumerate(said[:-1], 1))
    return f"{said[-1]} on attempt {len(said)} of {len(said)} ({earlier})"


def skip_reason(case: Mapping[str, Any], adapter: Mapping[str, Any], safety: Mapping[str, Any],
                mode: str) -> str | None:
    """Why a case is not sent (safety gates and unsupported inputs), or None. Pure."""
    inp = case.get("input") or {}
    if not isinstance(inp, Mapping):
        return "unsupported input: input is not a mapping (validate_cases.py names the fix)"
    if not isinstance(case.get("expect") or {}, Mapping):
        return "unsupported input: expect is not a mapping (validate_cases.py names the fix)"
    if inp.get("turns"):
        return MULTI_TURN_REASON
    if "session" in inp and inp["session"] != "fresh":
        return f"unsupported input: input.session {inp['session']!r} (only `fresh` is supported)"
    msgs = inp.get("messages") or []
    if not (isinstance(msgs, list) and len(msgs) == 1 and isinstance(msgs[0], Mapping)
            and msgs[0].get("role") == "user"):
        return "unsupported input: input.messages must hold exactly one user message"
    if case.get("category") in ADVERSARIAL_CATEGORIES and not safety.get("safe_to_attack"):
        return f"category {case.get('category')!r} not sent: environment.safe_to_attack is false"
    if safety.get("live_environment") and safety.get("never_live_tools"):
        named = _tools_named(case) & set(safety["never_live_tools"])
        if named:
            return (f"could trigger never-live tool(s) {', '.join(sorted(named))} in environment "
                    f"{safety.get('environment_kind')!r}; not sent")
    ident = case.get("identity")
    if isinstance(ident, Mapping) and ident:
        imap = (adapter.get("invocation") or {}).get("identity_map") or {}
        if mode != "http":
            return f"identity not mapped: {mode} mode cannot carry identity headers"
        unmapped = sorted(k for k in ident if k != "token_env" and k not in imap)
        if unmapped:
            return f"identity not mapped: invocation.identity_map has no header for {', '.join(unmapped)}"
    return None


def _base_record(case: Mapping[str, Any], k: int) -> dict[str, Any]:
    split = case.get("split") or []
    canary = "canary" in split
    expect = case.get("expect") if isinstance(case.get("expect"), Mapping) else {}
    return {"case_id": case["id"], "verdict": None, "canary": canary, "holdout": "holdout" in split,
            "gating": False if canary else case.get("gating", True) is not False,
            "unit": _str_or_none(case.get("unit")), "category": _str_or_none(case.get("category")), "k": k, "attempts": 0,
            "retry_count": 0, "crashed": False, "repeated_5xx": None, "skip_reason": None, "infra_reason": None,
            "latency_ms": None, "repeats": None, "layers": {}, "scorer_errors": 0, "sent": True,
            "trace_collected": False, "trace_status": NOT_COLLECTED, "has_result_expect": bool(expect.get("result")),
            "title": case_title(case), "input_text": input_text(case)}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _repeated_5xx(repeats: list[dict]) -> dict | None:
    outs = [o for r in repeats for o in r["outcomes"]]
    if len(outs) < 2 or any(o.kind != RESPONSE or (o.status or 0) < 500 for o in outs):
        return None
    if len({(o.status, o.body_sha) for o in outs}) != 1:
        return None
    return {"status": outs[0].status, "attempts": len(outs)}


def _repeat_verdict(case: Mapping[str, Any], r: dict) -> dict:
    return {"case_id": case["id"], "n": r["n"], "verdict": r["verdict"], "attempts": len(r["outcomes"]),
            "infra_reason": r["infra_reason"], "trace_status": r["trace_status"],
            "layers": {name: r["layers"][name] for name in LAYER_ORDER}}


def _tools_named(case: Mapping[str, Any]) -> set[str]:
    expect = case.get("expect") or {}
    names: set[str] = set()
    tools = expect.get("tools")
    if isinstance(tools, Mapping):
        for key in ("subset", "order", "forbidden"):
            if isinstance(tools.get(key), list):
                names.update(str(t) for t in tools[key])
    elif isinstance(tools, list):
        names.update(str(t) for t in tools)
    if isinstance(expect.get("args"), Mapping):
        names.update(str(t) for t in expect["args"])
    authz = expect.get("authz")
    if isinstance(authz, Mapping) and isinstance(authz.get("forbidden_tools"), list):
        names.update(str(t) for t in authz["forbidden_tools"])
    for key in ("available_tools",):
        if isinstance(case.get(key), list):
            names.update(str(t) for t in case[key])
    if case.get("unit"):
        names.add(str(case["unit"]))
    return names
