"""A pairwise rubric pinned on a conversation: the baseline run's `answer.txt` is its conversation's last
answer, no counterpart of the turn judged, so the pin is unscored with the reason (never pass) and the
linter refuses it (pairwise_in_conversation, naming the file, line and key). run_cases.py, gate.py,
convert_suite.py and validate_cases.py as subprocesses; a fake app and a fake Anthropic Messages judge
on real loopback ports."""

from __future__ import annotations

import json

from fakeapp import FakeApp, adapter, make_plan, run_runner, state  # noqa: F401 (fixtures)
from fixtures_authoring import PROFILE
from helpers import run_script, write_yaml
from judgefake import judge_block, write_calibration, write_rubric
from rundir_util import cases_view
from test_judge_ensemble_run import Desk, convo
from test_judge_pairwise import PAIRWISE, fair
from test_judge_pairwise_ensemble import judge_handler
from test_judge_pipeline import ADAPTER

PIN = "eta-vs-baseline-v1"


def test_a_pairwise_pin_on_a_turn_is_unscored_and_closes_the_gate(state):
    with FakeApp() as app, FakeApp() as judge:
        seen: list = []
        judge.handler = judge_handler(fair, seen)
        write_rubric(state, PAIRWISE, "eta-vs-baseline.md")
        cfg = {"provider": "anthropic", "model": "claude-x", "base_url": judge.url, "api_key": "sk-pw-convo"}
        ad = adapter(app.url, conversation={"style": "client-id", "memory": "session"})
        outs = []
        # the baseline says when the refund arrives at turn 2; the candidate lost it there
        for run_id, eta in (("smoke-20261203T100000Z", True), ("smoke-20261203T100100Z", False)):
            app.handler = Desk(eta=eta)
            plan = make_plan(state, [convo("c-turn", checkpoint_rubric=PIN)], app_url=app.url, adapter_doc=ad,
                             run_id=run_id)
            plan["judge"] = judge_block(state, cfg)
            plan["paths"]["judge_calibration"] = write_calibration(state, {PIN: True}, cfg)
            path = state / "work" / f"{run_id}.json"
            path.write_text(json.dumps(plan), encoding="utf-8")
            out = state / "reports" / run_id
            r = run_runner("--plan", path, "--out", out, "--progress", "never",
                           *(["--baseline", outs[0]] if outs else []))
            assert r.rc == 0, r.stdout + r.stderr
            outs.append(out)
    assert seen == []   # turn 2 was never compared with the baseline's last answer ("You are welcome.")
    v = json.loads((cases_view(outs[1]) / "c-turn" / "verdict.json").read_text())
    judged = v["layers"]["judged"]
    assert v["verdict"] == "unscored" and judged["verdict"] == "unscored", v
    assert f"pairwise rubric {PIN} compares one answer" in judged["reason"]
    g = run_script("gate", outs[1])
    assert g.rc == 1 and "c-turn" in g.stdout, g.stdout + g.stderr


CONVO_CASE = """\
id: c-00000001
unit: billing
split: [full, smoke]
category: multistep
test_type: MFT
template_id: null
review: {status: accepted, by: Dana Reviewer, at: '2026-11-01'}
input:
  turns:
    - user: which invoice is open?
    - user: refund that one
      expect:
        answer:
          rubric: [eta-vs-baseline-v1]
    - user: thanks
expect:
  answer: {must_contain: [welcome]}
"""


def test_the_linter_names_a_pairwise_pin_on_a_conversation(tmp_path):
    st = tmp_path / ".assay"
    write_yaml(st / "adapter.yaml", ADAPTER)
    write_yaml(st / "profile.yaml", PROFILE)
    write_yaml(st / "datasets" / "c-00000001.yaml", CONVO_CASE)
    (st / "rubrics").mkdir()
    (st / "rubrics" / "eta-vs-baseline.md").write_text(PAIRWISE, encoding="utf-8")
    work = st / "work"
    r = run_script("convert_suite", st, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout + r.stderr
    lint = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json")
    found = [f for f in lint.json["findings"] if f["code"] == "pairwise_in_conversation"]
    assert lint.rc == 1 and len(found) == 1, lint.stdout
    f = found[0]
    assert f["severity"] == "ERROR" and f["case_id"] == "c-00000001"
    assert (f["source"], f["line"], f["key"]) == ("datasets/c-00000001.yaml", 14, "input.turns.1.expect.answer.rubric")
    assert "pin it on a single-turn case" in f["message"]
