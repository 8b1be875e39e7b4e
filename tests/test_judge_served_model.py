"""The model that answered the judge's calls (the reply's `model`) is recorded and checked against the
judge configured: run_cases.py, gate.py and --verify as subprocesses against a fake app and fake
Anthropic / OpenAI judges on real loopback ports.

Before: asked for `claude-judge-1`, a reply that said `"model": "claude-haiku-cheap"` was read as the
calibrated judge's verdict, the gate opened, and the served model was recorded nowhere. A dated
snapshot (`gpt-4o` answered by `gpt-4o-2024-08-06`) is the same judge and is never named."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, app, state  # noqa: F401 (fixtures)
from judgefake import anthropic_handler, openai_handler, write_calibration
from test_judge_run import KEY, app_handler, go, judged_plan, rcase, read
from helpers import run_script

pytestmark = pytest.mark.slow   # over ~7 s: started first (conftest)


def serving(inner, served: str):
    """The fake provider's replies, every one (the probe's too) naming `served` as the model that answered."""
    def handler(req):
        reply = inner(req)
        if isinstance(reply.body, (bytes, str)):
            body = json.loads(reply.body)
            body["model"] = served
            return Reply(reply.status, body)
        return Reply(reply.status, dict(reply.body, model=served))
    return handler


def run(app, state, provider: str, model: str, served: str, *, calibrated: bool, **extra):
    app.handler = app_handler
    with FakeApp() as judge:
        inner = anthropic_handler() if provider == "anthropic" else openai_handler()
        judge.handler = serving(inner, served)
        base = judge.url if provider == "anthropic" else judge.url + "/v1"
        config = {"provider": provider, "model": model, "base_url": base, "api_key": "${JUDGE_KEY}", **extra}
        plan = judged_plan(state, app, config, cases=[rcase("c-1", "full"), rcase("c-2", "full")])  # both pass
        plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": calibrated},
                                                               config=plan["judge"]["config"])
        r, out = go(state, plan, {"JUDGE_KEY": KEY})
    assert r.rc in (0, 1), r.stdout + r.stderr
    return out


def served_of(out, cid):
    return [c.get("served_model") for n in read(out, cid, "judge.json")["rubrics"][0]["nodes"] for c in n["calls"]]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_another_model_answering_a_calibrated_judge_closes_the_gate(app, state, provider):
    out = run(app, state, provider, "claude-judge-1", "claude-haiku-cheap", calibrated=True)
    assert served_of(out, "c-1") == ["claude-haiku-cheap", "claude-haiku-cheap"]
    judged = json.loads((out / "results.json").read_text())["summary"]["judged"]
    assert judged["served_models"] == {"claude-haiku-cheap": 4}
    assert judged["other_model"] == {"cases": 2, "calibrated_cases": 2, "models": {"claude-haiku-cheap": 4}}
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["judge"]["probe"]["served_model"] == "claude-haiku-cheap"
    g = run_script("gate", out)
    assert g.rc == 1 and "2 pass, 0 fail" in g.stdout, g.stdout   # every verdict a pass: only the model closes it
    assert ("the judge's replies in 2 case(s) were served by claude-haiku-cheap (4 call(s)), not the configured "
            "claude-judge-1 or a dated snapshot of it: 2 of those case(s) carry calibrated verdicts") in g.stdout
    assert "set judge.yaml served_model" in g.stdout
    assert run_script("run_cases", "--verify", out).rc == 0   # the count is recounted from the case records
    j = run_script("gate", out, "--json")
    assert any("claude-haiku-cheap" in reason for reason in json.loads(j.stdout)["reasons"]), j.stdout


def test_another_model_answering_a_provisional_judge_is_named_not_gated(app, state):
    out = run(app, state, "anthropic", "claude-judge-1", "claude-haiku-cheap", calibrated=False)
    g = run_script("gate", out)
    assert g.rc == 0, g.stdout
    assert ("judge: the judge's replies in 2 case(s) were served by claude-haiku-cheap (4 call(s)), not the "
            "configured claude-judge-1 or a dated snapshot of it (provisional verdicts, not gating") in g.stdout


@pytest.mark.parametrize("provider,model,served", [
    ("openai", "gpt-4o", "gpt-4o-2024-08-06"),
    ("anthropic", "claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022"),
    ("openai", "gpt-4o", "gpt-4o"),
])
def test_a_dated_snapshot_of_the_configured_model_is_the_same_judge(app, state, provider, model, served):
    out = run(app, state, provider, model, served, calibrated=True)
    judged = json.loads((out / "results.json").read_text())["summary"]["judged"]
    assert judged["served_models"] == {served: 4} and "other_model" not in judged
    g = run_script("gate", out)
    assert g.rc == 0, g.stdout
    assert "dated snapshot" not in g.stdout and "changed during the run" not in g.stdout


def test_a_deployment_name_declares_the_model_it_serves(app, state):
    out = run(app, state, "openai", "judge-prod", "gpt-4o-2024-08-06", calibrated=True, served_model="gpt-4o")
    g = run_script("gate", out)
    assert g.rc == 0 and "dated snapshot" not in g.stdout, g.stdout
    assert served_of(out, "c-2") == ["gpt-4o-2024-08-06", "gpt-4o-2024-08-06"]


def test_a_declared_served_model_is_part_of_the_judge_it_calibrates():
    """Setting or changing served_model is another judge: the labels were measured against whatever
    answered then. Left unset, the identity (and every calibration bound to it) is as before."""
    from assay.judge.binding import identity_sha256, judge_identity
    base = {"provider": "openai", "model": "judge-prod", "base_url": "https://llm.example/v1"}
    plain = judge_identity(base, None)
    assert "served_model" not in plain["judges"][0]
    declared = judge_identity(dict(base, served_model="gpt-4o"), None)
    other = judge_identity(dict(base, served_model="gpt-4o-mini"), None)
    assert len({identity_sha256(plain), identity_sha256(declared), identity_sha256(other)}) == 3


def test_the_same_judge_rule_on_the_names_providers_answer_with():
    """Aliases answered by their dated snapshot are the same judge; another model, or a sibling whose
    name only starts the same, is not."""
    from assay.judge.served import same_judge
    same = [("gpt-4o", "gpt-4o-2024-08-06"), ("claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022"),
            ("claude-sonnet-4-0", "claude-sonnet-4-20250514"), ("claude-opus-4-1", "claude-opus-4-1-20250805"),
            ("openai/gpt-4o", "openai/gpt-4o-2024-08-06"), ("gpt-4o", "gpt-4o")]
    other = [("gpt-4o", "gpt-4o-mini-2024-07-18"), ("claude-judge-1", "claude-haiku-cheap"),
             ("claude-sonnet-4-0", "claude-sonnet-4-5-20250929"), ("gpt-4o", "gpt-4o-audio-preview")]
    assert [same_judge(a, b) for a, b in same] == [True] * len(same)
    assert [same_judge(a, b) for a, b in other] == [False] * len(other)
