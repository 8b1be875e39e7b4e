"""The compare document's words (issue 46 C1, C3): the paired statistics are over the app's own
changes, judge flips are said apart, and "not proven" goes wherever improved or worsened is printed
(compare.json's `words`, compare.html, the report's comparison section). Pure: no run, no app."""

from __future__ import annotations

from assay.compare.buckets import BUCKETS, MEANING
from assay.compare.document import paired_statistics, words
from assay.compare.html import render
from assay.compare.report_section import comparison_lines


def pair(cid, base, cand, bucket, **extra):
    return {"case_id": cid, "verdict": {"base": base, "candidate": cand}, "bucket": bucket, "gating": True,
            "canary": False, **extra}


def document(pairs):
    stats, note = paired_statistics(pairs)
    flipped = [p["case_id"] for p in pairs if p["bucket"] == "judge_flip"]
    buckets = {b: [p for p in pairs if p["bucket"] == b] for b in BUCKETS}
    side = {"run_id": "r1", "mode": "smoke", "k": 1, "dataset_version": 1}
    return {"base": side, "candidate": {**side, "run_id": "r2"}, "headline": "h", "notes": [],
            "counts": {b: len(v) for b, v in buckets.items()}, "meaning": dict(MEANING), "buckets": buckets,
            "holdout": {}, "stats": stats, "stats_note": note, "stats_pairs": "p", "words": words(stats, note, flipped)}


def test_judge_flips_are_neither_fixes_nor_breaks():
    # 0 newly failing, 0 newly passing, 6 judge flips gave "broken 6, McNemar p 0.031, worsened"
    pairs = [pair(f"j{i}", "pass", "fail", "judge_flip", judge_flip=True) for i in range(6)]
    pairs += [pair(f"s{i}", "pass", "pass", "still_passing") for i in range(30)]
    stats, _ = paired_statistics(pairs)
    assert stats["n"] == 30 and stats["fixed_by_candidate"] == stats["broken_by_candidate"] == 0
    assert stats["verdict_words"] == "within noise" and stats["mcnemar_exact_p_two_sided"] == 1.0
    said = document(pairs)["words"]
    assert said["statistics"].startswith("Paired statistics over 30 pairs (the app's own changes")
    assert "within noise" in said["statistics"] and "worsened" not in said["statistics"]
    assert said["judge_flips"].startswith("6 judge flips (j0, j1, j2, j3, j4, j5): the judge changed its verdict")
    assert "left out of the paired statistics" in said["judge_flips"]


def test_not_proven_is_printed_with_improved_everywhere():
    # 42 cases, 4 fixed: the one-sided sign test p = 0.0625 is not significant at 0.05
    pairs = [pair(f"f{i}", "fail", "pass", "newly_passing") for i in range(4)]
    pairs += [pair(f"s{i}", "pass", "pass", "still_passing") for i in range(38)]
    doc = document(pairs)
    assert doc["stats"]["keep"] is True and doc["stats"]["proven"] is False
    line = doc["words"]["statistics"]
    assert ": improved, not proven (n=42: no improvement can be shown with 4 failing cases;" in line
    assert doc["words"]["judge_flips"] is None
    html = render(doc)
    assert "improved, not proven (n=42: no improvement can be shown with 4 failing cases;" in html
    section = "\n".join(comparison_lines(doc))
    assert "improved, not proven (n=42: no improvement can be shown with 4 failing cases;" in section


def test_a_proven_change_is_printed_without_the_caveat():
    pairs = [pair(f"b{i}", "pass", "fail", "newly_failing") for i in range(8)]
    pairs += [pair(f"s{i}", "pass", "pass", "still_passing") for i in range(40)]
    doc = document(pairs)
    assert doc["stats"]["verdict_label"] == "worsened" and doc["stats"]["proven"] is True
    assert ": worsened (n=48: no improvement can be shown with 0 failing cases;" in doc["words"]["statistics"]


def test_the_sign_test_p_printed_is_the_one_in_the_direction_the_pairs_moved():
    # 4 broken, 0 fixed over 6 pairs printed "worsened, not proven ...; one-sided sign test p = 1":
    # the improvement's p beside a worsening
    pairs = [pair(f"b{i}", "pass", "fail", "newly_failing") for i in range(4)]
    pairs += [pair(f"s{i}", "pass", "pass", "still_passing") for i in range(2)]
    line = document(pairs)["words"]["statistics"]
    assert "worsened, not proven" in line
    assert line.endswith("0 fixed, 4 broken, one-sided sign test p = 0.0625 (for a worsening).")
    improved = [pair(f"f{i}", "fail", "pass", "newly_passing") for i in range(4)]
    assert document(improved)["words"]["statistics"].endswith("4 fixed, 0 broken, one-sided sign test p = 0.0625.")
