"""Suite-level rules, and the checks that need the adapter or the dataset manifest.

Each function reports through `report(code, message, case_id=None, source=None)`.
"""

from __future__ import annotations

import difflib
from collections import Counter
from typing import Any, Callable

from ..score.tool_names import declared_tools, expect_tool_names as _expect_tool_names
from ..score.tool_rule import rule_tool
from ..core.vocab import (ADVERSARIAL_CATEGORIES, MATRIX_KEY_OF_LAYER, MATRIX_KEYS, QUERYABLE_TRACE_SOURCES, SPLITS,
                          TRACE_CONVENTIONS)

Report = Callable[..., None]

MANIFEST_SOURCE = "datasets/dataset.yaml"
# The expect keys whose tool names are deny-lists: a wrong name there can never fail.
FORBIDDING_KEYS = (".tools.forbidden", ".authz.forbidden_tools")


def _splits(case: dict[str, Any]) -> list[str]:
    s = case.get("split")
    return [x for x in s if isinstance(x, str)] if isinstance(s, list) else []


def _gates(case: dict[str, Any]) -> bool:
    return case.get("gating", True) is not False and "canary" not in _splits(case)


def check_suite(cases: list[dict[str, Any]], source_of: Callable[[int], str | None], report: Report) -> None:
    seen: dict[str, int] = {}
    for i, case in enumerate(cases):
        cid = case.get("id")
        if isinstance(cid, str):
            if cid in seen:
                first = source_of(seen[cid])
                report("duplicate_id", f"id {cid!r} is used by two cases"
                       + (f" ({first} and {source_of(i)})" if first else "") + "; ids are unique and permanent",
                       case_id=cid, source=source_of(i))
            else:
                seen[cid] = i
    n = len(cases)
    types = Counter(c.get("test_type") for c in cases)
    if n > 10 and not (types.get("INV") or types.get("DIR")):
        report("no_metamorphic_coverage", f"{n} cases and none is INV or DIR; add invariance/directional "
               "variants of a few cases (metamorphic_parent)")
    if n >= 5 and all(c.get("template_id") is None for c in cases):
        report("all_one_off", f"all {n} cases have template_id: null; templates give consistency scoring "
               "and clustered error bars")
    if n >= 5:
        cats = Counter(c.get("category") for c in cases if isinstance(c.get("category"), str))
        for cat, count in sorted(cats.items()):
            if count / n > 0.4:
                report("category_skew", f"{count} of {n} cases ({count / n:.0%}) are {cat!r}, over 40%; "
                       "the pass rate mostly measures one kind of input")
    if cases and not any(_gates(c) for c in cases):
        report("nothing_gates", "no case gates (every case is gating: false or a canary): no failure can close "
               "the gate, so gate.py closes on such a run instead (no gating case); let the reviewed cases gate")
    for i, case in enumerate(cases):
        cid, src = case.get("id"), source_of(i)
        review = case.get("review") if isinstance(case.get("review"), dict) else {}
        if _gates(case) and review.get("status", "pending") in ("pending", "quarantined"):
            report("gating_unreviewed", f"gating case with review {review.get('status', 'pending')!r}: an "
                   "unreviewed case should not close the gate (accept it, or set gating: false)",
                   case_id=cid, source=src)
        splits = _splits(case)
        if "canary" in splits and "smoke" not in splits:
            report("canary_not_in_smoke", "a canary should also be in smoke, so every smoke run checks for "
                   "drift", case_id=cid, source=src)


def check_matrix(matrix: dict[str, Any], report: Report) -> None:
    for key in sorted(matrix):
        if key in MATRIX_KEYS:
            continue
        target = MATRIX_KEY_OF_LAYER.get(key)
        if key in MATRIX_KEY_OF_LAYER:
            hint = (f"use {target!r}" if target else "it has no matrix key: nothing switches it off")
        else:
            hint = f"matrix keys are {', '.join(MATRIX_KEYS)}"
        report("not_a_matrix_key", f"capability_matrix.{key} is a report-row name, not a matrix key, so it "
               f"switches nothing; {hint}", source="profile.yaml")


def declared_routes(scoring: dict[str, Any] | None, adapter: dict[str, Any] | None) -> list[str] | None:
    """Every route label the profile declares (routing_contract, route_targets[].name, the oos_handling
    route and its internal label `__oos__`), with the labels of the adapter's route_from_status; None
    when the profile declares no route list (nothing to check a case's route against)."""
    scoring = scoring or {}
    listed = [r for key in ("routing_contract", "route_targets") if isinstance(scoring.get(key), list)
              for r in scoring[key] if isinstance(r, str)]
    if not listed:
        return None
    from ..score.routing import OOS_LABEL, oos_route_of_handling
    oos = oos_route_of_handling(scoring.get("oos_handling"))
    inv = (adapter or {}).get("invocation") if isinstance((adapter or {}).get("invocation"), dict) else {}
    status = inv.get("route_from_status") if isinstance(inv.get("route_from_status"), dict) else {}
    out = listed + ([oos, OOS_LABEL] if oos else []) + [v for v in status.values() if isinstance(v, str)]
    return list(dict.fromkeys(out))


def _trace_queryable(adapter: dict[str, Any]) -> bool:
    traces = adapter.get("traces") if isinstance(adapter.get("traces"), dict) else {}
    if traces.get("source") not in QUERYABLE_TRACE_SOURCES:
        return False
    if traces.get("correlation") in (None, "", "none"):
        return False
    return (traces.get("convention") or "gen_ai") in TRACE_CONVENTIONS


def check_adapter(cases: list[dict[str, Any]], adapter: dict[str, Any], source_of: Callable[[int], str | None],
                  report: Report) -> None:
    inv = adapter.get("invocation") if isinstance(adapter.get("invocation"), dict) else {}
    env = adapter.get("environment") if isinstance(adapter.get("environment"), dict) else {}
    safe_to_attack = env.get("safe_to_attack") is True
    free_route = bool(inv.get("route_from_response")) or _trace_queryable(adapter)
    status_map = inv.get("route_from_status") if isinstance(inv.get("route_from_status"), dict) else None
    status_labels = set(status_map.values()) if status_map else set()
    for i, case in enumerate(cases):
        cid, src = case.get("id"), source_of(i)
        expect = case.get("expect") if isinstance(case.get("expect"), dict) else {}
        if case.get("category") in ADVERSARIAL_CATEGORIES and not safe_to_attack:
            report("attack_category_will_skip", f"category {case.get('category')!r} is skipped because "
                   "adapter environment.safe_to_attack is not true", case_id=cid, source=src)
        if expect.get("clarify_ok") is True and not inv.get("clarify_from_response"):
            report("clarify_unobservable", "expect.clarify_ok needs invocation.clarify_from_response in the "
                   "adapter; without it a clarifying answer cannot be recognized", case_id=cid, source=src,
                   key="expect.clarify_ok")
        wanted = []
        if isinstance(expect.get("route"), str):
            wanted.append(expect["route"])
        if isinstance(expect.get("route_acceptable"), list):
            wanted += [r for r in expect["route_acceptable"] if isinstance(r, str)]
        if wanted and not free_route:
            key = "expect.route" if isinstance(expect.get("route"), str) else "expect.route_acceptable"
            if not status_map:
                report("route_not_observable", "the adapter declares no route source (route_from_response, a "
                       "queryable trace, or route_from_status); routing will be unscored", case_id=cid, source=src,
                       key=key)
            elif not set(wanted) & status_labels:
                report("route_not_observable", f"route {wanted} is not a label of the adapter's route_from_status "
                       f"({sorted(status_labels)}); a status-only adapter can only report those",
                       case_id=cid, source=src, key=key)
        inp = case.get("input") if isinstance(case.get("input"), dict) else {}
        if "turns" in inp and not isinstance(inv.get("conversation"), dict):
            report("turns_will_skip", "a conversation case needs invocation.conversation in the adapter; the "
                   "runner skips it", case_id=cid, source=src)
        identity = case.get("identity")
        if isinstance(identity, dict) and identity:
            imap = inv.get("identity_map") if isinstance(inv.get("identity_map"), dict) else {}
            unmapped = sorted(k for k in identity if k != "token_env" and k not in imap)
            if inv.get("mode") == "function":
                report("identity_will_skip", "the case carries an identity but invocation.mode is "
                       "'function': only http (headers) and cli (environment variables) carry an identity; "
                       "the runner skips it", case_id=cid, source=src)
            elif unmapped:
                carrier = "environment variable" if inv.get("mode") == "cli" else "header"
                report("identity_will_skip", f"identity key(s) {unmapped} have no {carrier} in the adapter's "
                       "invocation.identity_map; the runner skips the case", case_id=cid, source=src)


def asserted_tool_names(expect: dict[str, Any], case: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """(where, tool name) for every tool a case's expect names: tools.subset/order/forbidden,
    the args keys and authz.forbidden_tools; with `case`, also input.every_turn and each
    conversation checkpoint (input.turns[N].expect)."""
    out = _expect_tool_names(expect, "expect")
    inp = case.get("input") if isinstance(case, dict) and isinstance(case.get("input"), dict) else {}
    out += _expect_tool_names(inp.get("every_turn"), "input.every_turn")
    turns = inp.get("turns") if isinstance(inp.get("turns"), list) else []
    for i, turn in enumerate(turns):
        if isinstance(turn, dict):
            out += _expect_tool_names(turn.get("expect"), f"input.turns[{i}].expect")
    return out


def check_tool_names(cases: list[dict[str, Any]], adapter: dict[str, Any], source_of: Callable[[int], str | None],
                     report: Report) -> None:
    """A tool name the adapter's `tools` list does not declare is an ERROR (make_plan refuses it):
    a typo in a `forbidden` list is a check that can never fail. With no `tools` list nothing can
    be checked: a forbidden name (tools.forbidden, authz.forbidden_tools) is an ERROR all the same
    (forbidden_tool_undeclared: misspelt or renamed, it passes whatever the app calls), except in
    agent mode (the run holds it to the session's own tools) and without traces (no tool call is
    seen, the check is unscorable); a required name gets one WARN
    for the suite (tools_not_declared: a misspelt required tool fails loudly on its own)."""
    declared = declared_tools(adapter)
    inv = adapter.get("invocation") if isinstance(adapter.get("invocation"), dict) else {}
    # agent mode holds each name to the session's own tools at run time; a trace-less run sees no call
    deny_unheld = inv.get("mode") != "agent" and _trace_queryable(adapter)
    unchecked: list[tuple[Any, str, str]] = []
    for i, case in enumerate(cases):
        expect = case.get("expect") if isinstance(case.get("expect"), dict) else {}
        for where, name in asserted_tool_names(expect, case):
            if not declared and deny_unheld and where.endswith(FORBIDDING_KEYS):
                report("forbidden_tool_undeclared", f"{where} forbids {name!r}, but the adapter declares no "
                       "tools list to hold the name to: misspelt, or renamed by the app, a forbidden tool is "
                       "never called, so this check passes whatever the app does; list the app's tools in "
                       "adapter.yaml `tools` (each name as its spans write it)",
                       case_id=case.get("id"), source=source_of(i), key=where.replace("[", ".").replace("]", ""))
                continue
            if not declared:
                unchecked.append((case.get("id"), where, name))
                continue
            if name in declared or rule_tool(name) in declared:
                continue   # a permission-style rule, Bash(rm -rf *), names its tool before the parenthesis
            close = difflib.get_close_matches(name, declared, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            report("unknown_tool", f"{where} names {name!r}, which is not in the adapter's tools "
                   f"({', '.join(sorted(declared))}){hint} (a misspelt forbidden tool can never fail; fix the "
                   "name, or declare the tool in adapter.yaml tools)",
                   case_id=case.get("id"), source=source_of(i), key=where.replace("[", ".").replace("]", ""))
    if unchecked:
        cid, where, name = unchecked[0]
        n = len({c for c, _, _ in unchecked})
        report("tools_not_declared", f"{n} case(s) name tools (first: {cid} {where} {name!r}) but the adapter "
               "declares no tools list: a misspelt tool name cannot be caught, and a called tool the adapter "
               "does not know cannot be named in the verdict; list the app's tools in adapter.yaml `tools`")


def check_manifest(cases: list[dict[str, Any]], manifest: dict[str, Any], report: Report) -> None:
    def mismatch(key: str, declared: Any, actual: int) -> None:
        report("manifest_mismatch", f"dataset.yaml {key} is {declared} but the case files give {actual}; "
               "update dataset.yaml (and bump dataset_version)", source=MANIFEST_SOURCE)

    if "cases" in manifest and manifest["cases"] != len(cases):
        mismatch("cases", manifest["cases"], len(cases))
    for name, declared in sorted((manifest.get("splits") or {}).items()):
        actual = sum(1 for c in cases if name in _splits(c))
        if declared != actual:
            mismatch(f"splits.{name}", declared, actual)
    by_unit = ((manifest.get("coverage_grid") or {}).get("by_unit") or {})
    for unit, counts in sorted(by_unit.items()):
        actual = unit_counts(cases, unit)
        for key, declared in sorted((counts or {}).items()):
            if key in actual and declared != actual[key]:
                mismatch(f"coverage_grid.by_unit.{unit}.{key}", declared, actual[key])


def unit_counts(cases: list[dict[str, Any]], unit: str) -> dict[str, int]:
    """{total, MFT, INV, DIR} of one unit: what dataset.yaml's coverage_grid.by_unit declares."""
    mine = [c for c in cases if c.get("unit") == unit]
    return {"total": len(mine), **{t: sum(1 for c in mine if c.get("test_type") == t) for t in ("MFT", "INV", "DIR")}}


def split_counts(cases: list[dict[str, Any]]) -> dict[str, int]:
    return {s: sum(1 for c in cases if s in _splits(c)) for s in SPLITS}
