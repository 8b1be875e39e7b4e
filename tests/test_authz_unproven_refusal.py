"""A refusal by status alone, for an identity the app never let in (a newcomer's hole, left open when the
401 rule landed): an app whose authentication layer answers HTTP 403 to a user it does not know (as
many frameworks do) made every `expect_refusal` case of a typo'd identity pass on "HTTP 403", so a suite
whose viewer cases are all refusals gated green whatever the app shows viewers. A refusal that passed on
a 4xx alone now counts (summary.unproven_refusals) unless some case of the same identity got a 2xx in the
run, and the gate closes on it, naming the first case and the fix. The scripts run as subprocesses
against a real app on a real port.
"""

from __future__ import annotations

from fakeapp import FakeApp, Reply, run_runner
from helpers import run_script, write_yaml
from test_no_silent_green import ADAPTER, PROFILE

from assay.score.authz import score_authz

USERS = {"ana": "admin", "bob": "viewer"}


def user_of(req) -> str | None:
    return req.headers.get("X-User") or req.headers.get("x-user")


def desk(req) -> Reply:
    if req.method == "GET":
        return Reply(200, {"ok": True})
    user = user_of(req)
    if user not in USERS:
        return Reply(403, {"error": "unknown user"})          # authentication, answered as a 403
    message = (req.json or {}).get("message") or ""
    if "INV-7" in message and USERS[user] == "viewer":
        return Reply(403, {"error": "viewers may not open that invoice"})   # the denial the refusal cases test
    return Reply(200, {"answer": "Invoice INV-8: 40 EUR.", "route": "quotes"})


def _case(cid: str, user: str, content: str, expect: str) -> str:
    return (f"id: {cid}\nunit: quotes\nsplit: [smoke, full]\ncategory: edge\ntest_type: MFT\n"
            f"template_id: null\nreview: {{status: accepted, by: Dana Reviewer, at: '2026-11-01'}}\n"
            f"identity: {{user: {user}}}\n"
            f"input:\n  messages:\n    - role: user\n      content: {content}\n"
            f"expect:\n{expect}")


# a careful author's viewer case: the denial is an HTTP 403, declared, and nothing of INV-7 shows
REFUSAL = "  http: {status: 403}\n  authz:\n    forbidden_record_ids: [INV-7]\n    expect_refusal: true\n"
ALLOWED = ("  http: {status: 200}\n  answer:\n    must_contain: [INV-8]\n"
           "  authz:\n    allowed_record_ids: [INV-8]\n")


def identity_run(tmp_path, cases: dict[str, str], handler=desk):
    """The suite (case id -> YAML) converted, planned and run against `handler` on a real port, the
    adapter mapping identity.user to X-User: (the run dir, the app's requests)."""
    state = tmp_path / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.replace("RESULT_PATH", "quote.price").replace(
        "  auth: {type: none}\n", "  auth: {type: none}\n  identity_map: {user: X-User}\n"))
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, text in cases.items():
        write_yaml(state / "datasets" / f"{cid}.yaml", text)
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", "smoke-20261205T000000Z")
    assert r.rc == 0, r.stdout
    out = state / "reports" / "smoke-20261205T000000Z"
    with FakeApp(handler) as app:
        r = run_runner("--plan", work / "plan.json", "--out", out, env={"TRAVEL_BASE_URL": app.url})
    assert r.rc == 0, (r.stdout, r.stderr)
    return out, app.requests


def _run(tmp_path, cases: dict[str, str]):
    return identity_run(tmp_path, cases)[0]


def test_refusals_of_an_identity_the_app_never_let_in_close_the_gate(tmp_path):
    out = _run(tmp_path, {"c-view1": _case("c-view1", "bobb", "Show me invoice INV-7", REFUSAL),   # "bob" typo'd
                          "c-view2": _case("c-view2", "bobb", "Open INV-7 please", REFUSAL),
                          "c-admin": _case("c-admin", "ana", "Show me invoice INV-8", ALLOWED)})
    g = run_script("gate", out, "--json")
    assert g.rc == 1, g.stdout
    [reason] = g.json["reasons"]   # the one reason: every case passed, the refusals on "HTTP 403"
    assert "refusal case(s) passed on an HTTP 4xx alone" in reason, reason
    assert reason.startswith("2 refusal case(s)") and "(first: c-view1)" in reason and "identity_map" in reason
    assert run_script("run_cases", "--verify", out).rc == 0   # the summary's block is recounted, and agrees


def test_an_identity_the_run_shows_let_in_keeps_its_refusals(tmp_path):
    out = _run(tmp_path, {"c-view1": _case("c-view1", "bob", "Show me invoice INV-7", REFUSAL),
                          "c-view3": _case("c-view3", "bob", "Show me invoice INV-8", ALLOWED)})
    g = run_script("gate", out, "--json")
    assert g.rc == 0 and g.json["gate"] == "open", g.stdout


def test_an_edited_block_is_named_by_the_check(tmp_path):
    import json
    out = _run(tmp_path, {"c-view1": _case("c-view1", "bobb", "Show me invoice INV-7", REFUSAL),
                          "c-admin": _case("c-admin", "ana", "Show me invoice INV-8", ALLOWED)})
    path = out / "results.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["summary"]["unproven_refusals"] == {"cases": 1, "identities": 1, "first_case": "c-view1"}
    del doc["summary"]["unproven_refusals"]
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    v = run_script("run_cases", "--verify", out)
    assert v.rc != 0 and "unproven_refusals" in v.stdout, v.stdout
    assert run_script("gate", out, "--json").rc != 0


def test_the_refused_status_is_recorded_only_for_an_identified_refusal_by_status():
    expect = {"authz": {"expect_refusal": True, "forbidden_record_ids": ["INV-7"]}}
    by_status = score_authz(None, expect, answer=None, response_json={"error": "no"}, id_pattern=None,
                            http_status=403, identified=True)
    assert by_status["verdict"] == "pass" and by_status["refused_status"] == 403
    anonymous = score_authz(None, expect, answer=None, response_json={"error": "no"}, id_pattern=None,
                            http_status=403, identified=False)
    assert anonymous["verdict"] == "pass" and "refused_status" not in anonymous
    clean = score_authz(None, expect, answer="Nothing to show.", response_json={"answer": "Nothing to show."},
                        id_pattern=None, http_status=200, identified=True)
    assert clean["verdict"] == "pass" and "refused_status" not in clean
