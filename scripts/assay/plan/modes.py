"""The mode table (contracts §8): the one definition of what each run mode selects.

| mode       | selects split                 | k | gate     | judge (when judge/judge.yaml exists) |
|------------|-------------------------------|---|----------|--------------------------------------|
| smoke      | smoke (k fixed)               | 1 | soft     | only with --judge                    |
| regression | full (the default mode)       | 3 | hard     | yes                                  |
| targeted   | full, or smoke with --split   | 1 | soft     | only with --judge                    |
| holdout    | holdout                       | 1 | decision | yes                                  |
| full       | refused: regression, then holdout |

"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import AssayError


@dataclass(frozen=True)
class Mode:
    name: str
    split: str
    k: int
    gate: str
    k_fixed: bool = False
    judge: bool = False      # the judge runs by default (else only with make_plan.py --judge)


MODES: dict[str, Mode] = {
    "smoke": Mode("smoke", "smoke", 1, "soft", k_fixed=True),
    "regression": Mode("regression", "full", 3, "hard", judge=True),
    "targeted": Mode("targeted", "full", 1, "soft"),
    "holdout": Mode("holdout", "holdout", 1, "decision", judge=True),
}
DEFAULT_MODE = "regression"
REFUSED_MODES = {
    "full": "--mode full is two runs, not one plan: one plan holds one selecting_split and full and holdout "
            "are exclusive. Build and run --mode regression, then --mode holdout",
}
TARGETED_SPLITS = ("full", "smoke")
HOLDOUT_LEDGER = "datasets/holdout-looks.jsonl"
JUDGE_CALIBRATION = "judge/calibration.json"


def resolve_mode(name: str) -> Mode:
    if name in REFUSED_MODES:
        raise AssayError(REFUSED_MODES[name], 2, mode=name)
    if name not in MODES:
        from ..core.suggest import did_you_mean
        raise AssayError(f"unknown --mode {name!r}{did_you_mean(name, MODES)}; modes: {', '.join(MODES)}", 2)
    return MODES[name]


def check_gate_mode(name: str) -> None:
    """`gate.py --latest --mode M`: M must be a mode a run id can carry (it filters run dirs by their
    name); a typo found no run, and `full` is two runs (regression, then holdout), gated one by one."""
    if name in MODES:
        return
    if name in REFUSED_MODES:
        raise AssayError("--mode full: a full run is two runs, a regression run and then a holdout run, each "
                         "with its own run id; gate each: --latest --mode regression, then --latest --mode holdout",
                         2, key="--mode")
    from ..core.suggest import did_you_mean
    raise AssayError(f"--mode {name!r} is no run mode{did_you_mean(name, MODES)}; run ids start with one of: "
                     f"{', '.join(MODES)}", 2, key="--mode")
