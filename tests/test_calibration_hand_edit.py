"""A calibration sidecar whose own numbers do not support `calibrated: true` never makes a judge gate.

score_agreement.py writes `calibrated: true` only when the 2x2 it measured meets the floors it records.
Before: the run read only that flag. Twelve labelled pairs scored `not_calibrated`, then one hand
edit of judge/calibration.json (`calibrated: false` -> `true`, blocking and unlock cleared; or the
floors an honest low calibration was made at raised back to the defaults, so the gate's "at floors
below the defaults" words vanished) made the rubric "calibrated, gating": a judge that says pass to
everything opened the gate on a case whose only check is that rubric and whose answer fails it.

End to end: score_agreement.py --write, run_cases.py and gate.py as subprocesses, a fake app and a
fake OpenAI judge on real loopback ports."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest

from fakeapp import FakeApp, Reply, case, make_plan, state  # noqa: F401 (fixtures)
from judgefake import judge_block, openai_handler, write_rubric
from helpers import run_script
from trust_fixtures import go, read

ANSWER = "Refund of 20 USD issued."   # no arrival time: refund-eta-v1's states-arrival fails it


def labels(path, n_each: int) -> None:
    """n_each pairs where person and judge both say fail, n_each where both say pass."""
    rows = [{"case_id": f"{label}-{i}", "rubric_id": "refund-eta-v1", "node_id": "states-arrival", "label": label,
             "judge_label": label, "reviewer": "dana", "ts": "2026-11-30T10:00:00Z"}
            for label in ("fail", "pass") for i in range(n_each)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def says_pass(node, answer):   # a judge that passes everything, quoting the answer
    return {"verdict": "pass", "evidence": [answer[:12]], "reason": "looks fine"}


@contextmanager
def labelled_judge(state):
    """The app answering ANSWER and a judge that passes everything (its judge.yaml written), refund-eta-v1's
    rubric, and 6 + 6 agreeing labels of it: (app, judge config, annotations file)."""
    write_rubric(state)
    with FakeApp(lambda req: Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, {"message": ANSWER})) \
            as app, FakeApp(openai_handler(says_pass)) as judge:
        config = {"provider": "openai", "model": "gpt-test", "base_url": judge.url + "/v1"}
        (state / "judge").mkdir(exist_ok=True)
        (state / "judge" / "judge.yaml").write_text(json.dumps(config), encoding="utf-8")
        ann = state / "annotations" / "dana.jsonl"
        ann.parent.mkdir()
        labels(ann, 6)
        yield app, config, ann


@pytest.mark.parametrize("edit", ["flag", "floors"])
def test_a_hand_edited_sidecar_does_not_make_a_judge_gate(state, edit):
    with labelled_judge(state) as (app, config, ann):
        sidecar = state / "judge" / "calibration.json"
        low = ("--min-pairs", "12", "--min-per-class", "6") if edit == "floors" else ()
        w = run_script("score_agreement", ann, "--write", sidecar, *low)
        assert w.rc == 0, w.stdout + w.stderr
        assert w.json["status"] == ("calibrated" if low else "not_calibrated"), w.stdout
        doc = json.loads(sidecar.read_text())
        if edit == "flag":   # the flag flipped, and the words that would give it away cleared
            doc["rubrics"]["refund-eta-v1"].update(calibrated=True, blocking=[], unlock=None)
        else:                # the floors it was measured at hidden: "calibrated over 12 pairs" reads as over 100
            doc["floors"] = {"min_pairs": 100, "min_per_class": 10, "min_tpr": 0.9, "min_tnr": 0.9, "min_kappa": 0.6}
        sidecar.write_text(json.dumps(doc), encoding="utf-8")

        only = {"answer": {"rubric": ["refund-eta-v1"]}}
        plan = make_plan(state, [case("c-1", "When does my refund arrive?", expect=only)], app_url=app.url)
        plan["judge"] = judge_block(state, config)
        plan["paths"]["judge_calibration"] = "judge/calibration.json"
        r, out = go(state, plan)
        assert r.rc == 0, r.stdout + r.stderr

    rubric = read(out, "c-1", "judge.json")["rubrics"][0]
    assert rubric["verdict"] == "pass"                      # what the judge said
    assert rubric["provisional"] is True, rubric            # ... is not a calibrated verdict
    assert "judge/calibration.json says calibrated, but its own numbers do not support it" in rubric["why_provisional"]
    assert "12 labelled pairs < 100" in rubric["why_provisional"]
    assert read(out, "c-1")["verdict"] == "unscored"
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout                              # before: 0, "judged (calibrated, gating): 1 case(s): 1 pass"
    assert "judged (calibrated, gating)" not in g.stdout
    assert "its own numbers do not support it" in g.stdout, g.stdout
    assert run_script("run_cases", "--verify", out).rc == 0
