"""rescore.py reuses the source run's judge verdicts only when the source run's judge IS the judge
configured now, as the calibration binding reads it (assay.judge.binding.judge_identity: base_url,
structured_output, served_model, a command's scripts by content, the values of `${VAR}`s in
base_url/model/served_model), not only its provider/model/command text.

Before: the reuse test compared the suite's judge part (provider, model, command as written). A run
judged with JUDGE_URL naming judge B (it passes everything; provisional there, since the calibration
was measured on judge A), rescored with JUDGE_URL naming the calibrated judge A, kept B's verdicts and
marked them calibrated: the gate opened ("judged (calibrated, gating): ... pass") on an answer judge A
fails, on verdicts of a judge nobody measured.

End to end: convert_suite, make_plan, run_cases, rescore and gate as subprocesses, a fake app and two
fake OpenAI judges on real loopback ports."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply
from helpers import run_script, write_yaml
from judgefake import openai_handler
from rundir_util import cases_view
from test_judge_pipeline import make_state, pipeline
from test_judge_env_binding import agreed
from test_judge_run import app_handler

pytestmark = pytest.mark.slow


def says_pass(node, answer):   # judge B: passes everything, quoting the answer
    return {"verdict": "pass", "evidence": [answer[:12]], "reason": "looks fine"}


@pytest.mark.parametrize("change", ["var_value", "base_url"])
def test_rescore_never_reuses_another_judges_verdicts_as_calibrated(tmp_path, change):
    with FakeApp(app_handler) as app, FakeApp(openai_handler()) as a, FakeApp(openai_handler(says_pass)) as b:
        url = "${JUDGE_URL}" if change == "var_value" else a.url + "/v1"
        state = make_state(tmp_path, judge_yaml=f"provider: openai\nmodel: gpt-test\nbase_url: {url}\n")
        env_a = {"REFUNDS_URL": app.url, "JUDGE_URL": a.url + "/v1"}
        env_b = {"REFUNDS_URL": app.url, "JUDGE_URL": b.url + "/v1"}
        agreed(state, env_a)
        if change == "base_url":   # judge.yaml pointed at judge B for a run, then back at A
            write_yaml(state / "judge" / "judge.yaml", f"provider: openai\nmodel: gpt-test\nbase_url: {b.url}/v1\n")
        _, p = pipeline(state, env_b, "--judge")
        assert p.rc == 0, p.stdout
        out = state / "reports" / "smoke-20261130T000000Z"
        r = run_script("run_cases", "--plan", state / "work" / "plan.json", "--out", out, "--progress", "never",
                       env=env_b)
        assert r.rc == 0, r.stdout + r.stderr
        first = json.loads((cases_view(out) / "c-00000002" / "judge.json").read_text())["rubrics"][0]
        assert first["verdict"] == "pass" and first["provisional"] is True, first   # judge B, not measured
        if change == "base_url":
            write_yaml(state / "judge" / "judge.yaml", f"provider: openai\nmodel: gpt-test\nbase_url: {a.url}/v1\n")
        new = state / "reports" / "smoke-20261130T010000Z"
        rs = run_script("rescore", out, "--out", new, "--judge", env=env_a)
        assert rs.rc in (0, 1), rs.stdout + rs.stderr
        doc = json.loads((cases_view(new) / "c-00000002" / "judge.json").read_text())
        res = doc["rubrics"][0]
        assert res["provisional"] is False, res                  # judge A now: calibrated
        assert "reused_from" not in res, res                     # before: B's pass, reused
        assert res["verdict"] == "fail", res                     # judge A's own verdict
        g = run_script("gate", new)
    assert g.rc == 1, g.stdout                                   # before: 0, "judged (calibrated, gating)" pass
    assert "c-00000002" in g.stdout
