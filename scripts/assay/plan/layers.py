"""`--layer X`: keep one capability, switch every other matrix key off (contracts §8).

A layer switched off reports `unscorable` with blocked_by "--layer X", never pass.
X is a matrix key or a report-row name (answer, rules and judged mean answer_quality);
http and loops have no matrix key, so they cannot be isolated.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import AssayError
from ..core.vocab import MATRIX_KEY_OF_LAYER, MATRIX_KEYS
from ..lint.graded import enabled_scored_layers, scored_layers


def matrix_key_for(layer: str) -> str:
    if layer in MATRIX_KEY_OF_LAYER and MATRIX_KEY_OF_LAYER[layer] is None:
        raise AssayError(f"--layer {layer}: {layer} has no capability-matrix key (nothing switches it off), so "
                         "it cannot be isolated; it runs on every case anyway. Pick one of: "
                         + ", ".join(MATRIX_KEYS), 2)
    key = MATRIX_KEY_OF_LAYER.get(layer, layer)
    if key not in MATRIX_KEYS:
        raise AssayError(f"--layer {layer!r} is not a layer; valid: {', '.join(MATRIX_KEYS)} (or the report rows "
                         "answer, rules, judged, which mean answer_quality)", 2)
    return key


def isolate_layer(matrix: dict[str, Any], layer: str) -> dict[str, Any]:
    """A new matrix where every matrix key but X's is {enabled: false, blocked_by: "--layer <layer>"}."""
    key = matrix_key_for(layer)
    entry = matrix.get(key)
    if isinstance(entry, dict) and entry.get("enabled") is False:
        raise AssayError(f"--layer {layer}: capability_matrix.{key} is disabled in profile.yaml "
                         f"(blocked_by: {entry.get('blocked_by')!r}); a run of only that layer would measure "
                         "nothing", 2)
    out = {k: dict(v) for k, v in matrix.items()}
    reason = f"--layer {layer}"
    for other in MATRIX_KEYS:
        if other != key:
            out[other] = {**out.get(other, {}), "enabled": False, "blocked_by": reason}
    return out


def canary_notes(cases: list[dict[str, Any]], matrix: dict[str, Any], layer: str) -> list[str]:
    """One note per selected canary that asserts no layer left enabled (it will read unscored)."""
    notes = []
    for case in cases:
        split = case.get("split") or []
        if "canary" in split and not enabled_scored_layers(case, matrix):
            asserted = ", ".join(scored_layers(case)) or "nothing scored"
            notes.append(f"canary {case.get('id')} asserts only layers --layer {layer} disables ({asserted}): it "
                         "will be unscored, and gate.py will count it NOT VERIFIED (not a failure)")
    return notes
