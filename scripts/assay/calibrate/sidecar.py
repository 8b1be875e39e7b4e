"""The calibration sidecar `<state>/judge/calibration.json`: written by score_agreement.py
--write, read by the runner (assay.run.judging: a rubric version is calibrated iff
rubrics[pin].calibrated is true)."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.jsonio import atomic_write_json
from ..core.version import VERSION

SCHEMA = "assay.calibration/1"
SIDECAR_RUBRIC_KEYS = ("calibrated", "pairs", "unknown", "tp", "fn", "fp", "tn", "tpr", "tnr", "kappa",
                       "tpr_ci", "tnr_ci", "kappa_ci", "blocking", "unlock", "human_fail", "human_pass", "unknown_rate",
                       "unpaired", "notes")


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
    atomic_write_json(path, sidecar)
    return path
