"""What assay writes for people and CI stays readable whatever the app answered
(docs/runner-contract.md, "Security", "Hostile input"): JUnit XML holds only what XML 1.0
allows (an answer's NUL, ESC or form feed is written as a visible escape), and bidi and
zero-width characters are shown as visible markers in report.html and the label page.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from fakeapp import FakeApp, Reply, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script

CONTROLS = "nul\x00 esc\x1b[31m ff\x0c bell\x07 vt\x0b del\x7f nonchar\ufffe end"


def test_junit_is_parseable_xml_when_the_answer_holds_control_characters(tmp_path):
    state = make_state(tmp_path)
    with FakeApp(lambda r: Reply(200, {"message": CONTROLS}) if r.method == "POST" else Reply(200, {"ok": True})) as app:
        cases = [case("c-ctl", "hi\x1b there", expect={"answer": {"must_contain": ["refund"]}}, title="ctl\x00 title")]
        plan = make_plan(state, cases, app_url=app.url)
        out = state / "reports" / plan["run_id"]
        res = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert res.rc == 0, res.stdout
    junit = tmp_path / "junit.xml"
    r = run_script("gate", out, "--junit", junit)
    assert r.rc == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    root = ET.parse(junit).getroot()          # an XML 1.0 parser: a raw NUL or ESC is a syntax error
    tc = next(t for t in root.iter("testcase") if t.get("name", "").startswith("c-ctl"))
    failure = tc.find("failure").text
    assert "nul\\x00 esc\\x1b[31m ff\\x0c bell\\x07 vt\\x0b" in failure and "\\ufffe end" in failure, failure
    assert tc.get("name") == "c-ctl: ctl\\x00 title"
