"""The one check of a plan: its JSON Schema plus the cross-field rules (contracts §5.2).

make_plan calls it on what it built; run_cases calls it before anything else.
Every violation is AssayError(2) naming the key; nothing has been written yet.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.errors import AssayError
from ..core.runplan import CaseTable, RunPlan
from ..core.ids import CASE_ID_RULE, is_safe_case_id
from ..core.vocab import holdout_unsealed
from ..schemas import validate
from .shards import check_shards

DEFAULT_EXECUTION = {
    "timeout_s": None,          # None: adapter.invocation.timeout_s, else 60
    "max_attempts": 3,
    "backoff_s": [1, 4],
    "infra_rate_abort": 0.25,
    "insecure_tls": False,
    "max_turns": 12,
    "adaptive": True,               # AIMD in-flight limit; rate-limited retries spend rate_limit_wait_s
    "start_concurrency": None,      # None: start at invocation.max_concurrency
    "rate_limit_wait_s": 300,       # seconds of 429/Retry-After waiting one request may spend
}
DEFAULT_SCORING = {
    "oos_route": None,
    "id_pattern": None,
    "float_tolerance": None,
    "repeat_threshold": 3,
    "call_budget": 15,
    "fail_on_errored_calls": False,
    "scorer_timeout_s": 2.0,
}
HOLDOUT_TOUCHING_SPLITS = ("holdout",)


def validate_plan(plan: Any, *, source: str = "plan.json") -> dict[str, Any]:
    """Validate a plan; return it unchanged. Raises AssayError(2) on the first class of violation."""
    # The schema's per-case part is tiny (an object with a string `id` and a non-empty
    # `split` list of known splits) but jsonschema costs ~25 us a case: when every case has
    # that shape (checked in plain code), the schema sees one case; otherwise it sees them
    # all, so every error message and key is exactly the full validation's.
    validate(_with_one_case(plan) if _cases_shaped(plan) else plan, "plan", source=source, what="plan")
    _cross_field(plan, source)
    return plan


def _cross_field(plan: Mapping[str, Any], source: str) -> None:
    _check_cases(plan, source)
    _check_execution(plan, source)
    _check_paths(plan, source)
    check_shards(plan, source)


def run_plan(plan: Mapping[str, Any]) -> RunPlan:
    """The frozen RunPlan of an already validated plan dict (its effective blocks computed here)."""
    if isinstance(plan, RunPlan):
        return plan
    cases = plan["cases"]
    table = cases if isinstance(cases, CaseTable) else CaseTable.of(cases)
    return RunPlan.build(plan, table, execution=effective_execution(plan), scoring=effective_scoring(plan))


def validate_parts(top: dict[str, Any], table: CaseTable | None, *, source: str) -> RunPlan | None:
    """validate_plan over a plan read as parts (`core.runplan.read_plan_text`) without building
    every case's dict: when each case has the schema's shape the schema sees the first one and
    the cross-field rules see ids and splits, exactly as validate_plan does on the whole dict.
    None when some case is not that shape: the caller validates the whole plan instead, so every
    message and key is the full validation's."""
    allowed = _split_enum()
    if (table is None or not len(table) or not table.shaped or allowed is None
            or not all(set(split) <= allowed for split in table.distinct_splits())):
        return None
    validate(dict(top, cases=[table[0]]), "plan", source=source, what="plan")
    _cross_field(dict(top, cases=table.heads()), source)
    return RunPlan.build(top, table, execution=effective_execution(top), scoring=effective_scoring(top))


def _cases_shaped(plan: Any) -> bool:
    """True when plan["cases"] is a non-empty list of cases the schema's `cases.items` accepts."""
    cases = plan.get("cases") if isinstance(plan, dict) else None
    if not isinstance(cases, list) or not cases:
        return False
    allowed = _split_enum()
    if allowed is None:
        return False
    for case in cases:
        if not isinstance(case, dict):
            return False
        cid, split = case.get("id"), case.get("split")
        if not isinstance(cid, str) or not isinstance(split, list) or not split:
            return False
        for s in split:
            if not isinstance(s, str) or s not in allowed:
                return False
    return True


def _with_one_case(plan: dict[str, Any]) -> dict[str, Any]:
    return dict(plan, cases=plan["cases"][:1])


def _split_enum() -> frozenset | None:
    """The split names the schema's `cases` items allow, or None when that part of the schema is
    not the exact shape `_cases_shaped` re-checks (then every case goes through jsonschema)."""
    from ..schemas import load_schema
    cases = load_schema("plan")["properties"]["cases"]
    items = cases.get("items") or {}
    props = items.get("properties") or {}
    split = props.get("split") or {}
    enum = (split.get("items") or {}).get("enum")
    known = ({"type": "array", "minItems": 1, "items": items} == cases
             and set(items) == {"type", "required", "properties"} and items["type"] == "object"
             and sorted(items["required"]) == ["id", "split"] and set(props) == {"id", "split"}
             and props["id"] == {"type": "string"}
             and split == {"type": "array", "items": {"enum": enum}, "minItems": 1}
             and isinstance(enum, list) and all(isinstance(e, str) for e in enum))
    return frozenset(enum) if known else None


def effective_execution(plan: dict[str, Any]) -> dict[str, Any]:
    """Plan execution block over the defaults (explicit `backoff_s` wins; else derived from max_attempts)."""
    given = plan.get("execution") or {}
    out = dict(DEFAULT_EXECUTION)
    out.update(given)
    if "max_attempts" in given and "backoff_s" not in given:
        out["backoff_s"] = [4 ** i for i in range(out["max_attempts"] - 1)]
    if out["timeout_s"] is None:
        inv = (plan.get("adapter") or {}).get("invocation") or {}
        t = inv.get("timeout_s")
        out["timeout_s"] = t if isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0 else 60
    return out


def effective_scoring(plan: dict[str, Any]) -> dict[str, Any]:
    out = dict(DEFAULT_SCORING)
    out.update(plan.get("scoring") or {})
    return out


def _check_cases(plan: dict[str, Any], source: str) -> None:
    seen: set[str] = set()
    unsealed: list[str] = []
    selecting = plan["selecting_split"]
    for i, case in enumerate(plan["cases"]):
        cid = case["id"]
        if not is_safe_case_id(cid):
            raise AssayError(
                f"{source}: cases[{i}].id {cid!r} is not a safe case id ({CASE_ID_RULE}); "
                "fix the case id in its YAML and rebuild the plan with make_plan.py",
                2, key=f"cases[{i}].id", case_id=cid)
        if cid in seen:
            raise AssayError(f"{source}: cases[{i}].id {cid!r} appears twice; case ids must be unique",
                             2, key=f"cases[{i}].id", case_id=cid)
        seen.add(cid)
        if selecting not in case["split"]:
            raise AssayError(
                f"{source}: case {cid!r} (cases[{i}]) has split {case['split']} without the plan's "
                f"selecting_split {selecting!r}; rebuild the plan with make_plan.py",
                2, key=f"cases[{i}].split", case_id=cid)
        if holdout_unsealed(case["split"]):
            unsealed.append(cid)
    if unsealed:
        shown = ", ".join(unsealed[:10]) + (f" (and {len(unsealed) - 10} more)" if len(unsealed) > 10 else "")
        raise AssayError(
            f"{source}: {len(unsealed)} case(s) have split holding holdout and another split: {shown}; a "
            "holdout case seen elsewhere is not held out, and a run of this plan would read its holdout "
            "result with no look on the holdout ledger. Give each `split: [holdout]` alone (or drop "
            "holdout from it) in its YAML (lint code holdout_not_sealed), then convert and make_plan.py again",
            2, key="cases[].split", case_ids=unsealed)


def _check_execution(plan: dict[str, Any], source: str) -> None:
    ex = plan.get("execution") or {}
    if "backoff_s" in ex:
        attempts = ex.get("max_attempts", DEFAULT_EXECUTION["max_attempts"])
        if len(ex["backoff_s"]) != attempts - 1:
            raise AssayError(
                f"{source}: execution.backoff_s has {len(ex['backoff_s'])} wait(s) but max_attempts is "
                f"{attempts}: give exactly max_attempts - 1 = {attempts - 1} waits (make_plan.py "
                "--max-attempts N --backoff-s a,b)", 2, key="execution.backoff_s")


def _check_paths(plan: dict[str, Any], source: str) -> None:
    if plan["selecting_split"] in HOLDOUT_TOUCHING_SPLITS or plan["mode"] == "holdout":
        ledger = plan["paths"].get("holdout_ledger")
        if not ledger or not str(ledger).endswith(".jsonl"):
            raise AssayError(
                f"{source}: a holdout run needs paths.holdout_ledger ending in .jsonl "
                f"(got {ledger!r}); make_plan.py --mode holdout sets datasets/holdout-looks.jsonl",
                2, key="paths.holdout_ledger")
