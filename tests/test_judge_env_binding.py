"""A calibration is bound to the judge a judge.yaml `${VAR}` names, not to the variable's text.

Before: with `base_url: ${JUDGE_URL}`, score_agreement.py --write bound the calibration to the TEXT
`${JUDGE_URL}`. Calibrated while JUDGE_URL named one judge server, then run with JUDGE_URL naming
another whose judge says pass to everything, the gate printed PASS and "judged (calibrated, gating)",
with no word about the change. And with `model: ${JUDGE_MODEL}`, every calibrated run closed on
"served by <redacted> (4 call(s)), not the configured ${JUDGE_MODEL}" although the configured model
answered: the reply's model was compared after redaction.

End to end: score_agreement.py --write, run_cases.py and gate.py as subprocesses, a fake app and fake
OpenAI judges on real loopback ports, each test its own state dir and ports."""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply, case, make_plan, state  # noqa: F401 (fixtures)
from judgefake import judge_block, openai_handler, write_rubric
from helpers import run_script
from trust_fixtures import go, read

FAILS = "Refund of 20 USD issued."                                      # no arrival: states-arrival fails it
PASSES = "Refund of 20 USD issued; it arrives within 5 business days."
MODEL = "acme-judge-large-7"   # a distinctive value: every variable's value is redacted where assay writes


def says_pass(node, answer):   # the other judge: passes everything, quoting the answer
    return {"verdict": "pass", "evidence": [answer[:12]], "reason": "looks fine"}


def serving(inner, served: str):
    """The fake judge's replies, each naming `served` as the model that answered."""
    def handler(req):
        reply = inner(req)
        return Reply(reply.status, dict(reply.body, model=served))
    return handler


def app_of(answer: str) -> FakeApp:
    return FakeApp(lambda req: Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, {"message": answer}))


def calibrate(state, config: dict, env: dict) -> dict:
    """judge.yaml as written, 6 + 6 labelled pairs on which person and judge agree, --write at floors
    that 12 pairs meet (with `env` the environment --write runs in); the sidecar."""
    write_rubric(state)
    (state / "judge").mkdir(exist_ok=True)
    (state / "judge" / "judge.yaml").write_text(json.dumps(config), encoding="utf-8")
    agreed(state, env)
    return json.loads((state / "judge" / "calibration.json").read_text())


def agreed(state, env: dict) -> None:
    """6 + 6 labelled pairs on which person and judge agree, --write at floors they meet, bound to the
    judge the state dir configures with `env` the environment --write runs in."""
    import hashlib
    from assay.suite.convert import suite_case_ids
    ann = state / "annotations" / "dana.jsonl"
    ann.parent.mkdir(exist_ok=True)
    # on the suite's own cases when it has some (a label on an id the suite lacks is not counted), each
    # pair on its own answer; a state dir with no datasets/ is not checked for ids
    ids = sorted(suite_case_ids(state)) if (state / "datasets").is_dir() else []
    rows = [{"case_id": ids[i % len(ids)] if ids else f"{label}-{i}", "rubric_id": "refund-eta-v1",
             "node_id": "states-arrival", "label": label, "judge_label": label, "reviewer": "dana",
             "ts": "2026-11-30T10:00:00Z",
             **({"answer_sha256": hashlib.sha256(f"{label}-{i}".encode()).hexdigest()} if ids else {})}
            for label in ("fail", "pass") for i in range(6)]
    ann.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    w = run_script("score_agreement", ann, "--write", state / "judge" / "calibration.json",
                   "--min-pairs", "12", "--min-per-class", "6", env=env)
    assert w.rc == 0 and w.json["status"] == "calibrated", w.stdout + w.stderr


def run(state, config: dict, app_url: str, env: dict, run_id: str):
    only = {"answer": {"rubric": ["refund-eta-v1"]}}
    plan = make_plan(state, [case("c-1", "When does my refund arrive?", expect=only)], app_url=app_url, run_id=run_id)
    plan["judge"] = judge_block(state, config)
    plan["paths"]["judge_calibration"] = "judge/calibration.json"
    path = state / "work" / f"{run_id}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / run_id
    r = run_script("run_cases", "--plan", path, "--out", out, "--progress", "never", env=env)
    assert r.rc == 0, r.stdout + r.stderr
    return out, run_script("gate", out)


def test_calibrated_with_one_judge_url_run_with_another_is_provisional_and_said(state):
    """(a) JUDGE_URL named judge A at --write; the run's JUDGE_URL names judge B (says pass to all)."""
    config = {"provider": "openai", "model": "gpt-test", "base_url": "${JUDGE_URL}"}
    with app_of(FAILS) as app, FakeApp(openai_handler()) as a, FakeApp(openai_handler(says_pass)) as b:
        sidecar = calibrate(state, config, {"JUDGE_URL": a.url + "/v1"})
        text = (state / "judge" / "calibration.json").read_text()
        assert a.url.split("//")[1] not in text and "${JUDGE_URL}" in text   # the value never reaches disk

        same, g_same = run(state, config, app.url, {"JUDGE_URL": a.url + "/v1"}, "same-20261130T100000Z")
        other, g = run(state, config, app.url, {"JUDGE_URL": b.url + "/v1"}, "other-20261130T100000Z")

    # the judge it was calibrated with: calibrated, gating, and it fails the answer
    assert read(same, "c-1", "judge.json")["rubrics"][0]["provisional"] is False
    assert g_same.rc == 1 and "judged (calibrated, gating): 1 case(s): 1 fail" in g_same.stdout, g_same.stdout

    rubric = read(other, "c-1", "judge.json")["rubrics"][0]
    assert rubric["verdict"] == "pass" and rubric["provisional"] is True, rubric   # another judge's word
    assert ("the value of ${JUDGE_URL} (base_url/model/served_model) is not the one it was calibrated with"
            in rubric["why_provisional"]), rubric["why_provisional"]
    assert g.rc == 1, g.stdout                   # before: 0, PASS, "judged (calibrated, gating): 1 case(s): 1 pass"
    assert "judged (calibrated, gating)" not in g.stdout
    assert "is not the one it was calibrated with" in g.stdout, g.stdout
    assert run_script("run_cases", "--verify", other).rc == 0
    assert sidecar["judge"]["identity"]["judges"][0]["resolved"]["vars"] == ["JUDGE_URL"]


def test_judge_model_variable_right_model_gates_without_a_false_served_by(state):
    """(b) `model: ${JUDGE_MODEL}`, the configured model answering (the fake judge echoes the model
    asked for): calibrated and gating, no "served by"; the value is in no file. Another value at run
    time is another judge (provisional); another model answering still closes the gate."""
    with app_of(PASSES) as app, FakeApp(openai_handler()) as judge:
        config = {"provider": "openai", "model": "${JUDGE_MODEL}", "base_url": judge.url + "/v1"}
        calibrate(state, config, {"JUDGE_MODEL": MODEL})
        out, g = run(state, config, app.url, {"JUDGE_MODEL": MODEL}, "right-20261130T100000Z")
        moved, g_moved = run(state, config, app.url, {"JUDGE_MODEL": "acme-judge-small-3"}, "moved-20261130T100000Z")
        judge.handler = serving(openai_handler(), "claude-haiku-cheap")
        swapped, g_swapped = run(state, config, app.url, {"JUDGE_MODEL": MODEL}, "swapped-20261130T100000Z")

    # before: rc 1, "served by <redacted> (4 call(s)), not the configured ${JUDGE_MODEL}"
    assert g.rc == 0, g.stdout
    assert "judged (calibrated, gating): 1 case(s): 1 pass" in g.stdout and "served by" not in g.stdout, g.stdout
    judged = json.loads((out / "results.json").read_text())["summary"]["judged"]
    assert "other_model" not in judged and judged["served_models"] == {"<redacted>": 2}, judged
    calls = [c for n in read(out, "c-1", "judge.json")["rubrics"][0]["nodes"] for c in n["calls"]]
    assert [c.get("served_model") for c in calls] == ["<redacted>", "<redacted>"]
    assert not any(c.get("served_other_model") for c in calls)
    for path in [p for p in list(out.rglob("*")) + [state / "judge" / "calibration.json"] if p.is_file()]:
        assert MODEL not in path.read_text(errors="replace"), path
    assert run_script("run_cases", "--verify", out).rc == 0

    rubric = read(moved, "c-1", "judge.json")["rubrics"][0]
    assert rubric["provisional"] is True and "${JUDGE_MODEL}" in rubric["why_provisional"], rubric
    assert "judged (calibrated, gating)" not in g_moved.stdout, g_moved.stdout

    assert g_swapped.rc == 1, g_swapped.stdout
    assert ("served by claude-haiku-cheap (2 call(s)), not the configured ${JUDGE_MODEL}" in g_swapped.stdout), \
        g_swapped.stdout


def test_a_calibration_bound_to_the_text_is_provisional_until_rewritten_and_no_variable_is_unchanged(state):
    """(c) A sidecar written before values were bound (its identity has no `resolved`) over a judge.yaml
    that names ${JUDGE_URL}: provisional, naming the fix; --write again (nothing relabelled) makes it
    gate. A judge.yaml with no variable: the identity is as it always was, and the calibration gates."""
    from assay.judge.binding import identity_sha256
    config = {"provider": "openai", "model": "gpt-test", "base_url": "${JUDGE_URL}"}
    with app_of(PASSES) as app, FakeApp(openai_handler()) as judge:
        env = {"JUDGE_URL": judge.url + "/v1"}
        sidecar = calibrate(state, config, env)
        old = dict(sidecar["judge"]["identity"])                # as the version before this fix wrote it
        old["judges"] = [{k: v for k, v in j.items() if k != "resolved"} for j in old["judges"]]
        sidecar["judge"] = {"identity": old, "sha256": identity_sha256(old)}
        (state / "judge" / "calibration.json").write_text(json.dumps(sidecar), encoding="utf-8")
        text_bound, g = run(state, config, app.url, env, "text-20261130T100000Z")
        calibrate(state, config, env)
        rewritten, g_rewritten = run(state, config, app.url, env, "rewritten-20261130T100000Z")

        plain = {"provider": "openai", "model": "gpt-test", "base_url": judge.url + "/v1"}
        bare = calibrate(state, plain, {})
        kept, g_plain = run(state, plain, app.url, {}, "plain-20261130T100000Z")

    rubric = read(text_bound, "c-1", "judge.json")["rubrics"][0]
    assert rubric["provisional"] is True, rubric          # before: the text matched, so it gated
    why = rubric["why_provisional"]
    assert "bound to the text ${JUDGE_URL} in judge.yaml, not to the value" in why, why
    assert "score_agreement.py <annotations> --write judge/calibration.json" in why, why
    assert g.rc == 1 and "judged (calibrated, gating)" not in g.stdout and "bound to the text" in g.stdout, g.stdout
    assert g_rewritten.rc == 0 and "judged (calibrated, gating): 1 case(s): 1 pass" in g_rewritten.stdout

    assert "resolved" not in bare["judge"]["identity"]["judges"][0]
    assert bare["judge"]["identity"]["judges"][0] == {"provider": "openai", "model": "gpt-test",
                                                      "base_url": plain["base_url"], "structured_output": True}
    assert read(kept, "c-1", "judge.json")["rubrics"][0]["provisional"] is False
    assert g_plain.rc == 0 and "judged (calibrated, gating): 1 case(s): 1 pass" in g_plain.stdout, g_plain.stdout


def test_write_refuses_a_judge_variable_that_is_not_set(state):
    """Bound to nothing but the text, the calibration would hold for any value: --write names the variable."""
    write_rubric(state)
    (state / "judge").mkdir(exist_ok=True)
    (state / "judge" / "judge.yaml").write_text(json.dumps({"provider": "openai", "model": "gpt-test",
                                                            "base_url": "${UNSET_JUDGE_URL_X}"}), encoding="utf-8")
    ann = state / "annotations" / "dana.jsonl"
    ann.parent.mkdir()
    ann.write_text(json.dumps({"case_id": "c", "rubric_id": "refund-eta-v1", "node_id": "states-arrival",
                               "label": "pass", "judge_label": "pass", "reviewer": "d",
                               "ts": "2026-11-30T10:00:00Z"}) + "\n", encoding="utf-8")
    w = run_script("score_agreement", ann, "--write", state / "judge" / "calibration.json")
    assert w.rc == 2, w.stdout + w.stderr
    assert "judge/judge.yaml names ${UNSET_JUDGE_URL_X}" in (w.stdout + w.stderr)
    assert not (state / "judge" / "calibration.json").exists()


def test_make_plan_does_not_warn_about_a_value_it_cannot_see(state, monkeypatch):
    """make_plan's warnings (assay.judge.binding.provisional_again) use the environment the plan is
    made in: another value is named; an unset variable is left to the run's own check."""
    from assay.judge.binding import provisional_again
    config = {"provider": "openai", "model": "gpt-test", "base_url": "${JUDGE_URL}"}
    calibrate(state, config, {"JUDGE_URL": "http://127.0.0.1:9/v1"})
    block = judge_block(state, config)
    monkeypatch.delenv("JUDGE_URL", raising=False)
    assert provisional_again(block, state) == []
    monkeypatch.setenv("JUDGE_URL", "http://127.0.0.1:9/v1")
    assert provisional_again(block, state) == []
    monkeypatch.setenv("JUDGE_URL", "http://127.0.0.1:10/v1")
    [warning] = provisional_again(block, state)
    assert "refund-eta-v1 provisional again" in warning and "${JUDGE_URL}" in warning
