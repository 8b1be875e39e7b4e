"""Two arms' runs of one suite (`make_plan.py --arm`), compared: the lift a change gives an agent app.

`compare_runs.py` adds a `lift` block when either run was planned under an arm
(`manifest_extra.arm`): the arms' names, per case the verdict on each side (pass^k: a case passes
only when all its k repeats did), each side's pass rate and the difference, the paired statistics
of the comparison (the exact test and the minimum detectable effect at this n, `stats`), and the
trigger accuracy of the skill expectations on each side (the share of cases asserting
`expect.skills` whose skills layer passed). Nothing is re-decided: the verdicts are the runs' own.

The pass rates count the cases scored pass/fail in both runs on an unchanged case (a case edited
between the runs is two cases, never a lift). `caveats` says, in the lift's own words, each way
the two runs differ by more than the arm (`arm_caveats`): the same arm twice, two arms that ran the
same agent, an agent key neither arm sets, another k, an edited case, a case scored
in one run only, a replayed or rescored run, a skill the arm without its plugin still invoked. With any caveat the
`sentence` starts by saying the difference is not the arm's alone. `agent_cli`: the Claude Code
CLI versions and models each side's transcripts report (their init events, as compare.agent_cli
folds them for the comparison's notes); two sides that differ is a caveat (the CLI's change or the
model's, mixed with the arm's).

A side whose run did not finish its plan (status other than `ok`: a canary stopped it, the infra bar,
`--fail-fast`, missing artifacts) has no pass rate over the arm's suite: the lift is withheld
(`pass_rate.lift` null, `withheld` and `sentence` naming the run, its status and the fix). Two finished
runs with no case scored pass/fail under both arms on an unchanged case have no pass rate either: the
`sentence` says "No lift: ..." with what became of the cases (edited, scored in one run only, ...). Canaries
are left out of the pass rates and the trigger accuracy, as from every paired statistic
(`assay.stats.paired.paired_population`).
"""

from __future__ import annotations

from typing import Any

from ..stats.paired import paired_population
from .sides import Side

PAIRED_BUCKETS = ("newly_failing", "newly_passing", "still_failing", "still_passing", "judge_flip")


def arm_of(side: Side) -> dict[str, Any] | None:
    extra = side.manifest.get("manifest_extra") if isinstance(side.manifest.get("manifest_extra"), dict) else {}
    arm = extra.get("arm")
    return arm if isinstance(arm, dict) else None


def _agent(side: Side) -> dict[str, Any] | None:
    inv = side.manifest.get("invocation") if isinstance(side.manifest.get("invocation"), dict) else {}
    agent = inv.get("agent")
    return agent if isinstance(agent, dict) else None


def _rate(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _trigger(side: Side, ids: list[str]) -> dict[str, Any]:
    asserted = [side.rows[c] for c in ids if c in side.rows
                and str((side.rows[c].get("layers") or {}).get("skills")) in ("pass", "fail")]
    passed = [str(r["layers"]["skills"]) == "pass" for r in asserted]
    return {"cases": len(asserted), "correct": sum(passed), "accuracy": _rate(passed)}


STATUS_FIX = {
    "aborted_canary": "a canary failed and stopped it before the other cases ran: see why with `gate.py {run}`, "
                      "fix it, then run the arm again",
    "aborted_infra": "too many infra errors stopped it: see why with `gate.py {run}`, fix the agent's setup, then "
                     "run the arm again",
    "stopped_fail_fast": "--fail-fast stopped it before every case ran: run the arm again without --fail-fast",
    "incomplete": "its run dir lacks artifacts (`run_cases.py --verify {run}` names them): run the arm again",
}


def withheld(base: Side, cand: Side, names: dict[int, str]) -> str | None:
    """Why no lift is drawn: a side whose run did not finish its plan (its status is not `ok`) scored
    only part of the suite, so a pass rate over what it scored is not the arm's (a run a canary stopped
    scored the canary alone). compare_runs.py itself refuses a `running` run (load_side)."""
    said = []
    for side in (base, cand):
        status = side.describe()["status"]
        if status != "ok":
            fix = STATUS_FIX.get(status, "see why with `gate.py {run}`, then run the arm again").format(run=side.run_dir)
            said.append(f"the run {side.run_id} of arm {names[id(side)]} ended with status {status!r}, not 'ok' "
                        f"({fix})")
    if not said:
        return None
    return ("no lift: " + "; ".join(said) + ": only part of the suite was scored, so no pass rate over it is the "
            "arm's (the per-case verdicts are shown)")


def arms_choose_cli(base: Side, cand: Side) -> bool:
    """An arm sets a key that chooses the CLI or its model (`program`, `command`, `env`): two arms that
    do compare them on purpose."""
    armed = set((arm_of(base) or {}).get("overrides") or {}) | set((arm_of(cand) or {}).get("overrides") or {})
    return bool(armed & {"program", "command", "env"})


def _cli_caveats(base: Side, cand: Side, clis: dict[str, dict], bname: str, cname: str) -> list[str]:
    """The two sides' transcripts report different CLI versions or models while neither arm sets a key
    that chooses them (arms_choose_cli)."""
    if arms_choose_cli(base, cand):
        return []
    out = []
    for key, what, fix in (("versions", "Claude Code CLI versions", "the CLI was upgraded between the runs; pin it "
                            "(`make claude-cli`, or one `invocation.agent.program`) and run both arms on it"),
                           ("models", "models", "run both arms with one model")):
        b, c = clis["base"][key], clis["candidate"][key]
        if b and c and b != c:
            out.append(f"the arms' transcripts report different {what} (arm {bname} {', '.join(b)}, arm {cname} "
                       f"{', '.join(c)}; runs {base.run_id}, {cand.run_id}): the lift mixes that change with the "
                       f"arm's; {fix}")
    return out


def two_arms(base: Side, cand: Side) -> bool:
    """Both runs were planned under an arm, two different ones: a lift, whose order is the arms'."""
    barm, carm = arm_of(base), arm_of(cand)
    return barm is not None and carm is not None and barm.get("name") != carm.get("name")


def arm_swapped(base: Side, cand: Side) -> str | None:
    """Two arms given in the order that reads the plugin's lift negatively (the clause saying so): the
    base arm's agent has plugin dirs (or an MCP config) the candidate's lacks, and not the other way
    round. The arms, not the runs' start times, say which side is which (the arm without the plugin
    is often run second)."""
    barm, carm = arm_of(base), arm_of(cand)
    ba, ca = _agent(base), _agent(cand)
    if barm is None or carm is None or ba is None or ca is None or barm.get("name") == carm.get("name"):
        return None
    bp, cp = set(ba.get("plugin_dirs") or []), set(ca.get("plugin_dirs") or [])
    if cp < bp:
        what = "plugin dir(s)"
    elif cp == bp and ba.get("mcp_config") and not ca.get("mcp_config"):
        what = "an mcp_config"
    else:
        return None
    return f"the base arm {barm.get('name')} has {what} the candidate arm {carm.get('name')} lacks"


def _named(ids: list[str], most: int = 5) -> str:
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def _asserted_skills_invoked(side: Side, ids: list[str]) -> dict[str, list[str]]:
    """Case id -> the skills its expect.skills names that the agent invoked (the skills layer's own
    decision: a must_trigger not missing, a must_not_trigger unwanted)."""
    out = {}
    for cid in ids:
        if str((side.rows.get(cid, {}).get("layers") or {}).get("skills")) not in ("pass", "fail"):
            continue
        layer = (side.verdict_doc(cid).get("layers") or {}).get("skills")
        if not isinstance(layer, dict):
            continue
        missing = layer.get("missing") or []
        hit = [s for s in layer.get("must_trigger") or [] if s not in missing] + list(layer.get("unwanted") or [])
        if hit:
            out[cid] = hit
    return out


def _isolation(base: Side, cand: Side, names: dict[int, str], ids: list[str]) -> list[str]:
    """An arm whose plugin_dirs are a strict subset of the other's that still invoked a skill a case
    asserts: the skill reached the agent another way, so the arms are not isolated."""
    out = []
    for mine, other in ((base, cand), (cand, base)):
        a, b = _agent(mine), _agent(other)
        if a is None or b is None:
            continue
        have, more = set(a.get("plugin_dirs") or []), set(b.get("plugin_dirs") or [])
        if not have < more:
            continue
        hits = _asserted_skills_invoked(mine, ids)
        if hits:
            skills = sorted({s for v in hits.values() for s in v})
            out.append(f"arm {names[id(mine)]} (run {mine.run_id}) invoked {', '.join(skills)} in {len(hits)} "
                       f"case(s) ({_named(list(hits))}) without the plugin dir(s) arm {names[id(other)]} adds: the "
                       "skill reached the agent another way (a .claude/ in the fixture repo, a plugin dir the base "
                       "invocation.agent keeps, CLAUDE_CONFIG_DIR in env_allowlist), so the arms are not isolated "
                       "and the lift measures less than the skill; remove that way and run the arm again")
    return out


def arm_caveats(base: Side, cand: Side, pairs: list[dict[str, Any]], bname: str, cname: str) -> list[str]:
    """Each way the two runs differ by more than the arm, in words naming the runs and the fix."""
    barm, carm = arm_of(base), arm_of(cand)
    names = {id(base): bname, id(cand): cname}
    out = []
    if barm is not None and carm is not None and bname == cname:
        out.append(f"both runs ({base.run_id}, {cand.run_id}) were planned under the same arm ({bname}): this is "
                   "a re-run, not a lift; plan the other run with make_plan.py --arm <the other arm>")
    ba, ca = _agent(base), _agent(cand)
    if bname != cname and ba is not None and ca is not None:
        if ba == ca:
            out.append(f"arms {bname} and {cname} ran the same agent (invocation.agent is the same in the manifests "
                       f"of {base.run_id} and {cand.run_id}: the arms' keys change nothing the base block does not "
                       "already set): the lift measures nothing; leave the key out of invocation.agent, set it in "
                       "the arm that has it (adapter.yaml arms), plan and run both arms again")
        else:
            armed = set((barm or {}).get("overrides") or {}) | set((carm or {}).get("overrides") or {})
            if "command" in armed:
                armed.add("command_override")
            other = sorted(k for k in set(ba) | set(ca) if ba.get(k) != ca.get(k) and k not in armed)
            if other:
                out.append(f"the runs {base.run_id} and {cand.run_id} differ in invocation.agent "
                           f"{', '.join(other)}, which neither arm sets: the adapter changed between the runs, and "
                           "the lift mixes that change with the arm's; run both arms from one adapter.yaml")
    if base.k != cand.k:
        out.append(f"k differs (arm {bname} k={base.k}, arm {cname} k={cand.k}): pass^k at a higher k fails more "
                   "often by itself; plan both arms with the same --k")
    edited = [p["case_id"] for p in pairs if p["bucket"] == "expectation_changed"]
    if edited:
        out.append(f"{len(edited)} case(s) changed between the runs (case_sha256 differs: {_named(edited)}): left "
                   "out of the pass rates; run both arms on one suite")
    one_sided = [p["case_id"] for p in pairs if p["bucket"] in ("changed_unscored", "only_in_base",
                                                                 "only_in_candidate")]
    if one_sided:
        out.append(f"{len(one_sided)} case(s) scored in one arm's run only ({_named(one_sided)}): left out of the "
                   "pass rates")
    for side in (base, cand):
        extra = side.manifest.get("manifest_extra") if isinstance(side.manifest.get("manifest_extra"), dict) else {}
        replayed = side.manifest.get("replayed_from")
        source = (replayed if isinstance(replayed, dict) else None) or (
            extra.get("rescored_from") if isinstance(extra.get("rescored_from"), dict) else None)
        if source is not None:
            how = "replayed" if isinstance(replayed, dict) else "rescored"
            out.append(f"the run {side.run_id} of arm {names[id(side)]} was {how} from "
                       f"{('run ' + str(source.get('run_id'))) if source.get('run_id') else 'a recording'}: its "
                       "answers are a recording's, not the agent's under this arm; run the arm live")
    return out + _isolation(base, cand, names, [p["case_id"] for p in pairs])


def lift_block(base: Side, cand: Side, pairs: list[dict[str, Any]], stats: dict | None,
               stats_note: str | None, clis: dict[str, dict | None] | None = None) -> dict[str, Any] | None:
    """`clis`: each side's {versions, models} as the comparison folded them (compare.agent_cli; None: a
    side that is not an agent run, which reports none)."""
    barm, carm = arm_of(base), arm_of(cand)
    if barm is None and carm is None:
        return None
    bname, cname = (barm or {}).get("name") or "(no arm)", (carm or {}).get("name") or "(no arm)"
    same = bname == cname
    bcol, ccol = (f"{bname} ({base.run_id})", f"{cname} ({cand.run_id})") if same else (bname, cname)
    names = {id(base): bname, id(cand): cname}
    stop = withheld(base, cand, names)
    scored = [] if stop else paired_population([p for p in pairs if p["bucket"] in PAIRED_BUCKETS])
    brate = _rate([p["verdict"]["base"] == "pass" for p in scored])
    crate = _rate([p["verdict"]["candidate"] == "pass" for p in scored])
    measured = [p["case_id"] for p in pairs if not p.get("canary")]   # as the pass rates: never a canary
    empty = {"versions": [], "models": []}
    clis = {w: (clis or {}).get(w) or empty for w in ("base", "candidate")}
    caveats = arm_caveats(base, cand, pairs, bname, cname) + _cli_caveats(base, cand, clis, bname, cname)
    out = {
        "base_arm": barm, "candidate_arm": carm,
        "reading": (f"a re-run of arm {bname}, not a lift" if same and barm is not None and carm is not None
                    else f"lift of arm {cname} over arm {bname}"),
        "k": {"base": base.k, "candidate": cand.k},
        "cases": [{"case_id": p["case_id"], bcol: p["verdict"]["base"], ccol: p["verdict"]["candidate"]}
                  for p in pairs],
        "pass_rate": {"base": brate, "candidate": crate,
                      "lift": None if brate is None or crate is None else round(crate - brate, 4),
                      "cases": len(scored)},
        "trigger_accuracy": {"base": _trigger(base, measured), "candidate": _trigger(cand, measured)},
        "agent_cli": clis,
        "stats": stats, "stats_note": stats_note,
        "caveats": caveats,
    }
    if barm is not None and carm is not None and same:
        out["note"] = f"both runs were planned under the same arm ({bname}): this is a re-run, not a lift"
    lead = (f"Not the arm's lift alone ({len(caveats)} caveat(s): {caveats[0]}"
            + (" ...; see lift.caveats" if len(caveats) > 1 else "") + "). ") if caveats else ""
    if stop:
        out["withheld"] = out["sentence"] = stop
    elif not scored:
        out["sentence"] = lead + unpaired_words([p for p in pairs if not p.get("canary")], bname, cname)
    else:
        said = stats["mde_sentence"] if stats and stats.get("mde_sentence") else f"No paired statistics: {stats_note}."
        out["sentence"] = f"{lead}Arm {cname} vs {bname}: pass^k {crate} vs {brate} over {len(scored)} case(s). {said}"
    return out


UNPAIRED_WORDS = {"expectation_changed": "edited between the runs", "changed_unscored": "scored in one arm's run only",
                  "only_in_base": "only in arm {b}'s run", "only_in_candidate": "only in arm {c}'s run",
                  "still_unscored": "scored in neither run (unscored, infra error or skipped: gate.py names why)"}


def unpaired_words(pairs: list[dict[str, Any]], bname: str, cname: str) -> str:
    """Why no pass rate is drawn when both runs finished: no (non-canary) case was scored pass/fail
    under both arms on an unchanged case; what became of the cases instead, counted by bucket."""
    counts: dict[str, int] = {}
    for p in pairs:
        counts[p["bucket"]] = counts.get(p["bucket"], 0) + 1
    said = "; ".join(f"{n} {UNPAIRED_WORDS.get(b, b).format(b=bname, c=cname)}" for b, n in counts.items())
    return ("No lift: no case was scored pass/fail under both arms on an unchanged case"
            + (f" ({len(pairs)} case(s): {said})" if pairs else " (the runs have no case but canaries)")
            + ", so there is no pass rate to compare; run both arms on one suite, each case scoring in both runs")
