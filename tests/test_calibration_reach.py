"""Calibration a real suite can reach (issue 30 item 6): how many more labels of which class unlock it
(assay.calibrate.unlock), and a calibration at floors below the defaults said by the gate (a real
gate.py subprocess on a run dir) and the report -- never a plain "calibrated, gating"."""

from __future__ import annotations

from fixtures_authoring import run_inproc
from helpers import run_script
from rundir_util import make_run

from assay.calibrate.agreement import Floors, cohen_kappa
from assay.calibrate.unlock import labels_needed, more_labels_sentence
from assay.judge.binding import DEFAULT_FLOORS, lowered_floors


def _meets(tp, fn, fp, tn, f: Floors) -> bool:
    k = cohen_kappa(tp, fn, fp, tn)
    return (tp + fn + fp + tn >= f.min_pairs and tp + fn >= f.min_per_class and fp + tn >= f.min_per_class
            and tp / (tp + fn) >= f.min_tpr and tn / (fp + tn) >= f.min_tnr and k is not None and k >= f.min_kappa)


def test_labels_needed_reaches_every_floor_and_is_tight_on_the_counts():
    f = Floors()
    for tp, fn, fp, tn in [(0, 0, 0, 0), (5, 1, 0, 56), (30, 5, 2, 60), (2, 0, 0, 2), (9, 3, 1, 4)]:
        more = labels_needed(tp, fn, fp, tn, f)
        assert more["reachable"]
        assert _meets(tp + more["fail"], fn, fp, tn + more["pass"] + more["either"], f)
        assert _meets(tp + more["fail"] + more["either"], fn, fp, tn + more["pass"], f)
    # the counts alone: exactly the shortfall
    assert labels_needed(0, 0, 0, 0, f) == {"total": 100, "fail": 10, "pass": 10, "either": 80, "reachable": True,
                                            "assumes": labels_needed(0, 0, 0, 0, f)["assumes"]}
    # TPR 5/6 < 0.90: four more agreeing fails make it 9/10; more than the per-class shortfall
    assert labels_needed(5, 1, 0, 94, f)["fail"] == 4             # the per-class shortfall; TPR 9/10 then
    assert labels_needed(10, 3, 0, 90, f)["fail"] == 17           # TPR 10/13: 27/30 = 0.90 needs 17 agreeing fails
    # a floor of 1.0 with a disagreement on record cannot be reached by labelling
    strict = Floors(min_tpr=1.0)
    assert labels_needed(10, 1, 0, 90, strict)["reachable"] is False
    assert "fix the rubric or the judge" in more_labels_sentence(labels_needed(10, 1, 0, 90, strict))
    assert more_labels_sentence(labels_needed(20, 0, 0, 90, f)) is None


def test_score_agreement_reports_more_labels_by_class(tmp_path):
    import json
    path = tmp_path / "a.jsonl"
    rows = [{"case_id": f"c-{i}", "rubric_id": "r-v1", "node_id": "n", "label": "fail" if i < 4 else "pass",
             "judge_label": "fail" if i < 4 else "pass", "reviewer": "dana", "answer_sha256": f"{i:064x}"}
            for i in range(30)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = run_inproc("score_agreement", path)
    rub = r.json["rubrics"]["r-v1"]
    assert rub["more_labels"]["fail"] == 6 and rub["more_labels"]["total"] == 70
    assert rub["more_labels_sentence"].startswith("label 70 more: at least 6 that people fail")


def _sidecar(floors: dict) -> dict:
    return {"floors": floors, "rubrics": {"r-v1": {"calibrated": True, "pairs": 8, "human_fail": 4, "human_pass": 4},
                                          "s-v1": {"calibrated": False, "pairs": 2}}}


def test_lowered_floors_only_for_a_calibrated_pin_below_the_defaults():
    low = lowered_floors(_sidecar(dict(DEFAULT_FLOORS, min_pairs=8, min_per_class=4)), "r-v1")
    assert low["floors"] == {"min_pairs": {"used": 8, "default": 100}, "min_per_class": {"used": 4, "default": 10}}
    assert lowered_floors(_sidecar(dict(DEFAULT_FLOORS)), "r-v1") is None
    assert lowered_floors(_sidecar(dict(DEFAULT_FLOORS, min_pairs=150)), "r-v1") is None   # stricter: nothing to say
    assert lowered_floors(_sidecar(dict(DEFAULT_FLOORS, min_pairs=2)), "s-v1") is None     # not calibrated


def test_gate_and_report_say_a_calibration_below_the_default_floors(tmp_path):
    low = lowered_floors(_sidecar(dict(DEFAULT_FLOORS, min_pairs=8, min_per_class=4, min_kappa=0.4)), "r-v1")
    manifest = {"judge": {"enabled": True, "rubrics": {
        "r-v1": {"calibrated": True, "why_provisional": None, "calibrated_below_defaults": low},
        "q-v1": {"calibrated": True, "why_provisional": None, "calibrated_below_defaults": None}}}}
    run = make_run(tmp_path / "state" / "reports", [{"id": "c-1"}], manifest=manifest)
    g = run_script("gate", run, "--no-verify")
    want = ("judge: r-v1 calibrated over 8 pairs (4 human fail, 4 human pass) at floors below the defaults: "
            "min_pairs 8 < 100, min_per_class 4 < 10, min_kappa 0.4 < 0.6; its verdicts gate at those floors only")
    assert want in g.stdout.replace("\n", " "), [x for x in g.stdout.splitlines() if "judge" in x]
    assert "q-v1 calibrated over" not in g.stdout
    r = run_script("draft_report", run, "-o", tmp_path / "report.md")
    assert r.rc == 0, r.stdout
    assert want in (tmp_path / "report.md").read_text().replace("\\", "")       # Markdown-escaped there
