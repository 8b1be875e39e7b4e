"""Is a converted suite still its state dir? (make_plan.py asks before it plans.)

`convert_suite.py` records `source_sha256`: one digest over every file the conversion read
(adapter.yaml, profile.yaml, datasets/ with its manifest, rubrics/*.md, judge/judge.yaml,
simulator/simulator.yaml; `assay.suite.convert.source_files`). A case edited after the conversion and planned from
the old converted.json would run the old expectation, and the gate would answer for a suite the
user no longer has (an expectation tightened in the YAML, a green gate on the loose one). So
`check_fresh` re-hashes the state dir: the same digest is the fast path; a different one
re-converts it and compares, refusing (exit 2) when the suite itself changed, naming what changed
and the command that fixes it. An edit that changes nothing converted (a comment, a blank line)
plans as before. A converted.json without the digest (written before it existed) is not checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import AssayError

MAX_NAMED = 8
# converted keys and the file each comes from, for the message (cases are named one by one)
PARTS = (("adapter", "adapter.yaml"), ("capability_matrix", "profile.yaml"), ("scoring", "profile.yaml"),
         ("profile", "profile.yaml"), ("manifest", "datasets/dataset.yaml"), ("rubrics", "rubrics/"),
         ("judge_config", "judge/judge.yaml"), ("simulator_config", "simulator/simulator.yaml"))


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two converted suites, in words (files and case ids)."""
    out: list[str] = []
    for key, label in PARTS:
        if old.get(key) != new.get(key) and label not in out:
            out.append(label)
    old_cases = {c.get("id"): c for c in old.get("cases") or [] if isinstance(c, dict)}
    new_cases = {c.get("id"): c for c in new.get("cases") or [] if isinstance(c, dict)}
    sources = {**(old.get("sources") or {}), **(new.get("sources") or {})}
    for cid in sorted(set(old_cases) | set(new_cases), key=str):
        where = sources.get(cid, "datasets/")
        if cid not in new_cases:
            out.append(f"{where} (case {cid} removed)")
        elif cid not in old_cases:
            out.append(f"{where} (case {cid} added)")
        elif old_cases[cid] != new_cases[cid]:
            out.append(f"{where} (case {cid} edited)")
    if not out and old.get("cases") != new.get("cases"):
        out.append("datasets/ (the cases)")
    return out


def check_fresh(converted: dict[str, Any], converted_path: str | Path, state_dir: Path) -> None:
    """AssayError(2) when `converted` no longer matches the state dir's files; None otherwise."""
    recorded = converted.get("source_sha256")
    if not isinstance(recorded, str):
        return
    state = Path(state_dir)
    if not (state / "adapter.yaml").is_file():
        return   # not a state dir (make_plan names what is missing), or one used only for reports/
    from .convert import convert_state_dir, source_sha256
    try:
        if source_sha256(state) == recorded:
            return
    except (AssayError, OSError):
        pass     # unreadable now: re-converting below says why
    fix = (f"re-run convert_suite.py {state} -o {converted_path} (with the same --split-dir), "
           "then make_plan.py")
    try:
        now = convert_state_dir(state)
    except AssayError as exc:
        raise AssayError(f"{converted_path} is older than the state dir {state} (its files changed since "
                         f"convert_suite.py wrote it), and converting the state dir now fails: {exc.message}",
                         2, key="converted", file=str(converted_path)) from None
    changed = _changes(converted, now)
    if not changed:
        return   # comments, blank lines, key order: nothing the plan reads changed
    shown = "; ".join(changed[:MAX_NAMED]) + (f"; and {len(changed) - MAX_NAMED} more"
                                             if len(changed) > MAX_NAMED else "")
    raise AssayError(f"{converted_path} is older than the state dir {state}: changed since convert_suite.py "
                     f"wrote it: {shown}. A plan from it would run the suite as it was, not as it is; {fix}",
                     2, key="converted", file=str(converted_path), changed=changed)


# --- the plan: is the suite it was made from still the state dir's? (run_cases.py asks before it runs)
# A plan carries its cases; one made before a case was edited runs the old expectation, and its gate
# answers for a suite the user no longer has. make_plan.py records `source` (plan_source): the
# conversion's source digest and one digest per converted part; run_cases.py re-hashes the state dir
# (the same digest is the fast path), else converts it again and compares the parts.
PLAN_PARTS = tuple(key for key, _ in PARTS) + ("cases",)


def _part_digests(converted: dict[str, Any]) -> dict[str, str]:
    from ..core.jsonio import sha256_json
    return {key: sha256_json(converted.get(key)) for key in PLAN_PARTS}


def plan_source(converted: dict[str, Any]) -> dict[str, Any] | None:
    """The plan's `source` block (None for a converted suite without its digest: not checked)."""
    recorded = converted.get("source_sha256")
    if not isinstance(recorded, str):
        return None
    return {"source_sha256": recorded, "parts_sha256": _part_digests(converted),
            "cases_count": len(converted.get("cases") or [])}


def _plan_changes(plan: Any, now: dict[str, Any], source: dict[str, Any]) -> list[str]:
    """What differs between the suite a plan was made from and the state dir now, in words."""
    digests, was = _part_digests(now), source["parts_sha256"]
    out: list[str] = []
    for key, label in PARTS:
        if digests[key] != was.get(key) and label not in out:
            out.append(label)
    if digests["cases"] != was.get("cases"):
        new = {c.get("id"): c for c in now.get("cases") or [] if isinstance(c, dict)}
        sources = now.get("sources") or {}
        ids: set[Any] = set()
        for case in plan["cases"]:
            cid = case.get("id")
            ids.add(cid)
            if cid not in new:
                out.append(f"{sources.get(cid, 'datasets/')} (case {cid} removed)")
            elif new[cid] != dict(case):
                out.append(f"{sources.get(cid, 'datasets/')} (case {cid} edited)")
        # not one of the plan's own: a case outside it matters only if a plan made now could select it,
        # and make_plan.py selects by the plan's split first (a full-only case edited under a smoke plan
        # leaves a smoke plan made now the same cases)
        if not any(item.endswith(("removed)", "edited)")) for item in out) and _selectable_outside(plan, now, ids):
            count, before, planned = len(now.get("cases") or []), source.get("cases_count"), len(ids)
            out.append(f"datasets/ ({count - before:+d} case(s): the suite has {count}, this plan {planned}; a plan "
                       "made now may select others)" if isinstance(before, int) and before != count else
                       f"datasets/ (a case outside this plan's {planned} edited, or one added and another removed; "
                       "a plan made now may select it)")
    return out


def _selectable_outside(plan: Any, now: dict[str, Any], planned: set[Any]) -> bool:
    """Does the suite now hold a case outside the plan that carries the plan's selecting split?"""
    from ..plan.select import case_splits
    split = plan.get("selecting_split")
    return any(case.get("id") not in planned and (not isinstance(split, str) or split in case_splits(case))
               for case in now.get("cases") or [] if isinstance(case, dict))


def check_plan_fresh(plan: Any, plan_path: str, *, allow: bool, resume: bool = False) -> str | None:
    """AssayError(2) when the plan's suite is no longer its state dir's (with `allow`, the same words
    returned as a warning); None when it is, when the plan records no `source` (made before it
    existed) or when its state dir is not here (a plan run on another machine)."""
    source = plan.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("parts_sha256"), dict):
        return None
    state = Path(plan["paths"]["state_dir"])
    if not (state / "adapter.yaml").is_file():
        return None
    from .convert import convert_state_dir, source_sha256
    try:
        if source_sha256(state) == source.get("source_sha256"):
            return None
    except (AssayError, OSError):
        pass
    fix = (f"re-run convert_suite.py {state} and make_plan.py for a plan of the suite as it is, or pass "
           "--stale-plan to run this plan as it was made (the run records the suite it ran)")
    if resume:   # a new plan is another run (its resume is refused): finish this one as started, or start anew
        fix = (f"finish the interrupted run as it was started with --resume --stale-plan, or start a new run of the "
               f"suite as it is (convert_suite.py {state}, make_plan.py, run_cases.py without --resume)")
    try:
        now = convert_state_dir(state)
    except AssayError as exc:
        changed = [f"converting it now fails: {exc.message}"]
    else:
        changed = _plan_changes(plan, now, source)
    if not changed:
        return None   # comments, blank lines, key order: nothing the plan holds changed
    shown = "; ".join(changed[:MAX_NAMED]) + (f"; and {len(changed) - MAX_NAMED} more"
                                             if len(changed) > MAX_NAMED else "")
    words = (f"--plan {plan_path} is older than its state dir {state}: changed since make_plan.py wrote it: "
             f"{shown}. Its gate would answer for the suite as it was, not as it is")
    if allow:
        return words + " (--stale-plan: run as planned)"
    raise AssayError(f"{words}; {fix}", 2, key="--plan", file=str(plan_path), changed=changed)
