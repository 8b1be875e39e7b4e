"""Cohen's kappa on a 2x2 of two raters (pure): the one definition the calibration uses, both when
score_agreement.py measures a judge (assay.calibrate) and when a run checks the sidecar's own
numbers against its floors (assay.judge.floors.unmet_floors)."""

from __future__ import annotations


def cohen_kappa(tp: int, fn: int, fp: int, tn: int) -> float | None:
    """Cohen's kappa on the 2x2; None when undefined (no pairs, or chance agreement 1)."""
    n = tp + fn + fp + tn
    if n == 0:
        return None
    po = (tp + tn) / n
    pe = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1.0 - pe)
