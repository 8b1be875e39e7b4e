"""Which kind of input a case carries: one user message, scripted turns (`input.turns`), or a
simulated user (`input.simulated_user`). Pure. The runner asks this of every case, so it lives
apart from the conversation and simulator code, which a run of single-turn cases never loads."""

from __future__ import annotations

from typing import Any, Mapping

SIMULATED_KEY = "simulated_user"
TURN_KEYS = ("user", "expect")   # a scripted turn's keys: the linter names any other, the runner skips the case
DEFAULT_MAX_TURNS = 12   # a scripted conversation's turns at most, unless execution.max_turns says
SIMULATED_DEFAULT_MAX_TURNS = 8   # a simulated user's turns at most, unless its simulated_user.max_turns says


def is_simulated(case: Mapping[str, Any]) -> bool:
    inp = case.get("input")
    return isinstance(inp, Mapping) and SIMULATED_KEY in inp


def any_simulated(cases: Any) -> bool:
    """Whether any case is simulated (see _any)."""
    return _any(cases, SIMULATED_KEY, is_simulated)


def any_conversation(cases: Any) -> bool:
    """Whether any case is a scripted conversation (see _any)."""
    return _any(cases, "turns", is_conversation)


def _any(cases: Any, key: str, kind) -> bool:
    """Whether any case is of `kind`, whose input holds `key`. On the plan's case table
    (core.runplan.CaseTable: each case held as its canonical JSON, where the key is written
    literally) a case whose text lacks the key is not parsed: a 2,000-case plan with none costs no
    parse at all."""
    raw = getattr(cases, "raw", None)
    if raw is None:
        return any(kind(c) for c in cases or [])
    needle = f'"{key}":'.encode("utf-8")
    return any(kind(cases[i]) for i in range(len(cases)) if needle in raw(i))


def is_conversation(case: Mapping[str, Any]) -> bool:
    inp = case.get("input")
    return isinstance(inp, Mapping) and "turns" in inp


def app_calls(case: Mapping[str, Any]) -> int:
    """The app calls one attempt of a case makes at most: one per scripted turn, a simulated user's
    `max_turns` (its stop rule may end it sooner), else one. What a plan costs is this, summed, times k."""
    inp = case.get("input") if isinstance(case.get("input"), Mapping) else {}
    if is_simulated(case):
        block = inp.get(SIMULATED_KEY)
        n = block.get("max_turns") if isinstance(block, Mapping) else None
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else SIMULATED_DEFAULT_MAX_TURNS
    if is_conversation(case):
        return len(inp["turns"]) if isinstance(inp.get("turns"), list) else 1
    return 1


def every_expect_of(case: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every expect a conversation asserts (checkpoints, every_turn, the top level): for safety gates."""
    out = [case.get("expect")] if isinstance(case.get("expect"), Mapping) else []
    inp = case.get("input") if isinstance(case.get("input"), Mapping) else {}
    if isinstance(inp.get("every_turn"), Mapping):
        out.append(inp["every_turn"])
    for turn in inp.get("turns") or [] if isinstance(inp.get("turns"), list) else []:
        if isinstance(turn, Mapping) and isinstance(turn.get("expect"), Mapping):
            out.append(turn["expect"])
    return out
