"""Findings: the linter's output rows, and the table of every code with its severity.

CODES is the one list of what validate_cases.py can say; case-format.md documents
each code (a test holds the two together).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ERROR, WARN = "ERROR", "WARN"

CODES: dict[str, str] = {
    # identity and classification
    "missing_id": ERROR, "unsafe_id": ERROR, "duplicate_id": ERROR, "unknown_key": ERROR,
    "missing_split": ERROR, "bad_split": ERROR, "holdout_not_sealed": ERROR,
    "bad_category": ERROR, "missing_test_type": ERROR, "bad_test_type": ERROR,
    "missing_metamorphic_parent": ERROR, "self_metamorphic_parent": ERROR, "dangling_metamorphic_parent": ERROR,
    "missing_template_id": ERROR, "template_without_params": ERROR, "params_without_template": ERROR,
    # input
    "missing_input": ERROR, "bad_messages": ERROR, "turns_and_messages": ERROR, "bad_turns": ERROR,
    "single_turn_conversation": ERROR, "bad_turn": ERROR, "turn_key_reserved": ERROR, "unknown_turn_key": ERROR,
    "final_turn_expect": ERROR, "every_turn_collision": ERROR, "every_turn_without_turns": ERROR,
    "simulated_and_scripted": ERROR, "bad_simulated_user": ERROR, "unknown_simulated_key": ERROR,
    "scripted_only_expect": ERROR,
    "multi_turn_canary": ERROR,
    # expect
    "bad_expect_shape": ERROR, "unknown_expect_key": ERROR, "no_graded_layer": ERROR, "bad_order_mode": ERROR,
    "bad_call_scope": ERROR, "vacuous_args_entry": ERROR, "both_scalar_and_rows": ERROR,
    "neither_scalar_nor_rows": ERROR, "empty_columns": ERROR, "string_not_list": ERROR,
    "unquoted_bool_or_number": ERROR, "bad_regex": ERROR, "vacuous_regex": ERROR, "unknown_schema_keyword": ERROR,
    # `/x/i`: the scorer never reads trailing flags, so the check is unscorable on every answer and the
    # case passes on its other checks
    "regex_trailing_flags": ERROR,
    # `(?i)sorry`, `regex:sorry`: a regex written without slashes is read as text no answer holds (unscorable)
    "regex_without_slashes": ERROR,
    # a forbidden id the app can never write: the authz check could only ever pass (wave 4 §1)
    "unobservable_record_ids": ERROR,
    # an imported case that lost a check of its source (import_promptfoo.py's not_converted): it would pass
    # without it
    "check_not_converted": ERROR,
    # an expect.result a wrong result passes: a row key `columns` leaves out is never compared; a tolerance
    # at least a non-zero expected value lets 0 pass (score/result_spec.py, which the scorer refuses too)
    "columns_mismatch": ERROR, "tolerance_swallows_value": ERROR,
    # a tolerance of 1 or more around an expected 0: a range, not rounding (0 ± 1e9 passes anything); the
    # linter's alone, so a recorded run rescores unchanged
    "tolerance_swallows_zero": ERROR,
    # `must_not_contain: []`, `tools: {forbidden: []}`, `answer: {}`: a check given nothing to check
    "empty_check": ERROR,
    # suite files
    "manifest_mismatch": ERROR,
    # rubric pins (expect.answer.rubric against rubrics/<id>.md)
    "bad_rubric_pin": ERROR, "unknown_rubric": ERROR, "rubric_version_mismatch": ERROR,
    # a pairwise pin on a conversation: the baseline holds no answer to compare a turn with (unscored, never pass)
    "pairwise_in_conversation": ERROR,
    # warnings: the suite is thinner than the guidance, the author's call
    "machine_accepted": WARN, "no_op_pass": WARN, "source_derived_expectation": WARN, "filter_unattested": WARN,
    "available_tools_not_scoped": WARN, "excluded_tools_not_scored": WARN, "seed_state_not_loaded": WARN,
    "multi_turn_in_messages": WARN, "not_one_user_message": WARN, "session_not_fresh": WARN,
    "long_conversation": WARN, "unrecognizable_record_ids": WARN, "reserved_expectation": WARN,
    "echo_assertion": WARN,
    # a must_not_contain entry of plain words: compared case-sensitively, `Error` misses "error" (not
    # refused: a case may mean that spelling; `/Error/` or `/(?i)Error/` says which)
    "case_sensitive_absence": WARN, "ignored_schema_keyword": WARN, "catastrophic_regex": WARN,
    "no_metamorphic_coverage": WARN, "all_one_off": WARN, "category_skew": WARN, "nothing_gates": WARN,
    "gating_unreviewed": WARN, "canary_not_in_smoke": WARN, "not_a_matrix_key": WARN,
    "capabilities_unchecked": WARN,
    # an expect key on a layer the capability matrix switches off: reported not measured, never pass/fail
    "expectation_not_scored": WARN,
    # --adapter
    "route_not_observable": WARN, "attack_category_will_skip": WARN, "clarify_unobservable": WARN,
    "turns_will_skip": WARN, "identity_will_skip": WARN, "tools_not_declared": WARN,
    # --adapter, and make_plan refuses it: a misspelt forbidden tool is a check that can never fail
    "unknown_tool": ERROR,
    # a forbidden tool name and no adapter tools list to hold it to (not agent mode): the same check that
    # can never fail when the name is misspelt or the app renamed the tool
    "forbidden_tool_undeclared": ERROR,
    # a route profile.yaml (routing_contract / route_targets) does not declare: the check can only fail
    "unknown_route": ERROR,
    # route plus route_acceptable naming every declared route: whatever the router picks passes
    "vacuous_route": ERROR,
    # --adapter with invocation.mode agent (the pre-flight's own checks): a check that cannot measure
    "unknown_skill": ERROR, "missing_fixture": ERROR, "check_not_found": ERROR, "unchanged_not_in_fixture": ERROR,
    "bad_agent_case": ERROR,
    # invocation.agent.mcp_config the CLI refuses (unreadable, not JSON, no `mcpServers` mapping): every attempt
    # ends without a transcript. The file's shape only: whether a server's command is found depends on the
    # agent's PATH at run time (env_allowlist, invocation.agent.env), which the run's pre-flight checks (exit 3)
    "bad_mcp_config": ERROR,
    # a case names a skill and a listed plugin dir defines none (plugin_dirs one level too high): no skill
    # name is checked, so `must_not_trigger: [a typo]` passes whatever the agent does
    "plugin_dir_defines_no_skill": ERROR,
    # a SKILL.md the agent reads with no frontmatter description: Claude Code loads it as a slash command
    # only (a plugin's is never offered to the model; a case naming it reads `unscored` on its skills layer)
    "skill_without_description": WARN,
    # an `absent` path one or two letters from a fixture path: a typo of a file to remove, or a file
    # the agent must not create that is named so close on purpose (not refused: nothing tells them apart)
    "absent_near_fixture_path": WARN,
    # an entry the untouched fixture already passes, so an agent that does nothing passes it: a `contains`
    # text the fixture holds, an `exists` path it has, an `unchanged` glob matching none of its files (not
    # refused: the agent may have to keep that text or file)
    "contains_already_in_fixture": WARN, "exists_already_in_fixture": WARN, "unchanged_glob_matches_nothing": WARN,
    # expect.permissions.max_denied under permission_mode bypassPermissions: nothing is ever denied (the run
    # reads the layer unscorable; not refused: a case may share the suite with an arm in another mode)
    "max_denied_never_denied": WARN,
    # an expect.files path that is absolute or climbs out of the workdir: absent/unchanged pass whatever the
    # agent does, exists/contains fail whatever it does (the pre-flight exits 3 on it too)
    "path_outside_workdir": ERROR,
    # an exists/absent/contains path written as a glob (`*.bak`): looked for as a file of that name, so
    # absent passes whatever the agent leaves, exists/contains fail whatever it writes (pre-flight exit 3 too)
    "glob_in_files_path": ERROR,
}


@dataclass
class Findings:
    """Collects findings for one suite; `add` looks the severity up in CODES."""

    strict: bool = False
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, code: str, message: str, *, case_id: Any = None, source: str | None = None,
            key: str | None = None) -> None:
        severity = CODES[code]
        row = {"case_id": case_id if isinstance(case_id, str) else None, "source": source,
               "severity": severity, "code": code, "message": message}
        if key:
            row["key"] = key  # the key path in the case file (make_plan turns it into a line)
        if self.strict and severity == WARN:
            row["severity"] = ERROR
            row["strict_from"] = WARN
        self.rows.append(row)

    def counts(self) -> tuple[int, int]:
        errors = sum(1 for r in self.rows if r["severity"] == ERROR)
        return errors, len(self.rows) - errors
