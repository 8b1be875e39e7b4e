"""A new user's mistakes with the viewer and the history (a shop app of their own, five runs, the
README followed literally): each used to answer with a wrong word or a message that did not say
what to pass; each now says so. The scripts run as subprocesses, the viewer on a real port, the
killed run is a real runner killed by SIGKILL.
"""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time

import pytest

from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan
from helpers import SCRIPTS, run_script
from rundir_util import make_run

pytestmark = pytest.mark.slow   # real runs, a real viewer and subprocesses

RUN = "smoke-20261205T124710Z"


def test_view_and_history_on_a_wrong_path_name_the_state_dir_to_pass(tmp_path):
    """view.py on the reports dir, on a run dir or on the app's directory said
    "<path>/reports: no reports/ directory (or it is a symlink); pass a state dir that holds runs":
    true, but the user had given the very reports/ it asked for. Each now names the path that works."""
    app = tmp_path / "shop"
    state = app / ".assay"
    make_run(state / "reports", [{"id": "c-ord1", "answer": "Order A100 is shipped."}], run_id=RUN)
    (app / "app.py").write_text("print('the app')\n", encoding="utf-8")
    said = {
        tmp_path / "nope": f"{tmp_path / 'nope'}: not a directory (nothing is there); pass the app's state dir",
        app / "app.py": f"{app / 'app.py'}: not a directory (a file); pass the app's state dir",
        state / "reports": f"{state / 'reports'} is a reports dir (1 run(s)), not a state dir: pass its parent, {state}",
        state / "reports" / RUN: f"{state / 'reports' / RUN} is a run directory, not a state dir: pass its state dir, {state}",
        app: f"{app / 'reports'}: no reports directory; {state} holds one: pass that state dir, {state}",
        tmp_path: f"{tmp_path / 'reports'}: no reports directory; run a suite first",
    }
    for path, words in said.items():
        view = run_script("view", path, "--serve-seconds", "1", timeout=120)
        history = run_script("run_history", path, "--no-verify", timeout=120)
        for r in (view, history):
            assert r.rc == 2, (path, r.stdout, r.stderr)
            assert r.json["error"].startswith(words), (path, r.json)
    assert run_script("run_history", state, "--no-verify").rc == 0   # the state dir itself: read


def ask(port: int, path: str) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    assert resp.status == 200, body
    return json.loads(body)


def row_of(port: int, run_id: str) -> dict:
    """The runs list's row for run_id once its gate is decided (the page polls the same way)."""
    deadline = time.monotonic() + 120
    while True:
        doc = ask(port, f"/api/run/{run_id}/gate?wait=3")
        if doc["gate"] != "checking" or time.monotonic() > deadline:
            break
    rows = {r["run_id"]: r for r in ask(port, "/api/runs")["runs"]}
    return dict(rows[run_id], gate=doc["gate"], reasons=doc["reasons"])


def test_a_killed_run_reads_interrupted_in_the_viewer_never_still_running(tmp_path):
    """The viewer was open while a run went; the runner was killed (SIGKILL: results.json keeps
    saying running). The runs page kept the mark "running" and the gate's reason "the run is still
    running (its runner holds the lock): wait with wait_run.py" for a run no one was running
    (gate.py said "run interrupted ... finish it with --resume")."""
    state = make_state(tmp_path)

    def slow(req):
        return Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, {"message": "hello there"}, delay=1.5)

    viewer = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(json.loads(viewer.stdout.readline())["url"].rsplit(":", 1)[1].strip("/"))
        with FakeApp(slow) as app:
            plan = make_plan(state, [case(f"c-{i:08d}", "hello") for i in range(8)], app_url=app.url,
                             execution={"max_attempts": 1, "backoff_s": []})
            plan["adapter"]["invocation"]["max_concurrency"] = 1
            run_id = plan["run_id"]
            out = state / "reports" / run_id
            runner = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan",
                                       str(write_plan(state, plan)), "--out", str(out), "--progress", "never"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 60
                while not (out / "results.json").exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                alive = row_of(port, run_id)
            finally:
                runner.send_signal(signal.SIGKILL)
                runner.wait(60)
        assert alive["marks"] == ["running"] and alive["gate"] == "closed", alive
        assert alive["reasons"][0].startswith("the run is still running"), alive
        killed = row_of(port, run_id)
        assert killed["marks"] == ["interrupted"] and killed["gate"] == "closed" and not killed["green"], killed
        assert killed["reasons"][0].startswith("run interrupted: status is still 'running' but no runner holds "
                                               "its lock"), killed
        assert "--resume" in killed["reasons"][0]
        assert not any("still running" in r for r in killed["reasons"]), killed
        gate = run_script("gate", out)   # gate.py's words, the same
        assert gate.rc == 1 and "gate closed: run interrupted: status is still 'running'" in gate.stdout, gate.stdout
    finally:
        viewer.terminate()
        viewer.wait(30)


def test_a_small_run_missing_its_case_records_reads_closed_in_the_viewer_as_gate_py_says(tmp_path):
    """A team whose app may hold PII commits its reports/: the runner's reports/.gitignore leaves each
    run's cases.jsonl out, so a colleague's clone holds results.json (every case pass) without the
    records. gate.py closed ("run_cases.py --verify exit 6: ... case never finished"); the viewer,
    which ran no completeness check and found no kept answer (a 3-case run is never kept), showed
    "Gate: open / No reason to close." beside it, and so did the bundle."""
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = make_plan(state, [case(f"c-{i:08d}", "hello") for i in range(3)], app_url=app.url)
        out = state / "reports" / plan["run_id"]
        r = run_script("run_cases", "--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert r.rc == 0, r.stderr
    assert run_script("gate", out).rc == 0   # the whole run: open
    (out / "cases.jsonl").unlink()           # what a clone of the reports holds
    gate = run_script("gate", out, "--json")
    assert gate.rc == 1, gate.stdout
    verify = [x for x in gate.json["reasons"] if x.startswith("run_cases.py --verify exit 6")]
    assert verify and "case never finished" in verify[0], gate.json["reasons"]
    viewer = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(json.loads(viewer.stdout.readline())["url"].rsplit(":", 1)[1].strip("/"))
        row = row_of(port, plan["run_id"])
    finally:
        viewer.terminate()
        viewer.wait(30)
    assert row["gate"] == "closed" and not row["green"] and row["verified"] is True, row
    assert verify[0] in row["reasons"], row["reasons"]
    bundle = run_script("view", state, "--bundle", tmp_path / "bundle")
    assert bundle.rc == 0, bundle.stderr
    runs = (tmp_path / "bundle" / "data" / "runs.js").read_text(encoding="utf-8")
    assert '"gate": "closed"' in runs and "case never finished" in runs and '"gate": "open"' not in runs


def test_a_run_closed_by_its_latency_budget_alone_is_red_on_the_history_page(tmp_path):
    """Two runs of a shop app whose profile.yaml sets budgets.max_p95_latency_s; every case passes in
    both, the second is slower than the budget, so gate.py closes it. The viewer's history charts
    coloured a point by its gating failures, not by the gate's decision: the closed run was a green
    point, and its runs table had no word of the gate. Now the point is red and the row says why."""
    from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
    if NEEDS_CHROMIUM.args[0]:
        pytest.skip(NEEDS_CHROMIUM.kwargs.get("reason", "no chromium"))
    playwright = pytest.importorskip("playwright.sync_api")
    from test_no_silent_green import PROFILE
    state = make_state(tmp_path)
    (state / "profile.yaml").write_text(PROFILE + "budgets: {max_p95_latency_s: 0.4}\n", encoding="utf-8")
    runs = ("smoke-20261201T100000Z", "smoke-20261202T100000Z")
    for run_id, delay in zip(runs, (0.0, 0.8)):
        with FakeApp(lambda req, d=delay: Reply(200, {"message": "hello there"}, delay=d if req.method == "POST" else 0)) as app:
            plan = make_plan(state, [case(f"c-{i:08d}", "hello") for i in range(3)], app_url=app.url, run_id=run_id)
            r = run_script("run_cases", "--plan", write_plan(state, plan), "--out", state / "reports" / run_id,
                           "--progress", "never")
        assert r.rc == 0, r.stderr
    gates = [run_script("gate", state / "reports" / run_id) for run_id in runs]
    assert [g.rc for g in gates] == [0, 1], [g.stdout for g in gates]
    assert "  gate closed: p95 latency " in gates[1].stdout and "0 fail (0 gating)" in gates[1].stdout
    assert run_script("view", state, "--bundle", tmp_path / "bundle").rc == 0
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page()
        page.goto((tmp_path / "bundle" / "index.html").as_uri() + "#/history")
        page.wait_for_function("() => (document.body.getAttribute('data-ready') || '') === '/history'", timeout=60000)
        points = page.eval_on_selector_all("svg.chart.rate circle", "cs => cs.map(c => c.getAttribute('class'))")
        gate_cells = page.eval_on_selector_all("td.gate", "cs => cs.map(c => c.textContent)")
        browser.close()
    assert points == ["pt", "pt bad"], points
    assert gate_cells[0].startswith("gate closed: p95 latency ") and "over the budget 0.4s" in gate_cells[0], gate_cells
    assert gate_cells[1] == "gate open", gate_cells


def test_flags_the_viewer_would_ignore_are_refused_saying_where_they_apply(tmp_path):
    """`view.py STATE --run ID` served every run of the state dir (--run applies to --bundle and
    --store only), `--last 0` without --store was taken silently, and a --bundle whose --run was a
    typo left an empty OUT_DIR/data behind its refusal."""
    state = tmp_path / "state"
    make_run(state / "reports", [{"id": "c-ord1"}], run_id=RUN)
    said = {("--run", RUN): "--run: only with --bundle or --store",
            ("--last", "0"): "--last 0: only with --store",
            ("--last", "3", "--bundle", str(tmp_path / "b0")): "--last 3: only with --store",
            ("--bundle", str(tmp_path / "b1"), "--run", RUN[:-1]): f"--run {RUN[:-1]}: no such run under"}
    for extra, words in said.items():
        r = run_script("view", state, *extra, "--serve-seconds", "1", timeout=120)
        assert r.rc == 2 and r.json["error"].startswith(words), (extra, r.stdout, r.stderr)
    assert not (tmp_path / "b0").exists() and not (tmp_path / "b1").exists()
    r = run_script("view", state, "--bundle", tmp_path / "b2", "--run", RUN, timeout=120)
    assert r.rc == 0 and r.json["runs"] == 1, r.stdout + r.stderr
