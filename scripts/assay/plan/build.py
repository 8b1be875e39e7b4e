"""Build plan.json from the converted suite (contracts §8). It only selects and assembles.

`build_plan(converted, options) -> PlanResult(plan, notes, warnings)`: `notes` go into the
printed summary; `warnings` are also printed on stderr by the script. `${VAR}` stays
unresolved; nothing is run. The result always passes assay.plan.validate.validate_plan.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.commands import SCRIPTS_DIR
from ..core.errors import AssayError
from ..core.ids import RUN_ID_RE, new_run_id, parse_run_id
from ..core.version import HARNESS_VERSION
from .gitinfo import git_state
from .layers import canary_notes, isolate_layer
from .lint_gate import is_code_line, lint_converted
from .modes import HOLDOUT_LEDGER, JUDGE_CALIBRATION, TARGETED_SPLITS, resolve_mode
from .select import select_cases
from .validate import validate_plan

MAX_K = 100
MAX_ATTEMPTS = 20
DEFAULT_MAX_TURNS = 12
PROTECTED_APP_KEYS = ("git_sha", "git_tree")


@dataclass
class PlanOptions:
    state_dir: Path
    mode: str = "regression"
    run_id: str | None = None
    k: int | None = None
    tag: str | None = None
    cases: list[str] | None = None        # --case: targeted, exactly these ids
    split: str | None = None
    failing_in: Path | None = None
    layer: str | None = None
    oos_route: str | None = None          # None: from the profile; "": none
    timeout_s: float | None = None
    max_attempts: int | None = None
    backoff_s: list[float] | None = None
    insecure_tls: bool = False
    max_turns: int | None = None
    fixed_concurrency: bool = False
    start_concurrency: int | None = None
    rate_limit_wait_s: float | None = None
    judge: bool = False                   # --judge: judge in smoke/targeted too
    manifest_extra: dict[str, Any] | None = None
    allow_invalid: bool = False
    now: datetime | None = None
    arm: str | None = None                # --arm: the adapter's arm this run is planned under


@dataclass
class PlanResult:
    plan: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_backoff(text: str) -> list[float]:
    """`--backoff-s 1,4` -> [1.0, 4.0]; each wait a finite number >= 0."""
    waits = []
    for part in text.split(","):
        try:
            value = float(part.strip())
        except ValueError:
            raise AssayError(f"--backoff-s {text!r}: {part!r} is not a number; write e.g. --backoff-s 1,4", 2) from None
        if not math.isfinite(value) or value < 0:
            raise AssayError(f"--backoff-s {text!r}: each wait must be a finite number >= 0", 2)
        waits.append(int(value) if value.is_integer() else value)
    return waits


def _check_flags(o: PlanOptions) -> None:
    mode = o.mode
    if mode != "targeted":
        for flag, value in (("--tag", o.tag), ("--case", o.cases or None), ("--split", o.split),
                            ("--failing-in", o.failing_in)):
            if value is not None:
                raise AssayError(f"{flag} is only valid with --mode targeted (got --mode {mode})", 2)
    elif not o.tag and not o.cases:
        raise AssayError("--mode targeted needs --tag <unit-or-route> (it matches a case's unit or expect.route) "
                         "or --case <id> (repeatable)", 2)
    if o.split is not None and o.split not in TARGETED_SPLITS:
        raise AssayError(f"--split {o.split!r}: targeted runs select full or smoke", 2)
    if o.k is not None:
        if resolve_mode(mode).k_fixed:
            raise AssayError(f"--k is refused under --mode {mode}: its k is fixed at {resolve_mode(mode).k}", 2)
        if not 1 <= o.k <= MAX_K:
            raise AssayError(f"--k {o.k}: k must be between 1 and {MAX_K}", 2)
    if o.run_id is not None:
        parsed = parse_run_id(o.run_id)
        if parsed is None:
            raise AssayError(f"--run-id {o.run_id!r} must look like {mode}-YYYYMMDDTHHMMSSZ "
                             f"(pattern {RUN_ID_RE.pattern})", 2)
        if parsed[0] != mode:
            raise AssayError(f"--run-id {o.run_id!r} starts with {parsed[0]!r} but --mode is {mode!r}; the run id "
                             "names its mode (gate.py --latest --mode reads it)", 2)
    if o.timeout_s is not None and not (math.isfinite(o.timeout_s) and o.timeout_s > 0):
        raise AssayError(f"--timeout-s {o.timeout_s}: must be a number > 0", 2)
    if o.max_attempts is not None and not 1 <= o.max_attempts <= MAX_ATTEMPTS:
        raise AssayError(f"--max-attempts {o.max_attempts}: must be between 1 and {MAX_ATTEMPTS}", 2)
    if o.max_attempts is not None and o.backoff_s is not None and len(o.backoff_s) != o.max_attempts - 1:
        raise AssayError(f"--backoff-s has {len(o.backoff_s)} wait(s) but --max-attempts {o.max_attempts} needs "
                         f"exactly {o.max_attempts - 1} (one wait between attempts)", 2)
    if o.backoff_s is not None and len(o.backoff_s) + 1 > MAX_ATTEMPTS:
        raise AssayError(f"--backoff-s: at most {MAX_ATTEMPTS - 1} waits", 2)
    if o.max_turns is not None and not 2 <= o.max_turns <= 100:
        raise AssayError(f"--max-turns {o.max_turns}: must be between 2 and 100", 2)


def _execution(o: PlanOptions, cases: list[dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    ex: dict[str, Any] = {}
    if o.timeout_s is not None:
        ex["timeout_s"] = int(o.timeout_s) if float(o.timeout_s).is_integer() else o.timeout_s
    if o.max_attempts is not None or o.backoff_s is not None:
        attempts = o.max_attempts if o.max_attempts is not None else len(o.backoff_s or []) + 1
        ex["max_attempts"] = attempts
        ex["backoff_s"] = o.backoff_s if o.backoff_s is not None else [4 ** i for i in range(attempts - 1)]
    if o.insecure_tls:
        ex["insecure_tls"] = True
    if o.fixed_concurrency:
        ex["adaptive"] = False
    if o.start_concurrency is not None:
        ex["start_concurrency"] = o.start_concurrency
    if o.rate_limit_wait_s is not None:
        ex["rate_limit_wait_s"] = o.rate_limit_wait_s
    has_turns = any(isinstance(c.get("input"), dict) and "turns" in c["input"] for c in cases)
    if has_turns:
        ex["max_turns"] = o.max_turns or DEFAULT_MAX_TURNS
    elif o.max_turns is not None:
        notes.append("--max-turns ignored: no selected case is a conversation (input.turns)")
    return ex


def oos_route_of(o: PlanOptions, converted: dict[str, Any]) -> str | None:
    if o.oos_route is not None:
        return o.oos_route or None
    from ..score.routing import oos_route_of_handling
    return oos_route_of_handling((converted.get("scoring") or {}).get("oos_handling"))


def id_pattern_of(converted: dict[str, Any]) -> str | None:
    pattern = (converted.get("scoring") or {}).get("record_id_pattern")
    if pattern is None:
        return None
    try:
        re.compile(pattern)
    except re.error as exc:
        raise AssayError(f"profile.yaml record_id_pattern {pattern!r} is not a valid regex ({exc}); fix it and "
                         "re-run convert_suite.py", 2) from None
    return pattern


def dataset_version(converted: dict[str, Any]) -> int:
    """The suite's dataset_version (datasets/dataset.yaml; 1 when unset): what a plan records in
    manifest_extra, and the version whose holdout looks count (`holdout.py looks --store`)."""
    manifest = converted.get("manifest") or {}
    for key in ("dataset_version", "version"):
        value = manifest.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 1


def _manifest_extra(o: PlanOptions, converted: dict[str, Any], dataset_version: int,
                    warnings: list[str]) -> dict[str, Any]:
    app = (converted.get("adapter") or {}).get("app") or {}
    repo = app.get("repo")
    sha, tree = git_state((o.state_dir / repo).resolve() if isinstance(repo, str) and repo else None)
    judge = (converted.get("profile") or {}).get("judge") or {"model": None, "status": "uncalibrated"}
    base: dict[str, Any] = {
        "dataset_version": dataset_version,
        "app": {"name": app.get("name"), "repo": repo, "git_sha": sha, "git_tree": tree},
        "judge": judge,
    }
    from ..stats.budgets import profile_budgets
    budgets = profile_budgets(o.state_dir)[0]   # the gate's fallback for a run dir outside any state dir
    if budgets:
        base["budgets"] = {key: b["value"] for key, b in budgets.items()}
    for key, value in (o.manifest_extra or {}).items():
        if key == "validation":
            warnings.append("--manifest-extra validation ignored: make_plan records the linter's result there")
            continue
        if key == "dataset_version":
            if value != dataset_version:
                warnings.append(f"--manifest-extra dataset_version {value!r} ignored: it is computed "
                                f"({dataset_version}) from datasets/dataset.yaml")
            continue
        if isinstance(base.get(key), dict):
            if not isinstance(value, dict):
                raise AssayError(f"--manifest-extra: {key!r} must be an object (it merges into the computed "
                                 f"{key!r} object), got {type(value).__name__}", 2, key=key)
            for sub, subval in value.items():
                if key == "app" and sub in PROTECTED_APP_KEYS:
                    if subval != base["app"][sub]:
                        warnings.append(f"--manifest-extra app.{sub} {subval!r} ignored: it is computed from "
                                        f"the app repo ({base['app'][sub]!r})")
                    continue
                base[key][sub] = subval
        else:
            base[key] = value
    return base


def judge_block_of(converted: dict[str, Any], cases: list[dict[str, Any]], mode: Any, o: PlanOptions,
                 notes: list[str]) -> dict[str, Any]:
    """plan.judge: enabled by the mode table (or --judge) when judge/judge.yaml exists; the rubric
    versions the selected cases pin, keyed by pin (a pin with no matching file stays out: the linter
    names it, and the runner records it unscored)."""
    from ..judge.config import effective
    from ..judge.rubrics import case_pins, resolve_pin

    rubrics = converted.get("rubrics") or {}
    pinned: dict[str, Any] = {}
    for case in cases:
        for pin in case_pins(case):
            rubric, _, _ = resolve_pin(pin, rubrics)
            if rubric is not None:
                pinned[rubric["pin"]] = rubric
    config = converted.get("judge_config")
    if config is None:
        reason = "no judge configured: add judge/judge.yaml"
        if o.judge:
            raise AssayError("--judge: the state dir has no judge/judge.yaml (see docs/runner-contract.md, section 'The judge'); "
                             "add one, then re-run convert_suite.py", 2, key="--judge")
        return {"enabled": False, "reason": reason, "config": None, "rubrics": pinned}
    if not (mode.judge or o.judge):
        reason = f"mode: {mode.name}; pass make_plan.py --judge to judge"
        if pinned:
            notes.append(f"judge not run in {mode.name} mode ({len(pinned)} rubric version(s) pinned): "
                         "add --judge to judge this run")
        return {"enabled": False, "reason": reason, "config": effective(config), "rubrics": pinned}
    if pinned:
        from ..judge.config import aggregate_of, members, repeats_of
        who = " + ".join(f"{m.get('provider')} {m.get('model') or ' '.join(m.get('command') or [])}"
                         for m in members(config))
        if aggregate_of(config) != "single":
            who = f"{aggregate_of(config)} of [{who}]"
        if repeats_of(config) > 1:
            who += f", each node asked {repeats_of(config)} times"
        notes.append(f"judge: {who} on {len(pinned)} rubric version(s)")
    return {"enabled": True, "reason": None, "config": effective(config), "rubrics": pinned}


def _simulator_block(converted: dict[str, Any], cases: list[dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    """plan.simulator: enabled when simulator/simulator.yaml exists (a simulated case without it is
    skipped by the runner, naming the file to add)."""
    from ..simulate.config import effective
    from ..core.casekind import is_simulated
    config = converted.get("simulator_config")
    simulated = sum(1 for c in cases if is_simulated(c))
    if config is None:
        if simulated:
            notes.append(f"{simulated} simulated-user case(s) will be skipped: no simulator/simulator.yaml")
        return {"enabled": False, "reason": "no simulator configured: add simulator/simulator.yaml", "config": None}
    if simulated:
        notes.append(f"simulator: {config.get('provider')} {config.get('model') or ' '.join(config.get('command') or [])}"
                     f" plays {simulated} simulated user(s)")
    return {"enabled": True, "reason": None, "config": effective(config)}


def build_plan(converted: dict[str, Any], o: PlanOptions) -> PlanResult:
    mode = resolve_mode(o.mode)
    _check_flags(o)
    state = o.state_dir
    if not state.is_dir():
        raise AssayError(f"--state-dir {state} does not exist or is not a directory", 2)
    state = o.state_dir = state.resolve()
    notes: list[str] = []
    warnings: list[str] = []
    if not (state / "adapter.yaml").is_file():
        # the app's directory instead of its state dir: reports, the holdout ledger and the
        # judge sidecar would be looked for (and written) in the wrong place
        if (state / ".assay" / "adapter.yaml").is_file():
            raise AssayError(f"--state-dir {state} is not a state dir (no adapter.yaml); did you mean "
                             f"--state-dir {state / '.assay'}?", 2)
        from ..core.statedir import run_or_reports_dir
        instead = run_or_reports_dir(o.state_dir)
        if instead is not None:   # the plan's reports, holdout ledger and judge sidecar would go under it
            raise AssayError(f"--state-dir {instead}", 2, key="--state-dir")
        warnings.append(f"--state-dir {state} has no adapter.yaml: is it the state dir the suite was "
                        "converted from? Reports and the holdout ledger go under it")
    split = o.split or mode.split
    version = dataset_version(converted)
    validation = lint_converted(converted, state, allow_invalid=o.allow_invalid)
    lint_lines = validation.pop("warning_lines")
    warnings += lint_lines
    if validation["errors"]:
        warnings.append(f"--allow-invalid: planning a suite with {validation['errors']} linter ERROR(s) "
                        f"({', '.join(validation['error_codes'])}); recorded in manifest_extra.validation")
    cases, select_notes = select_cases(converted["cases"], mode=mode.name, split=split, tag=o.tag,
                                       failing_in=o.failing_in, dataset_version=version,
                                       harness_version=HARNESS_VERSION, case_ids=o.cases)
    notes += select_notes
    from .select import no_gating_case_warning
    nothing_gates = no_gating_case_warning(cases, split)
    if nothing_gates:
        notes.append(nothing_gates)
        # the linter's suite-wide nothing_gates says the same of the suite: the plan's words (the split,
        # the count, what gate.py does, the fix) are said once, in its place
        said = [line for line in lint_lines if is_code_line(line, "nothing_gates")]
        warnings[:] = [w for w in warnings if w not in said]
        warnings.append(nothing_gates)
    if mode.name == "smoke" and not (o.cases or o.tag):
        from .select import no_canary_note
        no_canary = no_canary_note(converted["cases"])
        if no_canary:
            notes.append(no_canary)
    k = o.k if o.k is not None else mode.k
    if mode.name == "regression" and k < 3:
        notes.append(f"regression at k={k} (< 3): pass^k is weaker; say so in the report")
    matrix = converted["capability_matrix"]
    if o.layer is not None:
        matrix = isolate_layer(matrix, o.layer)
        for note in canary_notes(cases, matrix, o.layer):
            notes.append(note)
            warnings.append(note)
    judge_file = state / JUDGE_CALIBRATION
    from .arms import apply_arm
    adapter, arm = apply_arm(converted["adapter"], o.arm)
    if arm is not None:
        from .arms import same_arms
        twins = same_arms(converted["adapter"], o.arm)
        if twins:
            warnings.append(f"--arm {o.arm} runs the agent exactly as arm(s) {', '.join(twins)} do (the same "
                            "invocation.agent once each arm's keys are applied): comparing their runs measures "
                            "nothing. A key the base invocation.agent sets is in every arm: leave it out of the base "
                            "and set it in the arm that has it (adapter.yaml arms)")
    plan: dict[str, Any] = {
        "plan_version": 1,
        "run_id": o.run_id or new_run_id(mode.name, o.now),
        "mode": mode.name,
        "k": k,
        "gate": mode.gate,
        "selecting_split": split,
        "paths": {
            "scripts_dir": str(SCRIPTS_DIR),
            "state_dir": str(state),
            "holdout_ledger": HOLDOUT_LEDGER if split == "holdout" else None,
            "judge_calibration": JUDGE_CALIBRATION if judge_file.is_file() else None,
        },
        "adapter": adapter,
        "capability_matrix": matrix,
        "cases": cases,
        "scoring": {"oos_route": oos_route_of(o, converted), "id_pattern": id_pattern_of(converted)},
        "manifest_extra": dict(_manifest_extra(o, converted, version, warnings), validation=validation),
    }
    if arm is not None:
        plan["manifest_extra"]["arm"] = arm
    plan["judge"] = judge_block_of(converted, cases, mode, o, notes)
    plan["simulator"] = _simulator_block(converted, cases, notes)
    from ..judge.binding import provisional_again
    warnings += provisional_again(plan["judge"], state)
    execution = _execution(o, cases, notes)
    if execution:
        plan["execution"] = execution
    validate_plan(plan, source="plan (built by make_plan.py)")
    return PlanResult(plan, notes, warnings)


def run_command_line(plan_path: Path, out_dir: Path) -> str:
    """The exact runner command the summary prints."""
    return f'python3 "{SCRIPTS_DIR / "run_cases.py"}" --plan "{plan_path}" --out "{out_dir}"'


def shard_command_line(plan_path: Path, out_dir: Path) -> str:
    """The runner command for one shard (replace <I> by 1..N; each shard its own run dir)."""
    from .shards import shard_dir_name
    out = out_dir.parent / shard_dir_name(out_dir.name, "<I>")
    return f'python3 "{SCRIPTS_DIR / "run_cases.py"}" --plan "{plan_path}" --shard <I> --out "{out}"'


def merge_command_line(plan_path: Path, out_dir: Path) -> str:
    """The merge command once every shard's run dir is in reports/."""
    from .shards import shard_dir_name
    shards = out_dir.parent / shard_dir_name(out_dir.name, "*")
    return f'python3 "{SCRIPTS_DIR / "merge_runs.py"}" --plan "{plan_path}" --out "{out_dir}" {shards}'
