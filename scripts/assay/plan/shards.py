"""The plan's `shards` block (wave 2 §4): its rules and a shard's slice of the plan.

`shards: {count, assignment: {case_id: i}, ...}` with i in 1..count. Canaries are in no
assignment: they belong to every shard and run first in each. Every other case of the
plan is assigned to exactly one shard. The runner (`run_cases.py --shard I`), the merge
and make_plan all read the block through this module only.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..core.errors import AssayError
from ..core.ids import parse_run_id

MAX_SHARDS = 256


def is_canary(case: Mapping[str, Any]) -> bool:
    return "canary" in (case.get("split") or [])


def shard_dir_name(run_id: str, index: int | str) -> str:
    """A shard's run directory name: `<run_id>.shard-<I>`, so shards of one plan never share a
    directory or a runner lock, and `gate.py --latest` never mistakes a slice for a run."""
    return f"{run_id}.shard-{index}"


def parse_shard_dir_name(name: str) -> tuple[str, int] | None:
    """(run_id, index) of a shard's run directory name (`shard_dir_name`), else None."""
    base, sep, index = name.rpartition(".shard-")
    if sep and index.isdigit() and parse_run_id(base):
        return base, int(index)
    return None


SHARD_ENV_K8S = "JOB_COMPLETION_INDEX"   # Kubernetes Indexed Job: 0..N-1
SHARD_ENV = "ASSAY_SHARD_INDEX"           # anything else: 1..N, as --shard I
# Which attempt of the plan wrote a shard: the Kubernetes recipe sets it from the Job's controller
# uid (a retried pod keeps it, a re-applied Job gets a new one). The merge refuses shards of two.
ATTEMPT_ENV = "ASSAY_SHARD_ATTEMPT"
_ATTEMPT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}")


def shard_attempt(environ: Mapping[str, str]) -> str | None:
    """The attempt id a shard's manifest records (`shard.attempt`), from ASSAY_SHARD_ATTEMPT; None
    when unset or empty (no check at the merge, as before). AssayError(2) naming the variable for a
    value that is not an id."""
    raw = (environ.get(ATTEMPT_ENV) or "").strip()
    if not raw:
        return None
    if not _ATTEMPT.fullmatch(raw):
        raise AssayError(f"{ATTEMPT_ENV}={raw[:80]!r} is not an attempt id (1-128 letters, digits and ._:/-, e.g. "
                         "the Job's controller uid: metadata.labels['batch.kubernetes.io/controller-uid'])", 2,
                         key=ATTEMPT_ENV, variable=ATTEMPT_ENV)
    return raw


def merge_attempt(value: str | None) -> str | None:
    """merge_runs.py --attempt: the attempt (the shards Job's uid) whose shards the merge takes; None
    when not given. AssayError(2) for an empty value (the recipe's `kubectl get job ... uid` found no
    Job, or the merge Job was applied without the value) or one that is not an attempt id."""
    if value is None:
        return None
    raw = value.strip()
    if not raw:
        raise AssayError("--attempt is empty: give the uid of the Job whose shards this merge is for "
                         "(kubectl get job assay-shards -o jsonpath='{.metadata.uid}'; the recipe's wait step "
                         "sets SHARDS_JOB_UID in the merge Job from it: skills/run/references/kubernetes.md); "
                         "an empty value would merge whichever Job's shards the store holds", 2, key="--attempt")
    if not _ATTEMPT.fullmatch(raw):
        raise AssayError(f"--attempt {raw[:80]!r} is not an attempt id (1-128 letters, digits and ._:/-: the "
                         f"shards Job's metadata.uid, the {ATTEMPT_ENV} its pods recorded)", 2, key="--attempt")
    return raw


def shard_from_env(plan: Mapping[str, Any], environ: Mapping[str, str]) -> int:
    """`--shard auto`: the shard (1-based) from JOB_COMPLETION_INDEX (0-based, as a Kubernetes
    Indexed Job sets it), else ASSAY_SHARD_INDEX (1-based, as --shard I). AssayError(2) naming
    both variables when neither is set, or the one set is not a shard of the plan."""
    block = plan.get("shards")
    if not block:
        raise AssayError("--shard auto: this plan has no shards block; build it with make_plan.py --shards N "
                         "(or run it whole without --shard)", 2, key="--shard")
    count = block["count"]
    ranges = f"{SHARD_ENV_K8S} 0..{count - 1} (0-based) or {SHARD_ENV} 1..{count} (1-based)"
    for name, base in ((SHARD_ENV_K8S, 0), (SHARD_ENV, 1)):
        raw = (environ.get(name) or "").strip()
        if not raw:
            continue
        value = int(raw) if raw.isascii() and raw.isdigit() else None
        if value is None or not base <= value <= count - 1 + base:
            why = (f" (a Job with more completions than the plan's --shards {count}? make them equal)"
                   if value is not None and value > count - 1 + base else "")
            raise AssayError(f"--shard auto: {name}={raw!r} is not a shard of this plan's {count}{why}; set {ranges}",
                             2, key="--shard", variable=name)
        return value + 1 - base
    raise AssayError(f"--shard auto: neither {SHARD_ENV_K8S} nor {SHARD_ENV} is set; set {ranges} (a Kubernetes "
                     "Indexed Job sets the first), or pass --shard I", 2, key="--shard")


def whole_plan_in_a_shard_slot(plan: Mapping[str, Any], environ: Mapping[str, str]) -> None:
    """A sharded plan run without --shard where a shard index is set (a pod of an Indexed Job, a
    scheduler's slot): every slot would run the whole plan, all of them publishing to the one
    unsharded prefix where the merge finds no shard. AssayError(2) naming the variable and the fix."""
    block = plan.get("shards")
    if not block:
        return
    for name in (SHARD_ENV_K8S, SHARD_ENV):
        raw = (environ.get(name) or "").strip()
        if raw:
            raise AssayError(f"{name}={raw[:20]!r} is set (one shard's slot: a Kubernetes Indexed Job's pod, or "
                             f"a scheduler's) and the plan has {block['count']} shards, but --shard was not given: "
                             "every slot would run the whole plan, each publishing it where the merge finds no "
                             f"shard; add --shard auto (the Job's args), or unset {name} to run the whole plan "
                             "here", 2, key="--shard", variable=name)


def check_shards(plan: Mapping[str, Any], source: str) -> None:
    """Cross-field rules of the `shards` block (its shape is the plan schema's). AssayError(2)."""
    block = plan.get("shards")
    if block is None:
        return
    count = block["count"]
    assignment = block["assignment"]
    fix = "rebuild the plan with make_plan.py --shards N"
    canaries = set()
    for i, case in enumerate(plan["cases"]):
        cid = case["id"]
        if is_canary(case):
            canaries.add(cid)
            if cid in assignment:
                raise AssayError(f"{source}: shards.assignment names canary {cid!r} (cases[{i}]); canaries run "
                                 f"in every shard and are never assigned; {fix}", 2,
                                 key=f"shards.assignment.{cid}", case_id=cid)
        elif cid not in assignment:
            raise AssayError(f"{source}: case {cid!r} (cases[{i}]) has no shard in shards.assignment; {fix}", 2,
                             key="shards.assignment", case_id=cid)
        elif not 1 <= assignment[cid] <= count:
            raise AssayError(f"{source}: shards.assignment.{cid} is {assignment[cid]}, not a shard of 1..{count}; "
                             f"{fix}", 2, key=f"shards.assignment.{cid}", case_id=cid)
    if len(assignment) + len(canaries) != len(plan["cases"]):
        known = {c["id"] for c in plan["cases"]}
        stray = sorted(cid for cid in assignment if cid not in known)
        raise AssayError(f"{source}: shards.assignment names {len(stray)} case(s) that are not in the plan "
                         f"({', '.join(stray[:5])}); {fix}", 2, key="shards.assignment", case_ids=stray[:20])
    used = set(assignment.values())
    empty = [i for i in range(1, count + 1) if i not in used]
    if empty:
        raise AssayError(f"{source}: shard(s) {', '.join(map(str, empty))} of {count} hold no case; {fix} "
                         "with N at most the number of non-canary cases", 2, key="shards.count")


def shard_cases(plan: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    """Shard `index`'s cases in plan order: every canary, then nothing else but its own cases."""
    assignment = plan["shards"]["assignment"]
    return [c for c in plan["cases"] if is_canary(c) or assignment.get(c["id"]) == index]


def slice_plan(plan: Mapping[str, Any], index: Any) -> dict[str, Any]:
    """The plan a shard run executes: the same plan with only shard `index`'s cases.
    AssayError(2) when the plan has no shards or `index` is not one of them."""
    block = plan.get("shards")
    if not block:
        raise AssayError("--shard: this plan has no shards block; build it with make_plan.py --shards N "
                         "(or run it whole without --shard)", 2, key="--shard")
    if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index <= block["count"]:
        raise AssayError(f"--shard {index}: the plan has {block['count']} shard(s), numbered 1..{block['count']}",
                         2, key="--shard")
    return dict(plan, cases=shard_cases(plan, index))
