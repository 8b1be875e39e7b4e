"""One case, end to end: safety gates, k repeats (invoke + retry + score), the case dir.

`CaseWorker.run(case, index) -> record` is called from worker threads; it touches only
`cases/<id>/` and writes `verdict.json` last. The record it returns is exactly the
verdict.json it wrote.
"""

from __future__ import annotations

import os
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..core import hostile, writer
from ..core.jsonio import sha256_bytes
from ..core.vocab import (ADVERSARIAL_CATEGORIES, ERROR, INFRA_ERROR, INFRA_INCOMPLETE, LAYER_ORDER, PASS, SKIPPED,
                          UNSCORED)
from ..judge.prompt import Material
from ..judge.rubrics import case_pins as rubric_pins
from ..score.rollup import case_verdict, conversation_verdict, fold_repeats, merge_turn_layers, unscored_reason
from ..invoke.http import user_turn
from .preflight import JUDGE_PENDING
from ..invoke import templates
from .caseinfo import case_title, input_text
from ..invoke import conversation as convo
from .layers import RepeatEvidence, ScoreContext, score_repeat, skipped_layers, stopped_layers
from .limiter import RATE_LIMIT_STATUSES, AppSlots
from ..invoke.outcome import (RATE_LIMITED_PREFIX, RESPONSE, Outcome, attempt_with_retries, attempts_reason,
                      is_rate_limited, parse_retry_after, same_body_key)
from .runlog import RunLog, case_ref
from ..core.secrets import REDACTED
from ..traces.collect import NOT_COLLECTED, TraceConfig, collect_case_trace, not_sent_block, request_trace_headers



# Conversation turns are not judged in this build: the judged layer of a turn says so (never pass).
CONVERSATION_UNJUDGED = "unjudged (conversation turns are not judged in this build)"
# ... but a calibrated (gating) pin left unjudged is a check that never ran: not a chosen unscored.
CONVERSATION_UNJUDGED_GATING = ("conversation turns are not judged in this build, so the calibrated "
                                "(gating) rubric {pins} never ran; pin it on a single-turn case")

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
    app_slots: AppSlots | None = None
    # The adapter's checked invocation.conversation (None: conversation cases are skipped).
    conversation: convo.ConversationConfig | None = None
    # The run's judge (assay.judge.runtime.JudgeRuntime) when the plan enables one: after a repeat is
    # scored, its rubric nodes are judged on the judge's own pool.
    judge: Any = None

    def skip_reason(self, case: Mapping[str, Any]) -> str | None:
        return skip_reason(case, self.adapter, self.safety, getattr(self.invoker, "mode", ""),
                           conv=self.conversation, max_turns=int(self.execution.get("max_turns") or
                                                                convo.DEFAULT_MAX_TURNS),
                           matrix=self.score_ctx.matrix)

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
            if convo.is_conversation(case):
                record["multi_turn"] = True   # counted with the conversations, never sent
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
        multi = "turns" in chosen
        if self.k > 1:
            for r in repeats:
                rdir = cdir / "repeats" / str(r["n"])
                rdir.mkdir(parents=True)
                self._put(files, rdir, "request.json", case_json(r["request"]), prefix=f"repeats/{r['n']}/")
                self._put(files, rdir, "response.json", case_json(r["response"]), prefix=f"repeats/{r['n']}/")
                if r.get("trajectory") is not None and not multi:   # every repeat's trace: rescore scores each
                    self._put(files, rdir, "trajectory.json", case_json(r["trajectory"]), prefix=f"repeats/{r['n']}/")
                    self._put(files, rdir, "trace.json", case_json(r["raw_spans"]), prefix=f"repeats/{r['n']}/")
                self._put(files, rdir, "verdict.json", case_json(_repeat_verdict(case, r)), prefix=f"repeats/{r['n']}/")
                if multi:
                    self._put_turns(files, case, r, rdir, f"repeats/{r['n']}/", traces=False)
        if multi:
            self._put_turns(files, case, chosen, cdir, "", traces=True)
            self._put(files, cdir, "expect.json", case_json(chosen["expect"]))
        self._put(files, cdir, "request.json", case_json(chosen["request"]))
        self._put(files, cdir, "response.json", case_json(chosen["response"]))
        self._put(files, cdir, "answer.txt", chosen["answer_text"] or "")
        if ((chosen["expect"] if multi else case.get("expect")) or {}).get("result"):
            actual = chosen["actual"] or {"missing": True, "reason": chosen["actual_reason"]}
            self._put(files, cdir, "actual.json", case_json(actual))
        if chosen["trajectory"] is not None:
            self._put(files, cdir, "trajectory.json", case_json(chosen["trajectory"]))
            self._put(files, cdir, "trace.json", case_json(chosen["raw_spans"]))
        judged = [r for r in repeats if r.get("judge_doc") is not None]
        if judged:
            doc = dict(chosen.get("judge_doc") or judged[-1]["judge_doc"])
            if self.k > 1:
                doc["repeats"] = [{"n": r["n"], "rubrics": r["judge_doc"]["rubrics"], "usage": r["judge_doc"]["usage"],
                                   "answer_sha256": r["judge_doc"]["answer_sha256"]} for r in judged]
            self._put(files, cdir, "judge.json", case_json(doc))  # the one writer redacts it
        finish = getattr(self.invoker, "finish_case", None)
        if finish is not None:  # cli: a passing case's scratch dirs go, any other case's stay
            finish(case["id"], folded == PASS)
        attempts = sum(len(r["outcomes"]) for r in repeats)
        infra_reason = chosen["infra_reason"]
        if folded == INFRA_INCOMPLETE and infra_reason is None:
            infra_reason = self._scrub(chosen["trace"]["reason"]) or "trace incomplete"
        if folded == INFRA_ERROR and infra_reason is None:  # the app answered; a layer's outage (the judge's)
            down = [f"{name}: {entry.get('reason')}" for name, entry in (chosen.get("layers") or {}).items()
                    if isinstance(entry, Mapping) and entry.get("verdict") == INFRA_ERROR and entry.get("reason")]
            infra_reason = self._scrub("; ".join(down)) if down else None
        record = dict(
            base, verdict=folded, sent=True, attempts=attempts, retry_count=attempts - len(repeats),
            crashed=any(o.crashed for r in repeats for o in r["outcomes"]),
            repeated_5xx=_repeated_5xx(repeats), infra_reason=infra_reason, trace=chosen["trace"],
            rate_limited_retries=sum(1 for r in repeats for o in r["outcomes"][:-1] if is_rate_limited(o)),
            latency_ms=chosen["response"].get("latency_ms"), layers=chosen["layers"],
            unscored_reason=unscored_reason(chosen["layers"], folded),
            repeats=[{"n": r["n"], "verdict": r["verdict"], "trace_collected": r.get("trajectory") is not None}
                     for r in repeats] if self.k > 1 else None,
            scorer_errors=sum(1 for r in repeats for v in r["layers"].values() if v.get("verdict") == ERROR),
            judged=bool(judged), judge_usage=_sum_usage([r["judge_doc"]["usage"] for r in judged]) if judged else None,
            trace_collected=chosen["trajectory"] is not None, trace_status=chosen["trace_status"],
            undeclared_tools=self._undeclared(chosen) or None)
        if multi:
            record.update(_conversation_fields(chosen, self.conversation))
            record["has_result_expect"] = bool((chosen["expect"] or {}).get("result"))
            record["latency_ms"] = round(sum(t["response"].get("latency_ms") or 0 for t in chosen["turns"]), 3)
            if folded == convo.UNSCORED and chosen["failed_turn"] is None and chosen["turns_sent"] < chosen["turns_total"]:
                record["unscored_reason"] = chosen["stop_reason"]   # stopped early: its later turns never ran
            if self.k > 1:
                record["repeats"] = [{"n": r["n"], "verdict": r["verdict"], "turns_sent": r["turns_sent"],
                                      "failed_turn": r["failed_turn"]} for r in repeats]
        return record

    def _undeclared(self, chosen: dict) -> list[str]:
        """Called tools the adapter's tools list does not declare, over every sent turn."""
        from ..score.tool_names import undeclared_calls
        trajectories = [t.get("trajectory") for t in chosen.get("turns") or []] or [chosen.get("trajectory")]
        return sorted({n for tr in trajectories for n in undeclared_calls(tr, self.score_ctx.declared_tools)})

    def _put_turns(self, files: dict, case, rep: dict, base_dir: Path, prefix: str, *, traces: bool) -> None:
        """turns/<n>/ for every sent turn of one repeat (trace files only at the case level)."""
        for t in rep["turns"]:
            n = t["n"]
            tdir = base_dir / "turns" / str(n)
            tdir.mkdir(parents=True)
            tp = f"{prefix}turns/{n}/"
            self._put(files, tdir, "request.json", case_json(t["request"]), prefix=tp)
            self._put(files, tdir, "response.json", case_json(t["response"]), prefix=tp)
            self._put(files, tdir, "expect.json", case_json(t["spec"].expect), prefix=tp)
            self._put(files, tdir, "answer.txt", t["answer_text"] or "", prefix=tp)
            if traces and t["trajectory"] is not None:
                self._put(files, tdir, "trajectory.json", case_json(t["trajectory"]), prefix=tp)
                self._put(files, tdir, "trace.json", case_json(t["raw_spans"]), prefix=tp)
            self._put(files, tdir, "verdict.json", case_json(_turn_verdict(case, rep["n"], t, traces)), prefix=tp)

    def _send(self, wire: Any) -> Outcome:
        if self.app_slots is None:
            return self.invoker.send(wire)
        slot = self.app_slots.acquire()
        try:
            out = self.invoker.send(wire)
            slot.answered = out.kind == RESPONSE
            slot.status = out.status
            if out.status in RATE_LIMIT_STATUSES:
                slot.retry_after_s = parse_retry_after(out.header("Retry-After"))
            return out
        finally:
            self.app_slots.release(slot)

    def _one_repeat(self, case, n: int, ref: dict) -> dict:
        if self.conversation is not None and convo.is_conversation(case):
            return self._one_conversation(case, n, ref)
        trace_headers, sent_trace_id = request_trace_headers(self.trace)
        wire, recorded = self.invoker.prepare(case, str(uuidlib.uuid4()), trace_headers)

        def on_retry(attempt: int, out: Outcome, wait: float) -> None:
            self.runlog.event("retry", **ref, repeat=n, attempt=attempt, outcome=self._scrub(out.describe()),
                              wait_s=round(wait, 3))
        budget = self.execution.get("rate_limit_wait_s") if self.execution.get("adaptive", True) else None
        outcomes = attempt_with_retries(lambda: self._send(wire), max_attempts=int(self.execution["max_attempts"]),
                                        backoff_s=list(self.execution["backoff_s"]), on_retry=on_retry,
                                        rate_limit_wait_s=budget)
        final = outcomes[-1]
        response = self._response_record(outcomes)
        result: dict[str, Any] = {"n": n, "request": recorded, "response": response, "outcomes": outcomes}
        if final.retriable:
            reason = attempts_reason(outcomes)
            if budget is not None and is_rate_limited(final):
                reason = (f"{RATE_LIMITED_PREFIX}: {final.describe()} on {len(outcomes)} attempt(s) until "
                          f"execution.rate_limit_wait_s ({budget:g} s) was spent")
            result.update(self._infra_part(final, reason))
        else:
            result.update(self._score_answered(case, final, trace_headers, sent_trace_id))
            if self.judge is not None and result["layers"]["judged"].get("reason") == JUDGE_PENDING:
                result["layers"]["judged"], result["judge_doc"] = self._judge(
                    case, result["answer_text"], result["trajectory"], ref)
                result["verdict"] = case_verdict(result["layers"], skipped=False)
        return result

    def _infra_part(self, final: Outcome, reason: str) -> dict[str, Any]:
        """What a request that never got an answer records: infra_error on http, nothing scored."""
        reason = self._scrub(reason)
        layers = stopped_layers("http", {"verdict": INFRA_ERROR, "reason": reason, "status": final.status},
                                "transport failure: not scored")
        return {"answer_text": None, "actual": None, "actual_reason": f"no response ({INFRA_ERROR})",
                "trajectory": None, "raw_spans": None, "trace_status": NOT_COLLECTED, "infra_reason": reason,
                "trace": not_sent_block(self.trace, f"no answer ({INFRA_ERROR}): no trace was looked for"),
                "layers": layers, "verdict": INFRA_ERROR}

    def _score_answered(self, case, final: Outcome, trace_headers: Mapping[str, str],
                        sent_trace_id: str | None, judge: bool = True) -> dict[str, Any]:
        """Trace, answer and every layer of one answered request (a single-turn case or one turn)."""
        answer, note = self._answer(final)
        got = collect_case_trace(self.trace, {
            "sent_trace_id": sent_trace_id, "sent_traceparent": trace_headers.get("traceparent"),
            "response_json": final.body_json, "function_trace_id": final.trace_id})
        trace_status, trajectory, raw, trace_reason = got
        ev = RepeatEvidence(status=final.status, response_json=final.body_json, answer=answer, answer_note=note,
                            trace_status=trace_status, trajectory=trajectory, trace_reason=trace_reason)
        layers, actual = score_repeat(case, self.score_ctx, ev)
        if not judge and layers["judged"].get("reason") == JUDGE_PENDING:
            layers["judged"] = self._conversation_unjudged(case)
        return {"answer_text": self._scrub(answer) if answer is not None else None, "actual": actual,
                "actual_reason": "the execution layer did not run (not applicable or disabled)",
                "trajectory": trajectory, "raw_spans": raw, "trace_status": trace_status, "trace": got.block(),
                "infra_reason": None, "layers": layers, "verdict": case_verdict(layers, skipped=False)}

    def _one_conversation(self, case, n: int, ref: dict) -> dict:
        """One repeat of a conversation: every turn sent, scored, and the case-level view of it."""
        conv = self.conversation

        def on_retry(attempt: int, turn: int, out: Outcome, wait: float) -> None:
            self.runlog.event("retry", **ref, repeat=n, attempt=attempt, turn=turn, restart="conversation",
                              outcome=self._scrub(out.describe()), wait_s=round(wait, 3))
        res = convo.run_conversation(
            case, conv, invoker=self.invoker, send=self._send,
            score_turn=lambda tcase, out, headers, sent_id: self._score_answered(tcase, out, headers, sent_id,
                                                                                 judge=False),
            infra_turn=self._infra_part, trace_headers=lambda: request_trace_headers(self.trace),
            max_attempts=int(self.execution["max_attempts"]), backoff_s=list(self.execution["backoff_s"]),
            on_retry=on_retry, redact_cookie=REDACTED,
            rate_limit_wait_s=self.execution.get("rate_limit_wait_s") if self.execution.get("adaptive", True) else None)
        earlier = [o for _, o in res.endings[:-1]]
        turns = []
        for t in res.turns:
            response = dict(self._response_record(earlier + [t.outcome]), turn=t.spec.n)
            turns.append(dict(t.scored, n=t.spec.n, spec=t.spec, request=t.request, response=response))
        failed_turn, stop_reason = res.failed_turn, res.stop_reason
        shared = convo.shared_trace_blocker(turns)
        if shared is not None:
            # two turns read the same trace: no turn's spans can be told apart, so every
            # trace-dependent layer is unscorable (the answer still scores)
            for t in turns:
                t["layers"] = convo.block_trace_layers(t["layers"], shared)
                t["verdict"] = case_verdict(t["layers"], skipped=False)
            if failed_turn is not None and turns[-1]["verdict"] not in convo.STOP_VERDICTS:
                failed_turn = None
                stop_reason = f"turn {turns[-1]['n']}: stopped on a trace layer that is now unscorable ({shared})"
        layers = merge_turn_layers((t["n"], t["layers"]) for t in turns)
        verdict = conversation_verdict(layers, turns_sent=res.turns_sent, turns_total=res.turns_total,
                                       failed_turn=failed_turn)
        deciding = turns[-1]
        result = {k: deciding[k] for k in ("request", "response", "answer_text", "actual", "actual_reason",
                                           "trajectory", "raw_spans", "trace_status", "trace", "infra_reason")}
        result.update(n=n, outcomes=[o for _, o in res.endings], ending_turns=[t for t, _ in res.endings],
                      layers=layers, verdict=verdict, turns=turns, turns_sent=res.turns_sent,
                      turns_total=res.turns_total, failed_turn=failed_turn,
                      stop_reason=self._scrub(stop_reason), expect=deciding["spec"].expect)
        return result

    def _conversation_unjudged(self, case) -> dict[str, Any]:
        """A conversation turn's judged layer: never judged in this build. Provisional pins read as a
        chosen unscored; a calibrated pin would gate, so leaving it unjudged is a check that never ran."""
        gating = [str(p) for p in rubric_pins(case) if self.judge is not None and self.judge.calibration(str(p))[0]]
        if gating:
            return {"verdict": UNSCORED, "reason": CONVERSATION_UNJUDGED_GATING.format(pins=", ".join(gating))}
        return {"verdict": UNSCORED, "reason": CONVERSATION_UNJUDGED}

    def _judge(self, case, answer: str | None, trajectory: dict | None, ref: dict) -> tuple[dict, dict | None]:
        """(judged layer, judge.json doc or None) for one scored repeat."""
        if answer is None:
            return {"verdict": UNSCORED, "reason": "no answer to judge (nothing at the adapter's <answer> path)"}, None
        tools = None
        if trajectory is not None:
            # redacted like everything else the judge is sent (the trajectory in memory is not yet)
            tools = writer.redact_value([{"name": c.get("name"), "result": c.get("result")}
                                         for c in trajectory.get("tool_calls") or []])
        expect = case.get("expect") or {}
        result = expect.get("result") if isinstance(expect.get("result"), Mapping) else {}
        gold = result.get("scalar", result.get("rows")) if result else None
        material = Material(user_message=self._scrub(user_turn(case)) or "", answer=self._scrub(answer) or "",
                            tool_results=tools, gold=gold)
        got = self.judge.judge_case(case, material, rubric_pins(case), ref)
        return got.layer, got.doc

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
        bad = hostile.holds(value)
        if bad is not None:
            return None, hostile.reason("the answer at the adapter's <answer> path", bad)
        return templates.as_text(value), None

    def _scrub(self, text: str | None) -> str | None:
        """Replace any resolved secret value an app echoed back with REDACTED (core.writer)."""
        return writer.redact_text(text)

    def _response_record(self, outcomes: list[Outcome]) -> dict[str, Any]:
        final = outcomes[-1]
        body: Any = None
        body_format = None
        if final.kind == RESPONSE:
            # A JSON body stays JSON with its secrets redacted value by value, so a rescore reads the
            # structure the run scored (not "not JSON" because a token was echoed into it).
            if final.json_ok and final.body_json is not None:
                body, body_format = writer.redact_value(final.body_json), "json"
            elif final.body_text is not None:
                body, body_format = self._scrub(final.body_text), "text"
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
        files[prefix + name] = write_case_file(directory / name, writer.encode(text))


def case_json(value: Any) -> str:
    """Case-dir JSON: sorted keys, one line (the C encoder; indenting costs ~0.4 ms a case), redacted."""
    return writer.dumps(value, indent=None) + "\n"


def write_case_file(path: Path, data: bytes) -> bytes:
    """Through the one writer (core.writer: redacted, atomic, never via a symlink); returns the
    bytes written, which are what artifact_sha256 records. Every case, repeat and turn dir is
    created by this process for this attempt (`os.mkdir`/`mkdir`), hence `fresh_dir`."""
    return writer.write_bytes(path, data, fresh_dir=True)



def skip_reason(case: Mapping[str, Any], adapter: Mapping[str, Any], safety: Mapping[str, Any],
                mode: str, *, conv: "convo.ConversationConfig | None" = None,
                max_turns: int = convo.DEFAULT_MAX_TURNS, matrix: Mapping[str, Any] | None = None) -> str | None:
    """Why a case is not sent (safety gates and unsupported inputs), or None. Pure."""
    inp = case.get("input") or {}
    if not isinstance(inp, Mapping):
        return "unsupported input: input is not a mapping (validate_cases.py names the fix)"
    if not isinstance(case.get("expect") or {}, Mapping):
        return "unsupported input: expect is not a mapping (validate_cases.py names the fix)"
    if "session" in inp and inp["session"] != "fresh":
        return f"unsupported input: input.session {inp['session']!r} (only `fresh` is supported)"
    if convo.is_conversation(case):
        why = convo.skip_reason(case, conv, max_turns, matrix)
        if why:
            return why
    else:
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
        if mode == "function":
            return "identity not mapped: function mode cannot carry identity headers"
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
            "rate_limited_retries": 0,
            "latency_ms": None, "repeats": None, "layers": {}, "scorer_errors": 0, "sent": True,
            "trace_collected": False, "trace_status": NOT_COLLECTED, "has_result_expect": bool(expect.get("result")),
            "title": case_title(case), "input_text": input_text(case), "judged": False, "judge_usage": None}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _sum_usage(usages: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for u in usages:
        for key, value in u.items():
            out[key] = out.get(key, 0) + int(value)
    return out


def _repeated_5xx(repeats: list[dict]) -> dict | None:
    """The same 5xx (status and body) on every attempt; for a conversation, on the same turn."""
    outs = [o for r in repeats for o in r["outcomes"]]
    if len(outs) < 2 or any(o.kind != RESPONSE or (o.status or 0) < 500 for o in outs):
        return None
    if len({(o.status, same_body_key(o)) for o in outs}) != 1:  # ids, uuids, timestamps masked
        return None
    turns = {t for r in repeats for t in (r.get("ending_turns") or [])}
    if "turns" in repeats[0]:
        if len(turns) != 1:
            return None
        return {"status": outs[0].status, "attempts": len(outs), "turn": turns.pop()}
    return {"status": outs[0].status, "attempts": len(outs)}


def _conversation_fields(chosen: dict, conv: Any) -> dict[str, Any]:
    """verdict.json's conversation keys, from the repeat whose verdict the case took."""
    return {"multi_turn": True, "turns_sent": chosen["turns_sent"], "turns_total": chosen["turns_total"],
            "failed_turn": chosen["failed_turn"], "stop_reason": chosen["stop_reason"],
            "memory": conv.memory if conv is not None else None,
            "turns": [{"n": t["n"], "verdict": t["verdict"], "trace_collected": t["trajectory"] is not None,
                       "user": t["spec"].user} for t in chosen["turns"]],
            "turn_layers": {f"t{t['n']}.{name}": t["layers"][name] for t in chosen["turns"] for name in LAYER_ORDER}}


def _turn_verdict(case: Mapping[str, Any], repeat: int, t: dict, traces: bool) -> dict:
    """turns/<n>/verdict.json: {case_id, repeat, turn, checkpoint, verdict, layers, trace, infra_reason}."""
    return {"case_id": case["id"], "repeat": repeat, "turn": t["n"], "checkpoint": t["spec"].checkpoint,
            "verdict": t["verdict"], "layers": {name: t["layers"][name] for name in LAYER_ORDER},
            "trace": t["trace"], "trace_collected": traces and t["trajectory"] is not None,
            "infra_reason": t["infra_reason"]}


def _repeat_verdict(case: Mapping[str, Any], r: dict) -> dict:
    doc = {"case_id": case["id"], "n": r["n"], "verdict": r["verdict"], "attempts": len(r["outcomes"]),
           "infra_reason": r["infra_reason"], "trace_status": r["trace_status"], "trace": r.get("trace"),
           "trace_collected": "turns" not in r and r.get("trajectory") is not None,
           "layers": {name: r["layers"][name] for name in LAYER_ORDER}}
    if "turns" in r:
        doc.update(turns_sent=r["turns_sent"], turns_total=r["turns_total"], failed_turn=r["failed_turn"],
                   stop_reason=r["stop_reason"])
    return doc


def _tools_named(case: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for expect in convo.every_expect_of(case) or [{}]:
        _tools_in_expect(expect, names)
    for key in ("available_tools",):
        if isinstance(case.get(key), list):
            names.update(str(t) for t in case[key])
    if case.get("unit"):
        names.add(str(case["unit"]))
    return names


def _tools_in_expect(expect: Mapping[str, Any], names: set[str]) -> None:
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
