"""`pytest --assay` after a session was killed mid-run, as a developer meets it: Ctrl-C (or a kill),
an edit to the app, pytest again. The finished cases of the interrupted run answered the app as it was
then, so the next session never keeps them unasked: it starts a new run and says the interrupted one
is there; `--assay-resume` finishes it instead (tests/test_pytest_plugin.py: the killed session that
resumes). Before: the next session with the same plan resumed on its own, kept the case that had
passed against the old app and exited 0 with the gate open, while the app now fails it.

A tiny chat app of this file on its own port (the same URL before and after the edit, as an app
reloaded in place), a three-case state dir in the test's temp dir."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from assay.core import casestore
from rundir_util import committed_lines

pytestmark = pytest.mark.slow

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:langsmith_plugin", "-p", "no:cacheprovider"]

ADAPTER = """adapter_version: 1
app: {name: resume-chat, repo_access: read-only, git_pinned: false}
access_level: black
data: {may_contain_pii: false, judge_may_see_production_data: false}
invocation:
  mode: http
  base_url: ${RESUME_CHAT_URL}
  auth: {type: none}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"answer": "<answer>"}'
  health_check: {method: GET, path: /healthz, expect_status: [200]}
  timeout_s: 30
  max_concurrency: 3
environment: {kind: mocked, safe_to_attack: true}
"""
PROFILE = """capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: false, blocked_by: "single LLM, no router"}
  trajectory: {enabled: false, blocked_by: no traces}
  tool_selection: {enabled: false, blocked_by: no traces}
oos_handling: clarify
"""
CASES = {"c-0000a001": ("opening hours", "9 to 5"), "c-0000a002": ("refund time", "5 days"),
         "c-0000a003": ("vpn help", "restart")}
FIRST = "c-0000a001"   # answered at once by the first app; the edited app gets it wrong


def write_state(tmp_path: Path) -> Path:
    state = tmp_path / ".assay"
    (state / "datasets").mkdir(parents=True)
    (state / "adapter.yaml").write_text(ADAPTER, encoding="utf-8")
    (state / "profile.yaml").write_text(PROFILE, encoding="utf-8")
    for cid, (question, expected) in CASES.items():
        (state / "datasets" / f"{cid}.yaml").write_text(
            f"id: {cid}\nunit: info\nsplit: [full, smoke]\ncategory: happy\ntest_type: MFT\n"
            "metamorphic_parent: null\ntemplate_id: null\ndataset_version_added: 1\norigin: synthetic\n"
            "review: {status: accepted, by: Tester, at: '2026-11-21'}\n"
            f"input:\n  messages:\n    - role: user\n      content: {question}\n  session: fresh\n"
            f"expect:\n  answer:\n    must_contain: ['{expected}']\n", encoding="utf-8")
    return state


class ChatApp:
    """Answers each question with its expected words; `hold` keeps every answer but the first case's
    waiting (so a session can be killed with exactly that case finished); `edited` gets it wrong."""

    def __init__(self) -> None:
        self.hold = threading.Event()
        self.edited = False
        app = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._send(b"ok")

            def do_POST(self):
                message = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))["message"]
                (cid, (_, words)), = [(c, v) for c, v in CASES.items() if v[0] == message]
                if cid != FIRST:
                    while app.hold.is_set():
                        time.sleep(0.05)
                if cid == FIRST and app.edited:
                    words = "please call IT"
                self._send(json.dumps({"answer": f"The answer: {words}."}).encode())

            def _send(self, body: bytes) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the session was killed: nobody reads the answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.hold.clear()
        self.server.shutdown()
        self.server.server_close()


def session(tmp_path: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*PYTEST, "--assay", ".assay", "--assay-mode", "smoke", "-rA", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=300)


def test_a_session_after_a_kill_runs_the_app_as_it_is_now(tmp_path):
    state = write_state(tmp_path)
    app = ChatApp()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["RESUME_CHAT_URL"] = app.url
    try:
        app.hold.set()
        killed = subprocess.Popen([*PYTEST, "--assay", ".assay", "--assay-mode", "smoke"], cwd=tmp_path, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and killed.poll() is None and \
                not any(committed_lines(d) for d in state.glob("reports/*/")):
            time.sleep(0.05)
        assert killed.poll() is None, "the first session ended before it could be killed mid-run"
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(30)
        (interrupted,) = [d for d in (state / "reports").iterdir() if d.is_dir()]
        kept = committed_lines(interrupted)
        assert set(kept) == {FIRST}, kept   # the one case finished, and it passed against the first app
        assert casestore.head_of(kept[FIRST], verdict=True)[1]["verdict"] == "pass"
        app.hold.clear()
        app.edited = True   # the developer edits the app; it now gets FIRST wrong

        after = session(tmp_path, env)
        out = after.stdout
        assert after.returncode == 1, out + after.stderr   # was 0: the old pass of FIRST kept, gate open
        assert f"FAILED .assay::{FIRST}" in out and "assay gate: CLOSED" in out
        assert f"interrupted run {interrupted.name} (the same plan) left as it is: a new run instead" in out
        assert "resumed the interrupted run" not in out
        runs = sorted(d for d in (state / "reports").iterdir() if d.is_dir())
        assert len(runs) == 2 and interrupted in runs
        assert committed_lines(interrupted) == kept   # left as it is

        # asked for, the resume is there (and says it resumed nothing when there is nothing to finish)
        again = session(tmp_path, env, "--assay-resume")
        assert again.returncode == 1, again.stdout + again.stderr
        assert "--assay-resume: no interrupted run of this plan to finish: a new run" in again.stdout
    finally:
        app.close()


# A second session planning in the same work dir in the same second, with another selection (its plan
# written over collected-plan.json between this session's planning and its run), played by a conftest hook.
RACING_CONFTEST = '''
import json
from pathlib import Path

def pytest_collection_modifyitems(session, config, items):
    plan_file = Path(".assay/work/pytest/collected-plan.json")   # the same run id, another selection
    plan = json.loads(plan_file.read_text())
    plan["cases"] = [c for c in plan["cases"] if c["id"] == "c-0000a002"]
    plan_file.write_text(json.dumps(plan))
'''


def test_a_plan_rewritten_by_another_session_is_refused_not_run(tmp_path):
    """Before: the session ran the other session's plan (one case, the same run id) into its run dir; its
    two other cases, one of them failing, were skipped 'not run', the gate saw only the one that passed:
    exit 0, gate open. (A plan of another run id the runner refuses itself: --out must end in it.)"""
    state = write_state(tmp_path)
    (state / "datasets" / f"{FIRST}.yaml").write_text(
        (state / "datasets" / f"{FIRST}.yaml").read_text(encoding="utf-8").replace("9 to 5", "never said"),
        encoding="utf-8")   # a gating case that fails
    (tmp_path / "conftest.py").write_text(RACING_CONFTEST, encoding="utf-8")
    app = ChatApp()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["RESUME_CHAT_URL"] = app.url
    try:
        done = session(tmp_path, env)
    finally:
        app.close()
    assert done.returncode == 4, done.stdout + done.stderr
    assert "changed under this session (another pytest --assay on the same state dir at the same time?)" \
        in done.stderr
    assert not [d for d in (state / "reports").glob("*/") if (d / "results.json").is_file()]
