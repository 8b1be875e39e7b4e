"""Issue 24 §A, the judge: a calibrated pin that never ran (A1), calibration bound to the judge and
the rubric text it was measured on (A2), evidence from the answer (A3). End to end: run_cases.py,
gate.py and score_agreement.py as subprocesses against a fake app and fake judges on real ports."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, case, make_plan, run_runner, state  # noqa: F401 (fixtures)
from judgefake import judge_block, openai_handler, write_calibration, write_rubric
from helpers import run_script
from trust_fixtures import TONE, claims_case, claims_plan, go, read

ANSWER = "Refund of 20 USD issued; it arrives within 5 business days. Thank you for your patience."


@pytest.fixture
def judge_server():
    with FakeApp() as server:
        yield server


@pytest.fixture
def app():
    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(200, {"message": ANSWER})
    with FakeApp(handler) as a:
        yield a


def test_a_calibrated_pin_the_judge_never_answered_is_unscored_though_a_provisional_pin_passed(
        app, state, judge_server):
    """A1. Before: verdict pass, `layers.judged` unscored with `provisional: true` set by the other
    (provisional) pin, and the gate said PASS with "0 unscored"."""
    write_rubric(state)
    write_rubric(state, TONE, "tone.md")

    def decide(node, answer):
        if node == "polite":
            return {"verdict": "pass", "evidence": ["Thank you for your patience."], "reason": "polite"}
        return "Sure! The verdict is pass."  # the calibrated rubric's nodes never parse
    judge_server.handler = openai_handler(decide)
    config = {"provider": "openai", "model": "gpt-test", "base_url": judge_server.url + "/v1"}
    both = {"answer": {"must_contain": ["Refund"], "rubric": ["refund-eta-v1", "tone-v1"]}}
    plan = make_plan(state, [case("c-1", "refund?", expect=both)], app_url=app.url)
    plan["judge"] = judge_block(state, config)
    plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True}, config=config)
    r, out = go(state, plan)
    assert r.rc == 0, r.stdout + r.stderr
    v = read(out, "c-1")
    judged = v["layers"]["judged"]
    assert judged["verdict"] == "unscored" and judged["provisional"] is False  # a calibrated pin decides it
    assert [(x["pin"], x["provisional"], x["verdict"]) for x in judged["rubrics"]] == \
        [("refund-eta-v1", False, "unscored"), ("tone-v1", True, "pass")]
    assert judged["provisional_verdict"] == "pass"
    assert v["verdict"] == "unscored" and v["unscored_reason"].startswith("judged: refund-eta-v1: node(s) unknown")
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout
    assert "PASS" not in g.stdout.splitlines()[0] and "0 unscored" not in g.stdout
    closed = next(x for x in g.stdout.splitlines() if "gating case(s) asserted a check that never ran" in x)
    assert "c-1 (judged: refund-eta-v1: node(s) unknown" in closed
    assert "judged (calibrated, gating): 1 case(s): 1 unscored" in g.stdout
    assert "judged (provisional, never gating): 1 case(s): 1 pass" in g.stdout


def test_evidence_quoting_only_the_users_message_never_passes(state, judge_server):
    """A3. Before: a pass whose only evidence was a piece of the user's question was accepted."""
    write_rubric(state)

    def decide(node, answer):  # quotes the question, not the answer
        return {"verdict": "pass", "evidence": ["my refund of 20 USD"], "reason": "the amount is there"}
    judge_server.handler = openai_handler(decide)
    config = {"provider": "openai", "model": "gpt-test", "base_url": judge_server.url + "/v1"}

    def handler(req):
        return Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, {"message": "Refund noted."})
    with FakeApp(handler) as app:
        expect = {"answer": {"must_contain": ["Refund"], "rubric": ["refund-eta-v1"]}}
        plan = make_plan(state, [case("c-1", "When does my refund of 20 USD arrive?", expect=expect)],
                         app_url=app.url)
        plan["judge"] = judge_block(state, config)
        plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True}, config=config)
        r, out = go(state, plan)
    assert r.rc == 0, r.stdout + r.stderr
    nodes = read(out, "c-1", "judge.json")["rubrics"][0]["nodes"]
    assert [n["verdict"] for n in nodes] == ["unknown", "unknown"]
    assert "'my refund of 20 USD' is from the user's message, not the answer" in nodes[0]["reason"]
    v = read(out, "c-1")
    assert v["verdict"] == "unscored" and v["layers"]["judged"]["verdict"] == "unscored"
    g = run_script("gate", out)
    assert g.rc == 1 and "is from the user's message, not the answer" in g.stdout


def test_evidence_rule_per_source():
    """A3, the rule itself: a pass needs a quote from the answer; tool results and a reference-guided
    node's gold may back it; the user's message never does (a fail may quote it)."""
    from assay.judge.prompt import Material
    from assay.judge.verdict import checked_node
    m = Material(user_message="Pay claim CL-7 of 540 EUR?", answer="Claim CL-7 is approved.",
                 tool_results=[{"name": "lookup_claim", "result": {"amount": 540}}], gold=540)

    def check(verdict, evidence, reference_guided=False):
        return checked_node({"verdict": verdict, "evidence": evidence, "reason": "r"}, m, reference_guided)[0]
    assert check("pass", ["Claim CL-7 is approved"]) == "pass"
    assert check("pass", ["540 EUR"]) == "unknown"                       # only in the question
    assert check("pass", ["Claim CL-7 is approved", "540 EUR"]) == "unknown"
    assert check("pass", ['"amount": 540']) == "unknown"                 # tool results alone: not the answer
    assert check("pass", ["approved", '"amount": 540']) == "pass"        # the answer, backed by a tool result
    assert check("pass", ["approved", "540"], reference_guided=True) == "pass"
    assert check("pass", ["made up"]) == "unknown"
    assert check("fail", ["540 EUR"]) == "fail"                          # what was asked, and is missing
    assert check("fail", ["made up"]) == "unknown"


TONE_ADAPTER = """\
adapter_version: 1
app: {name: claims-tone, repo_access: read-only}
access_level: black
invocation:
  mode: http
  base_url: ${TONE_URL}
  auth: {type: none}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"message": "<answer>"}'
  health_check: {method: GET, path: /health, expect_status: [200]}
  timeout_s: 5
traces: {source: none}
tools: []
environment: {kind: mocked, safe_to_attack: true}
"""
TONE_PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: single_llm}
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: false, blocked_by: single agent}
  trajectory: {enabled: false, blocked_by: no traces}
  tool_selection: {enabled: false, blocked_by: no traces}
  execution: {enabled: false, blocked_by: no oracle}
  authz: {enabled: false, blocked_by: no identities}
  multi_turn: {enabled: false, blocked_by: not declared}
  state: {enabled: false, blocked_by: reserved}
"""
# a judge that reads the answer (fails an insult), and a lazy one that passes everything
STRICT_JUDGE = """\
import json, re, sys
prompt = sys.stdin.read()
answer = re.search(r"<untrusted-answer-[0-9a-f]+>\\n(.*?)\\n</untrusted-answer-", prompt, re.S).group(1)
bad = "idiot" in answer
print(json.dumps({"verdict": "fail" if bad else "pass", "evidence": ["idiot" if bad else answer[:12]], "reason": "r"}))
"""
LAZY_JUDGE = STRICT_JUDGE.replace('bad = "idiot" in answer', "bad = False")


def tone_state(root):
    import sys
    from helpers import write_yaml
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", TONE_ADAPTER)
    write_yaml(state / "profile.yaml", TONE_PROFILE)
    write_yaml(state / "rubrics" / "tone.md", TONE)
    write_yaml(state / "strict_judge.py", STRICT_JUDGE)
    write_yaml(state / "lazy_judge.py", LAZY_JUDGE)
    write_yaml(state / "judge" / "judge.yaml", f"provider: command\ncommand: [{json.dumps(sys.executable)}, strict_judge.py]\n")
    for cid, msg in (("c-rude0001", "rude"), ("c-kind0001", "kind")):
        write_yaml(state / "datasets" / f"{cid}.yaml",
                   claims_case(cid, msg, "  answer: {must_contain: [CL-7], rubric: [tone-v1]}\n").replace(
                       "unit: claims", "unit: tone"))
    (state / "reports").mkdir(parents=True, exist_ok=True)
    # 120 labelled pairs on which the strict judge agreed with people: calibrated (on the suite's two
    # cases, each labelled on many answers: a label on a case id the suite lacks is not counted)
    import hashlib
    rows = [{"case_id": "c-rude0001", "rubric_id": "tone-v1", "node_id": "polite", "label": "fail",
             "judge_label": "fail", "reviewer": "ana", "ts": "2026-12-01T00:00:00Z",
             "answer_sha256": hashlib.sha256(f"f{i}".encode()).hexdigest()} for i in range(20)]
    rows += [dict(rows[0], case_id="c-kind0001", label="pass", judge_label="pass",
                  answer_sha256=hashlib.sha256(f"p{i}".encode()).hexdigest()) for i in range(100)]
    (state / "annotations").mkdir()
    (state / "annotations" / "batch1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = run_script("score_agreement", state / "annotations", "--write", state / "judge" / "calibration.json")
    assert r.rc == 0 and r.json["status"] == "calibrated", r.stdout
    return state


def tone_app(req):
    """The tone suite's app: rude to a message that says "rude", polite otherwise."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    rude = "rude" in str((req.json or {}).get("message"))
    return Reply(200, {"message": "Claim CL-7 is open, idiot." if rude else "Claim CL-7 is open. Thank you!"})


def tone_run(state, app, run_id):
    r, plan_file = claims_plan(state, "--judge", run_id=run_id)
    assert r.rc == 0, r.stdout
    out = state / "reports" / run_id
    rr = run_runner("--plan", plan_file, "--out", out, "--progress", "never", env={"TONE_URL": app.url})
    assert rr.rc == 0, (rr.stdout, rr.stderr)
    return r, out


def test_a_calibration_is_bound_to_the_judge_and_the_rubric_text_it_was_measured_on(tmp_path):
    """A2. Before: after switching judge.yaml to a lazy judge the rubric stayed "calibrated, gating" and a
    planted rude reply passed; editing a criterion without a new version kept it calibrated too."""
    import sys
    from helpers import write_yaml
    state = tone_state(tmp_path)

    with FakeApp(tone_app) as app:
        _, out = tone_run(state, app, "smoke-20261201T010000Z")
        assert read(out, "c-rude0001")["layers"]["judged"]["verdict"] == "fail"  # calibrated, gating
        g = run_script("gate", out)
        assert g.rc == 1 and "c-rude0001 (judged)" in g.stdout, g.stdout

        # 1. the judge is swapped for a lazy one: the calibration was not of this judge
        write_yaml(state / "judge" / "judge.yaml",
                   f"provider: command\ncommand: [{json.dumps(sys.executable)}, lazy_judge.py]\n")
        plan_r, out = tone_run(state, app, "smoke-20261201T020000Z")
        judged = read(out, "c-rude0001")["layers"]["judged"]
        assert judged["provisional"] is True and judged["provisional_verdict"] == "pass"  # before: a gating pass
        assert "judge: tone-v1 provisional again: calibrated with command" in plan_r.stderr, plan_r.stderr
        why = judged["rubrics"][0]["why_provisional"]
        assert why.startswith("tone-v1 provisional again: calibrated with command ") and "strict_judge.py" in why
        assert "the judge is now command " in why and "lazy_judge.py" in why
        g = run_script("gate", out)
        assert "judged (calibrated, gating)" not in g.stdout
        assert "judged (provisional, never gating): 2 case(s): 2 pass -- tone-v1 provisional again: calibrated" \
            in g.stdout, g.stdout

        # 2. the calibrated judge's command, its script made lazy in place: same argv, other content
        write_yaml(state / "judge" / "judge.yaml",
                   f"provider: command\ncommand: [{json.dumps(sys.executable)}, strict_judge.py]\n")
        (state / "strict_judge.py").write_text(LAZY_JUDGE)
        _, out = tone_run(state, app, "smoke-20261201T030000Z")
        why = read(out, "c-rude0001")["layers"]["judged"]["rubrics"][0]["why_provisional"]
        assert "(the content of strict_judge.py)" in why, why
        (state / "strict_judge.py").write_text(STRICT_JUDGE)

        # 3. back to the calibrated judge, but a criterion edited without a new version
        write_yaml(state / "rubrics" / "tone.md", TONE.replace("The reply is polite.", "The reply is short."))
        _, out = tone_run(state, app, "smoke-20261201T040000Z")
        why = read(out, "c-rude0001")["layers"]["judged"]["rubrics"][0]["why_provisional"]
        assert why == ("tone-v1 provisional again: rubrics/tone.md changed since it was calibrated (edited node(s) "
                       "polite) without a new version: bump `version` (a new pin) and label it")

        # 4. the text restored: calibrated and gating again
        write_yaml(state / "rubrics" / "tone.md", TONE)
        _, out = tone_run(state, app, "smoke-20261201T050000Z")
        assert read(out, "c-rude0001")["layers"]["judged"]["provisional"] is False

        # 5. a sidecar written before the binding (no judge identity) cannot show it applies
        side = json.loads((state / "judge" / "calibration.json").read_text())
        del side["judge"]
        (state / "judge" / "calibration.json").write_text(json.dumps(side))
        _, out = tone_run(state, app, "smoke-20261201T060000Z")
        why = read(out, "c-rude0001")["layers"]["judged"]["rubrics"][0]["why_provisional"]
        assert "records no judge identity" in why and "score_agreement.py <annotations> --write" in why



def test_a_judge_command_that_is_itself_the_script_is_bound_to_its_content(tmp_path):
    """`command: [judge/strict_judge.py]` (an executable script, no interpreter in front). Before: only
    argv[1:] was hashed, so the script run as command[0] was bound to nothing: made lazy in place after
    calibration, it stayed "calibrated, gating" and a planted rude reply opened the gate."""
    import os
    import sys
    from helpers import write_yaml
    state = tone_state(tmp_path)
    script = state / "judge" / "strict_judge.py"
    script.write_text(f"#!{sys.executable}\n" + STRICT_JUDGE)
    os.chmod(script, 0o755)
    write_yaml(state / "judge" / "judge.yaml", "provider: command\ncommand: [judge/strict_judge.py]\n")
    r = run_script("score_agreement", state / "annotations", "--write", state / "judge" / "calibration.json")
    assert r.rc == 0 and r.json["status"] == "calibrated", r.stdout
    side = json.loads((state / "judge" / "calibration.json").read_text())
    assert list(side["judge"]["identity"]["judges"][0]["command_files"]) == ["judge/strict_judge.py"]

    with FakeApp(tone_app) as app:
        _, out = tone_run(state, app, "smoke-20261202T010000Z")
        g = run_script("gate", out)
        assert g.rc == 1 and "c-rude0001 (judged)" in g.stdout, g.stdout   # the calibrated judge gates

        script.write_text(f"#!{sys.executable}\n" + LAZY_JUDGE)            # same argv, other content
        plan_r, out = tone_run(state, app, "smoke-20261202T020000Z")
        judged = read(out, "c-rude0001")["layers"]["judged"]
        assert judged["provisional"] is True and judged["provisional_verdict"] == "pass", judged
        assert "(the content of judge/strict_judge.py)" in judged["rubrics"][0]["why_provisional"], judged
        assert "judge: tone-v1 provisional again: calibrated with command judge/strict_judge.py" in plan_r.stderr
        g = run_script("gate", out)
        assert "judged (calibrated, gating)" not in g.stdout, g.stdout
        assert "judged (provisional, never gating): 2 case(s): 2 pass -- tone-v1 provisional again" in g.stdout


def test_write_refuses_labels_of_a_judge_script_edited_since_the_labelled_run(tmp_path):
    """The judge trial: a command judge's run labelled by people, then its script made lazy in place
    (same judge.yaml, same argv), then score_agreement.py --write. Before: --write bound the sidecar to
    the lazy script's content (label.py's record kept only provider, model, base_url and argv), so the
    lazy judge's next run read "calibrated, gating" and passed every case people had failed. Now the
    run's manifest records the judge identity (scripts by content) and --write refuses, naming the file."""
    state = tone_state(tmp_path)

    with FakeApp(tone_app) as app:
        _, out = tone_run(state, app, "smoke-20261203T010000Z")
        assert "strict_judge.py" in json.dumps(json.loads((out / "manifest.yaml").read_text())["judge"]["identity"])
        lab = run_script("label", out, "-o", tmp_path / "label.html", "--reviewer", "Dana")
        assert lab.rc == 0, lab.stdout
        batch = lab.json["batch"]
        people = {"c-rude0001": "fail", "c-kind0001": "pass"}   # the strict judge agreed with both
        (state / "annotations" / f"{batch}.jsonl").write_text("".join(
            json.dumps({"case_id": c, "rubric_id": "tone-v1", "node_id": "polite", "label": lab_, "judge_label": lab_,
                        "reviewer": "Dana", "ts": "t", "batch": batch}) + "\n" for c, lab_ in people.items()))
        args = (state / "annotations", "--write", state / "judge" / "calibration.json")
        before = (state / "judge" / "calibration.json").read_text()

        (state / "strict_judge.py").write_text(LAZY_JUDGE)                 # same judge.yaml, another judge
        w = run_script("score_agreement", *args)
        assert w.rc == 2, w.stdout
        assert f"batch {batch} labelled verdicts of run smoke-20261203T010000Z's judge" in w.json["error"]
        assert "(the content of strict_judge.py)" in w.json["error"] and "restore judge.yaml and the judge's scripts" \
            in w.json["error"], w.json["error"]
        assert (state / "judge" / "calibration.json").read_text() == before   # nothing written
        _, lazy = tone_run(state, app, "smoke-20261203T020000Z")
        g = run_script("gate", lazy)
        assert "judged (calibrated, gating)" not in g.stdout, g.stdout   # before: 2 pass, calibrated and gating
        assert "tone-v1 provisional again" in g.stdout and "(the content of strict_judge.py)" in g.stdout, g.stdout

        (state / "strict_judge.py").write_text(STRICT_JUDGE)               # the judge people labelled
        w = run_script("score_agreement", *args)
        assert w.rc == 0 and w.json["status"] == "calibrated" and w.json["labelled_judge_unchecked"] == ["(no batch: 120 line(s))"], w.stdout


# the strict judge split in two: the script, and the rule it imports from a module beside it
SPLIT_JUDGE = STRICT_JUDGE.replace("import json, re, sys\n", "import json, re, sys\nfrom helpers import is_bad\n").replace(
    'bad = "idiot" in answer', "bad = is_bad(answer)")
STRICT_HELPER = 'def is_bad(answer):\n    return "idiot" in answer\n'
LAZY_HELPER = "def is_bad(answer):\n    return False\n"


def split_judge_state(root):
    """tone_state with the judge as judge/judge.py + judge/helpers.py, calibrated (score_agreement.py --write)."""
    import sys
    state = tone_state(root)
    (state / "judge" / "judge.py").write_text(SPLIT_JUDGE)
    (state / "judge" / "helpers.py").write_text(STRICT_HELPER)
    (state / "judge" / "judge.yaml").write_text(f"provider: command\ncommand: [{json.dumps(sys.executable)}, judge/judge.py]\n")
    r = run_script("score_agreement", state / "annotations", "--write", state / "judge" / "calibration.json")
    assert r.rc == 0 and r.json["status"] == "calibrated", r.stdout
    return state


def test_a_module_the_judge_script_imports_from_beside_it_is_bound_by_its_content(tmp_path):
    """judge.py does `from helpers import is_bad`. Before: only judge.py was bound, so helpers.py made lazy
    in place after calibration left tone-v1 "calibrated, gating" and a planted rude reply passed the gate."""
    state = split_judge_state(tmp_path)
    with FakeApp(tone_app) as app:
        _, out = tone_run(state, app, "smoke-20261204T010000Z")
        g = run_script("gate", out)
        assert g.rc == 1 and "c-rude0001 (judged)" in g.stdout, g.stdout   # the calibrated judge gates

        (state / "judge" / "helpers.py").write_text(LAZY_HELPER)            # same judge.yaml, same judge.py
        plan_r, out = tone_run(state, app, "smoke-20261204T020000Z")
        judged = read(out, "c-rude0001")["layers"]["judged"]
        assert judged["provisional"] is True and judged["provisional_verdict"] == "pass", judged
        why = judged["rubrics"][0]["why_provisional"]
        assert "(the content of judge/helpers.py)" in why, why                # the file that changed, by name
        assert "judge: tone-v1 provisional again" in plan_r.stderr and "judge/helpers.py" in plan_r.stderr
        g = run_script("gate", out)
        assert "judged (calibrated, gating)" not in g.stdout, g.stdout
        assert "judged (provisional, never gating): 2 case(s): 2 pass -- tone-v1 provisional again" in g.stdout
        assert "(the content of judge/helpers.py)" in g.stdout, g.stdout
    side = json.loads((state / "judge" / "calibration.json").read_text())
    assert sorted(side["judge"]["identity"]["judges"][0]["command_files"]) == ["judge/helpers.py", "judge/judge.py"]


def test_a_file_beside_the_judge_script_that_it_does_not_import_is_not_bound(tmp_path):
    """Only what the script imports is the judge: notes, another script or a module it never imports may
    change beside it and the calibration still gates; a standard-library module it imports is not bound."""
    state = split_judge_state(tmp_path)
    side = json.loads((state / "judge" / "calibration.json").read_text())
    assert not any("json" in f or "re.py" in f for f in side["judge"]["identity"]["judges"][0]["command_files"])
    (state / "judge" / "README.md").write_text("how our judge works\n")
    (state / "judge" / "scratch.py").write_text("print('an experiment')\n")       # not imported
    (state / "judge" / "lazy_judge.py").write_text(LAZY_JUDGE)
    with FakeApp(tone_app) as app:
        plan_r, out = tone_run(state, app, "smoke-20261205T010000Z")
        assert "provisional again" not in plan_r.stderr, plan_r.stderr
        assert read(out, "c-rude0001")["layers"]["judged"]["provisional"] is False
        g = run_script("gate", out)
        assert g.rc == 1 and "c-rude0001 (judged)" in g.stdout, g.stdout   # still calibrated, gating
