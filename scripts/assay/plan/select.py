"""Which cases a plan holds: split, then --tag, then --case, then --failing-in (contracts §8).

Selection reads each case's `split` field, never a directory. `select_cases` returns
`(cases, notes)`; an empty selection is AssayError(2) naming what was asked and the
splits present in the suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.jsonio import loads, read_json
from ..core.errors import AssayError
from ..core.vocab import SPLITS

FAILED = "fail"


def case_splits(case: dict[str, Any]) -> list[str]:
    split = case.get("split")
    return [s for s in split if isinstance(s, str)] if isinstance(split, list) else []


def matches_tag(case: dict[str, Any], tag: str) -> bool:
    """--tag matches `unit` or `expect.route`, never the id."""
    expect = case.get("expect") if isinstance(case.get("expect"), dict) else {}
    return case.get("unit") == tag or expect.get("route") == tag


def _splits_present(cases: list[dict[str, Any]]) -> str:
    counts = {s: sum(1 for c in cases if s in case_splits(c)) for s in SPLITS}
    return ", ".join(f"{s}: {n}" for s, n in counts.items() if n) or "none"


def failing_ids(run_dir: Path, dataset_version: int, harness_version: str) -> tuple[set[str] | None, str | None]:
    """(ids that failed in a comparable run, None) or (None, why the run is not comparable)."""
    if not run_dir.is_dir():
        raise AssayError(f"--failing-in {run_dir}: no such run directory", 2)
    manifest_path = run_dir / "manifest.yaml"
    try:
        manifest = read_json(manifest_path)
    except (OSError, ValueError):
        raise AssayError(f"--failing-in {run_dir}: no readable manifest.yaml, so it is not a run directory "
                         "(pass reports/<run-id>)", 2) from None
    if not isinstance(manifest, dict):
        raise AssayError(f"--failing-in {run_dir}: manifest.yaml is not an object", 2)
    theirs = (manifest.get("dataset_version"), manifest.get("harness_version"))
    if theirs != (dataset_version, harness_version):
        return None, (f"--failing-in {run_dir.name} is not comparable (dataset_version {theirs[0]}, harness "
                      f"{theirs[1]} vs {dataset_version}, {harness_version}): kept every tagged case")
    failed: set[str] = set()
    try:
        lines = (run_dir / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None, f"--failing-in {run_dir.name} has no verdicts.jsonl: kept every tagged case"
    for line in lines:
        try:
            row = loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("verdict") == FAILED and isinstance(row.get("case_id"), str):
            failed.add(row["case_id"])
    return failed, None


def keep_ids(chosen: list[dict[str, Any]], case_ids: list[str], asked: str) -> list[dict[str, Any]]:
    """--case: exactly these ids, each of which must be among the cases selected so far."""
    present = {c.get("id") for c in chosen}
    unknown = [cid for cid in dict.fromkeys(case_ids) if cid not in present]
    if unknown:
        from ..core.suggest import did_you_mean
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        # a suggestion comes from the cases this mode selects only (never a sealed holdout id)
        hint = did_you_mean(unknown[0], sorted(str(p) for p in present)) if len(unknown) == 1 else ""
        raise AssayError(f"--case {shown}: not among the cases {asked} selects{hint}; check the id "
                         "(convert_suite.py lists them in converted.json) or the split/tag", 2, key="--case",
                         cases=unknown)
    wanted = set(case_ids)
    return [c for c in chosen if c.get("id") in wanted]


def select_cases(cases: list[dict[str, Any]], *, mode: str, split: str, tag: str | None,
                 failing_in: Path | None, dataset_version: int, harness_version: str,
                 case_ids: list[str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    notes: list[str] = []
    chosen = [c for c in cases if split in case_splits(c)]
    asked = f"--mode {mode} (split {split!r})"
    tag_hint = ""
    if tag is not None:
        in_split = chosen
        chosen = [c for c in chosen if matches_tag(c, tag)]
        asked += f" --tag {tag!r}"
        if not chosen:
            from ..core.suggest import did_you_mean
            present = sorted({str(v) for c in in_split
                              for v in (c.get("unit"), (c.get("expect") or {}).get("route")
                                        if isinstance(c.get("expect"), dict) else None) if v is not None})
            tag_hint = (f"{did_you_mean(tag, present)}; tags (unit or expect.route) in this split: "
                        f"{', '.join(present[:20]) or 'none'}" + (" …" if len(present) > 20 else ""))
    if case_ids and chosen:
        chosen = keep_ids(chosen, case_ids, asked)
        asked += f" --case ({len(set(case_ids))} id(s))"
    if failing_in is not None and chosen:
        failed, why = failing_ids(failing_in, dataset_version, harness_version)
        if failed is None:
            notes.append(why or "")
        else:
            kept = [c for c in chosen if c.get("id") in failed]
            if kept:
                chosen = kept
            else:
                notes.append(f"no tagged case failed in {failing_in.name}: kept every tagged case")
    if not chosen:
        raise AssayError(f"no case selected by {asked}{tag_hint}; splits present in the suite: {_splits_present(cases)}. "
                         "Add the split to the cases' `split` field, or pick another mode/tag", 2,
                         mode=mode, split=split, tag=tag)
    canaries = [str(c.get("id")) for c in chosen if "canary" in case_splits(c)]
    if len(canaries) == len(chosen) and not case_ids:   # a run of canaries measures nothing (--case: asked for)
        shown = ", ".join(canaries[:5]) + (f" and {len(canaries) - 5} more" if len(canaries) > 5 else "")
        raise AssayError(f"{asked} selects only canaries ({shown}): a canary checks that the app is up and "
                         "stops the run when it is not; it is no case, so the run would measure nothing (the "
                         f"gate closes on it). Splits present in the suite: {_splits_present(cases)}. Add "
                         f"{split!r} to the `split` field of the cases to run, or pick another mode/tag", 2,
                         mode=mode, split=split, tag=tag, cases=canaries)
    return chosen, notes


def no_gating_case_warning(chosen: list[dict[str, Any]], split: str) -> str | None:
    """Said when every non-canary case a plan selects is `gating: false`: `gate.py` closes on such
    a run (no failure could close it), so the plan says so before anything is spent."""
    cases = [c for c in chosen if "canary" not in case_splits(c)]
    if not cases or any(c.get("gating", True) is not False for c in cases):
        return None
    return (f"no case this plan selects gates: all {len(cases)} case(s) of split {split!r} are gating: false, so "
            "gate.py closes on the run (no failure could close it); drop `gating: false` from the reviewed "
            "cases' YAML, or plan a split that holds gating cases")


def no_canary_note(cases: list[dict[str, Any]]) -> str | None:
    """A smoke plan's note when the suite has no canary at all: nothing is wrong with what the run
    measures (so a note, not a warning), but a broken harness (a wrong token, a moved endpoint) is then
    found only after every case has run, as failures, not as a canary's stop that names it. A suite
    whose canaries sit outside smoke gets the linter's canary_not_in_smoke instead."""
    if any("canary" in case_splits(c) for c in cases):
        return None
    return ("no canary in this suite: a canary runs first and stops the run (exit 4, naming what it got) when "
            "the app or the harness is broken, before the other cases are spent; without one a wrong token or a "
            "moved endpoint reads as every case failing. Add 2 single-turn cases any working build passes, with "
            "split: [smoke, canary] (coverage.py's splits.canary counts them)")