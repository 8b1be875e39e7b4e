"""Which attempt of a plan wrote each shard (`shard.attempt`: ASSAY_SHARD_ATTEMPT, a Kubernetes Job's
controller uid), and the merge's refusals about it (runner contract §19, §19a): shards of two attempts
(`mixed_attempts`), shards of another attempt than `merge_runs.py --attempt` (`other_attempts`), and
shards that record an attempt merged without being told which (exit 2)."""

from __future__ import annotations

from ..core.errors import AssayError
from ..plan.shards import ATTEMPT_ENV


def attempt_of(shard) -> str | None:
    """The attempt a shard's manifest records (`shard.attempt`), None when it records none."""
    block = shard.manifest.get("shard") if isinstance(shard.manifest.get("shard"), dict) else {}
    attempt = block.get("attempt")
    return attempt if isinstance(attempt, str) and attempt else None


def other_attempts(shards: list, expected: str) -> list[dict]:
    """merge_runs.py --attempt: the shards written by another attempt than `expected` (or recording
    none), one row each in shard order: {shard, attempt, started_at}."""
    return [{"shard": s.index, "attempt": attempt_of(s), "started_at": s.manifest.get("started_at")}
            for s in sorted(shards, key=lambda s: s.index) if attempt_of(s) != expected]


def attempts_of(shards: list) -> list[dict]:
    """The shards grouped by the attempt that wrote them (`shard.attempt`, ASSAY_SHARD_ATTEMPT: a
    Kubernetes Job's controller uid), the newest (latest started) first; [] when they are one
    attempt's, or none records one (shards run outside Kubernetes: no check)."""
    groups: dict = {}
    for s in shards:
        groups.setdefault(attempt_of(s), []).append(s)
    if len(groups) < 2:
        return []
    rows = [{"attempt": attempt, "shards": sorted(x.index for x in runs),
             "started_at": max(str(x.manifest.get("started_at")) for x in runs)} for attempt, runs in groups.items()]
    return sorted(rows, key=lambda r: (r["started_at"], str(r["attempt"])), reverse=True)


FIND_UID = "kubectl get job assay-shards -o jsonpath='{.metadata.uid}'"


def other_attempts_message(rows: list[dict], attempt: str | None, given: list[int]) -> str:
    """--attempt X and shards another attempt wrote: each named with the attempt found, and the fix."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(r["attempt"], []).append(r)
    found = "; ".join(f"shard(s) {', '.join(str(r['shard']) for r in rs)} by attempt {a or '(none recorded)'} "
                      f"(started {max(str(r['started_at']) for r in rs)})" for a, rs in groups.items())
    head = f"{found}, not by --attempt {attempt} (the Job this merge is for): not this run's shards"
    ours = sorted(set(given) - {r["shard"] for r in rows})
    if ours:
        return (f"{head}; attempt {attempt} wrote shard(s) {', '.join(map(str, ours))} only: wait until every "
                "index of that Job has finished (the recipe's wait loop) and merge again; an index of it that stopped "
                "before it knew its shard (its pod's log says why) left the earlier shard in place: fix the Job and "
                "run the plan again as a new plan (make_plan.py: a new run id)")
    return (f"{head}; no shard here was written by attempt {attempt}: every pod of that Job stopped before it "
            "published, or before it knew its shard (the plan unreadable, the --publish URL or the s3 extra "
            "refused, an index the plan has no shard for: such a pod clears nothing, so an earlier Job's shards "
            "are what the store holds); its pods' logs say why: fix that and run the plan again as a new plan "
            f"(make_plan.py: a new run id). If {attempt} is not the uid of the Job that ran the shards (the merge "
            f"Job's own?), give --attempt the shards Job's: {FIND_UID}")


def refuse_untold(plan: dict, shards: list) -> None:
    """Shards that record an attempt (a Kubernetes Job's), merged without --attempt: refused (exit 2),
    naming the attempt found and the fix. Nothing tells this merge that the Job just run wrote them:
    one re-applied with the same plan whose every pod stopped before it knew its shard claimed nothing,
    and the earlier Job's shards would merge as its run (the gate open on results it never produced)."""
    found = sorted({a for s in shards if (a := attempt_of(s)) is not None})
    if not found:
        return   # a CI matrix, one machine: no attempt recorded, none to check
    raise AssayError(f"merge refused: the shards were written by attempt {', '.join(found)} (their manifests' "
                     f"shard.attempt, {ATTEMPT_ENV}: a Kubernetes Job's uid) and this merge was not told which "
                     "attempt it is for: a Job re-applied with the same plan whose pods all stopped before they "
                     "knew their shard (the plan unreadable, the --publish URL or the s3 extra refused) left an "
                     "earlier Job's shards, which would merge as its run. Give merge_runs.py --attempt <the shards "
                     f"Job's uid> ({FIND_UID}; the recipe's wait step passes it to the merge Job: "
                     f"skills/run/references/kubernetes.md); --attempt {found[0]} only if that is the Job you mean",
                     2, key="--attempt", run_id=plan["run_id"], attempts_found=found)


def mixed_attempts_message(groups: list[dict]) -> str:
    """The shards of two attempts of one plan (a Job re-applied with the same plan): which shards
    each wrote, and the two ways to one attempt's run."""
    def shards(g: dict) -> str:
        return f"shard(s) {', '.join(map(str, g['shards']))}"
    named = "; ".join(f"{shards(g)} by attempt {g['attempt'] or '(none recorded)'} (started {g['started_at']})"
                      for g in groups)
    if len(groups) > 1 and all(len(g["shards"]) == 1 and g["attempt"] for g in groups):
        # each shard its own attempt: the Job's env gives every pod its own id, not the Job's
        return (f"every shard records its own attempt ({named}): if the Job was not applied once per shard, "
                f"{ATTEMPT_ENV} differs from pod to pod: set it from the Job's controller uid (valueFrom.fieldRef "
                "metadata.labels['batch.kubernetes.io/controller-uid'], which every pod of one Job shares), not the "
                "pod's own metadata.uid or metadata.name; then delete the Job and run the plan again (make_plan.py: "
                "a new run id)")
    return (f"shards of different attempts of this plan ({named}): the newest attempt (started last) has not "
            f"written {', '.join(shards(g) for g in groups[1:])} yet, and an earlier attempt's shard is not this "
            "one's; wait until every index of the newer Job has finished (the recipe's wait loop: kubectl wait "
            "--for=condition=complete never returns for a Job with a failed index) and merge again with --attempt <its uid>, or, to run the plan again, make a new plan (make_plan.py: a new run id)")
