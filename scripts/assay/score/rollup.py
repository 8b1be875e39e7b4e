"""The case rollup and the repeat fold (contracts §5.5, §5.6): defined once, imported everywhere.

Pure functions over layer verdict strings. The runner, `--verify` and the report
tools all call these; nothing else spells the rules out.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..core.vocab import (ERROR, FAIL, INFRA_ERROR, INFRA_INCOMPLETE, NA, PASS, SIM_GOAL_REACHED,
                          SIM_HARNESS_OUTCOMES, SKIPPED, UNSCORABLE, UNSCORED)
from .hollow import (HOLLOW_CASE_REASON, LIVENESS_LAYERS as _LIVENESS_LAYERS, deliberately_unscored,
                     is_hollow_case, never_ran, verdict_of as _verdict_of)




def case_verdict(layers: Mapping[str, object], *, skipped: bool) -> str:
    """Roll one repeat's layers up to a case verdict; first match wins.

    infra_error > infra_incomplete > skipped > (a scorer `error` -> unscored) > fail >
    (a layer beyond http/loops that the case asserts and that was not scored -> unscored) >
    a pass on a layer other than http/loops -> pass > unscored. A case that asserts nothing beyond liveness
    (http/loops) is never pass, and neither is one with a check that never ran (an
    `unscored` layer other than a deliberate one: see assay.score.hollow).
    """
    verdicts = {name: _verdict_of(v) for name, v in layers.items()}
    values = set(verdicts.values())
    if INFRA_ERROR in values:
        return INFRA_ERROR
    if INFRA_INCOMPLETE in values:
        return INFRA_INCOMPLETE
    if skipped:
        return SKIPPED
    if ERROR in values:
        # A scorer rejected its input: the case's numbers are not quotable.
        return UNSCORED
    if FAIL in values:
        return FAIL
    if UNSCORED in values and any(never_ran(name, layers[name]) for name, v in verdicts.items() if v == UNSCORED):
        return UNSCORED
    if any(v == PASS for name, v in verdicts.items() if name not in _LIVENESS_LAYERS):
        return PASS
    return UNSCORED


def unscored_reason(layers: Mapping[str, object], verdict: str) -> str | None:
    """Why a case rolled up `unscored` (None for any other verdict): the hollow-case reason, else
    the first layer (in the order given) that was asserted but not scored, with its reason."""
    if verdict != UNSCORED:
        return None
    if is_hollow_case(layers):
        return HOLLOW_CASE_REASON
    candidates = [(name, value) for name, value in layers.items() if _verdict_of(value) in (UNSCORED, ERROR)]
    # a check that never ran speaks before a deliberate unscored (rules, state, an unjudged rubric)
    candidates.sort(key=lambda item: item[0] in _LIVENESS_LAYERS or deliberately_unscored(*item))
    for name, value in candidates:
        why = value.get("reason") if isinstance(value, Mapping) else None
        return f"{name}: {why or _verdict_of(value)}"
    return "no layer was scored"


def fold_repeats(verdicts: Iterable[str]) -> str:
    """pass^k fold of k repeat verdicts; order never changes the result.

    any fail -> fail; all pass -> pass; any infra_error -> infra_error; any
    infra_incomplete -> infra_incomplete; all skipped -> skipped; else unscored.
    """
    vs = list(verdicts)
    if not vs:
        return UNSCORED
    if FAIL in vs:
        return FAIL
    if all(v == PASS for v in vs):
        return PASS
    if INFRA_ERROR in vs:
        return INFRA_ERROR
    if INFRA_INCOMPLETE in vs:
        return INFRA_INCOMPLETE
    if all(v == SKIPPED for v in vs):
        return SKIPPED
    return UNSCORED


def failed_layers(layers: Mapping[str, object]) -> list[str]:
    """Names of layers whose verdict is fail, in the order given (LAYER_ORDER on a record). A verdict
    string (a derived row's layers) is its own verdict: read inline, not through verdict_of."""
    return [name for name, v in layers.items() if (v if type(v) is str else _verdict_of(v)) == FAIL]


# Per layer, which turn's verdict speaks for a conversation (first in this order wins). A check
# that never ran (a non-deliberate unscored) ranks above pass and a deliberate unscored below it,
# so that case_verdict(merged) == the roll-up over every turn's layers.
_TURN_MERGE_ORDER = (INFRA_ERROR, INFRA_INCOMPLETE, ERROR, FAIL, PASS, UNSCORED, UNSCORABLE, NA)


def merge_turn_layers(turns: Iterable[tuple[int, Mapping[str, object]]]) -> dict[str, dict]:
    """A conversation's case-level layers from its sent turns' layers [(turn, layers), ...].

    Each layer takes the verdict of the first turn holding the highest-ranked verdict
    (infra_error > infra_incomplete > error > fail > a non-deliberate unscored > pass > unscored >
    unscorable > n/a),
    with that turn's detail and `turn` added, so a failing turn names itself; the first turn's
    `answer_not_text` / `answer_echo` record is kept beside it (_CARRIED).
    case_verdict over the result equals the roll-up over every sent turn's layers.
    """
    rank = {v: i for i, v in enumerate(_TURN_MERGE_ORDER)}
    best: dict[str, tuple[int, int, object]] = {}
    carried: dict[str, dict[str, object]] = {}
    for n, layers in turns:
        for name, entry in layers.items():
            for key in _CARRIED:
                if isinstance(entry, Mapping) and isinstance(entry.get(key), Mapping):
                    carried.setdefault(name, {}).setdefault(key, entry[key])
            r = rank.get(_verdict_of(entry), len(rank))
            if never_ran(name, entry):
                r = rank[PASS] - 0.5  # a check that never ran outranks a pass in another turn
            if name not in best or r < best[name][0]:
                best[name] = (r, n, entry)
    out: dict[str, dict] = {}
    for name, (_, n, entry) in best.items():
        detail = dict(entry) if isinstance(entry, Mapping) else {"verdict": _verdict_of(entry)}
        out[name] = dict(detail, turn=n)
        for key, value in carried.get(name, {}).items():
            out[name].setdefault(key, value)
    return out


# A turn's record of a text check not scored (score.answer_leaf: an answer that is not text, or the
# user's turn read back) stays on the case-level layer when another turn's entry was chosen, so the
# run counts the case (summary.answer_not_text / answer_echo) whichever turn decided it.
_CARRIED = ("answer_not_text", "answer_echo")


# A simulated conversation's layers that come from its turns (each turn's liveness); the others are
# scored once, on the end state of the whole conversation.
SIMULATED_TURN_LAYERS: tuple[str, ...] = ("http", "loops")


def simulated_verdict(layers: Mapping[str, object], outcome: str | None) -> str:
    """A simulated-user conversation's verdict: infra_error when the simulator ended it (an outage,
    an unparseable reply, a user out of character, max_turns without the stop condition: never a
    fail of the app); else the roll-up of its layers, except that one the app's turn stopped with
    no failing layer is never a pass (its goal was never reached)."""
    if outcome in SIM_HARNESS_OUTCOMES:
        return INFRA_ERROR
    verdict = case_verdict(layers, skipped=False)
    if verdict == PASS and outcome != SIM_GOAL_REACHED:
        return UNSCORED
    return verdict


def conversation_verdict(layers: Mapping[str, object], *, turns_sent: int, turns_total: int,
                         failed_turn: int | None) -> str:
    """A conversation's verdict: the roll-up of its merged layers, except that a conversation
    which stopped early with no failing turn (e.g. no server session id after turn 1) is
    never a pass: its later turns were never checked."""
    verdict = case_verdict(layers, skipped=False)
    if verdict == PASS and turns_sent < turns_total and failed_turn is None:
        return UNSCORED
    return verdict
