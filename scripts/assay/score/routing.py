"""The `routing` layer (per case) and the run-level `routing_report.json`.

Per case (`score_case_routing`): the observed route comes only from a declared source
(the engine passes it with `observed_from`: `response`, `trace` or `status`); routing is
never inferred. Pass when the observed route is `expect.route` or one of
`expect.route_acceptable`, or when `expect.clarify_ok` is true and the app asked a
clarifying question (`clarified` is true). No observed route (and no clarify pass) is
`unscored`, never `fail`.

Run level (`routing_report`), over rows `{case_id, expected, observed, acceptable,
clarify_ok, clarified, observed_from}`:
- `accuracy` = passes / n, counting accepted alternates as passes.
- A pass whose observed route differs from `expected` (an acceptable alternate, or a
  clarification) is listed in `accepted_alternates` and left out of the confusion
  matrix and of precision / recall / F1.
- A null observed route is the label `__no_route__` (a prediction that is never a
  target; it is not listed in `spurious_labels`, its count is `no_route_cases`).
- `per_target` covers every label with support (expected at least once in the matrix);
  `precision` is null when nothing was predicted as that label. `macro_f1` averages F1
  over those labels; `micro_f1` equals the confusion-matrix accuracy; a `warning` is
  added when they differ by more than 0.1. Labels only ever predicted are
  `spurious_labels`.
- With `oos_route` set, that route is renamed `__oos__` everywhere and an `oos` block
  `{route, precision, recall, support, oos_cases, excluded_accepted_alternates, note}`
  is added; its values are null when no out-of-scope case reached the matrix. If no row
  mentions the route at all, the block is all-null with a note naming the labels seen
  (the report is still written; nothing raises).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from assay.score.base import FAIL, PASS, UNSCORED, ScorerInputError, nfc, short

OOS_LABEL = "__oos__"
OOS_HANDLING_ROUTE = "route:"


def oos_route_of_handling(handling: Any) -> str | None:
    """The route profile.yaml `oos_handling: route:<name>` names (the plan's scoring.oos_route), or None."""
    if isinstance(handling, str) and handling.startswith(OOS_HANDLING_ROUTE):
        return handling[len(OOS_HANDLING_ROUTE):] or None
    return None
NO_ROUTE_LABEL = "__no_route__"
NO_EXPECTED_LABEL = "__no_expected_route__"
MACRO_MICRO_WARNING_GAP = 0.1
NO_ROUTE_REASON = ("no declared route source produced a route (route_from_response, the agent that "
                   "handled the request in the trace, route_from_status); routing is never inferred")


def _route_spec(expect: Any) -> tuple[str | None, list[str], bool]:
    if not isinstance(expect, dict):
        raise ScorerInputError(f"expect must be an object, got {type(expect).__name__}")
    expected = expect.get("route")
    if expected is not None and not isinstance(expected, str):
        raise ScorerInputError(f"expect.route must be a string, got {short(expected, 60)}")
    acceptable = expect.get("route_acceptable")
    if acceptable is None:
        acceptable = []
    if not isinstance(acceptable, list) or not all(isinstance(r, str) for r in acceptable):
        raise ScorerInputError(f"expect.route_acceptable must be a list of strings, got {short(acceptable, 60)}")
    clarify_ok = expect.get("clarify_ok", False)
    if clarify_ok is None:
        clarify_ok = False
    if not isinstance(clarify_ok, bool):
        raise ScorerInputError(f"expect.clarify_ok must be true or false, got {short(clarify_ok, 60)}")
    if expected is None and not acceptable:
        raise ScorerInputError("expect has neither route nor route_acceptable: nothing to score routing against")
    return expected, acceptable, clarify_ok


def _passes(expected: str | None, acceptable: list[str], clarify_ok: bool,
            observed: str | None, clarified: bool | None) -> tuple[bool, str | None]:
    """(passed, how): how is 'expected', 'route_acceptable', 'clarify_ok' or None."""
    if observed is not None and expected is not None and nfc(observed) == nfc(expected):
        return True, "expected"
    if observed is not None and nfc(observed) in {nfc(r) for r in acceptable if r is not None}:
        return True, "route_acceptable"
    if clarify_ok and clarified is True:
        return True, "clarify_ok"
    return False, None


def score_case_routing(expect: dict, observed: str | None, observed_from: str | None,
                       clarified: bool | None) -> dict:
    """The routing layer dict for one case (see the module docstring)."""
    expected, acceptable, clarify_ok = _route_spec(expect)
    if observed is not None and not isinstance(observed, str):
        observed = str(observed)  # a numeric route label from a JSON body is still a label
    out: dict[str, Any] = {
        "expected": expected, "observed": observed, "observed_from": observed_from,
        "acceptable": ([expected] if expected is not None else []) + [r for r in acceptable if r != expected],
        "clarify_ok": clarify_ok, "clarified": clarified,
    }
    passed, how = _passes(expected, acceptable, clarify_ok, observed, clarified)
    if passed:
        out["verdict"] = PASS
        out["passed_by"] = how
    elif observed is None:
        out["verdict"] = UNSCORED
        out["reason"] = NO_ROUTE_REASON + (
            "; clarify_ok is set but no clarification was observed" if clarify_ok and clarified is None else "")
    else:
        out["verdict"] = FAIL
        out["reason"] = (f"observed route {observed!r} is not {expected!r}"
                         + (f" or an acceptable alternate {acceptable}" if acceptable else ""))
    return out


def _label(route: Any, oos_route: str | None) -> str | None:
    if route is None:
        return None
    route = nfc(str(route))
    return OOS_LABEL if oos_route is not None and route == oos_route else route


def _safe_div(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


def _r4(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def routing_report(rows: list[dict], oos_route: str | None) -> dict:
    """routing_report.json content over the routing rows of a run (see module docstring)."""
    oos_route = nfc(str(oos_route)) if oos_route else None  # "" means none, as in make_plan
    matrix: dict[str, Counter] = defaultdict(Counter)
    alternates: list[dict[str, Any]] = []
    passes = 0
    no_route = 0
    mentioned_oos = False
    oos_cases = 0
    oos_alternates = 0
    observed_from_counts: Counter = Counter()
    seen_labels: set[str] = set()
    for row in rows:
        raw_acceptable = row.get("acceptable") or []
        if oos_route is not None and OOS_LABEL in (
                [_label(r, oos_route) for r in [row.get("expected"), row.get("observed"), *raw_acceptable]]):
            mentioned_oos = True
        expected = _label(row.get("expected"), oos_route)
        observed = _label(row.get("observed"), oos_route)
        acceptable = [_label(r, oos_route) for r in raw_acceptable]
        for lab in [row.get("expected"), row.get("observed"), *raw_acceptable]:
            if lab is not None:
                seen_labels.add(str(lab))
        observed_from_counts[row.get("observed_from") or "none"] += 1
        passed, how = _passes(expected, acceptable, bool(row.get("clarify_ok")), observed, row.get("clarified"))
        target = expected if expected is not None else NO_EXPECTED_LABEL
        if target == OOS_LABEL:
            oos_cases += 1
        passes += passed
        if observed is None:
            no_route += 1
        if passed and how != "expected":
            alternates.append({"case_id": row.get("case_id"), "expected": expected,
                               "observed": observed, "via": how})
            if target == OOS_LABEL:
                oos_alternates += 1
            continue
        matrix[target][observed if observed is not None else NO_ROUTE_LABEL] += 1

    support = {label: sum(cols.values()) for label, cols in matrix.items()}
    predicted: Counter = Counter()
    for cols in matrix.values():
        predicted.update(cols)
    total = sum(support.values())
    correct = sum(matrix[label][label] for label in matrix)

    per_target: dict[str, dict[str, Any]] = {}
    f1s: list[float] = []
    for label in sorted(support):
        tp = matrix[label][label]
        precision = _safe_div(tp, predicted[label])
        recall = _safe_div(tp, support[label])
        p, r = precision or 0.0, recall or 0.0
        f1 = 0.0 if p + r == 0 else 2 * p * r / (p + r)
        f1s.append(f1)
        per_target[label] = {"precision": _r4(precision), "recall": _r4(recall), "f1": _r4(f1),
                             "support": support[label]}
    macro = sum(f1s) / len(f1s) if f1s else None
    micro = _safe_div(correct, total)
    spurious = sorted(label for label in predicted if label not in support and label != NO_ROUTE_LABEL)

    report: dict[str, Any] = {
        "layer": "routing",
        "n": len(rows),
        "passes": passes,
        "accuracy": _r4(_safe_div(passes, len(rows))),
        "macro_f1": _r4(macro),
        "micro_f1": _r4(micro),
        "per_target": per_target,
        "spurious_labels": spurious,
        "no_route_cases": no_route,
        "confusion_matrix": {e: dict(sorted(cols.items())) for e, cols in sorted(matrix.items())},
        "accepted_alternates": sorted(alternates, key=lambda a: str(a["case_id"])),
        "observed_from_counts": dict(sorted(observed_from_counts.items())),
    }
    if macro is not None and micro is not None and abs(macro - micro) > MACRO_MICRO_WARNING_GAP:
        report["warning"] = (f"macro_f1 {macro:.3f} and micro_f1 {micro:.3f} differ by more than "
                             f"{MACRO_MICRO_WARNING_GAP}: some routes do much worse than others; "
                             "read per_target before quoting one number")
    if oos_route is not None:
        report["oos"] = _oos_block(oos_route, mentioned_oos, per_target, predicted, oos_cases,
                                   oos_alternates, sorted(seen_labels))
    return report


def _oos_block(oos_route: str, mentioned: bool, per_target: dict, predicted: Counter,
               oos_cases: int, oos_alternates: int, seen: list[str]) -> dict[str, Any]:
    block: dict[str, Any] = {"route": oos_route, "precision": None, "recall": None, "support": 0,
                             "oos_cases": oos_cases, "excluded_accepted_alternates": oos_alternates,
                             "note": None}
    if not mentioned:
        block["note"] = (f"the out-of-scope route {oos_route!r} appears in no row's expected, acceptable or "
                         f"observed route; labels seen: {seen}. Check scoring.oos_route / profile oos_handling.")
        return block
    target = per_target.get(OOS_LABEL)
    if target is None:
        # Predicted as OOS but never expected: precision is 0 by definition when predicted at all.
        block["note"] = (f"no out-of-scope case reached the confusion matrix ({oos_cases} expected "
                         f"{oos_route!r}, {oos_alternates} passed as accepted alternates)")
        if predicted[OOS_LABEL]:
            block["note"] += f"; {predicted[OOS_LABEL]} in-scope case(s) were routed out of scope"
        return block
    block.update(precision=target["precision"], recall=target["recall"], support=target["support"])
    block["note"] = f"route {oos_route!r} is scored as the internal label {OOS_LABEL}"
    return block
