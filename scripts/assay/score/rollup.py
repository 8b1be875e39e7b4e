"""The case rollup and the repeat fold (contracts §5.5, §5.6): defined once, imported everywhere.

Pure functions over layer verdict strings. The runner, `--verify` and the report
tools all call these; nothing else spells the rules out.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..core.vocab import (ERROR, FAIL, INFRA_ERROR, INFRA_INCOMPLETE, PASS, SKIPPED,
                          UNSCORED)
from .hollow import HOLLOW_CASE_REASON, LIVENESS_LAYERS as _LIVENESS_LAYERS, is_hollow_case


def _verdict_of(value: object) -> str:
    """A layer entry is either a layer dict `{"verdict": ...}` or already a verdict string."""
    if isinstance(value, str):  # (the derived rows hold strings: skip the slow ABC check below)
        return value
    if isinstance(value, dict):  # (a plain dict check: Mapping's ABC check is slow on hot paths)
        return str(value.get("verdict"))
    if isinstance(value, Mapping):
        return str(value.get("verdict"))
    return str(value)


def case_verdict(layers: Mapping[str, object], *, skipped: bool) -> str:
    """Roll one repeat's layers up to a case verdict; first match wins.

    infra_error > infra_incomplete > skipped > (a scorer `error` -> unscored) > fail >
    a pass on a layer other than http/loops -> pass > unscored. A case that asserts
    nothing beyond liveness (http/loops) is never pass: see assay.score.hollow.
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
    for name, value in layers.items():
        v = _verdict_of(value)
        if v in (UNSCORED, ERROR):
            why = value.get("reason") if isinstance(value, Mapping) else None
            return f"{name}: {why or v}"
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
    """Names of layers whose verdict is fail, in the order given (LAYER_ORDER on a record)."""
    return [name for name, v in layers.items() if _verdict_of(v) == FAIL]
