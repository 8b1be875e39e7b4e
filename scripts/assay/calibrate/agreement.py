"""Agreement between human labels and the judge, per rubric version (wave2 §6).

`fail` is the positive class: tp = both say fail, fn = the human says fail and the judge
pass, fp = the human says pass and the judge fail, tn = both say pass. TPR = tp/(tp+fn),
TNR = tn/(tn+fp), Cohen's kappa over the 2x2. A judge `unknown` is out of the 2x2 and
counted apart; a line without `judge_label` is unpaired. A pair is one (rubric, node,
case, answer sha256): the same case labelled on another answer is another pair; each
reviewer's last line per pair stands, and an item reviewers label differently is left out
(one_label_per_item); lines on unknown material (no answer_sha256) yield to known ones
(`known_material_first`). A labelling batch whose canary line disagrees with the earlier label is
void: none of its lines count.

A rubric version is calibrated when pairs >= min_pairs, human fails and human passes
each >= min_per_class, and TPR, TNR and kappa reach their floors. Intervals (exact
Clopper-Pearson for TPR/TNR, large-sample for kappa) are reported, never gated on.
"""

from __future__ import annotations

import datetime as _dt
from collections import defaultdict
from dataclasses import dataclass, asdict
from typing import Any, Collection

from ..core.errors import AssayError
from ..judge.floors import DEFAULT_FLOORS, unmet_floors, unmet_node_floors
from .annotations import Annotation
from .people import known_material_first, one_label_per_item
from .intervals import clopper_pearson, cohen_kappa, kappa_interval  # noqa: F401 (cohen_kappa re-exported)
from .unlock import labels_needed, more_labels_sentence

UNKNOWN_NOTE_RATE = 0.10


@dataclass(frozen=True)
class Floors:
    min_pairs: int = int(DEFAULT_FLOORS["min_pairs"])
    min_per_class: int = int(DEFAULT_FLOORS["min_per_class"])
    min_tpr: float = DEFAULT_FLOORS["min_tpr"]
    min_tnr: float = DEFAULT_FLOORS["min_tnr"]
    min_kappa: float = DEFAULT_FLOORS["min_kappa"]

    def check(self) -> None:
        if self.min_pairs < 1 or self.min_per_class < 0:
            raise AssayError("--min-pairs must be >= 1 and --min-per-class >= 0", 2)
        for name in ("min_tpr", "min_tnr"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise AssayError(f"--{name.replace('_', '-')} must be between 0 and 1", 2)
        if not -1.0 <= self.min_kappa <= 1.0:
            raise AssayError("--min-kappa must be between -1 and 1", 2)


def kappa_ci_note(tp: int, fn: int, fp: int, tn: int) -> str | None:
    """Why the kappa interval is not given when there are pairs (None when it is)."""
    if not tp + fn + fp + tn:
        return None
    sides = [(tp + fn + fp + tn == tp + fn, "people labelled every item fail"),
             (fp + tn == tp + fn + fp + tn, "people labelled every item pass"),
             (tp + fp == tp + fn + fp + tn, "judge said fail on every item"),
             (fn + tn == tp + fn + fp + tn, "judge said pass on every item")]
    said = [text for hit, text in sides if hit]
    if said:
        return f"undefined: the {' and the '.join(said)}, so agreement beyond chance cannot be estimated"
    if fn + fp == 0:
        n = tp + tn
        return (f"not given: all {n} pairs agree (kappa 1.0), where the large-sample standard error is 0 and "
                "the interval would read [1.0, 1.0] as if no future pair could disagree; how far from perfect "
                "the judge may be is what the exact TPR and TNR intervals (tpr_ci, tnr_ci) say")
    return None


def _round(value: Any) -> Any:
    """Six decimals for the printed numbers (floors are compared before rounding)."""
    if isinstance(value, list):
        return [round(v, 6) for v in value]
    return None if value is None else round(value, 6)


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def void_batches(rows: list[Annotation]) -> tuple[list[Annotation], list[dict[str, Any]], dict[str, int]]:
    """Drop canary lines, and every line of a batch in which a canary label missed.

    Returns (the counted lines, the voided batches, canary counts)."""
    missed: dict[str, list[str]] = defaultdict(list)
    canaries = {"shown": 0, "missed": 0}
    for a in rows:
        if a.canary:
            canaries["shown"] += 1
            if a.label != a.expected_label:
                canaries["missed"] += 1
                missed[a.batch or "(no batch)"].append(f"{a.case_id} ({a.source})")
    voided = [{"batch": b, "canary_misses": misses,
               "lines": sum(1 for a in rows if (a.batch or "(no batch)") == b and not a.canary)}
              for b, misses in missed.items()]
    kept = [a for a in rows if not a.canary and (a.batch or "(no batch)") not in missed]
    return kept, voided, canaries


def newest_exports(rows: list[Annotation]) -> tuple[list[Annotation], list[dict[str, Any]]]:
    """Of a batch exported more than once (its id in several files: the page's export holds every
    label of its batch so far, and a browser saves a second download as `<batch> (1).jsonl`, which
    sorts before `<batch>.jsonl`), only the newest export counts: the file whose latest `ts` for that
    batch is latest (equal or none: the later file in order). An older export read last would
    otherwise win over the person's final word, and keep a label skipped since. Returns (kept, the
    superseded exports: batch, file, lines, and the file that replaced it)."""
    files: dict[str, list[str]] = defaultdict(list)   # batch -> its files, in reading order
    newest: dict[tuple[str, str], str] = {}             # (batch, file) -> its latest ts
    for a in rows:
        if not a.batch:
            continue
        if a.file not in files[a.batch]:
            files[a.batch].append(a.file)
        key = (a.batch, a.file)
        newest[key] = max(newest.get(key, ""), _ts_key(a.ts))
    keep = {batch: max(reversed(fs), key=lambda f, b=batch: newest[(b, f)])   # ties: the later file
            for batch, fs in files.items() if len(fs) > 1}
    kept = [a for a in rows if a.batch not in keep or a.file == keep[a.batch]]
    superseded = [{"batch": b, "file": f, "lines": sum(1 for a in rows if a.batch == b and a.file == f),
                   "replaced_by": keep[b]} for b in keep for f in files[b] if f != keep[b]]
    return kept, superseded


def _ts_key(ts: Any) -> str:
    """A line's ts as a sortable UTC text ("" when absent or unreadable)."""
    from ..core.ids import parse_utc
    when = parse_utc(ts)
    return "" if when is None else when.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")


def not_in_suite(rows: list[Annotation], case_ids: Collection[str] | None) -> tuple[list[Annotation], list[dict[str, Any]] | None]:
    """Set aside the labels whose case_id names no case of the suite (a typo, another suite's export, a
    case id made up): such a label matches no case the judge gates on, and counting it lets a judge reach
    "calibrated" on labels that match nothing. Canary lines stay (a missed canary still voids its batch).
    Returns (kept, the set-aside lines: case_id, rubric_id, line); None when the suite is not known."""
    if case_ids is None:
        return rows, None
    known = set(case_ids)
    dropped = [a for a in rows if not a.canary and a.case_id not in known]
    return ([a for a in rows if a.canary or a.case_id in known],
            [{"case_id": a.case_id, "rubric_id": a.pin, "line": a.source,
              "fix": f"no case {a.case_id!r} in datasets/: correct the case id (a typo?) or delete the line; "
                     "only labels on this suite's cases count"} for a in dropped])


def not_in_rubric(rows: list[Annotation], nodes_by_pin: dict[str, Collection[str]] | None
                  ) -> tuple[list[Annotation], list[dict[str, Any]] | None]:
    """Set aside the labels on a node the pin's rubric file does not have (a typo, a node renamed or
    removed): they label no criterion the judge is asked, yet counted toward the pin's pairs. A pin with no
    rubric file at that version is not checked here (it stays provisional: sidecar.bind). None: not known."""
    if nodes_by_pin is None:
        return rows, None
    def stray(a: Annotation) -> bool:
        return not a.canary and a.node_id is not None and a.pin in nodes_by_pin and a.node_id not in nodes_by_pin[a.pin]
    return ([a for a in rows if not stray(a)],
            [{"case_id": a.case_id, "rubric_id": a.pin, "node_id": a.node_id, "line": a.source,
              "fix": f"{a.pin} has no node {a.node_id!r} (its nodes: {', '.join(sorted(nodes_by_pin[a.pin]))}): "
                     "correct the node_id or delete the line"} for a in rows if stray(a)])


def no_rubric_file(pin: str, nodes_by_pin: dict[str, Collection[str]] | None) -> str | None:
    """Why a pin the labels name cannot be calibrated: the state dir has no rubric file at that version (a
    label exported for another rubric version, a pin typed by hand, the file reverted). Its judge verdicts
    gate nowhere (no case can pin it; --write binds no text to it), so its entry must not read calibrated.
    None when it has one, or when the rubric files are not known (no state dir)."""
    from ..judge.rubrics import parse_pin
    if nodes_by_pin is None or pin in nodes_by_pin:
        return None
    rid = (parse_pin(pin) or (pin, None))[0]
    have = sorted(p for p in nodes_by_pin if (parse_pin(p) or (None,))[0] == rid)
    where = (f"rubrics/{rid}.md is {', '.join(have)}" if have else f"there is no rubrics/{rid}.md")
    return (f"no rubric file at {pin} in the state dir ({where}): these labels are on a text no case can pin; "
            f"label the pin the rubric file has, or correct rubric_id in the labels")


def _matrix(rows: list[Annotation]) -> dict[str, int]:
    m = {"tp": 0, "fn": 0, "fp": 0, "tn": 0}
    for a in rows:
        if a.judge_label not in ("pass", "fail"):
            continue
        if a.label == "fail":
            m["tp" if a.judge_label == "fail" else "fn"] += 1
        else:
            m["fp" if a.judge_label == "fail" else "tn"] += 1
    return m


def unlock_sentence(pairs: int, human_fail: int, human_pass: int, floors: Floors) -> str | None:
    """How many more labelled pairs the counting floors need, or None when they are met."""
    need_fail = max(0, floors.min_per_class - human_fail)
    need_pass = max(0, floors.min_per_class - human_pass)
    more = max(floors.min_pairs - pairs, need_fail + need_pass, 0)
    if more == 0:
        return None
    parts = []
    if need_fail:
        parts.append(f"{need_fail} of them failing")
    if need_pass:
        parts.append(f"{need_pass} of them passing")
    tail = f", at least {' and '.join(parts)}" if parts else ""
    return f"label {more} more{tail}"


def score_rubric(rows: list[Annotation], floors: Floors, confidence: float,
                 reviewers_of: dict[tuple, list[str]] | None = None, people_disagree: int = 0) -> dict[str, Any]:
    """The per-rubric entry of the output and of the sidecar. `reviewers_of`: each pair key's reviewers
    (several when people agreed on it); `people_disagree`: the rubric's items left out because people
    disagree on them (one_label_per_item)."""
    paired = [a for a in rows if a.judge_label is not None]
    unknown = sum(1 for a in paired if a.judge_label == "unknown")
    m = _matrix(paired)
    tp, fn, fp, tn = m["tp"], m["fn"], m["fp"], m["tn"]
    pairs = tp + fn + fp + tn
    human_fail, human_pass = tp + fn, fp + tn
    tpr, tnr, kappa = _ratio(tp, human_fail), _ratio(tn, human_pass), cohen_kappa(tp, fn, fp, tn)

    by_node: dict[str, dict[str, int]] = {}
    for a in paired:
        by_node.setdefault(a.node_id or "(whole rubric)", {"tp": 0, "fn": 0, "fp": 0, "tn": 0, "unknown": 0})
    for node in by_node:
        subset = [a for a in paired if (a.node_id or "(whole rubric)") == node]
        by_node[node].update(_matrix(subset))
        by_node[node]["unknown"] = sum(1 for a in subset if a.judge_label == "unknown")
    # the one rule, pooled and node by node; a run re-checks a sidecar with both
    blocking = unmet_floors(tp, fn, fp, tn, asdict(floors)) + unmet_node_floors(by_node, asdict(floors))
    calibrated = not blocking

    more = labels_needed(tp, fn, fp, tn, floors)
    unlock = None
    if not calibrated:
        unlock = unlock_sentence(pairs, human_fail, human_pass, floors)
        if unlock is None:
            unlock = ("the counts are met but the judge disagrees with people too often ("
                      + "; ".join(b for b in blocking if b.startswith(("TPR", "TNR", "kappa", "node ")))
                      + "): fix the rubric or the judge, bump the rubric version and label it again"
                      + (f"; or {more_labels_sentence(more)}" if more["reachable"] and more["total"] else ""))

    labelled = len(paired)
    notes = []
    unknown_rate = unknown / labelled if labelled else 0.0
    if unknown_rate > UNKNOWN_NOTE_RATE:
        notes.append(f"the judge said unknown on {unknown} of {labelled} labelled items ({unknown_rate:.0%}); "
                     "those are outside the 2x2, so these numbers describe only the items it decided")
    if people_disagree:
        notes.append(f"people disagree with each other on {people_disagree} item(s) (people_disagree): their label "
                     "is not known, so those items are outside the 2x2 and these numbers describe only the items "
                     "people agree on; settle them and relabel to count them")
    who = (lambda a: (reviewers_of or {}).get(a.key) or [(a.reviewer or "").strip()])

    return {
        "calibrated": calibrated,
        "pairs": pairs,
        "unknown": unknown,
        "unknown_rate": round(unknown_rate, 4),
        "unpaired": len(rows) - labelled,
        "human_fail": human_fail,
        "human_pass": human_pass,
        # what the pairs stand on: one case labelled on several answers (or nodes) is several pairs, and
        # one person labelling twice is one reviewer (the floors count pairs; these say how many of what)
        "cases": len({a.case_id for a in paired if a.judge_label in ("pass", "fail")}),
        "reviewers": len({r for a in paired if a.judge_label in ("pass", "fail") for r in who(a) if r}),
        "people_disagree": people_disagree,
        "tp": tp, "fn": fn, "fp": fp, "tn": tn,
        "tpr": _round(tpr), "tnr": _round(tnr), "kappa": _round(kappa),
        "tpr_ci": _round(clopper_pearson(tp, human_fail, confidence)),
        "tnr_ci": _round(clopper_pearson(tn, human_pass, confidence)),
        "kappa_ci": _round(kappa_interval(tp, fn, fp, tn, confidence)),
        "kappa_ci_note": kappa_ci_note(tp, fn, fp, tn),
        "blocking": blocking,
        "unlock": unlock,
        "more_labels": more,
        "more_labels_sentence": more_labels_sentence(more) if not calibrated else None,
        "notes": notes,
        "by_node": by_node,
    }


NO_BATCH = "(no batch)"   # the lines written by hand or by another tool: no labelling page recorded them


def pairs_by_batch(rows: list[Annotation]) -> dict[str, int]:
    """How many counted pairs (human label, judge pass/fail) stand on each batch's lines (NO_BATCH: lines
    without one): what --write's `labelled_judge_unchecked` batches weigh."""
    out: dict[str, int] = defaultdict(int)
    for a in rows:
        if a.judge_label in ("pass", "fail"):
            out[a.batch or NO_BATCH] += 1
    return dict(sorted(out.items()))


def not_checked(case_ids: Collection[str] | None, nodes_by_pin: Any, holdout_ids: Collection[str] | None,
                written: bool) -> list[str]:
    """What this scoring did not check, in words (empty when everything was): a calibration scored
    without the state dir counts labels on any case id, node or holdout case."""
    out = []
    if case_ids is None:
        out.append("case ids: labels on ids the suite does not have were counted (pass --state-dir, or "
                   "--write <state>/judge/calibration.json, with the suite in its datasets/)")
    if holdout_ids is None:
        out.append("holdout cases: labels on the suite's holdout cases were counted (sealed cases never feed "
                   "calibration; pass --state-dir)")
    if nodes_by_pin is None:
        out.append("rubric nodes: labels on nodes the rubric files do not have were counted (pass --state-dir)")
    if not written:
        out.append("the judge labelled: whether the labelled verdicts are the configured judge's is checked "
                   "by --write only")
    return out


def score(rows: list[Annotation], floors: Floors, confidence: float = 0.95,
          case_ids: Collection[str] | None = None,
          nodes_by_pin: dict[str, Collection[str]] | None = None,
          holdout_ids: Collection[str] | None = None) -> dict[str, Any]:
    """The whole score_agreement.py output (without `written`). Exit-2 cases raise AssayError.
    `case_ids`: the suite's case ids; a label on another id is not counted (`not_in_suite`).
    `nodes_by_pin`: each rubric pin's node ids; a label on another node is not counted (`not_in_rubric`).
    `holdout_ids`: the suite's holdout case ids; a label on one is not counted (`holdout_excluded`, a count:
    holdout ids are never printed)."""
    floors.check()
    if not 0.0 < confidence < 1.0:
        raise AssayError(f"--confidence {confidence:g} must be strictly between 0 and 1, e.g. 0.95", 2)
    if not rows:
        raise AssayError("no annotation lines in the given files: label cases first "
                         "(label.py RUN_DIR -o page.html, then save the page's export under <state>/annotations/)", 2)
    sealed = set(holdout_ids or ())
    held = sum(1 for a in rows if a.case_id in sealed)
    rows = [a for a in rows if a.case_id not in sealed]
    rows, outside = not_in_suite(rows, case_ids)
    rows, stray_nodes = not_in_rubric(rows, nodes_by_pin)
    current, superseded = newest_exports(rows)
    counted, voided, canaries = void_batches(current)
    counted, unknown_material = known_material_first(counted)
    latest, folded = one_label_per_item(counted)
    disagree, partial = folded["people_disagree"], folded["without_whole_answer"]
    by_pin: dict[str, list[Annotation]] = defaultdict(list)
    for a in latest:
        by_pin[a.pin].append(a)
    rubrics = {pin: score_rubric(by_pin[pin], floors, confidence, folded["reviewers_of"],
                                 sum(1 for d in disagree if d["rubric_id"] == pin)) for pin in sorted(by_pin)}
    for pin, entry in rubrics.items():
        missing = no_rubric_file(pin, nodes_by_pin)
        if missing:   # labels on a text the state dir does not have: it never gates, so never reads calibrated
            entry.update(calibrated=False, blocking=[missing] + entry["blocking"], unlock=missing,
                         more_labels_sentence=None)
    pairs = sum(r["pairs"] for r in rubrics.values())
    unpaired = sum(r["unpaired"] for r in rubrics.values())
    if pairs == 0:
        decided = sum(r["unknown"] for r in rubrics.values())
        raise AssayError(
            f"no labelled pair to score: {len(latest)} counted label(s), {unpaired} without a judge_label, "
            f"{decided} where the judge said unknown, {sum(v['lines'] for v in voided)} in voided batches"
            + (f", {len(outside)} on case ids not in the suite" if outside else "")
            + (f", {held} on holdout cases (sealed: never counted)" if held else "")
            + (f", {len(stray_nodes)} on nodes their rubric does not have" if stray_nodes else "")
            + (f", {len(disagree)} item(s) people disagree on" if disagree else "")
            + (f", {len(partial)} given before the rest of the answer was shown" if partial else "") + "; "
            "a pair needs a human label and the judge's pass/fail for the same case, rubric and node "
            "(export them from label.py's page)", 2, voided_batches=voided, not_in_suite=outside,
            not_in_rubric=stray_nodes, people_disagree=disagree, without_whole_answer=partial)
    calibrated = all(r["calibrated"] for r in rubrics.values())
    unlock = "; ".join(f"{pin}: {r['unlock']}" for pin, r in rubrics.items() if r["unlock"]) or None
    return {
        "status": "calibrated" if calibrated else "not_calibrated",
        "positive_class": "fail",
        "confidence": confidence,
        "floors": asdict(floors),
        "lines_read": len(rows),
        "duplicates_replaced": folded["duplicates_replaced"],
        "labelled_by_several_reviewers": folded["labelled_by_several_reviewers"],
        "people_disagree_items": len(disagree),
        "people_disagree": disagree,
        "without_whole_answer_labels": len(partial),
        "without_whole_answer": partial,
        "superseded_exports": superseded,
        "unknown_material_dropped": unknown_material,
        "not_in_suite": outside,
        "not_in_rubric": stray_nodes,
        "holdout_excluded": held if holdout_ids is not None else None,
        "pairs_by_batch": pairs_by_batch(latest),
        "pairs_on_unbatched_lines": pairs_by_batch(latest).get(NO_BATCH, 0),
        "distinct_answers": len({a.answer_sha256 for a in latest if a.answer_sha256}),
        "labelled_pairs": pairs,
        "unpaired_annotations": unpaired,
        "canaries": canaries,
        "voided_batches": voided,
        "rubrics_measured": len(rubrics),
        "calibrated_rubrics": sorted(p for p, r in rubrics.items() if r["calibrated"]),
        "rubrics": rubrics,
        "unlock": unlock,
    }
