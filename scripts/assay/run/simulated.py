"""One repeat of a simulated-user conversation (`input.simulated_user`), on the case worker.

The conversation driver sends it (assay.invoke.conversation, the user turns written by the
simulator: assay.simulate.script); each turn is scored as a turn (did the app answer); the case
is scored on its end state: what the app did over the whole conversation (every turn's tool
calls for tools / args / authz, every answer for answer checks and authz, the last response for
the execution result) and a rubric judged over the whole transcript. How the conversation ended
is a named outcome (assay.simulate.outcomes); the simulator's failures are infra_error, never a
fail of the app (`assay.score.rollup.simulated_verdict`).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.vocab import LAYER_ORDER, NA, UNSCORED
from ..invoke import conversation as convo
from ..score.rollup import SIMULATED_TURN_LAYERS as TURN_LAYERS
from ..score.rollup import merge_turn_layers, simulated_verdict, unscored_reason
from ..simulate import outcomes as oc
from ..simulate.runtime import cacheable
from ..simulate.scenario import problems, scenario_of
from ..simulate.script import SimulatedScript
from ..traces.collect import COMPLETE, NOT_COLLECTED
from .layers import RepeatEvidence, score_repeat
from .judged_reason import JUDGE_PENDING
from .repeat_conversation import drive
from .repeat_scoring import scrub

NO_SIMULATOR = ("simulated user not run: no simulator configured (add simulator/simulator.yaml: "
                "docs/runner-contract.md, 'Simulated users')")

STOPPED_BEFORE_FIRST = ("the simulated user sent the stop token before its first message: nothing was sent to the "
                        "app, so its end state was never scored (read the case's simulator.json; check the "
                        "simulator's model and the case's stop_when)")


def skip_reason(case: Mapping[str, Any], conv: Any, max_turns: int, matrix: Mapping[str, Any] | None,
                simulator: Any) -> str | None:
    """Why a simulated case is not sent, or None. Pure."""
    found = problems(case)
    if found:
        code, key, message = found[0]
        return f"unsupported input: {message} (validate_cases.py: {code} at {key})"
    if conv is None:
        return convo.NO_BLOCK_REASON
    entry = (matrix or {}).get("multi_turn")
    if isinstance(entry, Mapping) and entry.get("enabled") is False:
        return ("conversation not run: capability_matrix.multi_turn is disabled ("
                f"{entry.get('blocked_by') or 'enabled: false'})")
    if simulator is None:
        return NO_SIMULATOR
    wanted = scenario_of(case).max_turns
    if wanted > max_turns:
        return (f"conversation not run: simulated_user.max_turns {wanted} is more than execution.max_turns "
                f"{max_turns} (make_plan.py --max-turns raises the cap)")
    return None


def one_simulated(worker: Any, case: Mapping[str, Any], n: int, ref: dict) -> dict:
    scenario = scenario_of(case)
    script = SimulatedScript(worker.simulator, scenario, case, dict(ref, repeat=n), through=_replay_hook(worker, case))
    res, turns = drive(worker, case, n, ref, script=script)
    outcome, why = script.outcome()
    for t, sim in zip(turns, script.sims):
        t["simulator"] = sim.doc()
    expect = case.get("expect") if isinstance(case.get("expect"), Mapping) else {}
    judge_doc = None
    infra_reason = None
    if outcome in oc.HARNESS_OUTCOMES:
        infra_reason = scrub(oc.infra_reason(outcome, why))
        layers = _not_scored(turns, f"not scored: the simulated conversation ended with {infra_reason}")
    elif outcome == oc.APP_STOPPED:
        layers = merge_turn_layers((t["n"], t["layers"]) for t in turns)
        why = scrub(res.stop_reason) or why
    elif not turns:
        # the stop token before the first message: nothing reached the app, so the end state the
        # case asserts was never scored (unscored, never a pass: a gating one closes the gate)
        why = STOPPED_BEFORE_FIRST
        layers = _not_scored(turns, f"not scored: {why}")
    else:
        layers, actual = _end_state(worker, case, turns, res)
        turns[-1]["actual"] = actual
        if worker.judge is not None and layers["judged"].get("reason") == JUDGE_PENDING:
            layers["judged"], judge_doc = _judge_transcript(worker, case, turns, ref)
    verdict = simulated_verdict(layers, outcome)
    sim_doc = {"outcome": outcome, "reason": scrub(why), "seed": scenario.seed,
               "identity": worker.simulator.identity, "scenario": scenario.doc(),
               "final": script.final.doc() if script.final is not None else None}
    deciding = turns[-1] if turns else None
    keys = ("request", "response", "answer_text", "actual", "actual_reason", "trajectory", "raw_spans",
            "trace_status", "trace", "infra_reason")
    result = {k: deciding[k] for k in keys} if deciding else _nothing_sent(worker, infra_reason)
    if deciding is not None and outcome == oc.GOAL_REACHED:
        result["trajectory"] = _merged(turns)[0]
    if infra_reason is not None:
        result["infra_reason"] = infra_reason
    result.update(n=n, outcomes=[o for _, o in res.endings], ending_turns=[t for t, _ in res.endings],
                  layers=layers, verdict=verdict, turns=turns, turns_sent=res.turns_sent, turns_total=res.turns_sent,
                  failed_turn=res.failed_turn, stop_reason=scrub(why), expect=dict(expect),
                  simulator=sim_doc, judge_doc=judge_doc)
    if verdict == UNSCORED:
        # stopped by the app with no failing turn (e.g. no server session id on turn 1): the end state
        # it asserts was never scored, so its reason is where it stopped, never "nothing asserted"
        stopped = (outcome == oc.APP_STOPPED and res.failed_turn is None and why) or why == STOPPED_BEFORE_FIRST
        result["unscored_reason"] = scrub(why) if stopped else unscored_reason(layers, verdict)
    return result


def simulated_record(record: dict[str, Any], chosen: dict, folded: str) -> None:
    """verdict.json's simulated-user keys, from the repeat whose verdict the case took (in place)."""
    sim = chosen["simulator"]
    record.update(simulated=True, simulator={k: sim[k] for k in ("outcome", "reason", "seed", "identity")})
    if folded == UNSCORED and chosen.get("unscored_reason"):
        record["unscored_reason"] = chosen["unscored_reason"]


def _replay_hook(worker: Any, case: Mapping[str, Any]) -> Any:
    """The record/replay cache's hook for this case's simulated turns, or None without --record/--replay.
    Written against the replay session's documented API (`through(kind, request, produce, case_id, what,
    cacheable)` -> (value, hit)); an outage or a cut-off reply is never recorded (simulate.runtime.cacheable)."""
    replay = getattr(worker, "replay", None)
    if replay is None:
        return None

    def through(request: dict, produce: Any) -> dict:
        value, _hit = replay.through("simulator", request, produce, case_id=case["id"], what=f"turn {request['turn']}",
                                     cacheable=cacheable)
        return value
    return through


def _nothing_sent(worker: Any, reason: str | None) -> dict:
    """The case-level files of a conversation the simulator ended before its first message."""
    from ..traces.collect import not_sent_block
    note = {"not_sent": reason or "no user turn was written"}
    return {"request": note, "response": dict(note, latency_ms=None), "answer_text": None, "actual": None,
            "actual_reason": "nothing was sent", "trajectory": None, "raw_spans": None,
            "trace_status": NOT_COLLECTED, "trace": not_sent_block(worker.trace, "nothing was sent: no trace was "
                                                                  "looked for"), "infra_reason": reason}


def _not_scored(turns: list[dict], reason: str) -> dict[str, Any]:
    merged = merge_turn_layers((t["n"], t["layers"]) for t in turns) if turns else {}
    return {name: (merged[name] if name in TURN_LAYERS and name in merged else {"verdict": NA, "reason": reason})
            for name in LAYER_ORDER}


def _merged(turns: list[dict]) -> tuple[dict | None, str, str | None]:
    """(the conversation's trajectory: every turn's calls in order, its trace status, why not complete)."""
    for t in turns:
        if t["trace_status"] != COMPLETE or t["trajectory"] is None:
            return None, t["trace_status"], f"turn {t['n']}: {(t.get('trace') or {}).get('reason') or t['trace_status']}"
    trajs = [t["trajectory"] for t in turns]
    merged = dict(trajs[-1])
    for key in ("tool_calls", "llm_calls", "handoffs", "agents"):
        if all(isinstance(tr.get(key), list) for tr in trajs):
            merged[key] = [item for tr in trajs for item in tr[key]]
    blind = next((tr.get("tool_log") for tr in trajs if (tr.get("tool_log") or {}).get("seen") is False), None)
    if blind is not None:
        merged["tool_log"] = blind
    merged["trace_id"] = [tr.get("trace_id") for tr in trajs]
    return merged, COMPLETE, None


def _end_state(worker: Any, case: Mapping[str, Any], turns: list[dict], res: Any) -> tuple[dict, Any]:
    """The case's layers: http and loops from its turns, every other layer on the whole conversation."""
    trajectory, status, reason = _merged(turns)
    answers = [t["answer_text"] for t in turns if t["answer_text"] is not None]
    last = res.turns[-1].outcome
    ev = RepeatEvidence(status=last.status, response_json=last.body_json,
                        answer="\n".join(answers) if answers else None,
                        answer_note=None if answers else "no turn had an answer at the adapter's <answer> path",
                        trace_status=status, trajectory=trajectory, trace_reason=reason)
    expect = {k: v for k, v in (case.get("expect") or {}).items() if k not in ("http", "exit_code")}
    end, actual = score_repeat(dict(case, expect=expect), worker.score_ctx, ev)
    per_turn = merge_turn_layers((t["n"], t["layers"]) for t in turns)
    for name in TURN_LAYERS:
        end[name] = per_turn[name]
    return end, actual


def _judge_transcript(worker: Any, case: Mapping[str, Any], turns: list[dict], ref: dict) -> tuple[dict, dict | None]:
    """A rubric on a simulated case judges the whole transcript (the judge's conversation material)."""
    from ..judge.turns import transcript_material
    rows = []
    for t in turns:
        calls = (t.get("trajectory") or {}).get("tool_calls") or []
        tools = [{"name": c.get("name"), "result": c.get("result")} for c in calls] or None
        rows.append((scrub(t["spec"].user) or "", scrub(t["answer_text"]) or "", tools))
    gold = ((case.get("expect") or {}).get("result") or {})
    material = transcript_material(rows, scope="transcript",
                                   gold=gold.get("scalar", gold.get("rows")) if isinstance(gold, Mapping) else None)
    from ..judge.rubrics import case_pins
    got = worker.judge.judge_case(case, material, case_pins(case), ref)
    return got.layer, got.doc

