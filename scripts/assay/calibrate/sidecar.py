"""The calibration sidecar `<state>/judge/calibration.json`: written by score_agreement.py
--write, read by the runner (assay.judge.runtime: a rubric version is calibrated iff
rubrics[pin].calibrated is true and the calibration is bound to the configured judge and the
rubric's text, assay.judge.binding). --write binds it to the state dir's judge/judge.yaml and
rubrics/*.md as they are when it runs."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.jsonio import atomic_write_json
from ..core.version import VERSION
from ..judge.binding import binding_fields, judge_identity

SCHEMA = "assay.calibration/1"
SIDECAR_RUBRIC_KEYS = ("calibrated", "pairs", "unknown", "tp", "fn", "fp", "tn", "tpr", "tnr", "kappa",
                       "tpr_ci", "tnr_ci", "kappa_ci", "blocking", "unlock", "human_fail", "human_pass", "unknown_rate",
                       "unpaired", "notes", "by_node")


def build_sidecar(scored: dict[str, Any], now: _dt.datetime | None = None) -> dict[str, Any]:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return {
        "schema": SCHEMA,
        "harness_version": VERSION,
        "generated_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "floors": scored["floors"],
        "confidence": scored["confidence"],
        "rubrics": {pin: {k: r[k] for k in SIDECAR_RUBRIC_KEYS} for pin, r in scored["rubrics"].items()},
    }


def write_sidecar(path: str | Path, sidecar: dict[str, Any]) -> Path:
    path = checked_path(path)
    atomic_write_json(path, sidecar)
    return path


def checked_path(path: str | Path) -> Path:
    """The --write path, its judge/ folder created under an existing state dir; AssayError(2) otherwise."""
    path = Path(path)
    if path.suffix != ".json":
        raise AssayError(f"--write {path}: the sidecar is a .json file (the runner reads "
                         "<state>/judge/calibration.json)", 2)
    if not path.parent.is_dir():
        if path.parent.parent.is_dir():
            path.parent.mkdir()
        else:
            raise AssayError(f"--write {path}: directory {path.parent.parent} does not exist "
                             "(pass <state>/judge/calibration.json under an existing state dir)", 2)
    return path


def state_dir_for(write: str | Path, state_dir: str | Path | None) -> Path:
    """The state dir whose judge and rubrics the sidecar is bound to: --state-dir, else the one
    `<state>/judge/calibration.json` sits in."""
    if state_dir is not None:
        return Path(state_dir)
    path = Path(write)
    if path.parent.name != "judge":
        raise AssayError(f"--write {path}: not <state>/judge/calibration.json, so the state dir whose judge and "
                         "rubrics this calibration is bound to is unknown; pass --state-dir STATE_DIR", 2)
    return path.parent.parent


def bind(sidecar: dict[str, Any], state: Path, batches: Any = (), lines: Any = ()) -> dict[str, Any]:
    """Add the judge identity and each rubric pin's content hash (in place); AssayError(2) without a judge,
    or when a labelled batch's runs were judged by another judge than the one configured now
    (`batches`: the annotations' batch ids; calibrate.labelled_judge). The batches that could not be
    checked are in `unchecked` (popped by write_bound: not part of the sidecar)."""
    from ..judge.config import JUDGE_CONFIG, effective, load_judge_config, manifest_view
    from ..judge.prompt import PROMPT_VERSION
    from ..judge.rubrics import load_rubrics
    from .labelled_judge import check
    config = load_judge_config(state)
    if config is None:
        raise AssayError(f"--write: {state / JUDGE_CONFIG} does not exist: the sidecar records which judge was "
                         "calibrated (the one whose verdicts you labelled); add judge/judge.yaml, or pass "
                         "--state-dir for the state dir that has it", 2, file=JUDGE_CONFIG)
    by_pin = {r["pin"]: r for r in load_rubrics(state).values()}
    env = _bound_env(effective(config))
    _bindable(effective(config), state, env)
    identity = judge_identity(effective(config), state, env)
    sidecar["unchecked"] = check(state, batches, dict(manifest_view(effective(config)), prompt_version=PROMPT_VERSION),
                                 by_pin, identity, lines)
    sidecar["judge"] = binding_fields(sidecar["rubrics"], by_pin, identity)
    return sidecar


def _bindable(config: dict[str, Any], state: Path, env: dict[str, str]) -> None:
    """AssayError(2) when a command judge runs code its argv does not let assay find (a `bash -c` string
    or a shell script's line that changes directory or names a script that is not a file under the state dir,
    assay.judge.command_files): bound to its argv alone, the calibration would outlive an edit to that code."""
    from ..judge.command_files import command_files
    from ..judge.config import JUDGE_CONFIG, members
    problems = [why for m in members(config) if m.get("provider") == "command"
                for why in command_files([str(a) for a in m.get("command") or []], state, env)[1]]
    if problems:
        raise AssayError(f"--write: {'; '.join(problems)}: the calibration is bound to the code the judge runs "
                         "(editing it makes the rubrics provisional again), and assay cannot tell which files that "
                         f"is; write {JUDGE_CONFIG} command as an argv naming the script by its path from the state "
                         "dir (e.g. [python3, judge/judge.py], [python3, -m, judge], [node, judge/judge.cjs]), "
                         "then --write", 2, file=JUDGE_CONFIG, key="command")


def _bound_env(config: dict[str, Any]) -> dict[str, str]:
    """The values of the variables the judge's base_url/model/served_model name, from the environment
    --write runs in (the calibration is bound to the judge they name, by a digest: assay.judge.bound_values);
    AssayError(2) naming each one unset: bound to its text, the calibration would hold for any value."""
    import os

    from ..judge.bound_values import resolved_names
    from ..judge.config import JUDGE_CONFIG, members
    from ..core.secrets import env_refs
    http = {n for m in members(config) if m.get("provider") != "command" for n in resolved_names(m)}
    # a command judge's argv: the script a ${VAR} names is bound by its content (assay.judge.binding)
    argv = {n for m in members(config) if m.get("provider") == "command" for n in env_refs(m.get("command"))}
    names = sorted(http | argv)
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        shown = ", ".join("${" + n + "}" for n in missing)
        keys = "base_url/model/served_model" if set(missing) <= http else "command"
        raise AssayError(f"--write: {JUDGE_CONFIG} names {shown} ({keys}), not set in this "
                         "environment: the calibration is bound to the judge the variable names (a digest of its "
                         f"value, never the value); export {', '.join(missing)} as it was for the run you labelled, "
                         "then --write", 2, file=JUDGE_CONFIG, missing_env=missing)
    return {n: os.environ[n] for n in names}


def write_bound(scored: dict[str, Any], write: str | Path, state_dir: str | Path | None, batches: Any = (),
                lines: Any = ()) -> Path:
    """score_agreement.py --write: build the sidecar, bind it to the state dir's judge and rubrics, write it."""
    if Path(write).suffix != ".json" or not Path(write).parent.parent.is_dir():
        checked_path(write)  # raises, naming the bad path, before anything else
    state = state_dir_for(write, state_dir)
    sidecar = bind(build_sidecar(scored), state, batches, lines)
    scored["labelled_judge_unchecked"] = sidecar.pop("unchecked")   # batches labelled before label.py kept their judge
    # how many of the counted pairs stand on those lines (the no-batch ones, and each unchecked batch's)
    from .agreement import NO_BATCH
    weigh = scored.get("pairs_by_batch") or {}
    scored["labelled_judge_unchecked_pairs"] = weigh.get(NO_BATCH, 0) + sum(   # no-batch lines: never checked
        weigh.get(u, 0) for u in scored["labelled_judge_unchecked"] if u != NO_BATCH)
    return write_sidecar(write, sidecar)
