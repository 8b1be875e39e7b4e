"""The case page of an agent case, in headless Chromium: the workdir's diff as a diff (wave 4 §4,
the viewer issue's case page). A real run_cases.py run of agent mode (tests/scripted_agent.py
through the adapter's `command:` override, no model) whose agent edits add() wrongly with markup in
the line, writes a file of hostile text and deletes README.md; its files and check layers fail.
On the first screen (1280x800): the failure, then each changed file with its status (modified,
added, deleted) and its unified diff, added lines green and removed lines red; the agent's text
inert. Screenshots go to the test's tmp dir (ASSAY_KEEP_SCREENSHOTS=<dir> copies them there)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_state import AGENT, TOKEN, adapter_doc, agent_env, build_agent_state
from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from fakeapp import case, make_plan
from helpers import SCRIPTS, run_script

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
RUN = "smoke-20261205T100000Z"
CID = "c-agent-hostile"
EXPECT = {"files": {"contains": {"calc.py": ["return a + b"]}, "unchanged": ["README.md"]},
          "check": {"command": [sys.executable, "check_calc.py"]}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("agent-view")
    said = "hostile: fix add() so that check_calc.py passes"
    state = build_agent_state(root, {CID: (said, EXPECT)})
    plan = make_plan(state, [case(CID, said, expect=EXPECT)], run_id=RUN, adapter_doc=adapter_doc(root),
                     execution={"max_attempts": 1, "backoff_s": []})
    (state / "work" / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    env = agent_env(dict(os.environ), broken=False)
    env["ASSAY_SCRATCH_DIR"] = str(tmp_path_factory.mktemp("agent-scratch"))
    r = run_script("run_cases", "--plan", state / "work" / "plan.json", "--out", state / "reports" / RUN,
                   "--progress", "never", env=env)
    assert r.rc == 0, (r.stdout, r.stderr)
    on_disk = [p for p in (state / "reports" / RUN).rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert not on_disk, on_disk   # the secret the agent wrote into its workdir is redacted in workdir.json
    # the fixture ends the server; 900 s only bounds an orphan (120 s ran out on a loaded worker)
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield json.loads(proc.stdout.readline())["url"]
    proc.terminate()
    proc.wait(10)


def test_an_agent_case_page_shows_the_workdir_diff_on_its_first_screen(server, tmp_path):
    assert AGENT.is_file()
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        route = f"/case/{RUN}/{CID}"
        page.goto(server + "#" + route)
        page.wait_for_function("p => (document.body.getAttribute('data-ready') || '') === p", arg=route)
        page.screenshot(path=str(tmp_path / "case-agent.png"))   # the first screen, as a person sees it
        page.screenshot(path=str(tmp_path / "case-agent-full.png"), full_page=True)
        if os.environ.get("ASSAY_KEEP_SCREENSHOTS"):
            for name in ("case-agent.png", "case-agent-full.png"):
                shutil.copy(tmp_path / name, Path(os.environ["ASSAY_KEEP_SCREENSHOTS"]) / name)
        # the failure first: the files and check layers, in words
        failures = page.inner_text("#failures")
        assert "calc.py does not contain" in failures and "README.md changed" in failures
        assert "exit code 1" in failures   # the check's exit code and its output's tail, as the actual
        # then the diff, on the first screen: the files with their status, the hunks
        top = page.evaluate("() => document.querySelector('#workdir').getBoundingClientRect().top")
        assert top < 800, top
        files = page.inner_text("ul.wd-files")
        assert "modified" in files and "calc.py" in files and "added" in files and "notes.md" in files
        assert "deleted" in files and "README.md" in files
        # the edited file first (modified, added, deleted): its wrong line on the first screen
        top, text = page.evaluate("""() => { const e = document.querySelector("pre.patch .add");
                                             return [e.getBoundingClientRect().bottom, e.innerText]; }""")
        assert top < 800 and text == "+    return a * b  # <script>window.__pwned=1</script>", (top, text)
        removed = page.locator("pre.patch .del").all_inner_texts()
        added = page.locator("pre.patch .add").all_inner_texts()
        assert "-    return a - b" in removed and "-# calc" in removed
        assert "+    return a * b  # <script>window.__pwned=1</script>" in added
        assert '+<img src=x onerror="window.__pwned=2">' in added
        assert any("\u27e8U+202E\u27e9" in line for line in added)   # a bidi control shown, never obeyed
        assert "+token: <redacted>" in added and TOKEN not in page.content()   # the secret it wrote: never shown
        # coloured: added lines on green, removed on red (their computed background)
        colour = page.evaluate("""s => getComputedStyle(document.querySelector(s)).backgroundColor""", "pre.patch .add")
        assert colour == "rgb(230, 255, 236)", colour
        colour = page.evaluate("""s => getComputedStyle(document.querySelector(s)).backgroundColor""", "pre.patch .del")
        assert colour == "rgb(255, 235, 233)", colour
        # inert: no script ran, no image was made
        assert page.evaluate("window.__pwned") is None and page.locator("main img").count() == 0
        assert not errors, errors
        browser.close()
