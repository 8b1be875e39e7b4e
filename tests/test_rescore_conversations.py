"""rescore.py on a run that holds conversations: they are not replayed (infra_error, the reason
says so), counted and gated (the gate closes), and never abort the rescore as if the app were
down, however large their share (a run of the example app has 4 in 18; here 10 in 12)."""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply
from fixtures_authoring import ADAPTER, PROFILE, _case, make_state
from helpers import run_script
from rundir_util import cases_view

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
