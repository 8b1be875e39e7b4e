"""`make demo` end to end: examples/helpdesk/demo.py as a user runs it, on a copy of the
example state dir. A passing run opens the gate; a --break run closes it on the planted
regressions; every artifact the runner promises is there, and the report renders."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, run_script
from rundir_util import cases_view

DEMO = ROOT / "examples" / "helpdesk" / "demo.py"
STATE = ROOT / "examples" / "helpdesk" / ".assay"
RUN_FILES = ("manifest.yaml", "results.json", "verdicts.jsonl", "verdicts_for_stats.jsonl",
             "routing_results.jsonl", "routing_report.json", "run.log")
CASE_FILES = ("request.json", "response.json", "expect.json", "answer.txt", "verdict.json")
# The skill's outputs, written into the run dir by draft_report/md_to_html after the gate ran.
REPORT_FILES = ("report.md", "report.html")

pytestmark = pytest.mark.slow

needs_pipeline = pytest.mark.skipif(
    not all((ROOT / "scripts" / f"{s}.py").exists() for s in
            ("convert_suite", "validate_cases", "make_plan", "run_cases", "gate", "draft_report", "md_to_html")),
    reason="the pipeline scripts are not all present yet")


def copy_state(tmp_path: Path) -> Path:
    state = tmp_path / ".assay"
    shutil.copytree(STATE, state, ignore=shutil.ignore_patterns("work", "reports"))
    # judge.yaml runs `python3 ../judge_standin.py` from the state dir; a copy outside
    # examples/helpdesk/ has no stand-in beside it and the demo must work anyway
    return state


def run_demo(state: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BREAK", "FLAKY")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, str(DEMO), "--state-dir", str(state), *args], capture_output=True,
                          text=True, encoding="utf-8", errors="replace", env=full_env, timeout=600)


def run_dir_of(state: Path) -> Path:
    (run_dir,) = [p for p in (state / "reports").iterdir() if p.is_dir()]
    return run_dir


def app_is_stopped(state: Path) -> bool:
    pid = json.loads((state / "work" / "helpdesk.port.json").read_text())["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie is stopped too (it is only waiting to be reaped)
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[-1].startswith("Z")


def check_run_dir(run_dir: Path) -> dict:
    """Every artifact the runner promises (contracts §5.7), with the conditional ones where they apply."""
    for name in RUN_FILES:
        assert (run_dir / name).is_file(), name
    results = json.loads((run_dir / "results.json").read_text())
    assert results["summary"]["status"] == "ok" and results["exit_code"] == 0
    assert results["summary"]["missing_artifacts"] == []
    rows = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    case_dirs = sorted(p.name for p in (cases_view(run_dir)).iterdir())
    assert sorted(r["case_id"] for r in rows) == case_dirs
    stats = [json.loads(line) for line in (run_dir / "verdicts_for_stats.jsonl").read_text().splitlines()]
    assert stats == [{"case_id": r["case_id"], "verdict": r["verdict"]} for r in rows
                     if r["verdict"] in ("pass", "fail")]
    for cid in case_dirs:
        cdir = cases_view(run_dir) / cid
        for name in CASE_FILES:
            assert (cdir / name).is_file(), f"{cid}/{name}"
        expect = json.loads((cdir / "expect.json").read_text())
        assert (cdir / "actual.json").is_file() == ("result" in expect), cid
        # the example exports spans for every request, so every case has its trace
        assert (cdir / "trajectory.json").is_file() and (cdir / "trace.json").is_file(), cid
        verdict = json.loads((cdir / "verdict.json").read_text())
        loops = verdict["layers"]["loops"]
        # A route answered without any LLM or tool span (triage, out of scope) is blind: unscored.
        assert loops["verdict"] in ("pass", "fail") or (
            loops["verdict"] == "unscored" and "no span maps to an LLM or tool call" in loops["reason"]), (cid, loops)
    assert not (run_dir / "repeats.jsonl").exists() and not (run_dir / "reliability.json").exists()  # k=1
    for name in REPORT_FILES:
        assert (run_dir / name).is_file(), name
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "<script" not in html.lower()
    assert run_dir.name in html
    # The runner's own completeness check, on everything but the skill's report files.
    res = run_script("run_cases", "--verify", run_dir)
    problems = [p for p in res.json.get("missing_artifacts", []) if not p.startswith(REPORT_FILES)]
    assert problems == [], res.stdout
    return results


@needs_pipeline
def test_demo_passing_run_opens_the_gate(tmp_path):
    state = copy_state(tmp_path)
    proc = run_demo(state)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for step in ("convert_suite", "validate_cases", "make_plan", "run_cases", "draft_report"):
        assert step in proc.stdout
    assert re.search(r"^smoke-\d{8}T\d{6}Z: PASS", proc.stdout, re.M)
    run_dir = run_dir_of(state)
    assert f"report: {run_dir / 'report.html'}" in proc.stdout
    results = check_run_dir(run_dir)
    s = results["summary"]
    assert s["failures"] == 0 and s["passes"] > 0 and s["canaries"]["passed"] == s["canaries"]["n"] == 2
    assert s["unscored"] == 0 and s["skipped"] == 0 and s["infra_errors"] == 0
    # conversations: each turn's trace is collected and correlated on its own
    conv = json.loads((cases_view(run_dir) / "c-1ee79c26" / "verdict.json").read_text())
    assert [t["trace_collected"] for t in conv["turns"]] == [True, True]
    ids = {json.loads((cases_view(run_dir) / "c-1ee79c26" / "turns" / str(n) / "verdict.json").read_text())
           ["trace"]["trace_id"] for n in (1, 2)}
    assert len(ids) == 2 and conv["turn_layers"]["t2.trajectory"]["verdict"] == "pass"
    assert app_is_stopped(state)


@pytest.fixture(scope="module")
def broken_demo(tmp_path_factory):
    """One `make demo BREAK=1` run, shared by the tests that read its outputs."""
    state = copy_state(tmp_path_factory.mktemp("broken"))
    proc = run_demo(state, env={"BREAK": "1"})  # the Makefile's BREAK=1 also arrives as env
    return state, proc


@needs_pipeline
def test_demo_break_closes_the_gate_and_the_report_shows_why(broken_demo):
    state, proc = broken_demo
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "gate closed" in proc.stdout and "BROKEN" in proc.stdout
    run_dir = run_dir_of(state)
    results = check_run_dir(run_dir)
    failed = {c["case_id"]: set(c["failed_layers"]) for c in results["cases"] if c["verdict"] == "fail"}
    assert results["summary"]["gating_failures"] >= 4
    # each planted regression is caught by the layer that should catch it
    caught = set().union(*failed.values())
    assert {"routing", "authz", "execution", "loops"} <= caught
    # the memory regression (the app forgets a conversation after turn 1) is caught at turn 2
    conv = results["summary"]["by_kind"]["conversation"]
    assert conv["failures"] == 4 and conv["failed_turns"] == {"2": 4}
    assert "conversations: 0/4 pass (0.0%) of 4 (failed at turn 2 x4)" in proc.stdout
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert html.count("FAILED HERE") == 4
    for cid in failed:
        assert cid in html
    # the gate names the first failures on its one screen and counts the rest
    assert sum(cid in proc.stdout for cid in failed) == min(5, len(failed))
    assert app_is_stopped(state)
    # The report says FAIL at a glance, shows each failing case with the user's input, and holds no TODO.
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert report.index("**FAIL · gate closed**") < report.index("## Top failure clusters")
    assert "TODO" not in report and "TODO" not in html
    assert '<blockquote class="verdict v-fail">' in html
    excerpts = report[report.index("## Failure excerpts"):report.index("## Counts")]
    blocks = excerpts.split("\n### ")[1:]
    assert len(blocks) == min(len(failed), 10) >= 5  # every failing case is excerpted (up to 10)
    for cid, block in zip(sorted(failed), blocks):
        # the run has a case journal: the id stands alone (no per-case dir to link) and the
        # evidence is named as artifacts of its record (runner contract §8.1, §16)
        assert block.startswith(f"`{cid}`") and "\ninput:" in block, block
        assert "Evidence: `verdict.json`" in block and "in its record in `cases.jsonl`" in block, block
    assert "Not asserted by any case (`n/a` in every case): `state`" in report


@needs_pipeline
def test_demo_break_report_in_chromium_shows_the_fail_banner_and_inputs(broken_demo, tmp_path):
    from test_md_to_html import chromium

    state, proc = broken_demo
    assert proc.returncode == 1, proc.stdout + proc.stderr
    page = (run_dir_of(state) / "report.html").as_uri()
    dom = chromium(tmp_path, page, "--dump-dom").stdout
    banner = dom[dom.index('<blockquote class="verdict v-fail">'):]
    banner = banner[:banner.index("</blockquote>")]
    results = json.loads((run_dir_of(state) / "results.json").read_text())
    gating = results["summary"]["gating_failures"]
    assert "FAIL · gate closed" in banner and f"{gating} gating failure(s)" in banner
    assert dom.count("input:") >= results["summary"]["failures"] and "TODO" not in dom
    shot = tmp_path / "break-report.png"
    chromium(tmp_path, page, f"--screenshot={shot}", "--window-size=1100,1600")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a rendered page, not a blank one


@needs_pipeline
def test_demo_names_the_failing_step_and_stops_the_app(tmp_path):
    state = copy_state(tmp_path)
    (state / "datasets" / "c-broken00.yaml").write_text("id: c-broken00\nsplit: [full\n", encoding="utf-8")
    proc = run_demo(state)
    assert proc.returncode == 2
    assert "step 'convert_suite' failed" in proc.stderr and "c-broken00.yaml" in proc.stderr
    assert app_is_stopped(state)
    assert not (state / "reports").exists() or not any((state / "reports").iterdir())


def test_demo_refuses_a_dir_that_is_not_a_state_dir(tmp_path):
    proc = run_demo(tmp_path)
    assert proc.returncode == 2 and "adapter.yaml" in json.loads(proc.stdout)["error"]


def test_keep_app_leaves_the_app_running(tmp_path):
    state = copy_state(tmp_path)
    (state / "datasets" / "c-broken00.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    proc = run_demo(state, "--keep-app")
    pid = json.loads((state / "work" / "helpdesk.port.json").read_text())["pid"]
    try:
        assert proc.returncode == 2
        assert f"kill {pid}" in proc.stdout and not app_is_stopped(state)
    finally:
        os.kill(pid, 15)


@needs_pipeline
def test_demo_conversations_under_the_server_id_style(tmp_path):
    """The example app also issues its own conversation id: the same suite passes under server-id."""
    state = copy_state(tmp_path)
    adapter = state / "adapter.yaml"
    text = adapter.read_text(encoding="utf-8")
    text = text.replace('''request_body: '{"message": "<user turn>", "session_id": "<uuid>"}\'''',
                        '''request_body: '{"message": "<user turn>", "conversation_id": "<session>"}\'''')
    text = text.replace("    style: client-id\n", "    style: server-id\n    session_from: {header: X-Conversation-Id}\n")
    assert "server-id" in text and "<session>" in text
    adapter.write_text(text, encoding="utf-8")
    proc = run_demo(state)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "conversations: 4/4 pass (100.0%) of 4" in proc.stdout
    results = json.loads((run_dir_of(state) / "results.json").read_text())
    assert results["summary"]["by_kind"]["conversation"]["passes"] == 4
