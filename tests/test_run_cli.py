"""run_cases.py against a command-line agent (`invocation.mode: cli`), as a user meets it:
exit-code mapping, output caps, non-UTF-8 output, env isolation, stdin, scratch dirs,
a hang killed with its grandchildren, kill -9 of the runner then --resume, and
concurrency 4 == concurrency 1. Plus function mode's enforced timeout."""

from __future__ import annotations

import json
import os
import re

from rundir_util import COST_LATENCY_MASK, ORDER_MASK
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from fakeapp import adapter, case, make_plan, run_runner, state
from helpers import ROOT, SCRIPTS, run_script
from rundir_util import cases_view, masked_snapshot

AGENT = ROOT / "tests" / "cliagent.py"
SECRET = "s3cr3t-token-value-4711"


def cli_adapter(**invocation):
    fields = dict(command=[sys.executable, str(AGENT), "--case", "<case id>", "--tag", "${CLI_TAG}", "<user turn>"],
                  stdin="user_turn", cwd="scratch", env_allowlist=["PATH", "CLI_SECRET_TOKEN", "CLI_HANG_FLAG"],
                  response_body='{"answer": "<answer>"}')
    fields.update(invocation)
    ad = adapter("http://unused", mode="cli", **fields)
    for key in ("base_url", "endpoint", "request_body", "health_check"):
        ad["invocation"].pop(key)
    return ad


def cli_env(tmp_path, **extra):
    return {"CLI_TAG": "tag-1", "CLI_SECRET_TOKEN": SECRET, "UNLISTED_VAR": "must-not-leak",
            "HELPDESK_TOKEN": "another-secret-not-named", "ASSAY_SCRATCH_DIR": str(tmp_path / "scratch"), **extra}


def go(state, plan, env, *args):
    path = state / "work" / f"{plan['run_id']}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    return run_script("run_cases", "--plan", path, "--out", out, "--progress", "never", *args, env=env), out, path


def doc(out, cid, name="verdict.json"):
    return json.loads((cases_view(out) / cid / name).read_text())


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose argv carries the marker."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            continue
        if marker.encode() in argv and stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X"):
            found.append(int(pid))
    return found


MIXED = [
    case("c-pass", "hello there", expect={"answer": {"must_contain": ["you said hello there"]}, "route": "greet"}),
    case("c-exit", "exit 3"),
    case("c-exit-expected", "exit 3", expect={"exit_code": 3, "answer": {"must_contain": ["refused"]}}),
    case("c-exit-unexpected-0", "hello x", expect={"exit_code": 2, "answer": {"must_contain": ["x"]}}),
    case("c-big", "big", expect={"answer": {"must_not_contain": ["forbidden"]}}),
    case("c-binary", "binary", expect={"answer": {"must_contain": ["bin"]}}),
    case("c-env", "env", expect={"answer": {"must_contain": ["env ok"]}}),
    case("c-stdin", "stdin please", expect={"answer": {"must_contain": ["stdin=stdin please"]}}),
    case("c-scratch-pass", "scratch a", expect={"answer": {"must_contain": ["cwd="]}}),
    case("c-scratch-fail", "scratch b", expect={"answer": {"must_contain": ["nope"]}}),
    case("c-segv", "segv"),
    case("c-argv", "argv", expect={"answer": {"must_contain": ["argv"]}}),
]


def test_cli_run_end_to_end_and_concurrency_4_equals_1(state, tmp_path):
    env = cli_env(tmp_path, CLI_TAG="tag-value-1")
    outs = []
    for conc, run_id in ((4, "smoke-20261129T101500Z"), (1, "smoke-20261129T101600Z")):
        plan = make_plan(state, MIXED, adapter_doc=cli_adapter(max_concurrency=conc), run_id=run_id,
                         execution={"max_attempts": 2, "backoff_s": [0], "timeout_s": 20})
        r, out, _ = go(state, plan, env)
        assert r.rc == 0, r.stdout + r.stderr
        assert "the command will not have them: CLI_HANG_FLAG" in r.stderr
        outs.append(out)
    out = outs[0]
    v = {c["id"]: doc(out, c["id"]) for c in MIXED}
    # a passing command: exit 0 is a response, stdout JSON read like an HTTP body
    assert v["c-pass"]["verdict"] == "pass"
    assert v["c-pass"]["layers"]["http"] == {"verdict": "pass", "expected_exit_code": 0, "exit_code": 0}
    assert v["c-pass"]["layers"]["routing"]["verdict"] == "pass"
    # non-zero without expect.exit_code: retried like a 5xx, then infra_error
    assert v["c-exit"]["verdict"] == "infra_error" and v["c-exit"]["attempts"] == 2
    assert "exited with code 3" in v["c-exit"]["infra_reason"]
    resp = doc(out, "c-exit", "response.json")
    assert resp["outcome"] == "exit" and resp["cli"]["exit_code"] == 3 and resp["cli"]["stderr"] == "bad input\n"
    # ... and with it: a response; the http layer compares the code
    assert v["c-exit-expected"]["verdict"] == "pass"
    assert v["c-exit-unexpected-0"]["verdict"] == "fail"
    assert v["c-exit-unexpected-0"]["layers"]["http"] == {"verdict": "fail", "expected_exit_code": 2, "exit_code": 0}
    # stdout over the cap: recorded as truncated, the answer is not scored from it
    big = doc(out, "c-big", "response.json")
    assert big["cli"]["stdout_truncated"] is True and big["cli"]["stdout_bytes"] == 1_500_000
    assert len(big["body"]) == 1 << 20
    assert v["c-big"]["verdict"] == "unscored" and "cap" in v["c-big"]["layers"]["answer"]["reason"]
    # non-UTF-8 stdout: decoded with replacement characters, named in the notes, not parsed
    binary = doc(out, "c-binary", "response.json")
    assert any("not valid UTF-8" in n for n in binary["notes"]) and binary["body_format"] == "text"
    assert v["c-binary"]["verdict"] == "unscored"
    # env: exactly the allowlist the runner has + the ${VAR}s the command names; the secret redacted
    env_body = (cases_view(out) / "c-env" / "response.json").read_text()
    assert json.loads(env_body)["body_format"] == "json"    # a body holding a secret stays JSON, redacted
    names = json.loads(env_body)["body"]["env"]
    assert names == ["ASSAY_RUNNER_TAG", "CLI_SECRET_TOKEN", "CLI_TAG", "PATH"]
    assert SECRET not in env_body and doc(out, "c-env", "response.json")["cli"]["stderr"] == "token is <redacted>\n"
    # stdin: the user turn
    assert v["c-stdin"]["verdict"] == "pass"
    # argv: placeholders filled, ${VAR} resolved on the wire, kept literal in request.json
    argv_body = doc(out, "c-argv", "response.json")["body"]["argv"]
    assert argv_body == ["--case", "c-argv", "--tag", "<redacted>", "argv"]   # resolved, then redacted
    request = doc(out, "c-argv", "request.json")
    assert request["argv"][-5:] == ["--case", "c-argv", "--tag", "${CLI_TAG}", "argv"]
    assert request["env"] == ["CLI_SECRET_TOKEN", "CLI_TAG", "PATH"] and request["stdin"] == "user_turn"
    # a death by a signal the runner did not send is a crash
    assert v["c-segv"]["verdict"] == "infra_error" and v["c-segv"]["crashed"] is True
    assert "SIGSEGV" in v["c-segv"]["infra_reason"]
    # scratch: fresh per attempt, outside the app repo; removed after a pass, kept after a fail
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["health_check"]["allowlisted_unset"] == ["CLI_HANG_FLAG"]   # named, not silently dropped
    area = Path(manifest["invocation"]["scratch_area"])
    assert manifest["invocation"]["timeout_enforced"] is True
    assert area.parent == tmp_path / "scratch" and not str(area).startswith(str(state.parent))
    assert doc(out, "c-scratch-fail", "response.json")["cli"]["scratch"] == "cases/c-scratch-fail/1"
    assert (area / "cases" / "c-scratch-fail" / "1" / "note.txt").read_text() == "left by the agent\n"
    assert not (area / "cases" / "c-scratch-pass").exists() and not (area / "cases" / "c-pass").exists()
    assert not (area / "pgroups").exists() or not list((area / "pgroups").iterdir())
    # no secret reached disk anywhere
    for root in (state, tmp_path / "scratch"):
        for path in root.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path
    assert run_runner("--verify", out).rc == 0
    # concurrency 4 == concurrency 1, once timings, run ids and the scratch area are masked
    assert snapshot(outs[0]) == snapshot(outs[1])


MASKS = [
    (re.compile(r'"(ts|started_at|finished_at|date)": "[^"]*"'), r'"\1": "<t>"'),
    (re.compile(r'"(latency_ms)": [0-9.e-]+'), r'"\1": 0'),
    COST_LATENCY_MASK,
    ORDER_MASK,
    (re.compile(r'"((?:repeats/\d+/)?(?:request|response)\.json|answer\.txt)": "[0-9a-f]{64}"'), r'"\1": "<sha>"'),
    (re.compile(r'"(plan_sha256)": "[0-9a-f]{64}"'), r'"\1": "<sha>"'),
    (re.compile(r'"max_concurrency": \d+'), '"max_concurrency": "<c>"'),
    (re.compile(r'smoke-[0-9TZ]+(-[0-9a-f]{8})?'), "<id>"),
]


def snapshot(out):
    return masked_snapshot(out, MASKS)


def test_hang_killed_with_grandchildren_and_kill_9_then_resume_leaves_no_orphan(state, tmp_path):
    marker = f"assay-hang-marker-{os.getpid()}-{time.monotonic_ns()}"
    flag = tmp_path / "hang.flag"
    flag.write_text("1")
    env = cli_env(tmp_path, CLI_HANG_FLAG=str(flag))
    cases = [case("c-1", "hello one"), case("c-hang", f"hang {marker}", expect={"answer": {"must_contain": ["no"]}}),
             case("c-3", "hello three")]
    plan = make_plan(state, cases, adapter_doc=cli_adapter(stdin="none"),
                     execution={"max_attempts": 1, "backoff_s": [], "timeout_s": 1})
    path = state / "work" / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    full_env.update(env)
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out", str(out),
                             "--progress", "never"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=full_env)
    try:
        deadline = time.monotonic() + 30
        while len(processes_with(marker)) < 2 and time.monotonic() < deadline:  # the agent and its grandchild
            time.sleep(0.01)
        assert len(processes_with(marker)) == 2
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    orphans = processes_with(marker)
    try:
        assert len(orphans) == 2  # a runner killed with SIGKILL cannot clean up: its children live on
        r = run_script("run_cases", "--plan", path, "--out", out, "--resume", "--progress", "never", env=env)
        assert r.rc == 0, r.stdout + r.stderr
        # the resume killed the orphans; the redone hang was killed with its SIGTERM-ignoring grandchild
        assert processes_with(marker) == []
        hang = doc(out, "c-hang")
        assert hang["verdict"] == "infra_error" and hang["infra_reason"].startswith("timeout: no exit within 1 s")
        resp = doc(out, "c-hang", "response.json")
        assert resp["outcome"] == "timeout" and resp["cli"]["timed_out"] is True and resp["cli"]["group_killed"]
        assert doc(out, "c-1")["verdict"] == doc(out, "c-3")["verdict"] == "pass"   # the run went on
        log = [json.loads(line) for line in (out / "run.log").read_text().splitlines()]
        pre = [e for e in log if e["event"] == "preflight" and e.get("resume")]
        assert pre and pre[0]["health"]["orphan_groups_killed"] == 1
        assert run_runner("--verify", out).rc == 0
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_function_call_past_its_timeout_is_infra_error_and_the_run_goes_on(state):
    (state.parent / "sleepyagent.py").write_text(textwrap.dedent("""
        import threading
        def handle(body):
            if body["message"] == "sleep":
                threading.Event().wait()   # never returns
            return "you said " + body["message"]
    """))
    ad = adapter("http://unused", mode="function", entrypoint="sleepyagent:handle", max_concurrency=1)
    ad["invocation"].pop("response_body")
    cases = [case("c-sleep", "sleep"), case("c-2", "two"), case("c-3", "three")]
    plan = make_plan(state, cases, adapter_doc=ad, execution={"max_attempts": 2, "backoff_s": [0], "timeout_s": 0.3})
    r, out, _ = go(state, plan, {})
    assert r.rc == 0, r.stdout + r.stderr
    v = doc(out, "c-sleep")
    assert v["verdict"] == "infra_error" and v["attempts"] == 2
    assert v["infra_reason"].startswith("timeout: no return within 0.3 s")
    assert doc(out, "c-2")["verdict"] == doc(out, "c-3")["verdict"] == "pass"
    assert json.loads((out / "manifest.yaml").read_text())["invocation"]["timeout_enforced"] is True


def test_sigterm_to_the_runner_kills_its_commands_at_once(state, tmp_path):
    marker = f"assay-term-marker-{os.getpid()}-{time.monotonic_ns()}"
    flag = tmp_path / "hang.flag"
    flag.write_text("1")
    env = cli_env(tmp_path, CLI_HANG_FLAG=str(flag))
    plan = make_plan(state, [case("c-hang", f"hang {marker}")], adapter_doc=cli_adapter(stdin="none"),
                     execution={"max_attempts": 1, "backoff_s": [], "timeout_s": 60})
    path = state / "work" / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    full_env.update(env)
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out", str(out),
                             "--progress", "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)
    try:
        deadline = time.monotonic() + 30
        while len(processes_with(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(processes_with(marker)) == 2
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=30)   # far less than the 60 s timeout of the command
        assert proc.returncode == 130 and json.loads(stdout)["error"] == "interrupted"
        assert processes_with(marker) == []
        assert not (cases_view(out) / "c-hang" / "verdict.json").exists()   # --resume redoes it
        assert not (state / "reports" / f".{plan['run_id']}.lock").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_variable_whose_value_is_a_word_of_the_run_files_is_refused_at_pre_flight(state, tmp_path):
    """Every variable a run is given is redacted as a secret wherever assay writes: an allowlisted
    APP_MODE=pass rewrote every verdict to `<redacted>` (crash -> `<redacted>_rate`, 8080 inside
    latencies), and the gate closed on malformed counts that named nothing. Refused before any case
    runs, naming the variable and the word (never the value)."""
    def plan(run_id):
        return make_plan(state, [case("c-pass", "hello there", expect={"answer": {"must_contain": ["you said"]}})],
                         adapter_doc=cli_adapter(), run_id=run_id)
    for value, said in (("pass", "its value occurs in 'pass'"), ("crash", "its value occurs in 'crash"),
                        ("8080", "its value is a number")):
        r, out, _ = go(state, plan(f"smoke-2026120{len(value)}T000000Z"), cli_env(tmp_path, CLI_SECRET_TOKEN=value))
        assert r.rc == 3 and not out.exists(), r.stdout
        assert "CLI_SECRET_TOKEN (an allowlisted variable (env_allowlist)): " + said in r.json["error"], r.json["error"]
        assert r.json["colliding_env"] == ["CLI_SECRET_TOKEN"]
    r, out, _ = go(state, plan("smoke-20261209T000000Z"), cli_env(tmp_path, CLI_SECRET_TOKEN="production-eu"))
    assert r.rc == 0, r.stdout


def test_a_cli_program_not_found_names_invocation_command_not_base_url(state, tmp_path):
    """A cli app whose program is a relative path that is not in the scratch cwd (python3 bot.py):
    every case is infra_error and the gate's hollow-http line said "check the adapter's
    invocation.base_url / invocation.endpoint", keys a cli adapter does not have. It names
    invocation.command and the cwd a relative path resolves against (said at read time: results.json
    keeps the recorded text, so --verify still holds); an http app's line is unchanged."""
    from assay.score.hollow_hints import hollow_layer_line
    st = state
    ad = cli_adapter(command=[sys.executable, "bot.py", "<user turn>"])
    plan = make_plan(st, [case("c1", "hi")], adapter_doc=ad, run_id="smoke-20261201T000000Z")
    _, out, _ = go(st, plan, cli_env(tmp_path))
    gate = run_script("gate", out)
    line = next(x for x in gate.stdout.splitlines() if "layer http" in x)
    assert gate.rc != 0 and "invocation.command" in line and "invocation.cwd" in line, gate.stdout
    assert "base_url" not in line and "endpoint" not in line
    assert run_runner("--verify", out).rc == 0
    http = hollow_layer_line("http", {"cases": 1, "reason": "r", "adapter_key": "invocation.base_url / invocation.endpoint"})
    assert http.endswith("check the adapter's invocation.base_url / invocation.endpoint")
