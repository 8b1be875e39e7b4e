"""assay's Python API: plan, run, gate and compare from Python, over the commands themselves.

Each function calls the same command a person runs (`scripts/<step>.py`: its own argument
checks, its own library call) in this process and returns the JSON document that command
prints. Nothing here decides anything the scripts do not. A command that refuses (the JSON
error document and a non-zero exit) raises `CommandError` carrying both; the gate closing
is an answer, not an error (`gate()` returns `{"gate": "closed", "reasons": [...]}`).
Examples: references/python-api.md (a test runs every one of them).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterable

from .core.commands import Outcome, call

__all__ = ["CommandError", "plan", "run", "gate", "compare"]


class CommandError(Exception):
    """A command refused or failed: `code` is its exit code, `doc` the JSON document it printed
    (`doc["error"]` says what went wrong and how to fix it)."""

    def __init__(self, command: str, code: int, doc: Any):
        self.command, self.code, self.doc = command, code, doc if isinstance(doc, dict) else {}
        super().__init__(f"{command}.py exit {code}: {self.doc.get('error') or doc}")


def _done(command: str, outcome: Outcome, ok: Iterable[int] = (0,)) -> dict:
    if outcome.code not in ok or not isinstance(outcome.doc, dict):
        raise CommandError(command, outcome.code, outcome.doc)
    return outcome.doc


def plan(state_dir: str | Path, *, mode: str = "regression", tag: str | None = None,
         cases: Iterable[str] | None = None, k: int | None = None, run_id: str | None = None,
         judge: bool = False, output: str | Path | None = None, work_dir: str | Path | None = None,
         extra_args: Iterable[str] = ()) -> dict:
    """Convert the state dir's suite and write a plan: `convert_suite.py` then `make_plan.py -o`.

    `state_dir` is the app's `.assay` directory. The suite is converted into
    `<state>/work/converted.json` (and `work/split/`; `work_dir` moves both), the plan written
    to `output` (default `plan.json` there). `mode`, `tag`, `cases` (`--case`, targeted), `k`,
    `run_id` and `judge` are make_plan.py's flags; `extra_args` passes any other of its
    flags as written on the command line. Run ids have one-second resolution: when the run
    dir the plan names exists already (a plan made within the same second as the last run),
    it plans again in the next second, as `make demo` does. Returns make_plan.py's summary: `plan` (the file),
    `run_id`, `mode`, `k`, `gate`, `cases`, `counts`, `out` (the run dir to give `run()`),
    `notes`, `validation` and `run` (the runner command line).
    """
    state = Path(state_dir)
    work = Path(work_dir) if work_dir is not None else state / "work"
    converted = work / "converted.json"
    _done("convert_suite", call("convert_suite", [state, "-o", converted, "--split-dir", work / "split"],
                                needs=("yaml", "jsonschema")))
    argv: list[Any] = [converted, "--mode", mode, "--state-dir", state, "-o", output or work / "plan.json"]
    if tag is not None:
        argv += ["--tag", tag]
    for cid in cases or ():
        argv += ["--case", cid]
    if k is not None:
        argv += ["--k", k]
    if run_id is not None:
        argv += ["--run-id", run_id]
    if judge:
        argv += ["--judge"]
    argv += list(extra_args)
    for _ in range(3):
        summary = _done("make_plan", call("make_plan", argv, needs=("jsonschema",)))
        if run_id is not None or not Path(summary["out"]).exists():
            break
        time.sleep(1.05)  # never hand out a finished run's directory
    return summary


def run(plan_path: str | Path, out: str | Path | None = None, *, resume: bool = False,
        baseline_verdicts: str | Path | None = None, progress: str = "never", stale_plan: bool = False) -> dict:
    """Run a plan against the app: `run_cases.py --plan P --out D`.

    `out` defaults to the run dir the plan names (`<state>/reports/<run_id>`). `resume=True`
    finishes an interrupted run under the same run id (the same plan). `progress` is the
    runner's --progress (auto | always | never): its progress lines go to stderr, as the
    script's do (never: nothing is written). Returns the runner's
    document (`run_id`, `status`, `exit_code` 0, `out`). The runner's other exits (3
    pre-flight, 4 a canary failed, 5 infra abort, 6 incomplete, 7 scorer error, 2 bad plan)
    raise CommandError; for 4-7 the run dir exists and `gate()` reads it (`err.doc["out"]`).
    Completing says nothing about pass or fail: that is `gate()`. A plan older than its suite (a case
    edited since make_plan.py) raises CommandError (exit 2) naming what changed; `stale_plan=True` runs
    it as it was made (`--stale-plan`).
    """
    if out is None:
        from .core.jsonio import read_json
        try:
            doc = read_json(plan_path)
            out = Path(doc["paths"]["state_dir"]) / "reports" / doc["run_id"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError("run_cases", 2, {"error": f"cannot read the run dir from the plan {plan_path} "
                                                f"({type(exc).__name__}: {exc}); pass a plan make_plan.py "
                                                "wrote, or out="}) from None
    argv: list[Any] = ["--plan", plan_path, "--out", out, "--progress", progress]
    if resume:
        argv += ["--resume"]
    if stale_plan:
        argv += ["--stale-plan"]
    if baseline_verdicts is not None:
        argv += ["--baseline-verdicts", baseline_verdicts]
    return _done("run_cases", call("run_cases", argv, needs=("yaml", "jsonschema"), capture_stderr=progress == "never"))


def gate(run_dir: str | Path, *, max_infra_rate: float = 0.05, require_canaries: bool = False,
         verify: bool = True, junit: str | Path | None = None, extra_args: Iterable[str] = ()) -> dict:
    """Decide a finished run: `gate.py RUN_DIR --json`.

    Returns the gate's document: `gate` ("open" or "closed"), `reasons` (every reason it
    closed), the counts (`n`, `passes`, `failures`, `gating_failures`, `unscored`, ...),
    `budgets` and `run_id`. `verify=False` skips the completeness re-check; `junit` also
    writes JUnit XML; `extra_args` passes gate.py's other flags (`--max-cost-per-case X`, ...).
    Bad input (not a run dir) raises CommandError.
    """
    argv: list[Any] = [run_dir, "--json", "--max-infra-rate", max_infra_rate]
    if require_canaries:
        argv += ["--require-canaries"]
    if not verify:
        argv += ["--no-verify"]
    if junit is not None:
        argv += ["--junit", junit]
    argv += list(extra_args)
    return _done("gate", call("gate", argv, needs=("yaml",)), ok=(0, 1))


def compare(baseline: str | Path, candidate: str | Path) -> dict:
    """What got better and what broke between two runs, case by case: `compare_runs.py BASE CAND`.

    `baseline` is a run dir, or "auto" (reports/baseline.json's pin, else the newest complete
    run of the candidate's series whose gate was open); `candidate` a run dir. Returns
    compare_runs.py's document (references/compare-runs.md): `headline`, `counts` per bucket
    (newly_failing, newly_passing, judge_flip, expectation_changed, ...), `buckets` (case id ->
    bucket), per-pair diffs, `judge_flips`, `stats` (the paired statistics) and `notes`.
    Bad input, or "auto" finding no run, raises CommandError.
    """
    return _done("compare_runs", call("compare_runs", [baseline, candidate], needs=("yaml",)))
