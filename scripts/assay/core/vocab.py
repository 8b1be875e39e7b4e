"""The verdict vocabulary and the layer table: defined once, imported everywhere.

Gate, draft report, verify, the runner, the linter and the docs tests read these
names from here; nothing else spells them out as a rule.
"""

from __future__ import annotations

# Layer order on every case (contracts §5.5). Every layer gets a row on every case.
LAYER_ORDER: tuple[str, ...] = (
    "http", "routing", "trajectory", "tool_selection", "loops",
    "answer", "execution", "authz", "rules", "state", "skills", "files", "check", "permissions", "judged",
)
# The agent layers (invocation.mode agent): measured from the transcript and the workdir after the run.
AGENT_LAYERS: tuple[str, ...] = ("skills", "files", "check", "permissions")

# Report-row name -> capability_matrix key. http and loops have no key: nothing switches them off.
MATRIX_KEY_OF_LAYER: dict[str, str | None] = {
    "http": None,
    "routing": "routing",
    "trajectory": "trajectory",
    "tool_selection": "tool_selection",
    "loops": None,
    "answer": "answer_quality",
    "execution": "execution",
    "authz": "authz",
    "rules": "answer_quality",
    "state": "state",
    "skills": None,
    "files": None,
    "check": None,
    "permissions": None,
    "judged": "answer_quality",
}

# Matrix keys a profile may carry (some are informational / run-level only).
MATRIX_KEYS: tuple[str, ...] = (
    "answer_quality", "routing", "tool_selection", "trajectory", "multi_turn",
    "state", "cost_latency", "execution", "authz",
)

# Layers fed only by a collected trace (routing can also come from the response or status).
TRACE_DEPENDENT_LAYERS: tuple[str, ...] = ("trajectory", "tool_selection", "loops", "cost_latency")

# traces.convention values (the mapping tables live in assay.traces.conventions) and the
# trace sources the runner can query.
TRACE_CONVENTIONS: tuple[str, ...] = ("gen_ai", "openinference", "openllmetry", "auto")
QUERYABLE_TRACE_SOURCES: tuple[str, ...] = ("otlp-file", "otlp-http")

# Case verdicts.
PASS, FAIL, UNSCORED, SKIPPED = "pass", "fail", "unscored", "skipped"
INFRA_ERROR, INFRA_INCOMPLETE = "infra_error", "infra_incomplete"
CASE_VERDICTS: tuple[str, ...] = (PASS, FAIL, UNSCORED, SKIPPED, INFRA_ERROR, INFRA_INCOMPLETE)
SCORED_VERDICTS: tuple[str, ...] = (PASS, FAIL)
INFRA_VERDICTS: tuple[str, ...] = (INFRA_ERROR, INFRA_INCOMPLETE)

# How a simulated-user conversation ended (assay.simulate.outcomes describes each). The last four
# are the simulator's failures: the case is infra_error, never a fail of the app.
SIM_GOAL_REACHED, SIM_APP_STOPPED = "goal_reached", "app_stopped"
SIM_MAX_TURNS_REACHED = "max_turns_reached"
SIM_HARNESS_OUTCOMES: tuple[str, ...] = ("simulator_outage", "simulator_unparseable", "simulator_broke_character",
                                         SIM_MAX_TURNS_REACHED)
SIM_OUTCOMES: tuple[str, ...] = (SIM_GOAL_REACHED, SIM_APP_STOPPED) + SIM_HARNESS_OUTCOMES

# Per-layer statuses that are not verdicts: never pass, never fail.
NA, UNSCORABLE, ERROR = "n/a", "unscorable", "error"
LAYER_STATUSES: tuple[str, ...] = (PASS, FAIL, NA, UNSCORABLE, UNSCORED, ERROR, INFRA_ERROR, INFRA_INCOMPLETE)

# The judge disagreed with itself: its repeated asks of one node (judge.yaml `repeats`), or the two
# orders of a pairwise comparison, did not give one verdict. A node / rubric verdict in judge.json;
# the judged layer then stays `unscored` with `judge_unstable: true`, so the case is unscored (never
# pass) and the gate names it apart from the app's failures (is_judge_unstable).
JUDGE_UNSTABLE = "judge_unstable"


def is_judge_unstable(record: object) -> bool:
    """A case record (verdict.json, a verdicts.jsonl row) whose judged layer the judge left unstable."""
    if not isinstance(record, dict):
        return False
    if record.get("judge_unstable") is True:
        return True
    layer = (record.get("layers") or {}).get("judged") if isinstance(record.get("layers"), dict) else None
    return isinstance(layer, dict) and layer.get("judge_unstable") is True


# Run statuses (results.json summary.status).
RUN_STATUSES: tuple[str, ...] = ("running", "ok", "incomplete", "aborted_canary", "aborted_infra", "stopped_fail_fast")

# Case format enums (case-format facts §1).
SPLITS: tuple[str, ...] = ("full", "smoke", "holdout", "canary")


def is_holdout(case) -> bool:
    """The split rule: a case is in the sealed holdout when its split names `holdout` (here, in
    core, so every layer asks the one rule; `suite.holdout` re-exports it)."""
    return "holdout" in (case.get("split") or [])


def holdout_unsealed(split) -> bool:
    """A case whose split holds `holdout` and another split (lint `holdout_not_sealed`; a plan
    holding one is refused): a case seen elsewhere is not held out, and a run of a plan of the
    other split would read its holdout result with no look on the ledger."""
    return isinstance(split, (list, tuple)) and "holdout" in split and len(set(split)) > 1


CATEGORIES: tuple[str, ...] = ("happy", "multistep", "edge", "ambiguous", "oos", "adversarial-refusal", "noise")
ADVERSARIAL_CATEGORIES: tuple[str, ...] = ("adversarial-refusal",)
TEST_TYPES: tuple[str, ...] = ("MFT", "INV", "DIR")

# Run modes a plan may carry (make_plan refuses "full": it is two runs).
PLAN_MODES: tuple[str, ...] = ("smoke", "regression", "targeted", "holdout")
GATES: tuple[str, ...] = ("soft", "hard", "decision")

# Runner exit codes (contracts §5.11).
EXIT_MEANINGS: dict[int, str] = {
    0: "complete; says nothing about pass/fail",
    1: "internal error",
    2: "bad plan or usage; nothing written",
    3: "pre-flight abort",
    4: "a canary failed; run stopped",
    5: "infra rate above infra_rate_abort; run stopped",
    6: "completeness check failed",
    7: "a scorer rejected its input; numbers not quotable",
}


def matrix_enabled(matrix: dict, layer: str) -> tuple[bool, str | None]:
    """(enabled, blocked_by) for a report-row layer under a capability matrix.

    A layer is enabled unless its matrix entry says `enabled: false`; a missing entry is enabled.
    """
    key = MATRIX_KEY_OF_LAYER.get(layer, layer)
    if key is None:
        return True, None
    entry = (matrix or {}).get(key)
    if isinstance(entry, dict) and entry.get("enabled") is False:
        return False, entry.get("blocked_by") or f"capability_matrix.{key}.enabled is false"
    return True, None
