"""One case, end to end: safety gates, k repeats (invoke + retry + score), the case dir.

`CaseWorker.run(case, index) -> record` is called from worker threads; it keeps the case's
artifacts in memory and appends them with its verdict as ONE line of the case journal
(`cases.jsonl`, core.casestore): that append is the commit. The record it returns is exactly
the verdict the line holds.

A repeat takes one of two paths over the shared helpers of `repeat_scoring`: a single-turn
case (`repeat_single`) or a conversation (`repeat_conversation`). The case dir's layout is
`case_files`; the record's fields are `case_record`; whether a case is sent is `case_skip`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..core import casestore, writer
from ..core.casekind import DEFAULT_MAX_TURNS, is_conversation, is_simulated
from ..core.jsonio import sha256_bytes
from ..core.vocab import INFRA_ERROR, PASS, SKIPPED
from ..replay.key import Binding
from ..replay.miss import ReplayMiss
from ..score.rollup import fold_repeats
from .case_files import CaseFiles, case_json, judge_doc
from .case_record import base_record, sent_record
from .case_skip import skip_reason
from .layers import ScoreContext, skipped_layers, stopped_layers
from .limiter import RATE_LIMIT_STATUSES, AppSlots
from ..invoke.outcome import RESPONSE, Outcome, parse_retry_after
from .repeat_single import one_repeat
from .runlog import RunLog, case_ref
from ..traces.collect import TraceConfig

if TYPE_CHECKING:   # conversations load their code when the first one runs
    from ..invoke import conversation as convo


def _mark_kind(record: dict[str, Any], case: Mapping[str, Any]) -> None:
    """A conversation (or simulated user) that was never sent is still counted with its kind."""
    if is_conversation(case) or is_simulated(case):
        record["multi_turn"] = True
    if is_simulated(case):
        record["simulated"] = True


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
    # assay.replay.session.ReplaySession when the run records or replays (the invoker is its shim).
    replay: Any = None
    # The run's simulator (assay.simulate.runtime.SimulatorRuntime) when a simulated case runs.
    simulator: Any = None
    # The run's case journal (core.casestore.Journal): each finished case is one appended line.
    journal: Any = None
    # The run's resolved variables: each kept request (request.json) records the digest of the values of
    # the `${NAME}`s it names (assay.replay.key.Binding), what a rescore compares with its environment's.
    env: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        self.binding = Binding.of(self.adapter.get("invocation") or {}, self.env) if self.env is not None else None

    def kept_request(self, recorded: Any) -> Any:
        return self.binding.kept(recorded) if self.binding is not None else recorded

    def skip_reason(self, case: Mapping[str, Any]) -> str | None:
        return skip_reason(case, self.adapter, self.safety, getattr(self.invoker, "mode", ""),
                           conv=self.conversation, max_turns=int(self.execution.get("max_turns") or
                                                                DEFAULT_MAX_TURNS),
                           matrix=self.score_ctx.matrix, simulator=self.simulator)

    # ------------------------------------------------------------ one case
    def run(self, case: Mapping[str, Any], index: int) -> dict[str, Any]:
        cid = case["id"]
        ref = case_ref(case, index)
        self.runlog.event("case_start", **ref)
        expect = case.get("expect") if case.get("expect") is not None else {}
        files = CaseFiles()
        files.put("expect.json", case_json(expect))
        base = base_record(case, self.k)
        reason = self.skip_reason(case)
        if reason:
            record = dict(base, verdict=SKIPPED, skip_reason=reason, sent=False, attempts=0, retry_count=0,
                          layers=skipped_layers(reason))
            _mark_kind(record, case)   # counted with the conversations, never sent
        else:
            try:
                record = self._run_repeats(case, files, base, ref)
            except ReplayMiss as miss:   # --replay (or rescore): the stored run cannot answer this case; never a pass
                why = writer.redact_text(miss.reason)
                record = dict(base, verdict=INFRA_ERROR, infra_reason=why, sent=False,
                              layers=stopped_layers("http", {"verdict": INFRA_ERROR, "reason": why}, miss.not_scored))
                _mark_kind(record, case)
        record["artifact_sha256"] = {name: sha256_bytes(data) for name, data in sorted(files.written.items())}
        # The record returned is the one written: redacted here, so every run-level file derived
        # from it in memory (routing, results, verdicts.jsonl) is as clean as verdict.json.
        record = writer.redact_value(record)
        self.journal.append(casestore.record_line(cid, record, files.written))
        return record

    def _run_repeats(self, case, files: CaseFiles, base: dict, ref: dict) -> dict:
        repeats = [self._one_repeat(case, n, ref) for n in range(1, self.k + 1)]
        folded = fold_repeats([r["verdict"] for r in repeats])
        chosen = next((r for r in repeats if r["verdict"] == folded), repeats[-1])
        files.put_repeats(case, repeats, chosen, self.k)
        judged = [r for r in repeats if r.get("judge_doc") is not None]
        if judged:
            files.put("judge.json", case_json(judge_doc(chosen, judged, self.k)))  # the one writer redacts it
        finish = getattr(self.invoker, "finish_case", None)
        if finish is not None:  # cli: a passing case's scratch dirs go, any other case's stay
            finish(case["id"], folded == PASS)
        record = sent_record(base, repeats, chosen, folded, k=self.k, judged=judged,
                             undeclared=self._undeclared(chosen))
        if "turns" in chosen:
            from .repeat_conversation import conversation_record   # conversations' modules: only for one
            conversation_record(record, repeats, chosen, folded, k=self.k, conv=self.conversation)
        if "simulator" in chosen:
            from .simulated import simulated_record   # the simulator's modules: only for a simulated case
            simulated_record(record, chosen, folded)
        return record

    def _one_repeat(self, case, n: int, ref: dict) -> dict:
        if is_simulated(case):
            from .simulated import one_simulated
            return one_simulated(self, case, n, ref)
        if self.conversation is not None and is_conversation(case):
            from .repeat_conversation import one_conversation
            return one_conversation(self, case, n, ref)
        return one_repeat(self, case, n, ref)

    def _undeclared(self, chosen: dict) -> list[str]:
        """Called tools the adapter's tools list does not declare, over every sent turn."""
        from ..score.tool_names import undeclared_calls
        trajectories = [t.get("trajectory") for t in chosen.get("turns") or []] or [chosen.get("trajectory")]
        return sorted({n for tr in trajectories for n in undeclared_calls(tr, self.score_ctx.declared_tools)})

    def send(self, wire: Any) -> Outcome:
        """One request to the app, holding an app slot (when there is a gate) only while it is out."""
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
