"""The simulator during a run: one call per user turn, bounded by its own `max_concurrency` and
budget, with the runner's retry/backoff rules (`attempt_with_retries`) and the judge's transport
(`assay.judge.transport`: the same POST and the same command runner).

Every user turn goes through `SimulatorRuntime.next_turn`, and every call it makes through
`exchange`: `next_turn` is the one place a recorded turn is given back instead of calling the
model (`through`, the record/replay cache: keyed on the simulator's identity, the scenario and
the transcript so far, so a replayed conversation meets the same user or says where it left
the recording).

`next_turn(scenario, transcript, ref) -> Simulated`: the user's next message, or the named
outcome that ends the conversation (the stop token, an outage, an unparseable reply, a user out
of character). A simulator that fails is never the app's failure (assay.simulate.outcomes).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import writer
from ..core.jsonio import dumps
from ..judge.prompt import as_stdin
from ..judge.providers import ReplyShape, build_request, read_reply, stopped_error
from ..invoke.outcome import Outcome, attempt_with_retries
from ..judge import probe as judge_probe
from ..judge import transport
from . import outcomes as oc
from .prompt import TURN_SCHEMA, TURN_TOOL, Transcript, UserTurn, broke_character, build_prompt, \
    parse_turn
from .scenario import Scenario

PARSE_TRIES = 2          # an unparseable reply is asked again once, then the conversation ends
TURN_SHAPE = ReplyShape(TURN_TOOL, "Write the user's next message.", "user_turn", TURN_SCHEMA)


@dataclass(frozen=True)
class SimCall:
    """One simulator call as sent: what `exchange` is given (and what a recording keys on)."""
    provider: str
    system: str
    user: str
    seed: int
    url: str | None = None
    headers: Mapping[str, str] | None = None
    body: Mapping[str, Any] | None = None
    argv: tuple[str, ...] = ()

    def stdin(self) -> str:
        return as_stdin(self.system, self.user)

    def recorded(self) -> dict[str, Any]:
        """The call as kept in the turn tree: the request body or argv and stdin, never the headers."""
        if self.provider == "command":
            return {"provider": "command", "argv": list(self.argv), "stdin": self.stdin()}
        return {"provider": self.provider, "url": self.url, "body": dict(self.body or {})}


@dataclass
class Simulated:
    """What one `next_turn` produced: the turn (or None) and every call made for it."""
    turn: UserTurn | None
    outcome: str | None            # None: a message to send; else an outcomes.* name
    reason: str | None
    calls: list[dict[str, Any]] = field(default_factory=list)

    def doc(self) -> dict[str, Any]:
        turn = None if self.turn is None else {"message": self.turn.message, "stop": self.turn.stop,
                                               "closing": self.turn.closing}
        return {"turn": turn, "outcome": self.outcome, "reason": self.reason, "calls": self.calls}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> "Simulated":
        t = doc.get("turn")
        turn = None if not isinstance(t, Mapping) else UserTurn(str(t["message"]), bool(t["stop"]),
                                                                str(t.get("closing") or ""))
        return cls(turn, doc.get("outcome"), doc.get("reason"), list(doc.get("calls") or []))


def cacheable(doc: Mapping[str, Any]) -> bool:
    """Whether a simulated turn (`Simulated.doc()`) is kept in the record/replay cache, or a kept one
    reused: never an outage (a replay asks again), nor an ending that stands on a reply that did not
    stop of itself (cut off at max_tokens, refused, filtered: the judge cache's rule,
    providers.stopped_error), so the rerun the error asks for (max_tokens raised) asks again."""
    if doc.get("outcome") == oc.SIMULATOR_OUTAGE:
        return False
    calls = doc.get("calls") if isinstance(doc.get("calls"), list) else []
    return doc.get("turn") is not None or not any(
        isinstance(c, Mapping) and stopped_error(c.get("error")) for c in calls)


@dataclass
class SimulatorRuntime:
    config: dict[str, Any]                 # resolved (secrets in it): the wire only
    recorded: dict[str, Any]               # manifest view, unresolved
    identity: dict[str, Any]
    state: Path
    execution: Mapping[str, Any]
    child_env: dict[str, str] | None = None
    scrub: Callable[[str | None], str | None] = lambda s: s
    on_retry: Callable[..., None] | None = None
    sleep: Callable[[float], None] = time.sleep
    key_variable: str | None = None
    # record/replay: (request doc, produce) -> the turn doc (recorded or produced); None: always live
    through: Callable[[dict[str, Any], Callable[[], dict[str, Any]]], dict[str, Any]] | None = None
    _slots: threading.BoundedSemaphore | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    spent: dict[str, int] = field(default_factory=lambda: {"calls": 0, "input_tokens": 0, "output_tokens": 0})
    probe: dict[str, Any] | None = None    # the pre-flight probe's result (assay.judge.probe.probe_config)

    def __post_init__(self) -> None:
        self._slots = threading.BoundedSemaphore(int(self.config["max_concurrency"]))

    def manifest(self) -> dict[str, Any]:
        block = dict(self.recorded, enabled=True, identity=self.identity, spent=dict(self.spent))
        if self.probe is not None:
            block["probe"] = self.probe
        return block

    # ------------------------------------------------------------ one call
    def build_call(self, system: str, user: str, seed: int) -> SimCall:
        cfg = self.config
        if cfg["provider"] == "command":
            return SimCall("command", system, user, seed, argv=tuple(str(a) for a in cfg["command"]))
        url, headers, body = build_request(cfg, system, user, TURN_SHAPE)
        if cfg.get("temperature") is not None:
            body["temperature"] = cfg["temperature"]
        if cfg["provider"] == "openai":
            body["seed"] = seed   # Chat Completions' best-effort determinism; Anthropic has none
        return SimCall(cfg["provider"], system, user, seed, url=url, headers=headers, body=body)

    def _send(self, call: SimCall) -> Outcome:
        timeout = float(self.config["timeout_s"])
        if call.provider == "command":
            return transport.run_command(list(call.argv), call.stdin(), timeout, self.state, self.child_env,
                                         who=judge_probe.SIMULATOR.name)
        return transport.post(call.url or "", dict(call.headers or {}), dumps(dict(call.body or {}), indent=None).encode("utf-8"),
                     timeout, bool(self.config.get("insecure_tls")))

    def exchange(self, call: SimCall) -> Outcome:
        """Every attempt of every simulator call, within the simulator's own concurrency."""
        assert self._slots is not None
        with self._slots:
            return self._send(call)

    def _budget_left(self) -> str | None:
        budget = self.config.get("budget") or {}
        with self._lock:
            if budget.get("max_calls") is not None and self.spent["calls"] >= int(budget["max_calls"]):
                return f"simulator budget spent: {self.spent['calls']} call(s) of budget.max_calls {budget['max_calls']}"
            used = self.spent["input_tokens"] + self.spent["output_tokens"]
            if budget.get("max_tokens") is not None and used >= int(budget["max_tokens"]):
                return f"simulator budget spent: {used} token(s) of budget.max_tokens {budget['max_tokens']}"
            self.spent["calls"] += 1
        return None

    def _call(self, call: SimCall, where: dict) -> tuple[dict[str, Any], Any, str | None, bool]:
        """One simulator call with retries -> (call record, value to parse, error, outage)."""
        def on_retry(attempt: int, out: Outcome, wait: float) -> None:
            if self.on_retry:
                self.on_retry(attempt=attempt, outcome=self.scrub(out.describe()), wait_s=round(wait, 3), **where)
        record: dict[str, Any] = {"request": call.recorded(), "raw_reply": None, "parsed": None, "usage": None,
                                  "error": None, "attempts": 0, "status": None, "latency_ms": 0.0}
        spent = self._budget_left()
        if spent:
            record["error"] = spent
            return record, None, spent, True
        outs = attempt_with_retries(lambda: self.exchange(call), max_attempts=int(self.execution["max_attempts"]),
                                    backoff_s=list(self.execution["backoff_s"]), on_retry=on_retry, sleep=self.sleep)
        final = outs[-1]
        target = judge_probe.target(self.config, self.key_variable)
        record.update(attempts=len(outs), status=final.status, raw_reply=self.scrub(final.body_text),
                      latency_ms=round(sum(o.latency_ms for o in outs), 3))
        if final.retriable or final.status is None or not 200 <= final.status < 300:
            what = (f"{final.describe()} on all {len(outs)} attempt(s)" if final.retriable
                    else f"HTTP {final.status}: {writer.clip(final.body_text or '', 200)}")
            fix = "" if final.retriable else judge_probe.hint(self.config, final.status, self.key_variable,
                                                              judge_probe.SIMULATOR, final.body_text)
            record["error"] = self.scrub(f"simulator unavailable: {what} ({target}){fix}")
            return record, None, record["error"], True
        provider = call.provider
        body = final.body_text if provider == "command" else final.body_json
        if provider != "command" and body is None:
            record["error"] = "the provider's reply is not JSON"
            return record, None, record["error"], False
        raw, value, usage, err = read_reply(provider, body, TURN_TOOL)
        record["raw_reply"], record["usage"] = self.scrub(raw), usage
        if usage:
            with self._lock:
                self.spent["input_tokens"] += int(usage.get("input_tokens") or 0)
                self.spent["output_tokens"] += int(usage.get("output_tokens") or 0)
        if err:
            record["error"] = self.scrub(err)
            return record, None, record["error"], False
        return record, value, None, False

    # ------------------------------------------------------------ one user turn
    def request_doc(self, scenario: Scenario, transcript: Transcript) -> dict[str, Any]:
        """What fully determines the next user turn (the record/replay key's material)."""
        return {"identity": self.identity, "scenario": scenario.doc(), "transcript": transcript.messages(),
                "turn": len(transcript.turns) + 1}

    def next_turn(self, scenario: Scenario, transcript: Transcript, ref: dict | None = None,
                  through: Callable[[dict[str, Any], Callable[[], dict[str, Any]]], dict[str, Any]] | None = None
                  ) -> Simulated:
        """THE simulated user turn: the user's next message given the conversation so far, or the
        outcome that ends it. Recorded / replayed here when `through` (this case's) or `self.through` is set."""
        through = through or self.through
        if through is None:
            return self._live_turn(scenario, transcript, ref)
        doc = through(self.request_doc(scenario, transcript),
                      lambda: self._live_turn(scenario, transcript, ref).doc())
        return Simulated.from_doc(doc)

    def _live_turn(self, scenario: Scenario, transcript: Transcript, ref: dict | None) -> Simulated:
        system, user = (writer.redact_text(t) or "" for t in build_prompt(scenario, transcript))
        call = self.build_call(system, user, scenario.seed)
        where = dict(ref or {}, simulator_turn=len(transcript.turns) + 1)
        out = Simulated(None, None, None)
        for _ in range(PARSE_TRIES):
            record, value, err, outage = self._call(call, where)
            out.calls.append(record)
            if outage:
                out.outcome, out.reason = oc.SIMULATOR_OUTAGE, err
                return out
            if err is None:
                turn, err = parse_turn(value)
                record["parsed"] = None if turn is None else {"message": turn.message, "stop": turn.stop,
                                                              "closing": turn.closing}
                record["error"] = err
                if turn is not None:
                    out.turn = turn
                    if turn.stop:
                        out.outcome, out.reason = oc.GOAL_REACHED, "the simulated user sent the stop token"
                        return out
                    broke = broke_character(turn.message, scenario)
                    if broke:
                        out.outcome, out.reason = oc.SIMULATOR_BROKE_CHARACTER, broke
                    return out
        out.outcome = oc.SIMULATOR_UNPARSEABLE
        out.reason = f"the simulator's reply did not parse ({PARSE_TRIES} tries): {out.calls[-1]['error']}"
        return out
