"""The calibration floors: what a rubric's 2x2 of judge and human labels (fail = positive) must meet
for the judge's verdicts on it to gate, pooled and node by node. The one rule: score_agreement.py
measures with it, and a run re-checks a sidecar's own counts with it (judge.binding.self_contradiction)."""

from __future__ import annotations

from typing import Any, Mapping

from ..stats.kappa import cohen_kappa

# The floors score_agreement.py applies unless told otherwise (assay.calibrate.agreement.Floors).
DEFAULT_FLOORS: dict[str, float] = {"min_pairs": 100, "min_per_class": 10, "min_tpr": 0.90, "min_tnr": 0.90,
                                    "min_kappa": 0.60}


def unmet_floors(tp: int, fn: int, fp: int, tn: int, floors: Mapping[str, Any]) -> list[str]:
    """The calibration floors a 2x2 (fail = positive) does not meet, one sentence each (the sidecar's
    `blocking`); [] when calibrated. The one rule: score_agreement.py measures with it, and a run
    re-checks the sidecar's own counts with it (`self_contradiction`)."""
    pairs, human_fail, human_pass = tp + fn + fp + tn, tp + fn, fp + tn
    tpr = tp / human_fail if human_fail else None
    tnr = tn / human_pass if human_pass else None
    kappa = cohen_kappa(tp, fn, fp, tn)
    out: list[str] = []
    if pairs < floors["min_pairs"]:
        out.append(f"{pairs} labelled pairs < {floors['min_pairs']}")
    if human_fail < floors["min_per_class"]:
        out.append(f"{human_fail} human fail labels < {floors['min_per_class']}")
    if human_pass < floors["min_per_class"]:
        out.append(f"{human_pass} human pass labels < {floors['min_per_class']}")
    if tpr is None or tpr < floors["min_tpr"]:
        out.append("TPR undefined (no human fail labels)" if tpr is None else f"TPR {tpr:.3f} < {floors['min_tpr']:.2f}")
    if tnr is None or tnr < floors["min_tnr"]:
        out.append("TNR undefined (no human pass labels)" if tnr is None else f"TNR {tnr:.3f} < {floors['min_tnr']:.2f}")
    if kappa is None or kappa < floors["min_kappa"]:
        out.append("kappa undefined (chance agreement is 1: one label only)" if kappa is None
                   else f"kappa {kappa:.3f} < {floors['min_kappa']:.2f}")
    return out


def unmet_node_floors(by_node: Any, floors: Mapping[str, Any]) -> list[str]:
    """The TPR and TNR floors a rubric's node (criterion) misses on its own labels, one sentence each:
    a rubric of several nodes is calibrated only when the judge catches each node's human fails (and
    passes) as the floors ask, not only all nodes pooled (90 caught on one node and 0 of 10 on the
    other pooled to TPR 0.90 while the judge was blind to the second: the lost fact only that node
    sees). A node is held to a floor only where its own labels of that class reach `min_per_class`
    (fewer are too few to say); one node alone is the rubric's 2x2, checked by unmet_floors."""
    if not isinstance(by_node, Mapping) or len(by_node) < 2:
        return []
    out: list[str] = []
    for node in sorted(by_node, key=str):
        cells = by_node[node] if isinstance(by_node[node], Mapping) else {}
        tp, fn, fp, tn = (_cell(cells.get(k)) for k in ("tp", "fn", "fp", "tn"))
        if tp + fn >= max(1, floors["min_per_class"]) and tp / (tp + fn) < floors["min_tpr"]:
            out.append(f"node {node}: TPR {tp / (tp + fn):.3f} < {floors['min_tpr']:.2f} "
                       f"(the judge caught {tp} of its {tp + fn} human fail labels)")
        if fp + tn >= max(1, floors["min_per_class"]) and tn / (fp + tn) < floors["min_tnr"]:
            out.append(f"node {node}: TNR {tn / (fp + tn):.3f} < {floors['min_tnr']:.2f} "
                       f"(the judge passed {tn} of its {fp + tn} human pass labels)")
    return out


def _cell(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
