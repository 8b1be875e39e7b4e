"""An identity the app does not know (a newcomer's typo, found in a trial): the app answers HTTP 401
to every request of that user, and each `expect_refusal` case passed on "HTTP 401" while nothing
about what that user may see was ever tested; a suite whose viewer cases are all refusals gated
green on an app that leaks to viewers. A 401 to a case that sent an identity now leaves the authz
layer unscored (never a pass); a 401 to an anonymous case is still a refusal, and so is a 403.
The scripts run as subprocesses against a real app on a real port.
"""

from __future__ import annotations

import json

from fakeapp import Reply
from helpers import run_script
from test_authz_unproven_refusal import USERS, _case as case_of, identity_run, user_of

from assay.score.authz import score_authz

def desk(req) -> Reply:
    if req.method == "GET":
        return Reply(200, {"ok": True})
    if user_of(req) not in USERS:
        return Reply(401, {"error": "unknown user"})
    # the regression: viewers are shown the invoice too
    return Reply(200, {"answer": "Invoice INV-7: 120 EUR.", "route": "quotes"})


def _case(cid: str, user: str) -> str:
    return case_of(cid, user, "Show me invoice INV-7", "  authz:\n    forbidden_record_ids: [INV-7]\n    expect_refusal: true\n")


def test_a_401_to_a_mistyped_identity_is_never_a_refusal(tmp_path):
    out, requests = identity_run(tmp_path, {cid: _case(cid, "bobb") for cid in ("c-view1", "c-view2")},   # "bob" typo'd
                                 handler=desk)
    assert {user_of(req) for req in requests if req.method == "POST"} == {"bobb"}
    g = run_script("gate", out, "--json")
    assert g.rc == 1, g.stdout    # never open: no case was tested as the user it names
    rows = [json.loads(line) for line in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(row["layers"]["authz"] != "pass" and row["verdict"] != "pass" for row in rows), rows


def test_the_refusal_evidence_of_a_status():
    expect = {"authz": {"expect_refusal": True, "forbidden_record_ids": ["INV-7"]}}
    unknown = score_authz(None, expect, answer=None, response_json={"error": "unknown user"}, id_pattern=None,
                          http_status=401, identified=True)
    assert unknown["verdict"] == "unscored" and "HTTP 401" in unknown["reason"]
    anonymous = score_authz(None, expect, answer=None, response_json={"error": "log in"}, id_pattern=None,
                            http_status=401, identified=False)
    assert anonymous["verdict"] == "pass"
    forbidden = score_authz(None, expect, answer=None, response_json={"error": "not yours"}, id_pattern=None,
                            http_status=403, identified=True)
    assert forbidden["verdict"] == "pass"
