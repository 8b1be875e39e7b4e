"""What people said of each labelled item: one label per item, from every reviewer's lines.

A disagreement between people is kept in sight, never settled by the order the files were read in:
the same reviewer relabelling an item replaces their own earlier label; two reviewers labelling it
differently leave its label unknown (references/calibration.md, "Two reviewers, one item").
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from .annotations import Annotation


def known_material_first(rows: list[Annotation]) -> tuple[list[Annotation], int]:
    """Drop the lines on unknown material (no answer_sha256: older files) of an item that also has a
    label on a known answer: the unknown one may be on that same answer, and counting both would
    count one material twice. Returns (kept, dropped)."""
    known = {a.item for a in rows if a.answer_sha256}
    kept = [a for a in rows if a.answer_sha256 or a.item not in known]
    return kept, len(rows) - len(kept)


def _who(a: Annotation) -> str:
    return (a.reviewer or "").strip()


def one_label_per_item(rows: list[Annotation]) -> tuple[list[Annotation], dict[str, Any]]:
    """One human label per pair key (rubric, node, case, answer), and what was folded to get it.

    Each reviewer's last line on an item stands for that reviewer: a later line of their own replaces
    an earlier one (`duplicates_replaced`, a relabel). A line with `saw_whole_answer: false` (labelled on
    the page before the rest of a long answer was shown) is then not counted (`without_whole_answer`):
    the label is about the part the person read, and its answer_sha256 names the whole answer. Where two
    or more reviewers labelled the item: agreeing, it is one pair (the item once, never twice toward the
    floors); disagreeing, the people's label is not known and the item is left out of the 2x2
    (`people_disagree` names it): counting either side would take it, and counting both would score the
    judge against a reference that contradicts itself (one hit and one miss whatever it says) and count
    one material twice. Returns (the kept lines, {duplicates_replaced, without_whole_answer,
    people_disagree, labelled_by_several_reviewers, reviewers_of: key -> reviewers})."""
    per: "OrderedDict[tuple, OrderedDict[str, Annotation]]" = OrderedDict()
    replaced = 0
    for a in rows:
        mine = per.pop(a.key, None) or OrderedDict()
        if _who(a) in mine:
            replaced += 1
            del mine[_who(a)]
        mine[_who(a)] = a
        per[a.key] = mine            # an item's place: its last line's (as last-line-wins kept it)
    kept: list[Annotation] = []
    partial: list[dict[str, Any]] = []
    disagree: list[dict[str, Any]] = []
    several = 0
    reviewers_of: dict[tuple, list[str]] = {}
    for key, mine in per.items():
        whole = OrderedDict((who, a) for who, a in mine.items() if a.saw_whole_answer is not False)
        partial.extend({"case_id": a.case_id, "rubric_id": a.pin, "node_id": a.node_id, "reviewer": a.reviewer,
                        "line": a.source,
                        "fix": "labelled before the rest of the answer was shown: open a page on this run "
                               "(label.py asks it again), show the rest (r) and label it"}
                       for a in mine.values() if a.saw_whole_answer is False)
        if not whole:
            continue
        several += len(whole) > 1
        labels = {a.label for a in whole.values()}
        if len(labels) > 1:
            a = next(iter(whole.values()))
            disagree.append({"case_id": a.case_id, "rubric_id": a.pin, "node_id": a.node_id,
                             "answer_sha256": a.answer_sha256,
                             "labels": {(x.reviewer or "").strip(): x.label for x in whole.values()},
                             "lines": [x.source for x in whole.values()],
                             "fix": "people disagree, so the item is not counted: talk it over, and whoever "
                                    "changes their mind relabels it (a later line of their own replaces "
                                    "their earlier one)"})
            continue
        kept.append(list(whole.values())[-1])
        reviewers_of[key] = sorted(whole)
    return kept, {"duplicates_replaced": replaced, "without_whole_answer": partial, "people_disagree": disagree,
                  "labelled_by_several_reviewers": several, "reviewers_of": reviewers_of}
