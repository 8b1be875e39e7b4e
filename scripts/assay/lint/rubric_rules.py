"""Rubric pins: every `expect.answer.rubric` entry names `<rubric_id>-v<version>` of a rubric file.

Checked only when the suite carries its rubrics (suite.json / converted.json from
convert_suite.py); a bare case list cannot be checked against files it does not have.
"""

from __future__ import annotations

from typing import Any, Callable

from ..judge.rubrics import case_pins, resolve_pin


def check_rubric_pins(cases: list[dict[str, Any]], rubrics: dict[str, Any],
                      source_of: Callable[[int], str | None], report: Callable[..., None]) -> None:
    for i, case in enumerate(cases):
        for pin in case_pins(case):
            rubric, code, message = resolve_pin(pin, rubrics)
            if rubric is None:
                report(code, f"expect.answer.rubric: {message}", case_id=case.get("id"), source=source_of(i),
                       key="expect.answer.rubric")
