"""compare.json: two runs paired case by case (runner contract §20).

`compare_runs(base_dir, candidate_dir)` returns the document: what differs between the runs
themselves (said up front, in `notes`), the headline, the bucket counts, every non-holdout pair in
its one bucket, holdout pairs as counts only (their ids appear nowhere), and the paired
statistics (`assay.stats.paired.compare`) computed once over the pairs scored pass/fail in both
runs on an unchanged case whose verdict moved with the app (newly_failing, newly_passing,
still_failing, still_passing; canaries and holdout cases left out). A judge flip (the judge
changed its verdict on the same answer and material) is not the app's fix or break: it is left
out of the paired test and counted apart (`stats_judge_flips`, and its own sentence in `words`).
`cost_latency`: each side's cost and latency per case and in total with the deltas
(compare.cost_delta, the viewer's block), its rows made in the same pass as the pairs; so is each
agent side's `agent_cli` (compare.agent_cli: the CLI versions and models its sessions reported,
said in `notes` when the two sides' differ).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.runapp import app_name
from ..core.version import HARNESS_VERSION
from ..stats.paired import compare_indexed, index_rows, paired_population, sign_test_one_sided
from .agent_cli import CliFold, cli_notes
from .buckets import BUCKETS, MEANING, SCORED, headline
from .cost_delta import CaseCosts, cost_latency, prices_of
from .pair_all import LAST, all_pairs, load_sides, two_processes
from .redaction import redact_pairs, should_redact
from .sides import Side

COMPARE_VERSION = 1
MAX_NAMED = 10
STATS_BUCKETS = ("newly_failing", "newly_passing", "still_failing", "still_passing")
SUITE_PART_WORDS = {"cases": "the cases (one or more case_sha256 differ, or cases were added or removed)",
                    "reading": "the adapter's response readers", "capability_matrix": "the capability matrix",
                    "scoring": "the scoring settings", "judge": "the judge's identity"}


def judge_only_notes(pairs: list[dict]) -> list[str]:
    """`judge_only`: a provisional rubric's verdict that changed, said even though it never gates:
    "judge_only: would have failed: refund-1 (refund-eta-v1, provisional, not gating)"."""
    out = []
    for base, cand, words in (("pass", "fail", "would have failed"), ("fail", "pass", "would have passed")):
        named = []
        for p in pairs:
            pins = [pin for j in p.get("judge_only") or () if (j["base"], j["candidate"]) == (base, cand)
                    for pin in (j["pins"] or ["rubric"])]
            if pins:
                named.append(f"{p['case_id']} ({', '.join(pins)}, provisional, not gating)")
        if named:
            out.append(f"judge_only: {words}: {', '.join(named[:10])}" + (f" and {len(named) - 10} more" if len(named) > 10 else "")
                       + " -- a change only an uncalibrated rubric sees; calibrate it (score_agreement.py --write) "
                         "to let it gate")
    return out


def run_notes(base: Side, cand: Side, clis: CliFold | None = None) -> list[str]:
    """What differs between the runs themselves, said before any case. `clis`: the agent CLI versions
    and models each side's sessions reported (compare.agent_cli), folded in the pairs' pass."""
    notes = []
    b, c = base.describe(), cand.describe()
    from ..report.gate_trust import shard_reason
    for side, d, info in (("base", base, b), ("candidate", cand, c)):
        shard = shard_reason(d.run_dir, d.manifest)   # the gate's words: a shard's dir is a slice of the plan, never a run
        if shard:
            notes.append(f"the {side} run {info['run_id']} ({d.run_dir.name}): {shard}; its cases outside the shard "
                         "read as added or removed")
    apps = [app_name(side.manifest) for side in (base, cand)]
    if None not in apps and apps[0] != apps[1]:
        notes.append(f"different apps: base {apps[0]!r}, candidate {apps[1]!r} (adapter.yaml app.name): "
                     "were the right two runs given?")
    if base.rows and cand.rows and base.rows.keys().isdisjoint(cand.rows.keys()):
        notes.append("the runs share no case id: nothing is paired, every case reads as added or removed "
                     "(two different suites, or a state dir's runs against another's?)")
    from .lift import arm_swapped, two_arms
    arms_swapped = arm_swapped(base, cand)
    if arms_swapped:
        notes.append(f"{arms_swapped}: the lift reads as the negative of the plugin's, newly failing and newly "
                     "passing the other way round; are the arguments swapped? (compare_runs.py WITHOUT WITH; "
                     "gate.py WITH --baseline WITHOUT)")
    elif base_started_after(b, c) and not two_arms(base, cand):   # two arms: the arms say which is which
        notes.append(f"the base run {b['run_id']} started after the candidate {c['run_id']} ({b['started_at']} > "
                     f"{c['started_at']}): the baseline is normally the older run (compare_runs.py BASE CANDIDATE, "
                     "api.compare(baseline, candidate)); if the two are swapped, newly failing and newly passing "
                     "read the other way round")
    if b["mode"] != c["mode"]:
        notes.append(f"mode differs: base {b['mode']}, candidate {c['mode']} (different selections: expect "
                     "unpaired cases)")
    if b["dataset_version"] != c["dataset_version"]:
        notes.append(f"dataset_version differs: base v{b['dataset_version']}, candidate v{c['dataset_version']}: "
                     "cases are paired by id; an edited case is expectation_changed")
    if b["k"] != c["k"]:
        notes.append(f"k differs: base k={b['k']}, candidate k={c['k']}: the folded verdicts (pass^k) are compared, "
                     "and each pair lists both sides' repeats; a higher k fails more often by itself")
    if b["harness_version"] != c["harness_version"]:
        notes.append(f"harness_version differs: base {b['harness_version']}, candidate {c['harness_version']}")
    if clis is not None:
        from .lift import arms_choose_cli
        notes += cli_notes(clis.of("base"), clis.of("candidate"), arms_choose_cli(base, cand))
    for side, d in (("base", b), ("candidate", c)):
        if d["status"] != "ok":
            notes.append(f"the {side} run's status is {d['status']!r}, not 'ok': only its finished cases are compared")
    if not base.has_case_hashes or not cand.has_case_hashes:
        which = ("both runs predate" if not base.has_case_hashes and not cand.has_case_hashes
                 else "the base run predates" if not base.has_case_hashes else "the candidate run predates")
        notes.append(f"case version unknown: {which} case hashes (case_sha256), so an edited case cannot "
                     "be told from a change of the app; such pairs are bucketed by their verdicts and marked "
                     "case: unknown (re-run the baseline with this harness to compare versions)")
    elif b["suite_sha256"] != c["suite_sha256"]:
        bp = base.manifest.get("suite_parts_sha256") or {}
        cp = cand.manifest.get("suite_parts_sha256") or {}
        parts = [SUITE_PART_WORDS.get(k, k) for k in sorted(set(bp) | set(cp)) if bp.get(k) != cp.get(k)]
        notes.append("the suite changed (suite_sha256 differs)" + (": " + "; ".join(parts) if parts else ""))
    for side, d in (("base", base), ("candidate", cand)):
        src = d.manifest.get("replayed_from")
        if isinstance(src, dict):   # run_cases.py --replay: its answers are a recording's, not the app's now
            where = f"run {src.get('run_id')}" if src.get("source") == "run" else "a recorded cache"
            notes.append(f"the {side} run was replayed from {where} (run_cases.py --replay): its answers are "
                         "recorded ones, not the app's today" + (f", except {src['live_cases']} case(s) sent live"
                                                                 if src.get("live_cases") else ""))
        rescored = _rescored_from(d)
        if rescored is not None:   # rescore.py: a stored run's answers scored again with a later suite
            other, other_side = (cand, "candidate") if side == "base" else (base, "base")
            if rescored.get("run_id") == other.run_id:
                notes.append(f"the {side} run is a rescore of the {other_side} run {other.run_id} (rescore.py): "
                             "the same stored answers scored again, the app was not called; a verdict that changed "
                             "is the suite's change (expectations, rubrics, judge), never the app's")
            else:
                notes.append(f"the {side} run was rescored from run {rescored.get('run_id')} (rescore.py): its "
                             "answers are that run's stored ones scored again, not the app's today")
    return notes


def _rescored_from(side: Side) -> dict | None:
    extra = side.manifest.get("manifest_extra") if isinstance(side.manifest, dict) else None
    source = extra.get("rescored_from") if isinstance(extra, dict) else None
    return source if isinstance(source, dict) else None


def _same_answers(base: Side, cand: Side) -> str:
    """Said in the headline itself when one side is the other's rescore: "no verdict changed" there is
    true by construction (the same stored answers), never a sign that the app held up."""
    for side, other in ((cand, base), (base, cand)):
        rescored = _rescored_from(side)
        if rescored is not None and rescored.get("run_id") == other.run_id:
            which = "candidate" if side is cand else "base"
            return (f" — the {which} is a rescore of the other run: the same answers, the app was not called "
                    "(notes)")
    return ""


def _swapped(base: Side, cand: Side) -> str:
    """Said in the headline itself when the base run started after the candidate: a script that reads
    only `headline` and `counts` (api.compare's documented use) saw "4 newly passing" for what, with the
    arguments swapped, is 4 newly failing; the note says it in full. Two runs planned under two arms
    are ordered by their arms (lift.arm_swapped), never by when they started: the arm without the
    plugin is often run second."""
    from .lift import arm_swapped, two_arms
    arms = arm_swapped(base, cand)
    if arms:
        return f" — {arms}: are the arguments swapped? (notes)"
    if base_started_after(base.describe(), cand.describe()) and not two_arms(base, cand):
        return " — the base run started after the candidate: are the arguments swapped? (notes)"
    return ""


def base_started_after(b: dict, c: dict) -> bool:
    """The base run started after the candidate (Side.describe()'s started_at): swapped arguments?"""
    return isinstance(b["started_at"], str) and isinstance(c["started_at"], str) and b["started_at"] > c["started_at"]


def one_run(b: dict, c: dict) -> bool:
    """Two runs' {run_id, started_at} name one run (a run dir and its copy: the same run id and start
    time): compare_runs.py and stats.py refuse to pair such a run with itself."""
    return (isinstance(b.get("run_id"), str) and b.get("run_id") == c.get("run_id")
            and isinstance(b.get("started_at"), str) and b.get("started_at") == c.get("started_at"))


def _same_run_copied(base: Side, cand: Side) -> str | None:
    """Two dirs holding one run (a copied run dir: the same run id and start time, neither a shard's
    slice) pair every case with itself: "no verdict changed" by construction, never a comparison."""
    from ..report.gate_trust import shard_reason
    b, c = base.describe(), cand.describe()
    if not one_run(b, c):
        return None
    if shard_reason(base.run_dir, base.manifest) or shard_reason(cand.run_dir, cand.manifest):
        return None
    return (f"base {base.run_dir} and candidate {cand.run_dir} hold the same run ({b['run_id']}, started "
            f"{b['started_at']}): one is a copy of the other, so every case would be paired with itself and "
            "read \"no verdict changed\"; compare the baseline run with a later run (compare_runs.py BASE "
            "CANDIDATE, or --baseline auto)")


def _ordered_ids(base: Side, cand: Side) -> list[str]:
    seen = dict.fromkeys(cand.rows)
    for cid in base.rows:
        seen.setdefault(cid, None)
    return list(seen)


def _sign_test_words(stats: dict) -> str:
    """The one-sided sign test in the direction the pairs moved: "p = 1" beside "worsened, not
    proven" (4 broken, 0 fixed) was the improvement's p and read as no evidence at all."""
    fixed, broken = stats["fixed_by_candidate"], stats["broken_by_candidate"]
    if broken > fixed:
        return f"one-sided sign test p = {sign_test_one_sided(broken, fixed):.3g} (for a worsening)"
    return f"one-sided sign test p = {stats['sign_test_p_one_sided']:.3g}"


def words(stats: dict | None, stats_note: str | None, flipped: list[str]) -> dict[str, str | None]:
    """The sentences every surface prints for the statistics (compare.html, the report's comparison
    section, the viewer's compare page), written once here: the verdict always with its "not proven"
    when the test in its direction is not significant, and the judge flips apart from it."""
    if stats:
        pct = "{:.1%}".format
        line = (f"Paired statistics over {stats['n']} pairs (the app's own changes: newly failing and newly "
                f"passing against the cases that kept their verdict; judge flips, canaries and holdout cases "
                f"left out): {stats['verdict_phrase']}; pass rate {pct(stats['baseline_pass_rate'])} → "
                f"{pct(stats['candidate_pass_rate'])}, {stats['fixed_by_candidate']} fixed, "
                f"{stats['broken_by_candidate']} broken, {_sign_test_words(stats)}.")
    else:
        line = f"Paired statistics: {stats_note}."
    flips = None
    if flipped:
        shown = ", ".join(flipped[:MAX_NAMED]) + (f" and {len(flipped) - MAX_NAMED} more" if len(flipped) > MAX_NAMED else "")
        flips = (f"{len(flipped)} judge flip{'s' if len(flipped) != 1 else ''} ({shown}): the judge changed its "
                 "verdict on the same answer and material; the judge's noise, not the app's change, so "
                 "left out of the paired statistics (neither fixed nor broken).")
    return {"statistics": line, "judge_flips": flips}


def paired_statistics(pairs: list[dict[str, Any]]) -> tuple[dict | None, str | None]:
    """The paired statistics over the pairs whose verdicts moved with the app (STATS_BUCKETS), or why none.
    Each side's {case_id, verdict} rows are made one at a time as they are indexed (not 200,000 dicts)."""
    tested = paired_population([p for p in pairs if p["bucket"] in STATS_BUCKETS])
    if not tested:
        return None, "no case was scored pass/fail in both runs on an unchanged case: nothing to test"
    try:
        base = index_rows(({"case_id": p["case_id"], "verdict": p["verdict"]["base"]} for p in tested), "baseline")
        cand = index_rows(({"case_id": p["case_id"], "verdict": p["verdict"]["candidate"]} for p in tested),
                          "candidate")
        return compare_indexed(base, cand), None
    except AssayError as err:
        return None, err.message


def compare_runs(base_dir: Path, candidate_dir: Path) -> dict[str, Any]:
    LAST.clear()
    fork = two_processes(Path(candidate_dir))   # a big comparison: on two processes (compare.pair_all)
    base, cand = load_sides(Path(base_dir), Path(candidate_dir), fork)
    if base.run_dir.resolve() == cand.run_dir.resolve():
        raise AssayError(f"base and candidate are the same run ({base.run_dir}); compare two different runs", 2)
    copied = _same_run_copied(base, cand)
    if copied:
        raise AssayError(copied, 2, path=str(base.run_dir))
    pairs, holdout_counts, holdout_pairs = [], dict.fromkeys(BUCKETS, 0), 0
    active, why = should_redact(base, cand)
    memo: dict = {}   # equal small parts of the pairs, one object each (a read-only document)
    costs = CaseCosts(base.manifest, cand.manifest, prices_of(cand.run_dir))   # filled in the pairs' pass
    clis = CliFold.of_sides(base, cand)   # an agent side's CLI versions and models, the same pass
    for pair in all_pairs(base, cand, _ordered_ids(base, cand), memo, fork, costs, clis):
        cid = pair["case_id"]
        if cid in base.holdout or cid in cand.holdout:
            holdout_counts[pair["bucket"]] += 1  # sealed: counted, never named
            holdout_pairs += 1
            continue
        pairs.append(pair)
    redactions = redact_pairs(pairs) if active else 0
    buckets: dict[str, list] = {b: [] for b in BUCKETS}
    for p in pairs:
        buckets[p["bucket"]].append(p)
    counts = {b: len(v) for b, v in buckets.items()}
    flips = sum(1 for p in pairs if p.get("judge_flip"))
    stats, stats_note = paired_statistics(pairs)
    flipped = [p["case_id"] for p in buckets["judge_flip"] if not p.get("canary")]
    sides = {"base": base.describe(), "candidate": cand.describe()}
    for which, described in sides.items():
        if clis.of(which) is not None:   # an agent run: the CLI versions and models its sessions reported
            described["agent_cli"] = clis.of(which)
    doc = {
        "compare_version": COMPARE_VERSION, "harness_version": HARNESS_VERSION,
        "base": sides["base"], "candidate": sides["candidate"],
        "notes": run_notes(base, cand, clis) + judge_only_notes(pairs)
        + ([f"quoted text is redacted (emails, phone and long numbers: "
            f"{redactions} redaction(s)) because {why}"] if active else []),
        "redaction": {"active": active, "redactions": redactions, "why": why or None},
        "headline": headline(counts, flips) + _swapped(base, cand) + _same_answers(base, cand),
        "counts": counts, "judge_flips": flips,
        "gating_newly_failing": sum(1 for p in buckets["newly_failing"] if p["gating"] and not p["canary"]),
        "meaning": dict(MEANING),
        "buckets": buckets,
        "holdout": {"pairs": holdout_pairs, "counts": {b: n for b, n in holdout_counts.items() if n},
                    "note": "holdout cases are counted only: their ids are sealed"},
        "stats": stats, "stats_note": stats_note,
        "stats_pairs": ("the pairs scored pass/fail in both runs on an unchanged case (" + ", ".join(STATS_BUCKETS)
                        + "); judge flips, canaries and holdout cases left out"),
        "stats_judge_flips": len(flipped),
        "words": words(stats, stats_note, flipped),
        "cost_latency": cost_latency(base.run_dir, cand.run_dir, costs),
    }
    from .lift import lift_block
    lift = lift_block(base, cand, pairs, stats, stats_note, {w: clis.of(w) for w in ("base", "candidate")})
    if lift is not None:
        doc["lift"] = lift
    sealed = base.holdout | cand.holdout
    if sealed:
        _assert_sealed(doc, sealed)
    return doc


def _assert_sealed(doc: dict, sealed: set[str]) -> None:
    """Defence in depth: a holdout id anywhere in the document is a bug upstream; never write it."""
    import json
    import re
    tokens = set(re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", json.dumps(doc, ensure_ascii=False)))
    if tokens & sealed:
        raise AssayError("internal: the comparison would name a holdout case id; refusing to write it", 1)


__all__ = ["compare_runs", "SCORED"]
