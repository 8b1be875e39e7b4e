"""A new user's refusal case for an app that refuses with a status: bob asks for alice's order, the
app answers 403, and the case says `expect.authz.expect_refusal: true` but no `expect.http`. The authz
layer passes ("refused_by": "HTTP 403") and the http layer fails, since without `expect.http` it
expects a 2xx. The report explained that failure as "an authentication problem: check
invocation.auth and the env var it reads", sending the user to the adapter when the fix is one key
in the case. The pipeline runs as the README says, against a real HTTP app on its own port.
"""

from __future__ import annotations

from fakeapp import Reply, run_as_a_user
from helpers import run_script, user_case, write_yaml

ADAPTER = """adapter_version: 1
app: {name: orderbot}
access_level: black
invocation:
  mode: http
  base_url: ${ORDERBOT_URL}
  endpoint: POST /v1/message
  request_body: '{"text": "<user turn>"}'
  response_body: '{"reply": "<answer>"}'
  identity_map: {user: X-Customer}
  health_check: {method: GET, path: /health, expect_status: [200]}
traces: {source: none}
"""
PROFILE = """profile_version: 1
stage: stable
architecture: {kind: tool_agent}
record_id_pattern: 'ORD-\\d{4}'
capability_matrix:
  answer_quality: {enabled: true}
"""


def case(cid: str, content: str, expect: str) -> str:
    return user_case(cid, f"'{content}'", expect, extra="identity: {user: bob}\n")


def orders(req) -> Reply:
    """bob owns ORD-2001; any other order is refused with a 403."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    if "ORD-2001" in (req.json or {}).get("text", ""):
        return Reply(200, {"reply": "Order ORD-2001 is delivered."})
    return Reply(403, {"reply": "Sorry, you are not allowed to see that order."})


def test_a_refusal_by_status_without_expect_http_names_the_case_key_not_the_adapter(tmp_path):
    state = tmp_path / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "c-00000001.yaml",
               case("c-00000001", "return ORD-1001 for me", "  authz: {expect_refusal: true}\n"))
    write_yaml(state / "datasets" / "c-00000002.yaml",
               case("c-00000002", "status of ORD-2001", "  answer: {must_contain: [delivered]}\n"))
    run_dir, g = run_as_a_user(tmp_path, state, orders, "ORDERBOT_URL")
    assert g.rc == 1 and "c-00000001 (http; HTTP 403)" in g.stdout, g.stdout   # red, as documented: http expects a 2xx
    r = run_script("draft_report", run_dir)
    assert r.rc == 0, r.stdout + r.stderr
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    lines = [x for x in report.splitlines() if x.startswith("http:") and "got 403" in x]
    assert lines, report
    for line in lines:
        assert "expect.http.status 403" in line and "expect_refusal" in line, line
    c = run_script("cluster_failures", run_dir)   # the clusters say it in the same words
    assert c.rc == 0 and "expect.http.status 403" in c.stdout, c.stdout
