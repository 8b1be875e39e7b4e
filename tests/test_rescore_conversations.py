"""rescore.py on a run that holds conversations: they are not replayed (infra_error, the reason
says so), counted and gated (the gate closes), and never abort the rescore as if the app were
down, however large their share (a run of the example app has 4 in 18; here 10 in 12)."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply
from fixtures_authoring import ADAPTER, PROFILE, _case, make_state
from helpers import run_script
from rundir_util import case_json, cases_view

pytestmark = pytest.mark.slow

CONV = ("id: {cid}\nunit: invoices\nsplit: [full, smoke]\ncategory: multistep\ntest_type: MFT\ntemplate_id: null\n"
        "review: {{status: accepted, by: Dana Reviewer, at: '2026-11-01'}}\n"
        "input:\n  turns:\n    - {{user: 'which invoice is open?'}}\n    - {{user: 'refund that one'}}\n"
        "expect:\n  answer: {{must_contain: ['echo: refund']}}\n")


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": "echo: " + str((req.json or {}).get("message")), "domain": "invoices"})


def test_rescore_never_aborts_on_conversations_and_never_reads_green(tmp_path):
    adapter = ADAPTER.replace("  timeout_s: 10\n", "  timeout_s: 10\n  conversation: {style: client-id}\n") \
        .replace("  identity_map: {role: X-Role, permissions: X-Permissions}\n", "")
    profile = PROFILE.replace("multi_turn: {enabled: false, blocked_by: not declared}", "multi_turn: {enabled: true}")
    cases = {f"c-0000001{i}": CONV.format(cid=f"c-0000001{i}") for i in range(10)}
    cases["c-00000001"] = _case("c-00000001", expect="  answer: {must_contain: ['echo: How much']}\n")
    cases["c-00000002"] = _case("c-00000002", expect="  answer: {must_contain: ['echo: How much']}\n")
    state = make_state(tmp_path, cases=cases, adapter=adapter, profile=profile, dataset=None)
    work = state / "work"
    with FakeApp(handler) as app:
        env = {"HELPDESK_BASE_URL": app.url, "HELPDESK_TOKEN": "t0k3n-for-tests"}
        assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
        p = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                       "-o", work / "plan.json", "--run-id", "smoke-20261130T000000Z")
        assert p.rc == 0, p.stdout + p.stderr
        out = state / "reports" / "smoke-20261130T000000Z"
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--progress", "never", env=env)
        assert r.rc == 0, r.stdout + r.stderr
        posts = len(app.posts())
        assert json.loads((out / "results.json").read_text())["summary"]["passes"] == 12
        new = state / "reports" / "smoke-20261130T010000Z"
        rs = run_script("rescore", out, "--out", new, env=env)
        assert len(app.posts()) == posts  # the app is never called
    assert rs.rc == 0, rs.stdout + rs.stderr
    summary = json.loads((new / "results.json").read_text())["summary"]
    assert (summary["status"], summary["infra_errors"], summary["passes"]) == ("ok", 10, 2)
    v = json.loads((cases_view(new) / "c-00000010" / "verdict.json").read_text())
    assert v["verdict"] == "infra_error" and "rescore does not replay conversations" in v["infra_reason"]
    g = run_script("gate", new)
    assert g.rc == 1 and "infra rate 83.3% is above 5.0%" in g.stdout, g.stdout


def test_rescore_names_a_simulated_user_case_for_what_it_is_and_never_calls_the_simulator(tmp_path):
    """The example's simulated refund seeker (the stand-in simulator) and one single-turn case: the
    rescore neither skips it as "no simulator configured" (there is one) nor asks the simulator; it is
    infra_error saying it was not replayed and what to do, counted with the simulated users, gated."""
    from helpdesk_util import copy_state, helpdesk
    state = copy_state(tmp_path)
    work = state / "work"
    with helpdesk(state) as env:
        assert run_script("convert_suite", state, "-o", work / "converted.json", env=env).rc == 0
        p = run_script("make_plan", work / "converted.json", "--mode", "targeted", "--state-dir", state,
                       "-o", work / "plan.json", "--case", "c-5e1f4a02", "--case", "c-003bd57c",
                       "--run-id", "targeted-20261130T000000Z", env=env)
        assert p.rc == 0, p.stdout + p.stderr
        out = state / "reports" / "targeted-20261130T000000Z"
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--progress", "never", env=env)
        assert r.rc == 0, r.stdout + r.stderr
        assert case_json(out, "c-5e1f4a02")["verdict"] == "pass"
    # a simulator that would leave a mark if it were asked anything
    (state / "simulator" / "simulator.yaml").write_text(
        "provider: command\ncommand: [python3, -c, \"open('asked', 'w').write('x')\"]\n", encoding="utf-8")
    new = state / "reports" / "targeted-20261130T010000Z"
    rs = run_script("rescore", out, "--out", new, env=env)
    assert rs.rc == 0, rs.stdout + rs.stderr
    assert not (state / "asked").exists()
    v = case_json(new, "c-5e1f4a02")
    assert (v["verdict"], v["sent"], v["simulated"], v["skip_reason"]) == ("infra_error", False, True, None)
    assert "no simulator configured" not in v["infra_reason"]
    assert v["infra_reason"].startswith("a simulated-user conversation (input.simulated_user): rescore does not "
                                        "replay conversations")
    assert "run_cases.py --replay <state>/reports/targeted-20261130T000000Z" in v["infra_reason"]
    assert all("not replayed" in layer["reason"] for name, layer in v["layers"].items() if name != "http")
    summary = json.loads((new / "results.json").read_text())["summary"]
    assert (summary["passes"], summary["infra_errors"], summary["by_kind"]["simulated"]["infra_errors"]) == (1, 1, 1)
    assert json.loads(json.dumps(__import__("yaml").safe_load((new / "manifest.yaml").read_text())["simulator"])) \
        ["enabled"] is False
    assert run_script("run_cases", "--verify", new).rc == 0
    g = run_script("gate", new)
    assert g.rc == 1 and "infra rate" in g.stdout, g.stdout


def test_rescore_baseline_scores_pairwise_rubrics_and_auto_picks_the_run_before_the_source(tmp_path):
    """The example's pairwise rubric (refund-reply-vs-baseline, the stand-in judge): two live runs of its
    case; rescoring the second without --baseline leaves the pairwise pin unscored (never pass), with
    --baseline auto it is judged against the first run (the series' run before the source), and the source
    itself is refused as its own baseline."""
    from helpdesk_util import copy_state, helpdesk
    state = copy_state(tmp_path)
    work = state / "work"
    runs = [state / "reports" / f"targeted-20261130T0{h}0000Z" for h in (0, 1)]
    with helpdesk(state) as env:
        assert run_script("convert_suite", state, "-o", work / "converted.json", env=env).rc == 0
        for out in runs:
            p = run_script("make_plan", work / "converted.json", "--mode", "targeted", "--state-dir", state, "--judge",
                           "-o", work / "plan.json", "--case", "c-bd5404f8", "--run-id", out.name, env=env)
            assert p.rc == 0, p.stdout + p.stderr
            r = run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--progress", "never", env=env)
            assert r.rc == 0, r.stdout + r.stderr

    def pairwise(run_dir):
        rubrics = case_json(run_dir, "c-bd5404f8", "judge.json")["rubrics"]
        return next(r for r in rubrics if r.get("kind") == "pairwise")

    assert pairwise(runs[1])["verdict"] == "unscored"           # the live run had no --baseline either
    bare, auto = (state / "reports" / f"targeted-20261130T0{h}0000Z" for h in (2, 3))
    assert run_script("rescore", runs[1], "--out", bare, "--judge").rc == 0
    assert pairwise(bare)["verdict"] == "unscored" and "baseline" in pairwise(bare)["reason"]
    r = run_script("rescore", runs[1], "--out", auto, "--judge", "--baseline", "auto")
    assert r.rc == 0, r.stdout + r.stderr
    got = pairwise(auto)
    assert got["baseline_run_id"] == runs[0].name and got["verdict"] != "unscored" and got["nodes"], got
    same = run_script("rescore", runs[1], "--out", state / "reports" / "targeted-20261130T040000Z", "--judge",
                      "--baseline", runs[1])
    assert same.rc == 2 and "that is the source run" in same.stdout, same.stdout
