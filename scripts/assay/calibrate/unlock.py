"""How many more labels, of which class, would unlock calibration (score_agreement.py `more_labels`).

The counting floors (pairs, per class) say how many more labels are needed whatever they say. The
rate floors (TPR, TNR, kappa) depend on what people and the judge will say, so the figure assumes
the best case: every new label agrees with the judge (a new human fail the judge also failed, a new
human pass the judge also passed). Each new disagreement needs more. With that assumption:

- `fail`: new labels on items people fail (tp grows) -- at least the per-class shortfall, and
  enough for TPR = (tp + x) / (tp + fn + x) to reach its floor;
- `pass`: new labels on items people pass (tn grows) -- the same for TNR;
- then, while kappa is below its floor, one more of the class that raises it most;
- `either`: what the pair floor still needs after those, of either class.

`reachable` is false when no number of agreeing labels can reach a floor (a floor of 1.0 with a
disagreement already on record): then the rubric or the judge must change, and a new version be
labelled.
"""

from __future__ import annotations

import math
from typing import Any

from .intervals import cohen_kappa

MAX_MORE = 100_000   # past this the answer is "not by labelling" in practice


def _rate_need(agree: int, total: int, floor: float) -> int | None:
    """Fewest x with (agree + x) / (total + x) >= floor; None when no x reaches it."""
    if total and agree / total >= floor:
        return 0
    if floor >= 1.0:
        return None if total > agree else 0
    return max(0, math.ceil((floor * total - agree) / (1.0 - floor) - 1e-9))


def _kappa_ok(tp: int, fn: int, fp: int, tn: int, floor: float) -> bool:
    k = cohen_kappa(tp, fn, fp, tn)
    return k is not None and k >= floor


def labels_needed(tp: int, fn: int, fp: int, tn: int, floors: Any) -> dict[str, Any]:
    """{total, fail, pass, either, reachable, assumes}: the more labels to unlock, by human class.
    `floors` is an assay.calibrate.agreement.Floors."""
    human_fail, human_pass = tp + fn, fp + tn
    out: dict[str, Any] = {"total": 0, "fail": 0, "pass": 0, "either": 0, "reachable": True,
                           "assumes": "every new label agrees with the judge; each disagreement needs more"}
    need_f = _rate_need(tp, human_fail, floors.min_tpr)
    need_p = _rate_need(tn, human_pass, floors.min_tnr)
    if need_f is None or need_p is None:
        out["reachable"] = False
        return out
    x_f = max(need_f, floors.min_per_class - human_fail, 0)
    x_p = max(need_p, floors.min_per_class - human_pass, 0)
    while not _kappa_ok(tp + x_f, fn, fp, tn + x_p, floors.min_kappa):
        if x_f + x_p > MAX_MORE:
            out["reachable"] = False
            return out
        more_f = cohen_kappa(tp + x_f + 1, fn, fp, tn + x_p)
        more_p = cohen_kappa(tp + x_f, fn, fp, tn + x_p + 1)
        if (more_f if more_f is not None else -2.0) >= (more_p if more_p is not None else -2.0):
            x_f += 1
        else:
            x_p += 1
    either = max(0, floors.min_pairs - (tp + fn + fp + tn) - x_f - x_p)
    out.update({"fail": x_f, "pass": x_p, "either": either, "total": x_f + x_p + either})
    return out


def more_labels_sentence(more: dict[str, Any]) -> str | None:
    """`label 12 more: at least 4 that people fail and 8 that they pass (if the judge agrees with each)`."""
    if not more.get("reachable"):
        return ("no number of new labels can reach the floors (a floor of 1.0 and a disagreement on record): "
                "fix the rubric or the judge, bump the rubric version and label it")
    if not more.get("total"):
        return None
    parts = []
    if more["fail"]:
        parts.append(f"{more['fail']} that people fail")
    if more["pass"]:
        parts.append(f"{more['pass']} that people pass")
    if more["either"]:
        parts.append(f"{more['either']} of either class")
    return (f"label {more['total']} more: at least {' and '.join(parts)} "
            "(if the judge agrees with each; every disagreement needs more)")
