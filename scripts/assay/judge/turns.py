"""Conversations judged (wave 3 §5), pure: which rubric pins judge which turn, and what the judge
is shown.

- A pin on a turn checkpoint (`input.turns[i].expect.answer.rubric`, an earlier turn) and a pin in
  `input.every_turn.answer.rubric` (every turn) judge THAT turn: its user message, its answer and its
  tool results, with the turns before it as context (scope `turn`).
- A pin on the conversation case itself (`expect.answer.rubric`) judges the whole transcript once,
  at the last turn (scope `transcript`): every answer in it is the answer.

`JudgeRuntime.judge_case(case, material, pins, ref, turn=n)` then judges each scope; the turn's
call record is kept under `turns/<n>/judge.json`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .prompt import TRANSCRIPT_SCOPE, TURN_SCOPE, Material, Turn


def _pins(expect: Any) -> list[Any]:
    answer = expect.get("answer") if isinstance(expect, Mapping) else None
    pins = answer.get("rubric") if isinstance(answer, Mapping) else None
    return list(pins) if isinstance(pins, list) else []


def turn_pins(case: Mapping[str, Any], n: int, total: int) -> dict[str, list[Any]]:
    """{scope: pins} judged at turn `n` (1-based) of a conversation of `total` turns."""
    inp = case.get("input") if isinstance(case.get("input"), Mapping) else {}
    turns = inp.get("turns") if isinstance(inp.get("turns"), list) else []
    pins = _pins(inp.get("every_turn"))
    if n < total and n <= len(turns) and isinstance(turns[n - 1], Mapping):
        pins += [p for p in _pins(turns[n - 1].get("expect")) if p not in pins]
    out: dict[str, list[Any]] = {}
    if pins:
        out[TURN_SCOPE] = pins
    if n == total and _pins(case.get("expect")):
        out[TRANSCRIPT_SCOPE] = _pins(case.get("expect"))
    return out


def judged_at_all(case: Mapping[str, Any]) -> bool:
    """The conversation pins a rubric anywhere (a checkpoint, every_turn or the case)."""
    inp = case.get("input") if isinstance(case.get("input"), Mapping) else {}
    turns = inp.get("turns") if isinstance(inp.get("turns"), list) else []
    return bool(_pins(case.get("expect")) or _pins(inp.get("every_turn"))
                or any(_pins(t.get("expect")) for t in turns if isinstance(t, Mapping)))


def transcript_material(turns: Iterable[tuple[str, str, list | None]], *, scope: str = TRANSCRIPT_SCOPE,
                        gold: Any = None) -> Material:
    """The material of a conversation's last turn (scope `turn`) or of the whole conversation (scope
    `transcript`) from its turns so far, in order: `(user text, answer text, tool results or None)`.
    A turn's tool results are its own; the whole conversation's are every turn's, in order."""
    turns = list(turns)
    if not turns:
        raise ValueError("a conversation's material needs at least one turn")
    user, answer, tools = turns[-1]
    if scope == TRANSCRIPT_SCOPE:
        seen = [t[2] for t in turns if t[2] is not None]
        tools = [r for rs in seen for r in rs] if seen else None
    return Material(user_message=user, answer=answer, tool_results=tools, gold=gold,
                    context=tuple(Turn(u, a) for u, a, _ in turns[:-1]), scope=scope)


def gold_of(expect: Any) -> Any:
    """The gold value a reference-guided node is judged against: `expect.result`'s scalar or rows."""
    result = expect.get("result") if isinstance(expect, Mapping) else None
    return result.get("scalar", result.get("rows")) if isinstance(result, Mapping) and result else None


def conversation_doc(case_id: str, turn_docs: list[tuple[int, dict]], usage: dict) -> dict[str, Any]:
    """The case-level judge.json of a conversation: every judged turn's rubric verdicts (with `turn`
    and `scope`; the calls themselves are in turns/<n>/judge.json) and the usage over all of them."""
    rubrics = []
    head: dict[str, Any] = {}
    for n, doc in turn_docs:
        head = head or {k: doc.get(k) for k in ("provider", "model", "prompt_version")}
        for r in doc.get("rubrics") or []:
            nodes = [{k: v for k, v in node.items() if k != "calls"} for node in r.get("nodes") or []]
            rubrics.append(dict(r, nodes=nodes, turn=n))
    last = turn_docs[-1][1] if turn_docs else {}
    return {"case_id": case_id, **head, "answer_sha256": last.get("answer_sha256"), "multi_turn": True, "turns_judged": [n for n, _ in turn_docs],
            "rubrics": rubrics, "usage": usage,
            "note": "a conversation's judge calls are kept per turn, in turns/<n>/judge.json"}
