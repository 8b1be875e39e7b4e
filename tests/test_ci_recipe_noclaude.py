"""The GitHub Actions workflow of skills/run/references/run-modes.md without Claude, run as GitHub
runs a step with no `shell:` key (`bash -e`: no pipefail, which only `shell: bash` adds; the job's env; a checkout of the app's repo):
the app started in the background and waited for by the workflow's own steps, then the no-Claude
step, which converts, lints, plans, runs and gates the run it made by its path.

What a newcomer's CI met: the workflow said "the adapter's health check waits for" the app, and it
does not (pre-flight checks once: exit 3, connection refused, on an app still starting). The
no-Claude variant kept the separate `gate.py .assay/reports --latest` step after the run step: with
`continue-on-error` on the run step and `.assay/reports` restored from a cache, a case that does
not convert stopped the step before make_plan.py, and the --latest gate opened on the cached,
older green run: exit 0 over a suite that never ran. The one step now gates its own run id.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, write_yaml

TEXT = (ROOT / "skills" / "run" / "references" / "run-modes.md").read_text(encoding="utf-8")
GH_SHELL = ["bash", "-e", "-c"]   # GitHub's `run:` with no `shell:` key, as every step here is: bash -e {0}, no pipefail
pytestmark = [pytest.mark.skipif(shutil.which("curl") is None, reason="the workflow's wait step uses curl"),
              pytest.mark.slow]   # waits on the workflow's servers: started first (conftest)

APP = """\
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
open(sys.argv[2], "w").write(str(os.getpid()))
time.sleep(float(sys.argv[3]))   # an app that takes a while to come up
ANSWERS = {"hours": ("faq", "We open at 9am."), "refund": ("billing", "Refunds take 5 business days."),
           "weather": ("other", "I only help with the store."), "cancel": ("billing", "I cannot do that.")}
if os.environ.get("APP_FIXED"):
    ANSWERS["cancel"] = ("account", "Your order is cancelled.")
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def _send(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_GET(self):
        self._send(200 if self.path == "/health" else 404, {"ok": True})
    def do_POST(self):
        q = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))["message"].lower()
        route, answer = next((v for k, v in ANSWERS.items() if k in q), ("other", "?"))
        self._send(200, {"reply": answer, "route": route})
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""

ADAPTER = """\
adapter_version: 1
app: {name: shopbot, repo_access: read-only}
access_level: black
invocation:
  mode: http
  base_url: ${SHOPBOT_URL}
  auth: {type: none}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"reply": "<answer>"}'
  health_check: {method: GET, path: /health, expect_status: [200]}
  route_from_response: route
  timeout_s: 5
  max_concurrency: 2
traces: {source: none}
tools: []
environment: {kind: mocked, safe_to_attack: false}
"""

PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: router_executor}
oos_handling: route:other
routing_contract: [faq, billing, account, other]
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
  multi_turn: {enabled: false, blocked_by: none}
  trajectory: {enabled: false, blocked_by: no traces}
  tool_selection: {enabled: false, blocked_by: no traces}
  execution: {enabled: false, blocked_by: no oracle}
  authz: {enabled: false, blocked_by: no identities}
  state: {enabled: false, blocked_by: reserved}
"""

# id, category, template, route, question, must_contain: a suite `validate_cases.py --strict` accepts
CASES = [("c-hours001", "happy", "t1", "faq", "What are your hours?", "9am"),
         ("c-refnd001", "edge", "t1", "billing", "How long does a refund take?", "5 business days"),
         ("c-weath001", "oos", "t2", "other", "What is the weather?", "only help"),
         ("c-cancl001", "ambiguous", "t2", "account", "Please cancel my order", "cancelled")]



def store_app(cancel: tuple[str, str]):
    """The store's app as the recipe's suite meets it: a route and a reply by the question's word; the
    cancel question answered as `cancel` (route, reply) says."""
    from fakeapp import Reply
    answers = {"hours": ("faq", "We open at 9am."), "refund": ("billing", "Refunds take 5 business days."),
               "weather": ("other", "I only help with the store."), "cancel": cancel}

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        q = (req.json or {}).get("message", "").lower()
        route, answer = next((v for k, v in answers.items() if k in q), ("other", "?"))
        return Reply(200, {"reply": answer, "route": route})
    return handler

def write_repo(root: Path) -> Path:
    """The app's repo as a checkout gives it: the app, its start script, its .assay state dir."""
    (root / "app.py").write_text(APP, encoding="utf-8")
    start = root / "scripts" / "start-app-for-ci.sh"
    start.parent.mkdir(parents=True)
    start.write_text('#!/bin/sh\nexec "$PYTHON" app.py "$APP_PORT" "$APP_PIDFILE" "$APP_DELAY"\n', encoding="utf-8")
    start.chmod(0o755)
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    for n, (cid, category, template, route, question, must) in enumerate(CASES):
        write_yaml(state / "datasets" / f"{cid}.yaml", (
            f"id: {cid}\nunit: {route}\nsplit: [smoke, full]\ncategory: {category}\ntest_type: MFT\n"
            f"template_id: {template}\ninstantiation_params: {{n: {n}}}\n"
            "review: {status: accepted, by: Ana Reviewer}\n"
            f'input:\n  messages:\n    - {{role: user, content: "{question}"}}\n'
            f'expect:\n  route: {route}\n  answer: {{must_contain: ["{must}"]}}\n'))
    return state


def steps() -> dict[str, str]:
    """Every named step's `run:` in run-modes.md's single-job workflow and its no-Claude step."""
    found: dict[str, str] = {}
    for block in re.findall(r"```yaml\n(.*?)```", TEXT, re.S):
        doc = yaml.safe_load(block)
        if isinstance(doc, dict) and set(doc.get("jobs", {})) == {"assay"}:
            doc = doc["jobs"]["assay"]["steps"]
        if isinstance(doc, list):
            found.update({s["name"]: s["run"] for s in doc if isinstance(s, dict) and "name" in s and "run" in s})
    return found


NO_CLAUDE = "Run the suite and gate (tokenless, no Claude)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    """One CI job: a checkout dir, the job's env, each step run as GitHub runs it."""

    def __init__(self, root: Path, port: int, **extra: str) -> None:
        self.root, self.summary = root, root.parent / f"{root.name}-summary.md"
        bindir = str(Path(sys.executable).parent)
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_", "ASSAY_"))},
                    "PATH": bindir + os.pathsep + os.environ.get("PATH", ""), "PYTHON": sys.executable,
                    "ASSAY_ROOT": str(ROOT), "SHOPBOT_URL": f"http://127.0.0.1:{port}",
                    "GITHUB_STEP_SUMMARY": str(self.summary), **extra}

    def step(self, script: str, *, errexit: bool = True, timeout: float = 240,
             detached: bool = False) -> subprocess.CompletedProcess:
        """`detached`: a step that leaves a process running (`... &`) is not read to its output's end."""
        argv = GH_SHELL + [script] if errexit else ["bash", "-c", script]
        out = subprocess.DEVNULL if detached else subprocess.PIPE
        return subprocess.run(argv, cwd=self.root, env=self.env, stdout=out, stderr=out, text=True, timeout=timeout)


def junit(path: Path) -> tuple[dict, dict[str, list[str]]]:
    root = ET.parse(path).getroot()   # a CI parser's first step: the XML must parse
    return root.attrib, {tc.get("name").split(":")[0]: [c.tag for c in tc] for tc in root.iter("testcase")}


def test_the_workflow_waits_for_a_slow_app_and_the_step_gates_its_own_run(tmp_path):
    named = steps()
    assert NO_CLAUDE in named and "Gate (tokenless)" in named, sorted(named)
    assert "--latest" not in named[NO_CLAUDE] and '".assay/reports/$RUN_ID"' in named[NO_CLAUDE]
    start = named["Start the app under test"]
    wait = named["Wait for the app (pre-flight checks its health once and does not wait)"]
    port = free_port()
    # the one thing the recipe says to replace: your base_url + health_check.path
    wait = wait.replace("http://127.0.0.1:8000/health", f"http://127.0.0.1:{port}/health")
    assert f":{port}/health" in wait

    repo = tmp_path / "checkout"
    repo.mkdir()
    write_repo(repo)
    pidfile = tmp_path / "app.pid"
    job = Job(repo, port, APP_PORT=str(port), APP_PIDFILE=str(pidfile), APP_DELAY="3")
    try:
        started = time.monotonic()
        assert job.step(start, detached=True).returncode == 0
        waited = job.step(wait, timeout=180)
        assert waited.returncode == 0, waited.stderr
        assert time.monotonic() - started >= 2.5   # it did wait: the app binds its port after 3 s
        red = job.step(named[NO_CLAUDE])
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), 15)
    # one case fails on purpose (c-cancl001 routes to billing): the step is the gate's exit 1
    assert red.returncode == 1, red.stdout + red.stderr
    assert "gate closed: 1 gating failure(s): c-cancl001" in red.stdout, red.stdout
    attrs, cases = junit(repo / "assay-junit.xml")
    assert attrs["failures"] == "2", attrs                 # the case and the gate testcase
    assert cases["c-cancl001"] == ["failure"] and cases["gate"][0] == "failure", cases
    assert all(cases[cid] == [] for cid, *_ in CASES if cid != "c-cancl001"), cases
    assert "FAIL" in job.summary.read_text(encoding="utf-8")


def test_a_suite_that_does_not_convert_never_reads_a_cached_green_run(tmp_path):
    """A green run of an earlier job is restored into .assay/reports (a cache); this job's case does
    not parse. The step stops under GitHub's -e (before make_plan.py, so no never-started file), and
    in a shell without -e it goes on to gate its own run id: both red, never the cached run's open."""
    named = steps()
    port = free_port()
    earlier, pidfile = tmp_path / "earlier", tmp_path / "app.pid"
    earlier.mkdir()
    write_repo(earlier)
    app = subprocess.Popen([sys.executable, "app.py", str(port), str(pidfile), "0"], cwd=earlier,
                           env={**os.environ, "APP_FIXED": "1"})
    try:
        job = Job(earlier, port)
        subprocess.run(["bash", "-c", f"timeout 60 bash -c 'until curl -fsS http://127.0.0.1:{port}/health; do sleep 0.2; done'"],
                       check=True, capture_output=True)
        green = job.step(named[NO_CLAUDE])
        assert green.returncode == 0, green.stdout + green.stderr
        assert junit(earlier / "assay-junit.xml")[0]["failures"] == "0"
        # the older pattern's --latest gate over that directory is open: what a cache restores
        assert job.step(named["Gate (tokenless)"]).returncode == 0
        time.sleep(1.1)   # the recipe's RUN_ID has whole seconds: this job's must not be the cached run's

        for errexit in (True, False):
            repo = tmp_path / f"checkout-{errexit}"
            repo.mkdir()
            state = write_repo(repo)
            shutil.copytree(earlier / ".assay" / "reports", state / "reports")   # the restored cache
            broken = state / "datasets" / "c-hours001.yaml"
            broken.write_text(broken.read_text(encoding="utf-8") + "  tone: [friendly\n", encoding="utf-8")
            r = Job(repo, port).step(named[NO_CLAUDE], errexit=errexit)
            assert r.returncode != 0, (errexit, r.stdout, r.stderr)
            assert "c-hours001.yaml" in r.stdout + r.stderr
            assert "PASS" not in r.stdout, r.stdout
            if (repo / "assay-junit.xml").exists():   # without -e the gate ran: it says it could not decide
                attrs, cases = junit(repo / "assay-junit.xml")
                assert attrs.get("errors") == "1" and "c-hours001" not in cases, (attrs, cases)
    finally:
        app.terminate()
        app.wait(timeout=30)


def test_the_readme_ci_block_runs_as_written(tmp_path):
    """README's "The CI gate" block had `--out .assay/reports/<run-id>` after a make_plan.py that chose
    its own run id: whatever a newcomer put there, the runner refused it (exit 2, --out must end in
    the plan's run id). The block now names the run id itself, and its scripts are `$ASSAY_ROOT/scripts/`
    (a bare `scripts/` was the app checkout's, where the block runs)."""
    from fakeapp import FakeApp
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("## The CI gate", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```\n(.*?)```", readme, re.S)[0]
    assert "<" not in block.replace("< /dev/null", ""), "no placeholder left to guess"
    lines = block.split("\n# or,")[0]
    assert "python3 scripts/" not in block, "the scripts are assay's, not the app checkout's"
    handler = store_app(cancel=("billing", "I cannot do that."))

    repo = tmp_path / "checkout"
    repo.mkdir()
    write_repo(repo)
    with FakeApp(handler) as app:
        r = Job(repo, int(app.url.rsplit(":", 1)[1])).step(lines)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "gate closed: 1 gating failure(s): c-cancl001" in r.stdout, r.stdout
    assert junit(repo / "junit.xml")[0]["failures"] == "2"


def test_the_readme_pipeline_block_runs_as_written(tmp_path):
    """README's "Using it on your own app" step 2 said "any working directory" over `python3 scripts/...`
    lines: run beside the app's `.assay/`, the first line was `can't open file .../scripts/convert_suite.py`,
    and its `--out $S/reports/<run-id>` was a shell redirection from a file named `run-id`. The block now
    names the checkout (`$ASSAY_ROOT`) and the run id; run as written it ends in the gate's exit code."""
    from fakeapp import FakeApp
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("2. Run the pipeline", 1)[1]
    block = re.findall(r"```\n(.*?)```", readme, re.S)[0]
    assert "<" not in block, "no placeholder left to guess"
    assert "python3 scripts/" not in block and "export ASSAY_ROOT=/path/to/assay " in block, block
    script = "\n".join(line.strip() for line in block.splitlines()).replace("/path/to/assay", str(ROOT))
    repo = tmp_path / "app"
    repo.mkdir()
    state = write_repo(repo)
    with FakeApp(store_app(cancel=("billing", "I cannot do that."))) as app:
        r = Job(repo, int(app.url.rsplit(":", 1)[1])).step(script)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "gate closed: 1 gating failure(s): c-cancl001" in r.stdout, r.stdout
    (run,) = (state / "reports").glob("smoke-*")
    assert (run / "report.html").is_file() and (run / "report.md").is_file()


def _block_after(heading: str) -> str:
    return re.findall(r"```\n(.*?)```", TEXT.split(heading, 1)[1], re.S)[0]


def test_the_prose_recipes_fail_as_a_script_of_their_own(tmp_path):
    """"Deterministic CI without Claude" and "Record on main" are shell, not workflow steps: pasted into a
    `ci.sh` (bash without -e) the last command was the answer. A case the --strict lint refuses (a
    gating case not reviewed) then went on to an open gate: exit 0 over a lint that failed; and main's
    recording run stopped at pre-flight (the app not running) ended in a green `cache.py prune`."""
    from fakeapp import FakeApp, Reply

    def handler(req):
        return Reply(200, {"ok": True} if req.method == "GET" else {"reply": "We open at 9am.", "route": "faq"})

    repo = tmp_path / "lint"
    repo.mkdir()
    state = write_repo(repo)
    for p in (state / "datasets").glob("*.yaml"):   # one case the app answers, awaiting its review
        if p.name != "c-hours001.yaml":
            p.unlink()
    case = state / "datasets" / "c-hours001.yaml"
    case.write_text(case.read_text(encoding="utf-8").replace("status: accepted, by: Ana Reviewer", "status: pending"),
                    encoding="utf-8")
    with FakeApp(handler) as app:
        r = Job(repo, int(app.url.rsplit(":", 1)[1])).step(_block_after("### Deterministic CI without Claude"),
                                                           errexit=False)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "gating_unreviewed" in r.stdout + r.stderr and "PASS" not in r.stdout, r.stdout + r.stderr

    repo = tmp_path / "record"
    repo.mkdir()
    state = write_repo(repo)
    work = state / "work"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "convert_suite.py"), str(state), "-o",
                    str(work / "converted.json"), "--split-dir", str(work)], check=True, capture_output=True)
    main = _block_after("### Record on main, replay on pull requests").split("\n# pull request", 1)[0]
    with FakeApp(handler) as app:   # last night's job: it recorded, so there is a cache to prune
        r = Job(repo, int(app.url.rsplit(":", 1)[1]), RUN_ID="regression-20261204T120000Z").step(main, errexit=False)
    assert r.returncode == 0 and (state / "cache").is_dir(), r.stdout + r.stderr
    r = Job(repo, free_port(), RUN_ID="regression-20261205T120000Z").step(main, errexit=False)   # the app is down
    assert r.returncode == 3, r.stdout + r.stderr     # run_cases.py's pre-flight, not the prune's 0
    assert "pre-flight" in r.stdout + r.stderr
