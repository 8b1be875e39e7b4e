"""Scripted conversations (`input.turns`) driven through any invoker (http, function, cli).

An invoker only has to offer `prepare(case, uuid, extra_headers, session=...) -> (wire,
recorded)` and `send(wire) -> Outcome`; this module owns everything else about a
conversation: the adapter's `invocation.conversation` block (checked at pre-flight, exit 3),
the per-turn expects, the session (client-id `<uuid>`, server-id `<session>`, cookie jar),
the pacing, the stop rule and the restart-from-turn-1 retry. Scoring a turn is the caller's
(`score_turn`), so a turn is scored with exactly the layers of a single-turn case.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..core.casekind import DEFAULT_MAX_TURNS, TURN_KEYS, every_expect_of, is_conversation  # noqa: F401 (re-exported)
from ..core.errors import AssayError
from ..core.ids import new_uuid4, utc_now_iso
from ..core.vocab import (FAIL, INFRA_ERROR, INFRA_INCOMPLETE, LAYER_ORDER, NA, PASS, TRACE_DEPENDENT_LAYERS,
                           UNSCORABLE)
from ..score.answer import NO_ANSWER_REASON
from . import templates
from .outcome import (RATE_LIMIT_SPENT, RATE_LIMITED_PREFIX, Outcome, RetryBudget, attempts_reason, expected_status_of,
                      is_expected)
from .script import Script, Scripted
from .sessions import CookieJar, read_session  # noqa: F401 (CookieJar: part of this module's interface)

STYLES = ("client-id", "server-id", "cookie")
MEMORY = ("session", "user", None)
STOP_VERDICTS = (FAIL, INFRA_ERROR, INFRA_INCOMPLETE)
NO_BLOCK_REASON = ("conversation not run: the adapter declares no invocation.conversation "
                   "(add style client-id, server-id or cookie)")


@dataclass(frozen=True)
class ConversationConfig:
    style: str
    session_from: Mapping[str, str] | None
    turn_delay_s: float
    memory: str | None

    def manifest(self) -> dict[str, Any]:
        return {"style": self.style, "session_from": dict(self.session_from) if self.session_from else None,
                "turn_delay_s": self.turn_delay_s, "memory": self.memory}


def conversation_config(invocation: Mapping[str, Any], template: Any) -> ConversationConfig | None:
    """The adapter's `invocation.conversation`, checked (pre-flight, exit 3); None when absent.

    `template` is what the invoker fills per request (the parsed request body, or a cli
    argv): client-id needs `<uuid>` in it, server-id needs `<session>` in it.
    """
    block = invocation.get("conversation")
    if block is None:
        return None
    mode = invocation.get("mode")
    key = "invocation.conversation"
    if not isinstance(block, Mapping):
        raise AssayError(f"pre-flight: {key} must be a mapping with a style (client-id, server-id, cookie)", 3, key=key)
    unknown = sorted(set(block) - {"style", "session_from", "turn_delay_s", "memory"})
    if unknown:
        raise AssayError(f"pre-flight: {key} has unknown key(s) {', '.join(unknown)} (known: style, session_from, "
                         "turn_delay_s, memory)", 3, key=f"{key}.{unknown[0]}")
    style = block.get("style")
    if style not in STYLES:
        raise AssayError(f"pre-flight: {key}.style {style!r} is not one of {', '.join(STYLES)}", 3, key=f"{key}.style")
    if style == "client-id" and not templates.mentions(template, "<uuid>"):
        raise AssayError(f"pre-flight: {key}.style client-id reuses the <uuid> placeholder on every turn, but the "
                         "request template never mentions <uuid>; add it (e.g. \"session_id\": \"<uuid>\")", 3,
                         key=f"{key}.style")
    if style == "cookie" and mode != "http":
        raise AssayError(f"pre-flight: {key}.style cookie needs invocation.mode http (got {mode!r}); use client-id "
                         "or server-id", 3, key=f"{key}.style")
    source = block.get("session_from")
    if style == "server-id":
        ok = (isinstance(source, Mapping) and len(source) == 1 and next(iter(source)) in ("body", "header")
              and isinstance(next(iter(source.values())), str) and next(iter(source.values())).strip())
        if not ok:
            raise AssayError(f"pre-flight: {key}.session_from must be exactly one of {{body: <dotted path>}} or "
                             f"{{header: <Name>}} for style server-id (got {source!r})", 3, key=f"{key}.session_from")
        if "header" in source and mode != "http":
            raise AssayError(f"pre-flight: {key}.session_from.header needs invocation.mode http (got {mode!r}); "
                             "read the id from the body instead ({body: <path>})", 3, key=f"{key}.session_from")
        if not templates.mentions(template, templates.SESSION_MARK):
            raise AssayError(f"pre-flight: {key}.style server-id sends the app's session id back as <session>, but "
                             "the request template never mentions <session>; add it (e.g. \"session\": "
                             "\"<session>\")", 3, key=f"{key}.style")
    elif source is not None:
        raise AssayError(f"pre-flight: {key}.session_from is for style server-id only (style is {style}); remove it",
                         3, key=f"{key}.session_from")
    delay = block.get("turn_delay_s", 0)
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not delay >= 0:
        raise AssayError(f"pre-flight: {key}.turn_delay_s must be a number >= 0 (got {delay!r})", 3,
                         key=f"{key}.turn_delay_s")
    memory = block.get("memory")
    if memory not in MEMORY:
        raise AssayError(f"pre-flight: {key}.memory {memory!r} is not one of session, user", 3, key=f"{key}.memory")
    return ConversationConfig(style=style, session_from=dict(source) if source else None,
                              turn_delay_s=float(delay), memory=memory)


# ---------------------------------------------------------------- the script
@dataclass(frozen=True)
class TurnSpec:
    n: int                    # 1-based
    user: str
    expect: dict[str, Any]    # the turn's checks with input.every_turn merged in
    checkpoint: bool          # an earlier turn's own expect (the last turn uses the top-level expect)


def turn_specs(case: Mapping[str, Any]) -> list[TurnSpec]:
    """The turns as sent and scored. Pure. Call only after skip_reason() said None."""
    inp = case["input"]
    turns = inp["turns"]
    every = inp.get("every_turn") if isinstance(inp.get("every_turn"), Mapping) else {}
    top = case.get("expect") if isinstance(case.get("expect"), Mapping) else {}
    specs = []
    for i, turn in enumerate(turns):
        last = i == len(turns) - 1
        own = top if last else (turn.get("expect") if isinstance(turn.get("expect"), Mapping) else {})
        specs.append(TurnSpec(n=i + 1, user=str(turn["user"]), expect={**every, **own},
                              checkpoint=not last and bool(turn.get("expect"))))
    return specs


def skip_reason(case: Mapping[str, Any], conv: ConversationConfig | None, max_turns: int,
                matrix: Mapping[str, Any] | None = None) -> str | None:
    """Why a conversation case is not sent, or None. Pure."""
    inp = case["input"]
    turns = inp.get("turns")
    if not isinstance(turns, list):
        return "unsupported input: input.turns is not a list of {user, expect?} (validate_cases.py names the fix)"
    if "messages" in inp:
        return "unsupported input: input has both turns and messages (validate_cases.py names the fix)"
    if conv is None:
        return NO_BLOCK_REASON
    entry = (matrix or {}).get("multi_turn")
    if isinstance(entry, Mapping) and entry.get("enabled") is False:
        return ("conversation not run: capability_matrix.multi_turn is disabled ("
                f"{entry.get('blocked_by') or 'enabled: false'})")
    if len(turns) < 2:
        return f"unsupported input: a conversation needs at least 2 turns (input.turns has {len(turns)})"
    if len(turns) > max_turns:
        return (f"conversation not run: {len(turns)} turns is more than execution.max_turns {max_turns} "
                "(make_plan.py --max-turns raises the cap)")
    for i, turn in enumerate(turns):
        if not isinstance(turn, Mapping) or not isinstance(turn.get("user"), str) or not turn["user"].strip():
            return f"unsupported input: input.turns[{i}] has no non-empty user text (validate_cases.py names the fix)"
        if turn.get("expect") is not None and not isinstance(turn.get("expect"), Mapping):
            return f"unsupported input: input.turns[{i}].expect is not a mapping (validate_cases.py names the fix)"
    if inp.get("every_turn") is not None and not isinstance(inp.get("every_turn"), Mapping):
        return "unsupported input: input.every_turn is not a mapping (validate_cases.py names the fix)"
    return unread_check(case)


def unread_check(case: Mapping[str, Any]) -> str | None:
    """Why a check the case writes would never run, or None: a turn key other than user and expect
    (a misspelt checkpoint), an expect on the last turn (the final turn is scored by the top-level
    expect), or a key both input.every_turn and an expect set (one would replace the other). The
    linter's ERRORs (unknown_turn_key, turn_key_reserved, final_turn_expect, every_turn_collision);
    a plan made with --allow-invalid still reaches the runner, which skips the case rather than let
    it pass without that check. Pure."""
    inp = case["input"]
    turns = inp["turns"]
    for i, turn in enumerate(turns):
        extra = sorted(str(k) for k in turn if k not in TURN_KEYS)
        if extra:
            return (f"unsupported input: input.turns[{i}].{extra[0]} is not a turn key (user, expect), so it is "
                    "never read (validate_cases.py names the fix)")
    if turns[-1].get("expect") is not None:
        return (f"unsupported input: input.turns[{len(turns) - 1}].expect is on the last turn, where it is never "
                "read: the last turn is scored by the case's top-level expect (validate_cases.py names the fix)")
    every = inp.get("every_turn") or {}
    for where, own in [(f"input.turns[{i}].expect", t.get("expect")) for i, t in enumerate(turns)] + [
            ("expect", case.get("expect"))]:
        clash = sorted(set(every) & set(own)) if isinstance(own, Mapping) else []
        if clash:
            return (f"unsupported input: input.every_turn and {where} both set {clash}: one would replace the "
                    "other (validate_cases.py names the fix)")
    return None


def turn_case(case: Mapping[str, Any], spec: TurnSpec) -> dict[str, Any]:
    """The case as one turn: what the invoker renders and the layers score (identity, persona kept)."""
    return {**case, "input": {"messages": [{"role": "user", "content": spec.user}]}, "expect": spec.expect}


# ---------------------------------------------------------------- one conversation (one repeat)
@dataclass
class SentTurn:
    spec: TurnSpec
    request: dict[str, Any]
    outcome: Outcome
    scored: dict[str, Any]        # what score_turn / infra_turn returned: layers, verdict, answer_text, ...
    attempt: int


@dataclass
class ConversationResult:
    turns: list[SentTurn]
    endings: list[tuple[int, Outcome]]       # per conversation attempt: (turn, the outcome that ended it)
    turns_total: int
    failed_turn: int | None
    stop_reason: str | None
    crashed: bool = False
    retry_events: list[dict] = field(default_factory=list)

    @property
    def turns_sent(self) -> int:
        return len(self.turns)

    @property
    def attempts(self) -> int:
        return len(self.endings)


def stop_reason_of(n: int, layers: Mapping[str, Any], verdict: str) -> str:
    """`turn N: <layer>: <reason>` for the first layer (table order) whose verdict is the turn's."""
    target = {FAIL: FAIL, INFRA_ERROR: INFRA_ERROR, INFRA_INCOMPLETE: INFRA_INCOMPLETE}.get(verdict, verdict)
    for name in LAYER_ORDER:
        entry = layers.get(name) or {}
        if entry.get("verdict") == target:
            why = entry.get("reason") or _layer_detail(entry) or target
            return f"turn {n}: {name}: {why}"
    return f"turn {n}: {verdict}"


def _layer_detail(entry: Mapping[str, Any]) -> str | None:
    checks = [c for c in entry.get("checks") or [] if isinstance(c, Mapping) and c.get("status") == entry.get("verdict")]
    if checks:
        c = checks[0]
        return " ".join(str(x) for x in (c.get("check"), repr(c["entry"]) if c.get("entry") is not None else None,
                                         f"({c.get('reason')})" if c.get("reason") else None) if x)
    if "status" in entry and "expected_status" in entry:
        exp = entry.get("expected_status")
        return f"HTTP {entry.get('status')}, expected {exp if exp is not None else '2xx'}"
    return None


def run_conversation(case: Mapping[str, Any], conv: ConversationConfig, *, invoker: Any,
                     send: Callable[[Any], Outcome],
                     score_turn: Callable[[dict, Outcome, dict, str | None, TurnSpec, list], dict],
                     infra_turn: Callable[[Outcome, str], dict],
                     trace_headers: Callable[[], tuple[dict, str | None]],
                     max_attempts: int, backoff_s: list[float],
                     on_retry: Callable[[int, int, Outcome, float], None] | None = None,
                     redact_cookie: str = "<redacted>", rate_limit_wait_s: float | None = None,
                     script: Script | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> ConversationResult:
    """Run one conversation, restarting from turn 1 (fresh uuid, jar, session) on a retryable
    outcome at any turn, up to max_attempts conversation attempts. Stops at the first turn that
    rolls up fail / infra_error / infra_incomplete, or when a server-id app gave no session id.

    Retries follow `RetryBudget`, the policy a single-turn case's retries use: with
    `rate_limit_wait_s` (adaptive runs), a rate-limited ending (`is_rate_limited`) spends that
    budget of waiting seconds instead of an attempt.
    `script` gives the user turns (default: the case's input.turns; a simulated user's come from
    the simulator, assay.simulate.script); each attempt starts it over."""
    script = script if script is not None else Scripted(turn_specs(case))
    endings: list[tuple[int, Outcome]] = []
    crashed = False
    budget = RetryBudget(max_attempts, list(backoff_s), rate_limit_wait_s)
    attempt = 0
    while True:
        attempt += 1
        uuid = new_uuid4()
        jar = CookieJar() if conv.style == "cookie" else None
        session: Any = templates.UNSET
        sent: list[SentTurn] = []
        retry_out: Outcome | None = None
        stop: tuple[int | None, str | None] = (None, None)
        for spec in script.turns(sent):
            if spec.n > 1 and conv.turn_delay_s > 0:
                sleep(conv.turn_delay_s)
            tcase = turn_case(case, spec)
            headers, sent_trace_id = trace_headers()
            extra = dict(headers)
            if jar is not None and jar.header():
                extra["Cookie"] = jar.header()
            wire, recorded = invoker.prepare(tcase, uuid, extra, session=session)
            recorded = dict(recorded, turn=spec.n, attempt=attempt, sent_at=utc_now_iso())
            if conv.style == "cookie" and isinstance(recorded.get("headers"), Mapping):
                recorded["headers"] = {k: (redact_cookie if k.lower() == "cookie" else v)
                                       for k, v in recorded["headers"].items()}
            out = send(wire)
            crashed = crashed or out.crashed
            if out.retriable and not is_expected(out, expected_status_of(spec.expect)):   # a turn that asks for its 5xx
                retry_out = out
                endings.append((spec.n, out))
                sent.append(SentTurn(spec, recorded, out, {}, attempt))
                break
            if jar is not None:
                jar.update(out.set_cookies)
            scored = score_turn(tcase, out, headers, sent_trace_id, spec, list(sent))  # + the turns before it
            sent.append(SentTurn(spec, recorded, out, scored, attempt))
            if scored["verdict"] in STOP_VERDICTS:
                stop = (spec.n, stop_reason_of(spec.n, scored["layers"], scored["verdict"]))
                break
            scripted = isinstance(script, Scripted)
            # a simulated user is asked about every answer (its next message, or whether stop_when holds)
            silent = unanswered(scored) if not scripted or spec.n < script.total else None
            if silent is not None:   # the next turn would follow up on an answer the app never gave
                then = f"turn {spec.n + 1} not sent" if scripted else "the simulated user was not asked to go on"
                stop = (None, f"turn {spec.n}: {silent}; {then}")
                break
            if conv.style == "server-id" and spec.n == 1:
                value, where = read_session(conv, out)
                if value is None:
                    stop = (None, f"turn 1: no session id at {where} (style server-id); turn 2 not sent")
                    break
                session = value
        if retry_out is None:
            if sent:   # none: a simulated user ended it before its first message
                endings.append((sent[-1].spec.n, sent[-1].outcome))
            return ConversationResult(sent, endings, script.total, stop[0], stop[1], crashed)
        n = sent[-1].spec.n
        wait, spent = budget.spend(retry_out)
        final = None
        if spent == RATE_LIMIT_SPENT:
            final = (f"{RATE_LIMITED_PREFIX}: turn {n}: {retry_out.describe()} on {attempt} conversation "
                     f"attempt(s) until execution.rate_limit_wait_s ({rate_limit_wait_s:g} s) was spent")
        elif spent is not None:
            final = attempts_reason([o for _, o in endings], [t for t, _ in endings], "conversation attempt")
        if final is not None:
            sent[-1].scored = infra_turn(retry_out, final)
            return ConversationResult(sent, endings, script.total, n, final, crashed)
        if on_retry:
            on_retry(attempt, n, retry_out, wait)
        if wait > 0:
            sleep(wait)


def unanswered(scored: Mapping[str, Any]) -> str | None:
    """Why a scripted turn that another turn follows (or any simulated user's turn: the simulator reads
    each answer) got no answer to carry the conversation on
    (its request succeeded, but the adapter's <answer> path held nothing, or only whitespace), else
    None. The next turn would follow up on an answer the app never gave, so the conversation stops
    there, unscored (never a pass). A turn whose expect names its status (an asked-for 204 or 4xx)
    asks for no answer. Pure."""
    http = (scored.get("layers") or {}).get("http")
    if not isinstance(http, Mapping) or http.get("verdict") != PASS or http.get("expected_status") is not None:
        return None
    text = scored.get("answer_text")
    if text is None:
        return str(http.get("answer_absent") or NO_ANSWER_REASON)
    return "an empty answer at the adapter's <answer> path" if not str(text).strip() else None


def shared_trace_blocker(turns: list[Mapping[str, Any]]) -> str | None:
    """The `blocked_by` text when two sent turns were correlated with the same trace id, else None."""
    seen: dict[str, int] = {}
    for t in turns:
        tid = (t.get("trace") or {}).get("trace_id")
        if not tid:
            continue
        if tid in seen:
            return (f"same trace id on turns {seen[tid]} and {t['n']}: the app reused one trace across the "
                    "conversation, so a turn's spans cannot be told apart")
        seen[tid] = t["n"]
    return None


def block_trace_layers(layers: Mapping[str, Any], blocked_by: str) -> dict[str, Any]:
    """Trace-dependent layers that were asserted and enabled become unscorable; n/a and matrix-disabled
    rows keep their own verdict and reason. Pure."""
    out = dict(layers)
    for name in TRACE_DEPENDENT_LAYERS:
        entry = out.get(name)
        if isinstance(entry, Mapping) and entry.get("verdict") not in (NA, UNSCORABLE):
            out[name] = {"verdict": UNSCORABLE, "blocked_by": blocked_by}
    return out

