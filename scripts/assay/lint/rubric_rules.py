"""Rubric pins: every `expect.answer.rubric` entry names `<rubric_id>-v<version>` of a rubric file, and
a pairwise rubric is pinned only on a single-turn case (assay.judge.pairwise.in_conversation_reason).

Checked only when the suite carries its rubrics (suite.json / converted.json from
convert_suite.py); a bare case list cannot be checked against files it does not have.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from ..core.casekind import is_conversation, is_simulated
from ..judge.pairwise import in_conversation_reason, is_pairwise
from ..judge.rubrics import case_pins, resolve_pin


def _expects(case: dict[str, Any]) -> list[tuple[str, Any]]:
    """(key path, expect) for every expect a case holds: the top level, input.every_turn and each
    conversation checkpoint (a pin there is as much a pin as one at the top)."""
    out: list[tuple[str, Any]] = [("expect", case.get("expect"))]
    inp = case.get("input") if isinstance(case.get("input"), dict) else {}
    out.append(("input.every_turn", inp.get("every_turn")))
    turns = inp.get("turns") if isinstance(inp.get("turns"), list) else []
    out += [(f"input.turns[{n}].expect", t.get("expect")) for n, t in enumerate(turns) if isinstance(t, dict)]
    return [(where, e) for where, e in out if isinstance(e, dict)]


def check_rubric_pins(cases: list[dict[str, Any]], rubrics: dict[str, Any],
                      source_of: Callable[[int], str | None], report: Callable[..., None]) -> None:
    for i, case in enumerate(cases):
        for where, expect in _expects(case):
            for pin in case_pins({"expect": expect}):
                rubric, code, message = resolve_pin(pin, rubrics)
                if rubric is None:
                    report(code, f"{where}.answer.rubric: {message}", case_id=case.get("id"), source=source_of(i),
                           key=re.sub(r"\[(\d+)\]", r".\1", f"{where}.answer.rubric"))
                elif is_pairwise(rubric) and (is_conversation(case) or is_simulated(case)):
                    report("pairwise_in_conversation", f"{where}.answer.rubric: {in_conversation_reason(pin)}",
                           case_id=case.get("id"), source=source_of(i),
                           key=re.sub(r"\[(\d+)\]", r".\1", f"{where}.answer.rubric"))
