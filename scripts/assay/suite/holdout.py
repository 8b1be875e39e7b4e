"""The sealed holdout: the look ledger, a logged unseal, and a reseal.

The ledger is `<state>/datasets/holdout-looks.jsonl` (the plan's `paths.holdout_ledger`):
the runner appends `{run_id, date, mode, reason}` once per holdout run; an unseal appends
`{date, mode: "unseal", reason, cases}`. Every line is one look; after `budget` looks
(default 5) a reseal is due.

A reseal moves every *viewed* holdout case to `split: [full]` and draws as many fresh
cases into `split: [holdout]`: from accepted, gating cases whose split is exactly `[full]`, one per moved
case from the same unit where the pool allows, deterministically from `seed`. It bumps
`dataset_version` in `datasets/dataset.yaml` (keeping its `splits` counts true), and
archives the spent ledger as `holdout-looks.v<old version>.jsonl` so the new holdout
starts at zero looks. Viewed = the cases an unseal line names (all holdout cases when it
names none), plus the holdout cases of each ledger run (from that run's manifest when
`reports/<run_id>/manifest.yaml` is readable, else every current holdout case).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import random
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import AssayError
from ..core.jsonio import atomic_write_text, loads
from ..core.vocab import is_holdout  # noqa: F401  (the one split rule; callers here and elsewhere ask it)
from ..lint.suite_rules import split_counts
from ..plan.modes import HOLDOUT_LEDGER
from .convert import convert_state_dir
from .lint_state import error_summary, lint_state_dir
from .yaml_edit import set_top_level

LOOK_BUDGET = 5
MANIFEST = "datasets/dataset.yaml"


def _state(state_dir: str | os.PathLike[str]) -> Path:
    state = Path(state_dir)
    if not state.is_dir() or not (state / "datasets").is_dir():
        raise AssayError(f"{state_dir}: not a state dir with datasets/ (pass the app's .assay/ directory)", 2)
    return state


def read_ledger(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except ValueError:
            raise AssayError(f"{path}:{n}: ledger line is not JSON; the ledger is append-only JSONL written by "
                             "run_cases.py and holdout.py: restore the line from version control", 2,
                             file=str(path), line=n) from None
        if not isinstance(row, dict):
            raise AssayError(f"{path}:{n}: ledger line is not a JSON object", 2, file=str(path), line=n)
        rows.append(row)
    return rows


def holdout_case_ids(cases: list[dict[str, Any]]) -> list[str]:
    """The ids of the cases in the holdout split (sealed: never labelled, never fed to calibration)."""
    return sorted(c["id"] for c in cases if is_holdout(c) and isinstance(c.get("id"), str))


def suite_holdout_ids(state: Path) -> set[str]:
    """The holdout case ids of the state dir's suite (datasets/): a label on one never counts toward
    calibration (the holdout seal; label.py never shows them)."""
    from .convert import suite_cases
    return set(holdout_case_ids(suite_cases(state)))


def looks(state_dir: str | os.PathLike[str], budget: int = LOOK_BUDGET) -> dict[str, Any]:
    if budget < 1:
        raise AssayError("--budget must be at least 1 (the default is 5 looks)", 2)
    state = _state(state_dir)
    path = state / HOLDOUT_LEDGER
    rows = read_ledger(path)
    n = len(rows)
    return {
        "ledger": str(path),
        "looks": n,
        "budget": budget,
        "remaining": max(0, budget - n),
        "reseal_due": n >= budget,
        "unseals": sum(1 for r in rows if r.get("mode") == "unseal"),
        "runs": sum(1 for r in rows if r.get("mode") != "unseal"),
        "last": rows[-1] if rows else None,
        "next": ("reseal: holdout.py reseal STATE_DIR" if n >= budget else
                 f"{budget - n} look(s) left before a reseal is due"),
    }


def unseal(state_dir: str | os.PathLike[str], reason: str, case_ids: list[str] | None = None,
           now: _dt.datetime | None = None) -> dict[str, Any]:
    """Append one unseal line (a look) and return which holdout cases it opens, with their files."""
    state = _state(state_dir)
    if not reason or not reason.strip():
        raise AssayError("--reason is required: say why the holdout must be opened (it is logged in the ledger)", 2)
    conv = convert_state_dir(state)
    holdout = holdout_case_ids(conv["cases"])
    if not holdout:
        raise AssayError(f"{state}: no case has split [holdout]; there is nothing to unseal", 2)
    wanted = sorted(set(case_ids)) if case_ids else holdout
    unknown = [c for c in wanted if c not in holdout]
    if unknown:
        raise AssayError(f"--case {', '.join(unknown)}: not a holdout case of this suite "
                         f"({len(holdout)} holdout cases; `holdout.py looks` counts the ledger)", 2, cases=unknown)
    now = now or _dt.datetime.now(_dt.timezone.utc)
    row = {"date": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "mode": "unseal", "reason": reason.strip(),
           "cases": wanted if case_ids else None}
    path = state / HOLDOUT_LEDGER
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (json.dumps(row, sort_keys=True) + "\n").encode("utf-8"))
    finally:
        os.close(fd)
    count = len(read_ledger(path))
    return {"ledger": str(path), "appended": row, "looks": count, "reseal_due": count >= LOOK_BUDGET,
            "unsealed": [{"case_id": c, "file": conv["sources"].get(c)} for c in wanted]}


def viewed_holdout(state: Path, rows: list[dict[str, Any]], holdout: list[str]) -> tuple[list[str], list[str]]:
    """(viewed holdout case ids, notes on how they were determined)."""
    current = set(holdout)
    viewed: set[str] = set()
    notes = []
    for r in rows:
        if r.get("mode") == "unseal":
            named = r.get("cases")
            viewed |= (set(named) & current) if isinstance(named, list) else current
            continue
        run_id = r.get("run_id")
        manifest = state / "reports" / str(run_id) / "manifest.yaml"
        try:
            doc = loads(manifest.read_text(encoding="utf-8"))
            ids = {c.get("id") for c in doc.get("cases") or [] if isinstance(c, dict) and c.get("set") == "holdout"}
            viewed |= ids & current
        except (OSError, ValueError, AttributeError):
            viewed |= current
            notes.append(f"run {run_id}: manifest not readable, so every current holdout case counts as viewed")
    return sorted(viewed), notes


def draw_fresh(moved: list[str], pool: list[str], unit_of: dict[str, Any], seed: int, count: int) -> list[str]:
    """`count` ids from `pool`, one per moved case from its unit where possible, deterministic in `seed`."""
    rng = random.Random(seed)
    by_unit: dict[str, list[str]] = defaultdict(list)
    for cid in sorted(pool):
        by_unit[str(unit_of.get(cid))].append(cid)
    for unit in sorted(by_unit):
        rng.shuffle(by_unit[unit])
    wanted_units = [str(unit_of.get(c)) for c in sorted(moved)][:count]
    wanted_units += [None] * (count - len(wanted_units))
    drawn: list[str] = []
    for unit in wanted_units:
        if unit is not None and by_unit.get(unit):
            drawn.append(by_unit[unit].pop())
            continue
        rest = [c for u in sorted(by_unit) for c in by_unit[u]]
        if not rest:
            break
        pick = rng.choice(rest)
        by_unit[str(unit_of.get(pick))].remove(pick)
        drawn.append(pick)
    return sorted(drawn)


def reseal(state_dir: str | os.PathLike[str], *, seed: int | None = None, count: int | None = None,
           dry_run: bool = False) -> dict[str, Any]:
    state = _state(state_dir)
    conv = convert_state_dir(state)
    before = lint_state_dir(state, conv)
    if before["error_count"]:
        raise AssayError(f"{state}: the suite has {before['error_count']} linter ERROR(s); fix them before a "
                         f"reseal ({error_summary(before)})", 2)
    ledger = state / HOLDOUT_LEDGER
    rows = read_ledger(ledger)
    if not rows:
        raise AssayError(f"{ledger}: no looks recorded, so no holdout case has been viewed; nothing to reseal", 2)
    cases = conv["cases"]
    holdout = holdout_case_ids(cases)
    viewed, notes = viewed_holdout(state, rows, holdout)
    if not viewed:
        raise AssayError("no current holdout case was viewed by the ledger's looks; nothing to reseal", 2)
    unit_of = {c["id"]: c.get("unit") for c in cases}
    # fresh = never in a run that looked at the holdout, and trustworthy: accepted by a person, gating
    pool = [c["id"] for c in cases if (c.get("split") or []) == ["full"] and c["id"] not in viewed
            and (c.get("review") or {}).get("status") == "accepted" and c.get("gating") is not False]
    want = len(viewed) if count is None else count
    if want < 0:
        raise AssayError("--count must be >= 0", 2)
    old_version = int((conv["manifest"] or {}).get("dataset_version", 1))
    new_version = old_version + 1
    seed = new_version if seed is None else seed
    drawn = draw_fresh(viewed, pool, unit_of, seed, want)
    if len(drawn) < want:
        notes.append(f"only {len(drawn)} accepted, gating case(s) have split exactly [full] to draw from (wanted {want}): "
                     "generate more cases, then reseal again")

    new_split = {cid: ["full"] for cid in viewed}
    new_split.update({cid: ["holdout"] for cid in drawn})
    edits: dict[Path, str] = {}
    for cid, split in new_split.items():
        rel = conv["sources"][cid]
        path = state / rel
        edits[path] = set_top_level(path.read_text(encoding="utf-8"), "split", split, label=rel)
    after_cases = [dict(c, split=new_split.get(c["id"], c.get("split"))) for c in cases]
    mpath = state / MANIFEST
    mtext = mpath.read_text(encoding="utf-8") if mpath.is_file() else "# The dataset manifest.\n"
    mtext = set_top_level(mtext, "dataset_version", new_version, label=MANIFEST)
    if conv["manifest"] and isinstance(conv["manifest"].get("splits"), dict):
        counts = split_counts(after_cases)
        splits = {name: counts.get(name, 0) for name in conv["manifest"]["splits"]}
        mtext = set_top_level(mtext, "splits", splits, label=MANIFEST)
    edits[mpath] = mtext
    archive = ledger.with_name(f"holdout-looks.v{old_version}.jsonl")
    if archive.exists():
        raise AssayError(f"{archive} already exists: dataset_version {old_version} was resealed before; "
                         "bump dataset_version by hand or move that file", 2)

    out: dict[str, Any] = {
        "dry_run": dry_run, "seed": seed, "looks_spent": len(rows),
        "moved_to_full": viewed, "drawn_into_holdout": drawn,
        "dataset_version": {"from": old_version, "to": new_version},
        "ledger_archived_as": str(archive), "files": sorted(str(p.relative_to(state)) for p in edits),
        "notes": notes,
    }
    if dry_run:
        return out
    for path, text in edits.items():
        atomic_write_text(path, text)
    os.replace(ledger, archive)
    after = lint_state_dir(state)
    out["validation"] = {"errors": after["error_count"], "warnings": after["warn_count"],
                         "by_split": after["summary"]["by_split"]}
    if after["error_count"]:
        raise AssayError(f"the resealed suite has linter ERROR(s): {error_summary(after)}; the files are "
                         "written, fix them and run validate_cases.py", 1, **out)
    return out
