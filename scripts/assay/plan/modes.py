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
        raise AssayError(f"unknown --mode {name!r}; modes: {', '.join(MODES)}", 2)
    return MODES[name]
