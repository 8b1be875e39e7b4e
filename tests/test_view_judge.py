"""The viewer on a REAL judged run: run_cases.py (a subprocess) against a fake app and a command
judge, one rubric calibrated and one provisional; the case page shows every judge call with its
criterion, evidence, reason and calibrated/provisional state, in Debian's headless Chromium
(Playwright). A judged conversation (every turn pinned to the provisional rubric) shows each
turn's judge calls under that turn. A hostile judge reason (`<script>`, a `javascript:` link,
`</textarea>`, bidi controls) is inert, at case level and per turn. Screenshots go to the test's
tmp dir."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fakeapp import Reply, adapter, app, case, make_plan, run_runner, state  # noqa: F401 (fixtures)
from helpers import SCRIPTS
from judgefake import RUBRIC, judge_block, write_calibration, write_rubric
from test_view_browser import CHROMIUM, FLAGS, _ready, playwright_api, pytestmark  # noqa: F401 (skips without them)
from rundir_util import cases_view

TONE = RUBRIC.replace("rubric_id: refund-eta", "rubric_id: tone").replace(
    """  - id: states-amount
    criterion: The reply states the refunded amount, with its currency.
  - id: states-arrival
    criterion: The reply says when the refund will arrive.""",
    """  - id: polite
    criterion: The reply is polite and does not blame the customer.""").replace("# refund-eta", "# tone")
HOSTILE = ('<script>window.__pwned=1</script><a href="javascript:window.__pwned=2">see</a>'
           '\u202eevil\u202c</textarea>')
ANSWER = 'Refund of 20 USD issued. <img src=x onerror="window.__pwned=3">'
# the judge: amount and arrival judged from the answer; "polite" answers with a hostile reason
JUDGE_CMD = r'''import json, re, sys
text = sys.stdin.read()
node = re.search(r"Node: (\S+)", text).group(1)
answer = re.search(r"<untrusted-answer-[0-9a-f]+>\n(.*?)\n</untrusted-answer-", text, re.S).group(1)
if node == "polite":
    print(json.dumps({"verdict": "fail", "evidence": ['<img src=x onerror="window.__pwned=3">'], "reason": HOSTILE}))
else:
    m = re.search(r"\d+ business days", answer) if node == "states-arrival" else re.search(r"\d+ USD", answer)
    why = {"states-arrival": ("arrival stated", "no arrival time"), "states-amount": ("amount stated", "no amount")}[node]
    print(json.dumps({"verdict": "pass" if m else "fail", "evidence": [m.group(0)] if m else [],
                      "reason": why[0] if m else why[1]}))
'''.replace("HOSTILE", json.dumps(HOSTILE))


def test_judged_run_case_page_shows_every_call_and_a_hostile_reason_is_inert(app, state, tmp_path):  # noqa: F811
    app.handler = lambda req: (Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, {"message": (
        ANSWER if "later" not in str((req.json or {}).get("message")) else "It arrives in 5 business days.")}))
    write_rubric(state)
    write_rubric(state, TONE, "tone.md")
    (state / "judge").mkdir(exist_ok=True)
    (state / "judge" / "fake_judge.py").write_text(JUDGE_CMD, encoding="utf-8")
    expect = {"answer": {"must_contain": ["Refund"], "rubric": ["refund-eta-v1", "tone-v1"]}}
    # c-2: a conversation whose every turn is judged by tone-v1 (provisional: it never stops it); its
    # checks all in every_turn (an expect setting `answer` too would replace them: every_turn_collision)
    conv = case("c-2", "refund?", expect={})
    conv["input"] = {"turns": [{"user": "refund?"}, {"user": "and later?"}],
                     "every_turn": {"answer": {"rubric": ["tone-v1"], "must_not_contain": ["internal error"]}}}
    plan = make_plan(state, [case("c-1", "refund?", expect=expect), conv], app_url=app.url,
                     adapter_doc=adapter(app.url, conversation={"style": "client-id", "memory": "session"}))
    plan["judge"] = judge_block(state, {"provider": "command", "command": [sys.executable, "judge/fake_judge.py"]})
    plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True, "tone-v1": False},
                                                           config=plan["judge"]["config"])
    (state / "work" / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    r = run_runner("--plan", state / "work" / "plan.json", "--out", out, "--progress", "never")
    assert r.rc in (0, 1), r.stdout + r.stderr
    doc = json.loads((cases_view(out) / "c-1" / "judge.json").read_text())
    assert {rb["pin"]: rb["provisional"] for rb in doc["rubrics"]} == {"refund-eta-v1": False, "tone-v1": True}
    assert json.loads((cases_view(out) / "c-2" / "turns" / "2" / "judge.json").read_text())["rubrics"]

    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = json.loads(proc.stdout.readline())["url"]
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
            page = browser.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url + f"#/case/{plan['run_id']}/c-1")
            _ready(page, "/case/")
            judge = page.inner_text("#judge")
            page.screenshot(path=str(tmp_path / "judge-case.png"), full_page=True)
            # every rubric with its calibration state, every node with criterion, verdict, reason, evidence
            assert "refund-eta-v1" in judge and "calibrated" in judge
            assert "tone-v1" in judge and "provisional (not gating)" in judge and "label 88 more" in judge
            assert "The reply says when the refund will arrive." in judge and "no arrival time" in judge
            assert "The reply states the refunded amount, with its currency." in judge and "amount stated" in judge
            assert "20 USD" in page.inner_text("#judge .evidence >> nth=0")
            assert "The reply is polite and does not blame the customer." in judge
            assert "judge command" in judge and "3 call(s)" in judge
            # each node's call: command judge, latency, the parsed reply; three nodes, three calls
            assert page.locator("#judge .judge-node").count() == 3
            assert page.locator("#judge .judge-call").count() == 3
            # the hostile reason and evidence: shown as text, bidi shown as code points, nothing runs
            assert "<script>window.__pwned=1</script>" in judge and '<img src=x onerror="window.__pwned=3">' in judge
            assert "\u27e8U+202E\u27e9" in judge and "\u202e" not in judge
            assert page.evaluate("window.__pwned") is None
            assert page.locator("a[href^='javascript']").count() == 0 and page.locator("main img").count() == 0
            page.click("#judge details summary >> nth=0")  # the raw call opens, still text
            assert page.evaluate("window.__pwned") is None

            # the conversation: each turn's judge calls under that turn, the same rendering
            page.goto(url + f"#/case/{plan['run_id']}/c-2")
            _ready(page, f"/case/{plan['run_id']}/c-2")
            page.screenshot(path=str(tmp_path / "judge-conversation.png"), full_page=True)
            for n, answer in ((1, "Refund of 20 USD"), (2, "5 business days")):
                turn = page.locator(f"#turn-{n}")
                if turn.get_attribute("open") is None:  # a passing turn is folded: a person opens it
                    page.click(f"#turn-{n} > summary")
                assert answer in turn.locator(".answer").inner_text()
                said = turn.locator(f"#judge-turn-{n}").inner_text()
                turn.locator(f"#judge-turn-{n}").screenshot(path=str(tmp_path / f"judge-turn-{n}.png"))
                assert "tone-v1" in said and "provisional (not gating)" in said and "scope turn" in said
                assert "The reply is polite and does not blame the customer." in said
                assert "<script>window.__pwned=1</script>" in said and "</textarea>" in said
                assert "\u27e8U+202E\u27e9" in said and "\u202e" not in said
                assert turn.locator(".judge-node").count() == 1 and turn.locator(".judge-call").count() == 1
            # the case-level judge.json lists each judged turn's verdict with its turn (calls stay in the turns)
            assert "turn 1" in page.inner_text("#judge") and "turn 2" in page.inner_text("#judge")
            page.click("#judge-turn-2 details summary >> nth=0")
            assert page.evaluate("window.__pwned") is None
            assert page.locator("a[href^='javascript']").count() == 0 and page.locator("main img").count() == 0
            assert not errors, errors
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
