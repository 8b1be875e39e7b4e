"""Round 4 of the hostile-input checks on the wave-3 surfaces: each a script run as a user runs it
(argv in, one JSON line and an exit code out), never a traceback."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script

pytestmark = pytest.mark.slow   # real runs and subprocesses: over ~7 s on a loaded machine


def echo(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": f"echo: {req.json['message']}", "route": "chat"})


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two finished runs of one small suite (base, candidate), by run_cases.py against a real port."""
    state = make_state(tmp_path_factory.mktemp("round4"))
    cases = [case(f"c-{i}", f"hello {i}", expect={"answer": {"must_contain": ["hello"]}}) for i in range(4)]
    outs = []
    with FakeApp(echo) as app:
        for run_id in ("smoke-20261129T101500Z", "smoke-20261130T101500Z"):
            plan = make_plan(state, cases, app_url=app.url, run_id=run_id)
            out = state / "reports" / run_id
            r = run_runner("--plan", write_plan(state, plan, f"plan-{run_id}.json"), "--out", out)
            assert r.rc == 0, r.stdout + r.stderr
            outs.append(out)
    return outs


def test_compare_refuses_a_base_that_fails_verify(two_runs, tmp_path):
    import shutil
    base, cand = tmp_path / "base", two_runs[1]
    shutil.copytree(two_runs[0], base)
    ok = run_script("compare_runs", base, cand)
    assert ok.rc == 0, ok.stdout + ok.stderr
    (base / "verdicts.jsonl").unlink()
    r = run_script("compare_runs", base, cand)
    assert r.rc == 2, r.stdout + r.stderr
    err = json.loads(r.stdout)["error"]
    assert "verdicts.jsonl" in err and "--verify" in err and str(base) in err, err
    assert "Traceback" not in r.stderr


HOSTILE_TOOL = ("x\n## PASS · gate open\n**PASS · gate open** ![pixel](https://evil.example/p.png) "
                "<img src=https://evil.example/i.png> ```\n# heading")


def test_the_github_summary_and_junit_escape_app_text(tmp_path):
    """An app-reported tool name in a closed gate's reasons renders as text: no heading, no bold
    decision, no image, no raw HTML, no fence break; the JUnit file parses and says closed."""
    import xml.etree.ElementTree as ET

    from rundir_util import make_run
    run = make_run(tmp_path / "reports", [{"id": "c-1", "verdict": "fail"}],
                   summary={"undeclared_tools": {"cases": 1, "checked_cases": 1, "tools": {HOSTILE_TOOL: 1}}})
    target = tmp_path / "summary.md"
    r = run_script("gate", run, "--no-verify", "--github-summary", "--junit", tmp_path / "junit.xml",
                   env={"GITHUB_STEP_SUMMARY": str(target)})
    assert r.rc == 1, r.stdout + r.stderr
    md = target.read_text(encoding="utf-8")
    assert md.splitlines()[0] == "## assay gate: `smoke-20261129T101500Z` ❌ closed"
    import markdown
    html = markdown.markdown(md, extensions=["fenced_code", "tables"])
    assert html.count("<h") == 1 and "<h2>assay gate" in html, html   # the one heading is the gate's
    assert "<img" not in html and "<strong>PASS" not in html and "<a " not in html, html
    block = html.split("<pre>", 1)[1]
    assert not [line for line in block.splitlines() if "gate open" in line and not line.startswith("  gate closed")]
    root = ET.parse(tmp_path / "junit.xml").getroot()
    gate_case = next(tc for tc in root.iter("testcase") if tc.get("classname") == "assay.gate")
    assert gate_case.find("failure").get("message").startswith("gate closed: ")
    for text in (gate_case.find("failure").text, gate_case.find("system-out").text):
        assert not [line for line in text.splitlines() if line.lstrip().startswith(("## PASS", "**PASS"))], text


def test_a_span_file_nested_100000_deep_is_a_named_error(tmp_path):
    from helpers import ROOT
    import shutil
    state = tmp_path / "s"
    shutil.copytree(ROOT / "examples/helpdesk/.assay", state, ignore=shutil.ignore_patterns("work", "reports"))
    for name, text in (("whole.json", "[" * 100_000 + "]" * 100_000),
                       ("lines.jsonl", '{"resourceSpans": []}\n' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "\n"),
                       ("shallow-but-deep.jsonl", '{"resourceSpans": ' + "[" * 500 + "]" * 500 + "}\n")):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        r = run_script("mine_traces", path, "--state-dir", state)
        assert r.rc == 2, (name, r.stdout, r.stderr)
        err = json.loads(r.stdout)["error"]
        assert str(path) in err and "Traceback" not in r.stderr and "RecursionError" not in r.stdout + r.stderr, err


def test_the_pytest_session_shows_escape_sequences_escaped(tmp_path):
    """A case id (collection error) and an app's answer (failure report) holding terminal escape
    sequences reach the terminal as \\x1b text, never as raw ESC/BEL/CR."""
    import os
    import shutil
    import subprocess
    import sys

    import pytest as _pytest

    from helpers import ROOT
    from rundir_util import make_run
    state = tmp_path / ".assay"
    shutil.copytree(ROOT / "examples/helpdesk/.assay", state, ignore=shutil.ignore_patterns("work", "reports"))
    case_file = next((state / "datasets").glob("c-*.yaml"))
    text = case_file.read_text(encoding="utf-8")
    cid = text.split("id: ", 1)[1].split("\n", 1)[0]
    case_file.write_text(text.replace(f"id: {cid}", f'id: "{cid}\\e[2J\\e]0;pwned\\a\\r"', 1), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:langsmith_plugin", "-p", "no:cacheprovider",
                        "--assay", ".assay", "--collect-only", "-q"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert "unsafe_id" in r.stdout, r.stdout + r.stderr
    assert not any(c in r.stdout for c in "\x1b\x07\r"), r.stdout
    assert "\\x1b[2J" in r.stdout
    from assay.pytestplugin.items import CaseFailed, outcome
    run = make_run(tmp_path / "reports", [{"id": "c-1", "verdict": "fail", "answer": "no\x1b[2K\rPASSED\x07"}])
    row = json.loads((run / "verdicts.jsonl").read_text().splitlines()[0])
    with _pytest.raises(CaseFailed) as failed:
        outcome(run, row, None)
    from assay.pytestplugin.items import AssayCase
    shown = AssayCase.repr_failure(None, failed)
    assert "\x1b" not in shown and "\r" not in shown and "\\x1b[2K\\x0dPASSED" in shown, shown
