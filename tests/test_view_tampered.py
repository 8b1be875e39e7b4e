"""A run dir whose verdicts.jsonl was edited fail -> pass, served by the viewer on its own port.

The gate section closed on the completeness check (`run_cases.py --verify`), while the run's
cases API listed 20 pass and 0 fail with nothing beside them, and the Compare page drew a
comparison from the edited files that compare_runs.py refuses. Now the cases API carries the
check's state (as the gate decided it: "checking" until known, never waited for), the run page
says above the rows that they come from files the check rejects, and the Compare page refuses a
side whose check fails in compare_runs.py's words (`assay.compare.baseline.unverified_words`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from helpdesk_util import HELPDESK, copy_state
from helpers import SCRIPTS, run_script

pytestmark = pytest.mark.slow
DEMO = HELPDESK / "demo.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """The helpdesk's state dir with two real runs: a good one (base) and a broken one (11 failing)."""
    root = tmp_path_factory.mktemp("helpdesk")
    state = copy_state(root)
    for extra, rc in (((), 0), (("--break",), 1)):
        r = subprocess.run([sys.executable, str(DEMO), "--state-dir", str(state), *extra], capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == rc, r.stdout + r.stderr
    return root


def tampered(runs: Path, tmp_path: Path, which: int = 1) -> tuple[Path, Path, Path]:
    """A copy of the state dir, run `which` (0 base, 1 broken) with every fail turned pass in its
    verdicts.jsonl only (results.json untouched); (state, base run dir, broken run dir)."""
    shutil.copytree(runs, tmp_path / "app")
    state = tmp_path / "app" / ".assay"
    base, broken = sorted(p for p in (state / "reports").iterdir() if p.is_dir())
    target = (base, broken)[which] / "verdicts.jsonl"
    text = target.read_text(encoding="utf-8")
    if which == 1:
        assert text.count('"verdict": "fail"') == 11
        text = text.replace('"verdict": "fail"', '"verdict": "pass"')
    else:
        text = _flip_one(text)
    target.write_text(text, encoding="utf-8")
    return state, base, broken


def _flip_one(text: str) -> str:
    rows = [json.loads(line) for line in text.splitlines()]
    rows[0]["verdict"] = "fail" if rows[0]["verdict"] == "pass" else "pass"
    return "".join(json.dumps(r) + "\n" for r in rows)


class Viewer:
    def __init__(self, state: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "600"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = json.loads(self.proc.stdout.readline())["url"]

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=120) as resp:
            return json.loads(resp.read())

    def until(self, path: str, done, seconds: float = 90.0) -> dict:
        deadline = time.monotonic() + seconds
        while True:
            doc = self.get(path)
            if done(doc) or time.monotonic() > deadline:
                return doc
            time.sleep(0.2)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def cli_refusal(base: Path, cand: Path) -> str:
    r = run_script("compare_runs", base, cand)
    assert r.rc == 2, r.stdout + r.stderr
    return json.loads(r.stdout or r.stderr)["error"]


def test_the_cases_api_and_compare_say_what_the_check_says_of_an_edited_verdicts_jsonl(runs, tmp_path):
    state, base, broken = tampered(runs, tmp_path)
    gate = run_script("gate", broken, "--json")
    assert gate.rc == 1, gate.stdout
    why = [x for x in gate.json["reasons"] if x.startswith("run_cases.py --verify exit 6")]
    assert why, gate.json["reasons"]
    viewer = Viewer(state)
    try:
        # the first request: the rows at once, the check not yet answered (never waited for)
        first = viewer.get(f"/api/run/{broken.name}/cases")
        assert first["counts"] == {"pass": 20} and first["check"]["state"] == "checking", first["check"]
        doc = viewer.until(f"/api/run/{broken.name}/cases", lambda d: d["check"]["state"] != "checking")
        assert doc["check"] == {"state": "failed", "detail": why[0]}
        assert doc["counts"] == {"pass": 20}   # the rows as the files have them, said to fail the check
        gate_doc = viewer.get(f"/api/run/{broken.name}/gate?wait=3")
        assert gate_doc["gate"] == "closed" and gate_doc["check"] == doc["check"]
        # the clean base: its check is clean, its rows carry no warning
        clean = viewer.until(f"/api/run/{base.name}/cases", lambda d: d["check"]["state"] != "checking")
        assert clean["check"]["state"] == "clean", clean["check"]
        # Compare refuses the edited candidate, in compare_runs.py's words
        refused = viewer.get(f"/api/compare/{base.name}/{broken.name}")
        assert refused["refused"] == {"role": "candidate", "run_id": broken.name} and "buckets" not in refused
        cli = cli_refusal(base, broken)
        assert refused["error"].startswith(f"candidate {broken}: fails run_cases.py --verify (exit 6: ")
        assert "verdicts.jsonl" in refused["error"]
        assert refused["error"].rsplit("); ", 1)[1] == cli.rsplit("); ", 1)[1], (refused["error"], cli)
        # ... and as the base
        as_base = viewer.get(f"/api/compare/{broken.name}/{base.name}")
        assert as_base["refused"]["role"] == "base"
        assert as_base["error"].rsplit("); ", 1)[1] == cli_refusal(broken, base).rsplit("); ", 1)[1]
    finally:
        viewer.close()
    fresh = Viewer(state)   # its first request: a comparison is not drawn from files not yet checked
    try:
        early = fresh.get(f"/api/compare/{base.name}/{broken.name}?wait=0")
        assert "buckets" not in early and {c["role"] for c in early["checking"]} == {"base", "candidate"}, early
        assert early["words"].endswith("no comparison is drawn from files not yet checked"), early["words"]
    finally:
        fresh.close()


def test_a_compare_whose_base_was_edited_is_refused_naming_the_base(runs, tmp_path):
    state, base, broken = tampered(runs, tmp_path, which=0)
    viewer = Viewer(state)
    try:
        doc = viewer.until(f"/api/compare/{base.name}/{broken.name}", lambda d: "checking" not in d)
        assert doc.get("refused") == {"role": "base", "run_id": base.name}, doc.get("error") or list(doc)
        assert doc["error"].startswith(f"base {base}: fails run_cases.py --verify (")
    finally:
        viewer.close()


@NEEDS_CHROMIUM
def test_the_run_page_says_above_the_rows_that_they_fail_the_check(runs, tmp_path):
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    state, base, broken = tampered(runs, tmp_path)
    viewer = Viewer(state)
    try:
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            route = f"/run/{broken.name}"
            page.goto(viewer.url + "#" + route)
            page.wait_for_function("p => (document.body.getAttribute('data-ready') || '') === p", arg=route)
            page.wait_for_selector("#check-banner[data-check=failed]", timeout=60000)
            box = page.evaluate("""() => { const b = document.getElementById('check-banner'),
                rows = document.getElementById('cases'), r = b.getBoundingClientRect();
                return {top: r.top, height: r.height, above: r.bottom <= rows.getBoundingClientRect().top,
                        text: b.innerText}; }""")
            page.screenshot(path=str(tmp_path / "tampered-run.png"))
            assert 0 <= box["top"] < 800 and box["height"] > 0 and box["above"], box
            assert "fail the run's check" in box["text"] and "verdicts.jsonl" in box["text"], box["text"]
            assert "the gate is closed" in box["text"], box["text"]
            page.goto(viewer.url + f"#/compare/{base.name}/{broken.name}")
            page.wait_for_selector("#compare-error", timeout=60000)
            error = page.inner_text("#compare-error")
            page.screenshot(path=str(tmp_path / "tampered-compare.png"))
            assert error.startswith(f"candidate {broken}: fails run_cases.py --verify"), error
            assert page.query_selector("#summary") is None
            browser.close()
    finally:
        viewer.close()
