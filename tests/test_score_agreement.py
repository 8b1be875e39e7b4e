"""score_agreement.py as a user runs it: annotation files in, JSON + exit code out, the sidecar."""

from __future__ import annotations

import json

import pytest

from fixtures_authoring import run_inproc
from helpers import run_script


def write_lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def pair(case, label, judge, pin="refund-eta-v1", node="states-amount"):
    return {"case_id": case, "rubric_id": pin, "node_id": node, "label": label, "judge_label": judge,
            "reviewer": "dana", "ts": "2026-11-30T10:00:00Z"}


def calibrated_rows():
    return ([pair(f"f{i}", "fail", "fail") for i in range(20)] + [pair("fx", "fail", "pass")]
            + [pair(f"p{i}", "pass", "pass") for i in range(97)] + [pair(f"q{i}", "pass", "fail") for i in range(2)]
            + [pair("u1", "pass", "unknown"), pair("u2", "fail", "unknown"), pair("u3", "pass", "unknown")])


def judged_state(root):
    """A state dir with the judge and the rubric the labels are about (what the sidecar binds to)."""
    from judgefake import write_rubric
    state = root / "state"
    (state / "judge").mkdir(parents=True)
    (state / "judge" / "judge.yaml").write_text("provider: openai\nmodel: gpt-4o\n", encoding="utf-8")
    write_rubric(state)
    return state


def test_calibrated_rubric_writes_the_sidecar(tmp_path):
    ann = write_lines(tmp_path / "a.jsonl", calibrated_rows())
    (tmp_path / "state").mkdir()
    sidecar = tmp_path / "state" / "judge" / "calibration.json"
    r = run_script("score_agreement", ann, "--write", sidecar)
    # the sidecar is bound to the judge whose verdicts were labelled: without one it is not written
    assert r.rc == 2 and "judge/judge.yaml does not exist" in r.json["error"] and not sidecar.exists()
    (tmp_path / "state").rmdir()
    judged_state(tmp_path)
    r = run_script("score_agreement", ann, "--write", sidecar)
    assert r.rc == 0, r.stdout
    out = r.json
    rub = out["rubrics"]["refund-eta-v1"]
    assert out["status"] == "calibrated" and out["written"] == str(sidecar)
    # lines with no batch (not from label.py's page): which judge they label was never checked; said, not hidden
    assert out["labelled_judge_unchecked"] == ["(no batch: 123 line(s))"], out
    # ... and how many of the counted pairs stand on them (every one here): the count, not only a listing
    assert out["labelled_judge_unchecked_pairs"] == 120 and out["pairs_on_unbatched_lines"] == 120, out
    assert (rub["pairs"], rub["unknown"], rub["tp"], rub["fn"], rub["fp"], rub["tn"]) == (120, 3, 20, 1, 2, 97)
    doc = json.loads(sidecar.read_text())
    assert doc["schema"] == "assay.calibration/1" and doc["floors"]["min_pairs"] == 100
    entry = doc["rubrics"]["refund-eta-v1"]
    assert entry["calibrated"] is True and entry["unlock"] is None and entry["blocking"] == []
    assert 0 < entry["tpr_ci"][0] < entry["tpr"] < entry["tpr_ci"][1] <= 1
    assert doc["judge"]["identity"] == {"judges": [{"provider": "openai", "model": "gpt-4o",
                                                    "base_url": "https://api.openai.com/v1",
                                                    "structured_output": True}],
                                        "combine": "single", "prompt_version": 1}
    assert len(doc["judge"]["sha256"]) == 64 and len(entry["rubric_sha256"]) == 64
    assert set(entry["node_sha256"]) == {"states-amount", "states-arrival"}


def test_not_calibrated_still_exits_0_and_floors_are_flags(tmp_path):
    rows = [pair(f"f{i}", "fail", "fail") for i in range(6)] + [pair(f"p{i}", "pass", "pass") for i in range(57)]
    ann = write_lines(tmp_path / "a.jsonl", rows)
    r = run_script("score_agreement", ann)
    assert r.rc == 0
    rub = r.json["rubrics"]["refund-eta-v1"]
    assert r.json["status"] == "not_calibrated" and rub["calibrated"] is False
    assert rub["unlock"] == "label 37 more, at least 4 of them failing"
    assert "63 labelled pairs < 100" in rub["blocking"]
    r = run_script("score_agreement", ann, "--min-pairs", "60", "--min-per-class", "5")
    assert r.rc == 0 and r.json["status"] == "calibrated"


def test_later_file_wins_over_earlier(tmp_path):
    first = write_lines(tmp_path / "1.jsonl", [pair("c1", "pass", "fail")])
    second = write_lines(tmp_path / "2.jsonl", [pair("c1", "fail", "fail")])
    r = run_script("score_agreement", first, second, "--min-pairs", "1", "--min-per-class", "0")
    rub = r.json["rubrics"]["refund-eta-v1"]
    assert r.rc == 0 and (rub["tp"], rub["fp"]) == (1, 0) and r.json["duplicates_replaced"] == 1
    r = run_script("score_agreement", tmp_path, "--min-pairs", "1", "--min-per-class", "0")   # the directory
    assert r.rc == 0 and r.json["rubrics"]["refund-eta-v1"]["tp"] == 1


@pytest.mark.parametrize("reviewer", [None, "", "   "])
def test_a_hand_typed_label_naming_no_reviewer_is_not_peoples_agreement(tmp_path, reviewer):
    """120 pairs typed by hand (or copied from judge.json by a script), no reviewer on any line. Before:
    `status: calibrated`, `reviewers: 0`, and --write made the rubric gate on nobody's word. A pair is a
    person agreeing with the judge or not: a line that names no person is exit 2 naming file:line."""
    rows = [{k: v for k, v in r.items() if k != "reviewer"} for r in calibrated_rows()]
    if reviewer is not None:
        rows = [dict(r, reviewer=reviewer) for r in rows]
    path = write_lines(tmp_path / "typed.jsonl", rows)
    r = run_script("score_agreement", path)
    assert r.rc == 2, r.stdout
    err = r.json["error"]
    assert err.startswith(f"{path}:1: no reviewer on the label of case f0 (refund-eta-v1)"), err
    assert 'add "reviewer"' in err and "label.py's page writes it" in err, err
    human_only = write_lines(tmp_path / "h.jsonl", [{"case_id": "c1", "rubric_id": "r-v1", "label": "fail"}] +
                             [pair("c2", "pass", "pass")])
    assert run_script("score_agreement", human_only).rc == 0   # a human-only line pairs with nothing
    r = run_script("score_agreement", write_lines(tmp_path / "named.jsonl", calibrated_rows()))
    assert r.rc == 0 and r.json["status"] == "calibrated", r.stdout


def test_bad_input_names_file_line_and_fix(tmp_path):
    good = json.dumps(pair("c1", "pass", "pass"))
    cases = {
        "notjson": (good + "\n{oops\n", ":2: not JSON"),
        "label": (json.dumps({**pair("c1", "pass", "pass"), "label": "agree"}) + "\n", "label 'agree' (case c1)"),
        "pin": (json.dumps({**pair("c1", "pass", "pass"), "rubric_id": "refund-eta"}) + "\n", "not a rubric pin"),
        "judge": (json.dumps({**pair("c1", "pass", "pass"), "judge_label": "maybe"}) + "\n", "judge_label 'maybe'"),
        "nocase": (json.dumps({k: v for k, v in pair("c1", "pass", "pass").items() if k != "case_id"}) + "\n",
                   "case_id is missing"),
    }
    for name, (text, needle) in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text(text, encoding="utf-8")
        r = run_inproc("score_agreement", path)
        assert r.rc == 2, (name, r.stdout)
        assert needle in r.json["error"] and str(path) in r.json["error"], (name, r.json)
    r = run_inproc("score_agreement", tmp_path / "missing.jsonl")
    assert r.rc == 2 and "not found" in r.json["error"]
    (tmp_path / "emptydir").mkdir()
    r = run_inproc("score_agreement", tmp_path / "emptydir")
    assert r.rc == 2 and "no .jsonl file" in r.json["error"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    assert run_inproc("score_agreement", empty).rc == 2
    human_only = write_lines(tmp_path / "h.jsonl", [{"case_id": "c1", "rubric_id": "r-v1", "label": "fail"}])
    r = run_inproc("score_agreement", human_only)
    assert r.rc == 2 and "no labelled pair" in r.json["error"]
    ok = write_lines(tmp_path / "ok.jsonl", [pair("c1", "pass", "pass")])
    r = run_inproc("score_agreement", ok, "--write", tmp_path / "cal.txt")
    assert r.rc == 2 and ".json" in r.json["error"]
    r = run_inproc("score_agreement", ok, "--write", tmp_path / "no" / "such" / "cal.json")
    assert r.rc == 2 and "does not exist" in r.json["error"]
    r = run_inproc("score_agreement", ok, "--min-tpr", "1.5")
    assert r.rc == 2 and "--min-tpr" in r.json["error"]


def test_the_documented_sidecar_example_is_what_the_script_writes(tmp_path):
    import re

    from helpers import ROOT

    doc = (ROOT / "references" / "calibration.md").read_text(encoding="utf-8")
    example = json.loads(re.search(r"```json\n(.*?)\n```", doc, re.S).group(1))
    ann = write_lines(tmp_path / "a.jsonl", calibrated_rows())
    state = judged_state(tmp_path)
    r = run_script("score_agreement", ann, "--write", tmp_path / "calibration.json", "--state-dir", state)
    written = json.loads((tmp_path / "calibration.json").read_text())
    assert r.rc == 0
    assert set(written) == set(example)
    assert written["floors"] == example["floors"] and written["schema"] == example["schema"]
    assert written["rubrics"]["refund-eta-v1"] == example["rubrics"]["refund-eta-v1"]
    assert written["judge"] == example["judge"]


def test_a_node_the_judge_is_blind_to_is_not_hidden_by_the_pooled_figures(tmp_path):
    """90 human fails caught on one node and none of 10 on the other pool to TPR 0.90 (kappa 0.9):
    calibrated at the default floors, while the judge never caught the one fact only the second node
    checks. Each node of several is held to the TPR/TNR floors on its own labels; and a sidecar
    whose entry was edited to calibrated: true over such a node is not taken by a run."""
    from assay.judge.binding import self_contradiction

    rows = ([pair(f"a{i}", "fail", "fail") for i in range(90)] + [pair(f"b{i}", "pass", "pass") for i in range(90)]
            + [pair(f"c{i}", "fail", "pass", node="states-arrival") for i in range(10)]
            + [pair(f"d{i}", "pass", "pass", node="states-arrival") for i in range(10)])
    ann = write_lines(tmp_path / "a.jsonl", rows)
    state = judged_state(tmp_path)
    sidecar = state / "judge" / "calibration.json"
    r = run_script("score_agreement", ann, "--write", sidecar)
    assert r.rc == 0, r.stdout
    rub = r.json["rubrics"]["refund-eta-v1"]
    assert (rub["tp"], rub["fn"], rub["fp"], rub["tn"]) == (90, 10, 0, 100) and rub["tpr"] == 0.9  # pooled: met
    assert r.json["status"] == "not_calibrated" and rub["calibrated"] is False, rub
    assert rub["blocking"] == ["node states-arrival: TPR 0.000 < 0.90 (the judge caught 0 of its 10 human fail "
                               "labels)"], rub["blocking"]
    assert "node states-arrival: TPR 0.000" in rub["unlock"], rub["unlock"]
    doc = json.loads(sidecar.read_text())
    entry = doc["rubrics"]["refund-eta-v1"]
    assert entry["by_node"]["states-arrival"] == {"tp": 0, "fn": 10, "fp": 0, "tn": 10, "unknown": 0}
    edited = dict(entry, calibrated=True, blocking=[], unlock=None)   # the hand edit a run must not take
    why = self_contradiction(doc, edited, "refund-eta-v1")
    assert why and "node states-arrival: TPR 0.000 < 0.90" in why, why
    # a node short of min_per_class labels of a class is not held to that floor (too few to say)
    few = rows[:180] + [pair("c0", "fail", "pass", node="states-arrival")] + rows[190:]
    r = run_script("score_agreement", write_lines(tmp_path / "b.jsonl", few))
    assert r.rc == 0 and r.json["status"] == "calibrated", r.json["rubrics"]["refund-eta-v1"]["blocking"]


def test_an_older_export_of_a_batch_never_beats_the_newer_one(tmp_path):
    """A browser saves a second download of one page as `<batch> (1).jsonl`, which sorts before
    `<batch>.jsonl`: read as a folder, the first export came last and its labels won over the
    person's final word (and kept an item they skipped since). Only a batch's newest export counts."""
    def line(case, label, ts, **extra):
        return dict(pair(case, label, "fail"), batch="b-1", answer_sha256="a" * 64, ts=ts, **extra)
    folder = tmp_path / "annotations"
    folder.mkdir()
    first = [line("c1", "fail", "2026-11-30T10:00:00Z"), line("c2", "fail", "2026-11-30T10:00:05Z")]
    # the person changed c1 to pass and skipped c2 (unlabelled) before exporting again
    second = [line("c1", "pass", "2026-11-30T10:02:00Z")]
    write_lines(folder / "b-1.jsonl", first)
    write_lines(folder / "b-1 (1).jsonl", second)
    assert sorted(p.name for p in folder.iterdir()) == ["b-1 (1).jsonl", "b-1.jsonl"]   # the older one last
    r = run_script("score_agreement", folder, "--min-pairs", 1, "--min-per-class", 0)
    assert r.rc == 0, r.stdout
    rub = r.json["rubrics"]["refund-eta-v1"]
    assert (rub["tp"], rub["fn"], rub["fp"], rub["tn"]) == (0, 0, 1, 0), rub   # c1: pass (judge fail); c2: none
    assert r.json["superseded_exports"] == [{"batch": "b-1", "file": str(folder / "b-1.jsonl"), "lines": 2,
                                             "replaced_by": str(folder / "b-1 (1).jsonl")}], r.json


def test_labels_on_case_ids_the_suite_does_not_have_are_not_counted(tmp_path):
    # 90 labels on the suite's cases and 30 on ids it has never had: counted together they met the
    # 100-pair floor and --write made the judge gate on labels that match no case
    rows = calibrated_rows()
    state = judged_state(tmp_path)
    (state / "datasets").mkdir()
    real = {r["case_id"] for r in rows[:-33]}
    for cid in sorted(real):
        (state / "datasets" / f"{cid}.yaml").write_text(f"id: {cid}\n", encoding="utf-8")
    ann = write_lines(tmp_path / "a.jsonl", rows)
    sidecar = state / "judge" / "calibration.json"
    r = run_script("score_agreement", ann, "--write", sidecar)
    assert r.rc == 0, r.stdout
    out = r.json
    assert out["status"] == "not_calibrated", out
    rub = out["rubrics"]["refund-eta-v1"]
    assert rub["pairs"] == 90 and "90 labelled pairs < 100" in rub["blocking"]
    ghosts = {g["case_id"]: g for g in out["not_in_suite"]}
    assert len(ghosts) == 33 and "p96" in ghosts and "u3" in ghosts
    assert ghosts["p96"]["line"] == f"{ann}:{[r['case_id'] for r in rows].index('p96') + 1}"
    assert "no case 'p96' in datasets/" in ghosts["p96"]["fix"]
    assert json.loads(sidecar.read_text())["rubrics"]["refund-eta-v1"]["calibrated"] is False
    # every label on an unknown id: nothing to score, said with the count
    only = write_lines(tmp_path / "b.jsonl", rows[-33:])
    r = run_script("score_agreement", only, "--state-dir", state)
    assert r.rc == 2 and "33 on case ids not in the suite" in r.json["error"], r.json
    # without a state dir the suite is not known: not checked, and said (null)
    r = run_script("score_agreement", ann)
    assert r.rc == 0 and r.json["not_in_suite"] is None and r.json["status"] == "calibrated"


def test_the_output_says_on_how_many_cases_and_reviewers_the_pairs_stand(tmp_path):
    # one person labelled one case on 12 answers, then again on the same answers under another batch:
    # 12 pairs, but on one case by one reviewer -- said, not hidden behind the pair count
    rows = [dict(pair("c-1", "fail" if i < 6 else "pass", "fail" if i < 6 else "pass"),
                 answer_sha256=f"{i:064x}") for i in range(12)]
    ann = write_lines(tmp_path / "a.jsonl", rows + [dict(r, batch="again", reviewer=" dana ") for r in rows])
    r = run_script("score_agreement", ann, ann, "--min-pairs", "12", "--min-per-class", "6")
    assert r.rc == 0, r.stdout
    rub = r.json["rubrics"]["refund-eta-v1"]
    assert (rub["pairs"], rub["cases"], rub["reviewers"]) == (12, 1, 1), rub
    assert r.json["duplicates_replaced"] == 36


def test_labels_on_a_node_the_rubric_does_not_have_are_not_counted(tmp_path):
    # refund-eta-v1 has states-amount and states-arrival; 30 labels on "states-amout" (a typo) filled the
    # pair floor: --write made the rubric gate on labels of a criterion the judge is never asked
    rows = calibrated_rows()
    rows = rows[:-33] + [dict(r, node_id="states-amout") for r in rows[-33:]]
    state = judged_state(tmp_path)
    ann = write_lines(tmp_path / "a.jsonl", rows)
    r = run_script("score_agreement", ann, "--write", state / "judge" / "calibration.json")
    assert r.rc == 0, r.stdout
    assert r.json["status"] == "not_calibrated" and r.json["rubrics"]["refund-eta-v1"]["pairs"] == 90, r.json
    stray = r.json["not_in_rubric"]
    assert len(stray) == 33 and stray[0]["node_id"] == "states-amout" and stray[0]["line"] == f"{ann}:91"
    assert "has no node 'states-amout' (its nodes: states-amount, states-arrival)" in stray[0]["fix"]


def test_labels_on_holdout_cases_are_never_counted(tmp_path):
    """The holdout seal: label.py never shows a holdout case, yet hand-written lines on holdout case ids
    were counted, so 25 of them lifted a judge over the 100-pair floor. They are set aside, counted
    (`holdout_excluded`), never named."""
    rows = calibrated_rows()
    state = judged_state(tmp_path)
    (state / "datasets").mkdir()
    sealed = {f"p{i}" for i in range(25)}
    for cid in sorted({r["case_id"] for r in rows}):
        split = "[holdout]" if cid in sealed else "[full]"
        (state / "datasets" / f"{cid}.yaml").write_text(f"id: {cid}\nsplit: {split}\n", encoding="utf-8")
    ann = write_lines(tmp_path / "a.jsonl", rows)
    r = run_script("score_agreement", ann, "--write", state / "judge" / "calibration.json")
    assert r.rc == 0, r.stdout
    out = r.json
    assert out["holdout_excluded"] == 25 and out["status"] == "not_calibrated", out
    rub = out["rubrics"]["refund-eta-v1"]
    assert rub["pairs"] == 95 and "95 labelled pairs < 100" in rub["blocking"], rub
    assert not any(f'"{cid}"' in r.stdout for cid in sealed)    # counted, never printed
    assert not any(x.startswith("holdout") for x in out["not_checked"]), out["not_checked"]


def test_scoring_without_the_state_dir_says_what_it_did_not_check(tmp_path):
    """score_agreement.py FILES alone checks neither case ids, holdout, nodes nor the judge labelled, yet
    printed `status: calibrated` and nothing else: the output now names each thing not checked."""
    ann = write_lines(tmp_path / "a.jsonl", calibrated_rows())
    r = run_script("score_agreement", ann)
    assert r.rc == 0 and r.json["status"] == "calibrated", r.stdout
    words = " | ".join(r.json["not_checked"])
    for what in ("case ids", "holdout cases", "rubric nodes", "the judge labelled"):
        assert what in words, words
    assert r.json["holdout_excluded"] is None
    state = judged_state(tmp_path)
    (state / "datasets").mkdir()
    for cid in sorted({x["case_id"] for x in calibrated_rows()}):
        (state / "datasets" / f"{cid}.yaml").write_text(f"id: {cid}\nsplit: [full]\n", encoding="utf-8")
    r = run_script("score_agreement", ann, "--write", state / "judge" / "calibration.json")
    assert r.rc == 0 and r.json["not_checked"] == [], r.json["not_checked"]


def test_a_run_dir_passed_as_annotations_says_where_labels_live(tmp_path):
    """score_agreement.py <run dir> read its cases.jsonl as labels: "unknown key(s) 'verdict', 'files'"."""
    run = tmp_path / "app" / ".assay" / "reports" / "smoke-20261205T000000Z"
    run.mkdir(parents=True)
    (run / "manifest.yaml").write_text('{"run_id": "smoke-20261205T000000Z", "cases": []}\n', encoding="utf-8")
    write_lines(run / "cases.jsonl", [{"case_id": "c1", "verdict": {"verdict": "pass"}, "files": {}}])
    for arg in (run, run / "cases.jsonl"):
        r = run_script("score_agreement", arg)
        assert r.rc == 2, r.stdout + r.stderr
        err = r.json["error"]
        assert "unknown key" not in err and "(the run's case records, not labels)" in err, err
        assert f"annotations live in {tmp_path / 'app' / '.assay' / 'annotations'}/ (exported from label.py's page)" in err, err


def test_labels_on_a_rubric_version_the_state_dir_has_no_file_for_never_read_calibrated(tmp_path):
    # labels exported for refund-eta-v2 while rubrics/refund-eta.md is at version 1 (another rubric version,
    # the file reverted, a pin typed by hand): before, the output read status "calibrated" and the sidecar
    # wrote refund-eta-v2 calibrated: true (only a note said "stays provisional"); no case can pin that text
    state = judged_state(tmp_path)
    ann = write_lines(tmp_path / "a.jsonl", [dict(r, rubric_id="refund-eta-v2") for r in calibrated_rows()])
    sidecar = state / "judge" / "calibration.json"
    for args in (("--state-dir", state), ("--write", sidecar)):
        r = run_script("score_agreement", ann, *args)
        assert r.rc == 0, r.stdout + r.stderr
        rub = r.json["rubrics"]["refund-eta-v2"]
        assert r.json["status"] == "not_calibrated" and r.json["calibrated_rubrics"] == [], r.json
        assert rub["calibrated"] is False and rub["pairs"] == 120
        assert rub["blocking"][0].startswith("no rubric file at refund-eta-v2 in the state dir "
                                             "(rubrics/refund-eta.md is refund-eta-v1)"), rub["blocking"]
        assert "label the pin the rubric file has" in rub["unlock"]
    assert json.loads(sidecar.read_text())["rubrics"]["refund-eta-v2"]["calibrated"] is False
    # without a state dir the rubric files are not known: scored as before, and said in not_checked
    r = run_script("score_agreement", ann)
    assert r.json["rubrics"]["refund-eta-v2"]["calibrated"] is True
    assert any(x.startswith("rubric nodes:") for x in r.json["not_checked"])


def test_two_reviewers_who_disagree_on_an_item_leave_its_label_unknown_whatever_the_file_order(tmp_path):
    """Dana fails c1, Lee passes it. Before, the file read last won (`duplicates_replaced`: 1) and
    `reviewers` counted each name once: the disagreement between people vanished and --write took
    whichever side sorted last. Now c1 is named in people_disagree (both labels, both lines) and out of
    the 2x2, in either order; Lee relabelling c3 (a later line of his own) still replaces his label;
    Dana and Lee agreeing on c2 is one pair, not two."""
    def by(reviewer, case, label, judge):
        return dict(pair(case, label, judge), reviewer=reviewer)
    dana = write_lines(tmp_path / "dana.jsonl", [by("dana", "c1", "fail", "fail"), by("dana", "c2", "pass", "pass"),
                                                 by("dana", "c3", "pass", "pass")])
    lee = write_lines(tmp_path / "lee.jsonl", [by("lee", "c1", "pass", "fail"), by("lee", "c2", "pass", "pass"),
                                               by("lee", "c3", "fail", "pass"), by("lee", "c3", "pass", "pass")])
    dana_again = write_lines(tmp_path / "dana-2.jsonl", [by("dana", "c4", "pass", "fail"),
                                                         by("dana", "c4", "fail", "fail")])
    state = judged_state(tmp_path)
    sidecar = state / "judge" / "calibration.json"
    outs = []
    for files in ((dana, lee, dana_again), (dana_again, lee, dana)):
        r = run_script("score_agreement", *files, "--write", sidecar, "--min-pairs", "1", "--min-per-class", "0")
        assert r.rc == 0, r.stdout
        out = r.json
        assert out["people_disagree_items"] == 1, out
        (d,) = out["people_disagree"]
        assert (d["case_id"], d["node_id"], d["labels"]) == ("c1", "states-amount", {"dana": "fail", "lee": "pass"})
        assert sorted(d["lines"]) == [f"{dana}:1", f"{lee}:1"] and "relabels" in d["fix"]
        assert out["duplicates_replaced"] == 2 and out["labelled_by_several_reviewers"] == 3   # c3, c4; c1-c3
        rub = out["rubrics"]["refund-eta-v1"]
        assert (rub["pairs"], rub["tp"], rub["fn"], rub["fp"], rub["tn"]) == (3, 1, 0, 0, 2), rub   # c4; c2, c3
        assert rub["reviewers"] == 2 and rub["people_disagree"] == 1
        assert any("people disagree with each other on 1 item" in n for n in rub["notes"]), rub["notes"]
        doc = json.loads(sidecar.read_text())["rubrics"]["refund-eta-v1"]
        assert (doc["tp"], doc["fn"], doc["fp"], doc["tn"]) == (1, 0, 0, 2) and doc["notes"] == rub["notes"]
        outs.append({k: rub[k] for k in ("tp", "fn", "fp", "tn", "kappa")})
    assert outs[0] == outs[1]          # no side taken by the order the files are read in
    # the people's own disagreement alone is no pair: said in the error
    alone = write_lines(tmp_path / "alone.jsonl", [by("dana", "c1", "fail", "fail"), by("lee", "c1", "pass", "fail")])
    r = run_script("score_agreement", alone)
    assert r.rc == 2 and "1 item(s) people disagree on" in r.json["error"], r.stdout


def test_a_label_given_before_the_rest_of_a_long_answer_was_shown_is_not_counted(tmp_path):
    """The page exports `saw_whole_answer: false` when the person labelled a long answer without ever
    showing its rest: the label is on the first 20,000 characters, its answer_sha256 on the whole answer.
    Before, the key was refused as unknown (so nothing recorded it); now the line is read, not counted,
    and named; a label after the rest was shown counts."""
    sha = "ab" * 32
    rows = [dict(pair("c1", "pass", "fail"), answer_sha256=sha, saw_whole_answer=False),
            dict(pair("c2", "fail", "fail"), answer_sha256=sha, saw_whole_answer=True),
            pair("c3", "pass", "pass")]
    r = run_script("score_agreement", write_lines(tmp_path / "a.jsonl", rows), "--min-pairs", "1",
                   "--min-per-class", "0")
    assert r.rc == 0, r.stdout
    assert r.json["without_whole_answer_labels"] == 1
    (partial,) = r.json["without_whole_answer"]
    assert partial["case_id"] == "c1" and partial["line"].endswith("a.jsonl:1") and "show the rest" in partial["fix"]
    rub = r.json["rubrics"]["refund-eta-v1"]
    assert (rub["pairs"], rub["tp"], rub["fp"], rub["tn"]) == (2, 1, 0, 1), rub
    # the same reviewer's later label, after the rest was shown, replaces the partial one
    later = write_lines(tmp_path / "b.jsonl", [dict(pair("c1", "fail", "fail"), answer_sha256=sha, saw_whole_answer=True)])
    r = run_script("score_agreement", tmp_path / "a.jsonl", later, "--min-pairs", "1", "--min-per-class", "0")
    assert r.rc == 0 and r.json["without_whole_answer_labels"] == 0 and r.json["rubrics"]["refund-eta-v1"]["tp"] == 2
    bad = write_lines(tmp_path / "bad.jsonl", [dict(pair("c1", "pass", "pass"), saw_whole_answer="no")])
    r = run_script("score_agreement", bad)
    assert r.rc == 2 and f"{bad}:1: saw_whole_answer 'no' (case c1) must be true or false" in r.json["error"], r.stdout
