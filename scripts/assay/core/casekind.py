"""Which kind of input a case carries: one user message, scripted turns (`input.turns`), or a
simulated user (`input.simulated_user`). Pure. The runner asks this of every case, so it lives
apart from the conversation and simulator code, which a run of single-turn cases never loads."""

from __future__ import annotations

from typing import Any, Mapping

SIMULATED_KEY = "simulated_user"
DEFAULT_MAX_TURNS = 12   # a scripted conversation's turns at most, unless execution.max_turns says


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
