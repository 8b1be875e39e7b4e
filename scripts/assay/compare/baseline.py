"""`--baseline auto`: which run a candidate is compared with (compare_runs, gate, draft_report,
run_cases --baseline-verdicts). Runner contract §20.4.

1. `<state>/reports/baseline.json` (`{"run_id": ...}`, written by the skill, never the runner)
   pins one: it wins, and a pin naming a run that is not there is exit 2 naming the file.
2. Else the newest run started before the candidate, of the same series (mode, dataset_version,
   harness_version, k: `SERIES_KEYS`, the keys the runner's --baseline-verdicts checks), whose
   status is `ok` and whose gate is open when gated now with gate.py's defaults (completeness
   re-check included; budgets from profile.yaml as gate.py applies them). The suite hash is not
   part of the key: an edited case is what the comparison's `expectation_changed` is for.
3. Else exit 2, saying why (no earlier run of the series; or each one's reason, newest first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.errors import AssayError
from ..core.ids import parse_run_id
from ..report.rundir import try_json

SERIES_KEYS = ("mode", "dataset_version", "harness_version", "k")
PIN_FILE = "baseline.json"
MAX_REASONS = 5


def series_of(doc: dict) -> tuple:
    return tuple(doc.get(k) for k in SERIES_KEYS)


def series_words(key: tuple) -> str:
    return ", ".join(f"{k} {v}" for k, v in zip(SERIES_KEYS, key))


def pinned(reports: Path) -> Path | None:
    pin = reports / PIN_FILE
    if not pin.is_file():
        return None
    doc = try_json(pin)
    run_id = doc.get("run_id") if isinstance(doc, dict) else None
    if not parse_run_id(run_id):
        raise AssayError(f"{pin}: not a baseline pin; it holds {{\"run_id\": \"<mode>-<UTC stamp>\", ...}} "
                         "(the run skill writes it); fix or delete it", 2, path=str(pin))
    run_dir = reports / run_id
    if not (run_dir / "results.json").is_file():
        raise AssayError(f"{pin} pins {run_id}, but {run_dir} holds no finished run; re-pin (or delete "
                         f"{PIN_FILE} to let --baseline auto choose)", 2, path=str(pin))
    return run_dir


def newest_open(reports: Path, key: tuple, *, before: str | None, exclude: str | None,
                is_open: Callable[[Path], tuple[bool, str | None]]) -> Path:
    """The newest run of series `key` (started before `before`, a run-id stamp) whose gate is open."""
    found = []
    if reports.is_dir():
        for child in reports.iterdir():
            parsed = parse_run_id(child.name)
            if not parsed or child.name == exclude or child.is_symlink() or not child.is_dir():
                continue
            if before is not None and parsed[1] >= before:
                continue
            found.append((parsed[1], child.name, child))
    found.sort(reverse=True)
    reasons: list[str] = []
    same = 0
    for _, name, child in found:
        results = try_json(child / "results.json")
        if not isinstance(results, dict) or series_of(results) != key:
            continue
        same += 1
        status = (results.get("summary") or {}).get("status") if isinstance(results.get("summary"), dict) else None
        if status != "ok":
            reasons.append(f"{name}: status {status!r}, not complete")
            continue
        ok, why = is_open(child)
        if ok:
            return child
        reasons.append(f"{name}: gate closed ({why})")
    what = f"{reports}: --baseline auto found no baseline for the series ({series_words(key)})"
    if not same:
        raise AssayError(f"{what}: no earlier run of this series; run one (or pass --baseline RUN_DIR, or pin one "
                         f"in reports/{PIN_FILE})", 2, series=dict(zip(SERIES_KEYS, key)))
    shown = "; ".join(reasons[:MAX_REASONS]) + (f"; and {len(reasons) - MAX_REASONS} more" if len(reasons) > MAX_REASONS else "")
    raise AssayError(f"{what}: none of its {same} earlier run(s) is complete with an open gate: {shown}", 2,
                     series=dict(zip(SERIES_KEYS, key)))


def resolve_baseline(spec: str, candidate_dir: Path, *, is_open: Callable[[Path], tuple[bool, str | None]]) -> Path:
    """A run dir for `--baseline SPEC` next to the candidate run (SPEC: a run dir, or `auto`).
    `is_open` is the one decision (`assay.verdict.gate_open`), handed in by the command."""
    if spec != "auto":
        return Path(spec)
    candidate_dir = Path(candidate_dir)
    reports = candidate_dir.parent
    pin = pinned(reports)
    if pin is not None:
        return pin
    results = try_json(candidate_dir / "results.json")
    if not isinstance(results, dict):
        raise AssayError(f"{candidate_dir}: no readable results.json; --baseline auto needs the candidate run "
                         "dir (<state>/reports/<run-id>)", 2, path=str(candidate_dir))
    parsed = parse_run_id(candidate_dir.name)
    return newest_open(reports, series_of(results), before=parsed[1] if parsed else None,
                       exclude=candidate_dir.name, is_open=is_open)


def resolve_for_plan(plan_path: str, *, is_open: Callable[[Path], tuple[bool, str | None]]) -> str:
    """run_cases.py --baseline-verdicts auto: the chosen run's verdicts_for_stats.jsonl for a plan."""
    if plan_path in (None, "-"):
        raise AssayError("--baseline-verdicts auto needs --plan as a file (it reads the plan's state dir and "
                         "series before the run)", 2, key="--baseline-verdicts")
    plan = try_json(Path(plan_path))
    if not isinstance(plan, dict) or not isinstance(plan.get("paths"), dict):
        raise AssayError(f"--plan {plan_path}: not a readable plan.json (make_plan.py writes one)", 2, key="--plan")
    return str(baseline_for_plan(plan, exclude=plan.get("run_id"), is_open=is_open) / "verdicts_for_stats.jsonl")


def baseline_for_plan(plan: Mapping[str, Any], *, exclude: str | None, before: str | None = None,
                      is_open: Callable[[Path], tuple[bool, str | None]]) -> Path:
    """`auto` for a plan (run_cases.py, rescore.py): reports/baseline.json's pin, else the newest complete
    run of the plan's series (mode, dataset version, harness version, k) whose gate was open, started
    before `before` (a run-id stamp) and not `exclude`."""
    from ..core.version import HARNESS_VERSION
    reports = Path(str((plan.get("paths") or {}).get("state_dir") or ".")) / "reports"
    pin = pinned(reports)
    if pin is not None:
        return pin
    extra = plan.get("manifest_extra") if isinstance(plan.get("manifest_extra"), dict) else {}
    version = extra.get("dataset_version", 1)
    key: tuple[Any, ...] = (plan.get("mode"), version, HARNESS_VERSION, plan.get("k"))
    return newest_open(reports, key, before=before, exclude=exclude, is_open=is_open)
