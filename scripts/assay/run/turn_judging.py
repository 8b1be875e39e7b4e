"""The judge on a conversation's turns during a run (the rules: assay.judge.turns).

`judge_turn(judge, case, spec, earlier, scored, ref)` is called as each turn is scored, before the
runner decides whether to send the next one: a calibrated rubric that fails at turn n makes turn n
fail, and the conversation stops there (failed_turn n), as any other failing layer does.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core import writer
from ..core.vocab import UNSCORED
from ..judge.fold import judged_layer, sum_usage
from ..judge.turns import gold_of, transcript_material, turn_pins

NO_ANSWER = "no answer to judge (nothing at the adapter's <answer> path)"


def tool_results_of(trajectory: Mapping[str, Any] | None) -> list | None:
    """What the judge is shown of a trace's tool calls: name and result, redacted like everything else
    it is sent (the trajectory in memory is not yet)."""
    if trajectory is None:
        return None
    return writer.redact_value([{"name": c.get("name"), "result": c.get("result")}
                                for c in trajectory.get("tool_calls") or []])


def judge_turn(judge: Any, case: Mapping[str, Any], spec: Any, earlier: list, scored: Mapping[str, Any],
               ref: dict) -> tuple[dict, dict | None] | None:
    """(judged layer, turns/<n>/judge.json doc or None) for one sent turn, or None when no pin judges
    it. `earlier`: this attempt's turns before it (SentTurn: spec, scored); `scored`: this turn's."""
    scripted = (case.get("input") or {}).get("turns")
    if not isinstance(scripted, list):
        return None   # a simulated user: its rubrics judge the whole transcript when it ends (run/simulated.py)
    total = len(scripted)
    pins = turn_pins(case, spec.n, total)
    if not pins or judge is None:
        return None
    if scored.get("answer_text") is None:
        return {"verdict": UNSCORED, "reason": NO_ANSWER}, None
    turns = [(writer.redact_text(s.spec.user) or "", s.scored.get("answer_text") or "",
              tool_results_of(s.scored.get("trajectory"))) for s in earlier if s.scored]
    turns.append((writer.redact_text(spec.user) or "", scored["answer_text"], tool_results_of(scored.get("trajectory"))))
    results: list[dict] = []
    usages, head = [], None
    for scope, scope_pins in pins.items():
        gold = gold_of(case.get("expect") if scope == "transcript" else spec.expect)
        got = judge.judge_case(case, transcript_material(turns, scope=scope, gold=gold), scope_pins, ref,
                               turn=spec.n)
        head = head or got.doc
        results += got.doc["rubrics"]
        usages.append(got.usage)
    usage = sum_usage(usages)
    doc = dict(head, rubrics=results, usage=usage, turn=spec.n, scopes=list(pins))
    doc.pop("scope", None)
    return judged_layer(results, usage), doc
