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


TRICK = "Refund \u202eDENIED\u202c ok, zero\u200bwidth, \u2066iso\u2069, bom\ufeff, dev 👩\u200d💻"


def _assert_visible(text: str, where: str) -> None:
    for cp in ("202E", "202C", "200B", "2066", "2069", "FEFF"):
        assert f"⟦U+{cp}⟧" in text, (where, cp, text)
    for raw in "\u202e\u202c\u200b\u2066\u2069\ufeff":
        assert raw not in text, (where, hex(ord(raw)))
    assert "👩\u200d💻" in text, (where, "an emoji's joiner is kept")


def test_bidi_and_zero_width_characters_show_as_markers_in_report_and_label_page(tmp_path):
    from cdp_pipe import Browser
    from test_label import judged_run
    from test_md_to_html import chromium_path

    from assay.core.visible import show_invisible
    assert show_invisible("a\u200db") == "a⟦U+200D⟧b" and show_invisible("plain") == "plain"

    chromium = chromium_path()
    md = tmp_path / "report.md"
    md.write_text(f"# Run\n\nThe answer: {TRICK}\n\n| case | answer |\n|---|---|\n| c-1 | {TRICK} |\n",
                  encoding="utf-8")
    html = tmp_path / "report.html"
    r = run_script("md_to_html", md, html)
    assert r.rc == 0, r.stdout + r.stderr
    run = judged_run(tmp_path)
    (run / "cases" / "c-1" / "answer.txt").write_text(TRICK, encoding="utf-8")
    page = tmp_path / "label.html"
    r = run_script("label", run, "-o", page, "--reviewer", "Dana", "--seed", "3")
    assert r.rc == 0, r.stdout
    browser = Browser(chromium, tmp_path / "profile")
    try:
        browser.open(html.as_uri())
        browser.wait_for("document.querySelector('main') !== null")
        _assert_visible(browser.eval("document.body.textContent"), "report.html")
        browser.open(page.as_uri())
        browser.wait_for("document.body && document.body.getAttribute('data-ready') === '1'")
        for _ in range(5):
            if browser.eval("document.getElementById('case').textContent").startswith("c-1"):
                break
            browser.key("j")
        _assert_visible(browser.eval("document.getElementById('answer').textContent"), "label page")
    finally:
        browser.close()


FORGED_ROUTE = "billing\r## PASS · gate open\r"


def test_an_apps_carriage_return_neither_starts_a_heading_nor_breaks_a_table_in_the_report(tmp_path):
    """Markdown reads a CR as a line end: a route the app sends holding `\\r## PASS` used to end its
    code span in report.md (the failure cluster, the confusion matrix, the spurious labels) and
    become a heading of report.html, the matrix falling apart into paragraphs. Every control
    character in report.md is now written as its escape (`\\x0d`, `\\x1b`), so `cat report.md`
    drives no terminal either."""
    import re

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(200, {"message": "refund sent \x1b[2J\x1b]0;pwned\x07", "route": FORGED_ROUTE})

    state = make_state(tmp_path)
    with FakeApp(handler) as app:
        cases = [case("c-cr", "refund me", expect={"route": "billing", "answer": {"must_contain": ["refund"]}})]
        plan = make_plan(state, cases, app_url=app.url)
        out = state / "reports" / plan["run_id"]
        res = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert res.rc == 0, res.stdout + res.stderr
    r = run_script("draft_report", out)
    assert r.rc == 0, r.stdout + r.stderr
    md = (out / "report.md").read_bytes().decode("utf-8")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", md), [ln for ln in md.splitlines() if "gate open" in ln]
    assert "billing\\x0d## PASS · gate open\\x0d" in md and "\\x1b[2J" in md
    r = run_script("md_to_html", out / "report.md", out / "report.html")
    assert r.rc == 0, r.stdout + r.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    headings = re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", html, re.S)
    assert not [h for h in headings if "gate open" in h], headings
    matrix = html.split("Confusion matrix", 1)[1].split("</table>", 1)[0]
    assert "<table>" in matrix and "<p>|" not in matrix, matrix
