"""history.html says each run's gate, the one decision (assay.verdict) run_history.py hands in: a real
run of a fake app on a real port whose scored case passed and whose other gating case got no answer
(a check that never ran) read "100.0 %, 0 gating failures, 0.0 % infra" in the page's table, nothing
else, while `gate.py` closed it."""

from __future__ import annotations

import html
import re

from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan
from helpers import run_script

RUN_ID = "regression-20261201T100000Z"


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = (req.json or {}).get("message", "")
    if "noanswer" in msg:
        return Reply(200, {"route": "billing"})   # no answer at the adapter's <answer> path
    return Reply(200, {"message": f"echo: {msg}", "route": "billing"})


def _row_text(page: str, run_id: str) -> str:
    row = re.search(r"<tr><td><code>" + re.escape(run_id) + r"</code></td>.*?</tr>", page, re.S)
    assert row, page
    return html.unescape(re.sub(r"<[^>]+>", " ", row.group(0)))


def test_a_closed_gate_whose_scored_cases_all_passed_reads_closed(tmp_path):
    state = make_state(tmp_path)
    with FakeApp(handler) as app:
        cases = [case("canary-echo", "ping", split=("smoke", "canary")), case("c-a", "hello a"),
                 case("c-na", "noanswer")]
        plan = write_plan(state, make_plan(state, cases, app_url=app.url, run_id=RUN_ID, mode="regression"))
        r = run_script("run_cases", "--plan", plan, "--out", state / "reports" / RUN_ID, "--progress", "never")
        assert r.rc == 0, r.stdout + r.stderr[-2000:]
    g = run_script("gate", state / "reports" / RUN_ID, "--json")
    assert g.rc == 1 and g.json["reasons"], g.stdout

    page_path = tmp_path / "history.html"
    h = run_script("run_history", state, "--html", page_path)
    assert h.rc == 0 and h.json["runs_used"] == 1, h.stdout + h.stderr
    page = page_path.read_text(encoding="utf-8")
    row = _row_text(page, RUN_ID)
    assert "100.0 %" in row   # the scored case passed ...
    assert "closed" in row and g.json["reasons"][0] in row, row   # ... and the row says the gate stayed shut
    assert re.search(r"<title>" + RUN_ID + r": [^<]*gate closed</title>", page)
