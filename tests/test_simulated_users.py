"""Simulated users end to end: the example helpdesk app on a real port, its two simulated-user
cases (a refund seeker who gives the invoice id only when asked, a user after another tenant's
invoice), the simulator played by fake Anthropic / OpenAI servers (their real wire formats) or a
command; the pipeline's scripts as subprocesses (convert_suite, make_plan, run_cases, gate)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from fakeapp import FakeApp, Reply
from helpdesk_util import HELPDESK, copy_state, helpdesk
from helpers import SCRIPTS, run_script
from rundir_util import cases_view

pytestmark = pytest.mark.slow

REFUND, SNOOP = "c-5e1f4a02", "c-5e1f4a03"
GOAL = "Get 25 dollars refunded on invoice INV-1002."
_spec = importlib.util.spec_from_file_location("simulator_standin", HELPDESK / ".assay" / "simulator" / "standin.py")
standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin)


def play(system: str, user: str) -> str:
    """What the example's stand-in user says to this prompt (the fake model servers speak for it)."""
    p = standin.read_prompt(f"{system}\n\n---\n\n{user}")
    goal = p["goal"].lower()
    return standin.snooper(p) if "another" in goal else standin.refund_seeker(p)


PROBE = "assay pre-flight probe"      # the simulator's pre-flight probe (assay.judge.probe), as the judge's


def anthropic_user(seen: list, probes: list | None = None):
    def handler(req):
        body = req.json
        if PROBE in body["system"]:
            (probes if probes is not None else []).append(req)
            return Reply(200, {"id": "msg_00", "type": "message", "role": "assistant", "model": body["model"],
                               "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                               "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1}})
        seen.append(req)
        assert req.path == "/v1/messages" and req.headers.get("anthropic-version") == "2023-06-01"
        message = play(body["system"], body["messages"][0]["content"])
        return Reply(200, {"id": "msg_01", "type": "message", "role": "assistant", "model": body["model"],
                           "content": [{"type": "tool_use", "id": "toolu_01", "name": body["tool_choice"]["name"],
                                        "input": {"message": message}}],
                           "stop_reason": "tool_use", "stop_sequence": None,
                           "usage": {"input_tokens": 300, "output_tokens": 12}})
    return handler


def openai_user(seen: list):
    def handler(req):
        body = req.json
        if PROBE in body["messages"][0]["content"]:
            return Reply(200, {"id": "chatcmpl-0", "object": "chat.completion", "created": 1, "model": body["model"],
                               "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                            "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}})
        seen.append(req)
        assert req.path == "/v1/chat/completions"
        assert body["response_format"]["json_schema"]["name"] == "user_turn"
        message = play(body["messages"][0]["content"], body["messages"][1]["content"])
        return Reply(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
                           "choices": [{"index": 0, "message": {"role": "assistant", "refusal": None,
                                                                "content": json.dumps({"message": message})},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 300, "completion_tokens": 12, "total_tokens": 312}})
    return handler


def simulator_yaml(state: Path, text: str) -> None:
    (state / "simulator" / "simulator.yaml").write_text(text, encoding="utf-8")


def run(state: Path, env: dict, *cases: str, added: bool = False) -> tuple[Path, dict]:
    """convert_suite -> make_plan (these cases) -> run_cases -> gate; (run dir, gate). `added`: the test
    wrote cases the dataset manifest does not count (make_plan --allow-invalid)."""
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", env=env)
    assert r.rc == 0, r.stdout + r.stderr
    picks = [a for c in cases for a in ("--case", c)] + (["--allow-invalid"] if added else [])
    r = run_script("make_plan", work / "converted.json", "--mode", "targeted", "--state-dir", state,
                   "-o", work / "plan.json", *picks, env=env)
    assert r.rc == 0, r.stdout + r.stderr
    plan = json.loads((work / "plan.json").read_text())
    out = state / "reports" / plan["run_id"]
    r = run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--progress", "never", env=env)
    assert r.rc == 0, r.stdout + r.stderr
    gate = run_script("gate", out, env=env)
    return out, {"rc": gate.rc, "text": gate.stdout}


def verdict(out: Path, cid: str) -> dict:
    return json.loads((cases_view(out) / cid / "verdict.json").read_text())


def test_anthropic_user_reaches_the_goal_scored_on_the_end_state(tmp_path):
    state = copy_state(tmp_path)
    seen: list = []
    probes: list = []
    with FakeApp(anthropic_user(seen, probes)) as model, helpdesk(state) as env:
        simulator_yaml(state, f"provider: anthropic\nmodel: claude-test\nbase_url: {model.url}\n"
                              "api_key: ${SIM_KEY}\nmax_concurrency: 2\n")
        env["SIM_KEY"] = "sk-sim-secret-123"
        out, gate = run(state, env, REFUND, SNOOP)
    v = verdict(out, REFUND)
    assert (v["verdict"], v["simulated"], v["simulator"]["outcome"]) == ("pass", True, "goal_reached")
    assert [t["user"] for t in v["turns"]] == ["Hello, I need a refund of 25 dollars.", "It's INV-1002."]
    # scored on what the app did over the whole conversation (turn 2's refund), not on one turn
    assert {k: v["layers"][k]["verdict"] for k in ("tool_selection", "trajectory", "execution")} == \
        {"tool_selection": "pass", "trajectory": "pass", "execution": "pass"}
    assert v["simulator"]["seed"] == 1 and v["simulator"]["identity"]["model"] == "claude-test"
    # every simulated turn is in the turn tree with the simulator's raw call; the app never saw the goal
    call = json.loads((cases_view(out) / REFUND / "turns" / "2" / "simulator.json").read_text())["calls"][0]
    assert call["request"]["body"]["tool_choice"] == {"type": "tool", "name": "user_turn"}
    assert "It's INV-1002." in call["raw_reply"]
    sent = [(cases_view(out) / REFUND / "turns" / str(n) / "request.json").read_text() for n in (1, 2)]
    assert not any(GOAL in s or "refunded on invoice" in s for s in sent) and "INV-1002" in sent[1]
    ending = json.loads((cases_view(out) / REFUND / "simulator.json").read_text())
    assert ending["final"]["turn"]["stop"] is True
    assert verdict(out, SNOOP)["verdict"] == "pass"
    assert len(seen) == 3 + 3          # two user turns + the stop, for each of the two conversations
    assert len(probes) == 1 and probes[0].headers.get("x-api-key") == "sk-sim-secret-123"
    manifest = yaml.safe_load((out / "manifest.yaml").read_text())
    assert manifest["simulator"]["probe"] == {"ok": True, "status": 200, "served_model": "claude-test",
                                              "target": f"POST {model.url}/v1/messages (key $SIM_KEY)"}
    assert not any(b"sk-sim-secret-123" in p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert "simulated users: 2/2 pass" in gate["text"]
    assert run_script("run_cases", "--verify", out).rc == 0


def test_openai_user_catches_the_planted_bugs(tmp_path):
    state = copy_state(tmp_path)
    seen: list = []
    with FakeApp(openai_user(seen)) as model, helpdesk(state, broken=True) as env:
        simulator_yaml(state, f"provider: openai\nmodel: gpt-test\nbase_url: {model.url}/v1\n")
        out, gate = run(state, env, REFUND, SNOOP)
    refund, snoop = verdict(out, REFUND), verdict(out, SNOOP)
    # the refund is issued on turn 1, on the wrong invoice, without asking which one
    assert (refund["verdict"], refund["simulator"]["outcome"], refund["turns_sent"]) == ("fail", "goal_reached", 1)
    assert refund["layers"]["tool_selection"]["verdict"] == "fail"
    # the broken tenant check shows another tenant's invoice: authz over the whole conversation
    assert (snoop["verdict"], snoop["layers"]["authz"]["verdict"]) == ("fail", "fail")
    assert {r.json["seed"] for r in seen} == {1, 2}          # each case's seed reaches the model
    assert gate["rc"] == 1


SIM_COMMAND = r'''
import json, os, re, sys, time
text = sys.stdin.read()
goal = re.search(r"^Goal[^:]*: (.*)$", text, re.M).group(1)
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "calls.log"), "a") as log:
    log.write(f"{time.time()} {goal}\n")
if "outage" in goal:
    sys.exit(3)
if "babble" in goal:
    print("{not json"); sys.exit(0)
if "runaway" in goal:   # a fenced reply padded with 1 MB of blanks, never closed
    print("```json\n{" + " " * 1_000_000 + "x"); sys.exit(0)
if "robot" in goal:
    print(json.dumps({"message": "As an AI language model, I want a refund."})); sys.exit(0)
if "hold" in goal and "<untrusted-transcript" in text and os.path.exists(os.path.join(here, "hold")):
    with open(os.path.join(here, f"held-{os.getpid()}.pid"), "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(60)
print(json.dumps({"message": "What invoices do I have open?"}))    # never stops
'''


def sim_case(state: Path, cid: str, goal: str, max_turns: int = 2) -> None:
    (state / "datasets" / f"{cid}.yaml").write_text(
        f"id: {cid}\nunit: billing\nsplit: [full]\ncategory: edge\ntest_type: MFT\ntemplate_id: null\n"
        "review: {status: accepted, by: Dana Whitfield}\n"
        f"input:\n  simulated_user:\n    persona: A customer.\n    goal: {goal}\n"
        f"    stop_when: The assistant lists the invoices twice.\n    max_turns: {max_turns}\n"
        "expect:\n  tools:\n    forbidden: [issue_refund]\n", encoding="utf-8")


def test_simulator_failures_are_named_infra_never_an_app_failure(tmp_path):
    state = copy_state(tmp_path)
    (tmp_path / "sim.py").write_text(SIM_COMMAND, encoding="utf-8")
    simulator_yaml(state, "provider: command\ncommand: [python3, ../sim.py]\ntimeout_s: 20\n")
    for cid, goal in (("c-0000sim1", "outage please"), ("c-0000sim2", "babble away"),
                      ("c-0000sim3", "robot talk"), ("c-0000sim4", "list forever")):
        sim_case(state, cid, goal)
    with helpdesk(state) as env:
        out, gate = run(state, env, "c-0000sim1", "c-0000sim2", "c-0000sim3", "c-0000sim4", added=True)
    got = {cid: (verdict(out, cid)["verdict"], verdict(out, cid)["simulator"]["outcome"])
           for cid in ("c-0000sim1", "c-0000sim2", "c-0000sim3", "c-0000sim4")}
    assert got == {"c-0000sim1": ("infra_error", "simulator_outage"),
                   "c-0000sim2": ("infra_error", "simulator_unparseable"),
                   "c-0000sim3": ("infra_error", "simulator_broke_character"),
                   "c-0000sim4": ("infra_error", "max_turns_reached")}
    assert verdict(out, "c-0000sim1")["turns_sent"] == 0          # nothing reached the app
    outage = verdict(out, "c-0000sim1")["infra_reason"]           # the simulator's command, named as such
    assert "simulator command exited 3" in outage and "judge" not in outage, outage
    assert verdict(out, "c-0000sim4")["turns_sent"] == 2
    assert verdict(out, "c-0000sim3")["infra_reason"].startswith("simulator_broke_character: ")
    # the out-of-character message was never sent (it is quoted in the reason, for the reader)
    assert verdict(out, "c-0000sim3")["turns_sent"] == 0 and not (cases_view(out) / "c-0000sim3" / "turns").exists()
    results = json.loads((out / "results.json").read_text())
    sim = results["summary"]["by_kind"]["simulated"]
    assert (sim["failures"], sim["harness"]) == (0, 4)
    assert "4 ended by the simulator, not the app" in gate["text"]
    assert run_script("run_cases", "--verify", out).rc == 0


def test_a_reply_padded_with_a_long_run_of_blanks_is_read_in_linear_time(tmp_path):
    """A simulator reply that opens a fence and then pads with 1 MB of blanks: taking the fence off tried
    `\\s*```$` from each blank of the run (quadratic: ~100 s at 200 KB, hours at 1 MB); now the run ends
    as any other (the timeout is a hang's bound) and the reply is named unparseable, an infra error."""
    state = copy_state(tmp_path)
    (tmp_path / "sim.py").write_text(SIM_COMMAND, encoding="utf-8")
    simulator_yaml(state, "provider: command\ncommand: [python3, ../sim.py]\ntimeout_s: 60\n")
    sim_case(state, "c-0000pad1", "runaway padding")
    with helpdesk(state) as env:
        work = state / "work"
        assert run_script("convert_suite", state, "-o", work / "converted.json", env=env).rc == 0
        r = run_script("make_plan", work / "converted.json", "--mode", "targeted", "--state-dir", state, "-o",
                       work / "plan.json", "--case", "c-0000pad1", "--allow-invalid", env=env)
        assert r.rc == 0, r.stdout + r.stderr
        out = state / "reports" / json.loads((work / "plan.json").read_text())["run_id"]
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--progress", "never", env=env,
                       timeout=300)
    assert r.rc == 0, r.stdout + r.stderr
    v = verdict(out, "c-0000pad1")
    assert (v["verdict"], v["simulator"]["outcome"], v["turns_sent"]) == ("infra_error", "simulator_unparseable", 0)


def test_a_session_the_app_never_carries_closes_the_gate(tmp_path):
    """A server-id adapter whose session_from finds no id: the app stops the simulated conversation
    after turn 1, its end state is never scored, and the case is unscored with where it stopped (the
    gate names it), never the hollow "nothing asserted beyond liveness" that left the gate open."""
    state = copy_state(tmp_path)
    (tmp_path / "sim.py").write_text(SIM_COMMAND, encoding="utf-8")
    simulator_yaml(state, "provider: command\ncommand: [python3, ../sim.py]\ntimeout_s: 20\n")
    adapter = state / "adapter.yaml"
    text = adapter.read_text(encoding="utf-8").replace('"session_id": "<uuid>"', '"conversation_id": "<session>"')
    adapter.write_text(text.replace("    style: client-id\n",
                                    "    style: server-id\n    session_from: {header: X-Conversation-Typo}\n"),
                       encoding="utf-8")
    sim_case(state, "c-0000sess", "list forever")
    with helpdesk(state) as env:
        out, gate = run(state, env, "c-0000sess", "c-0f1bfb2c", added=True)
    v = verdict(out, "c-0000sess")
    assert (v["verdict"], v["simulator"]["outcome"], v["turns_sent"]) == ("unscored", "app_stopped", 1)
    assert v["unscored_reason"].startswith("turn 1: no session id at header X-Conversation-Typo")
    assert verdict(out, "c-0f1bfb2c")["verdict"] == "pass"
    assert gate["rc"] == 1 and "c-0000sess (turn 1: no session id at header X-Conversation-Typo" in gate["text"]


def test_a_simulated_case_skipped_for_want_of_a_simulator_closes_the_gate(tmp_path):
    """simulator.yaml saved under another name (simulator.yml): the gating simulated case is skipped,
    and the gate closes naming the file to add, as for a conversation without invocation.conversation
    (it read PASS: 'simulated users: 0/0 pass of 1' beside a passing single-turn case)."""
    state = copy_state(tmp_path)
    sim = state / "simulator"
    (sim / "simulator.yaml").rename(sim / "simulator.yml")
    with helpdesk(state) as env:
        out, gate = run(state, env, SNOOP, "c-003bd57c")
    assert verdict(out, SNOOP)["verdict"] == "skipped"
    assert verdict(out, "c-003bd57c")["verdict"] == "pass"
    assert gate["rc"] == 1, gate["text"]
    assert ("gate closed: 1 gating case(s) were not sent because the state dir lacks simulator/simulator.yaml "
            f"(skipped, not a pass; add it, or mark the case gating: false): {SNOOP} (simulated user not run: "
            "no simulator configured") in gate["text"]


def test_a_simulated_case_over_the_plans_turn_cap_closes_the_gate(tmp_path):
    """max_turns 20 is valid (1-50) but above the plan's execution.max_turns (12): the runner skips the
    case, and the gate closes naming the cap and its flag (it read PASS, with no linter or plan word)."""
    state = copy_state(tmp_path)
    case = state / "datasets" / f"{SNOOP}.yaml"
    case.write_text(case.read_text(encoding="utf-8").replace("max_turns: 4", "max_turns: 20"), encoding="utf-8")
    with helpdesk(state) as env:
        out, gate = run(state, env, SNOOP, "c-003bd57c")
    assert verdict(out, SNOOP)["verdict"] == "skipped"
    assert gate["rc"] == 1, gate["text"]
    assert ("gate closed: 1 gating case(s) were not sent because the plan's execution.max_turns is below the "
            "case's turns (skipped, not a pass; raise it with make_plan.py --max-turns or shorten the case, or "
            f"mark the case gating: false): {SNOOP} (conversation not run: simulated_user.max_turns 20 is more "
            "than execution.max_turns 12") in gate["text"]


def test_a_gating_simulated_user_that_never_reaches_its_goal_closes_the_gate_under_the_infra_bar(tmp_path):
    """max_turns_reached is infra_error (the app or the simulator), yet a gate over a big suite read PASS
    with every simulated user stuck short of its goal: the infra rate stayed under its bar. Such a case
    was not measured; it closes the gate like a replay miss, whatever --max-infra-rate says."""
    state = copy_state(tmp_path)
    (tmp_path / "sim.py").write_text(SIM_COMMAND, encoding="utf-8")
    simulator_yaml(state, "provider: command\ncommand: [python3, ../sim.py]\ntimeout_s: 20\n")
    case = state / "datasets" / f"{SNOOP}.yaml"
    text = case.read_text(encoding="utf-8")
    case.write_text(text.replace(text[text.index("    goal: "):text.index("    facts:")], "    goal: list forever\n"),
                    encoding="utf-8")
    with helpdesk(state) as env:
        out, _ = run(state, env, SNOOP, "c-003bd57c")
        gate = run_script("gate", out, "--max-infra-rate", "0.6", env=env)
    assert (verdict(out, SNOOP)["verdict"], verdict(out, SNOOP)["simulator"]["outcome"]) == \
        ("infra_error", "max_turns_reached")
    assert gate.rc == 1, gate.stdout
    assert ("gate closed: 1 gating simulated user(s) never reached the goal (max_turns user turns sent, stop_when "
            "never held: the app never got the user there, or the simulator never sent its stop token; read the "
            f"case's turns/, then fix the app, or the case's goal/stop_when/max_turns): {SNOOP} (max_turns_reached: "
            "4 user turn(s) sent and stop_when never held") in gate.stdout


def test_conversations_run_concurrently_and_resume_after_kill_9(tmp_path):
    state = copy_state(tmp_path)
    (tmp_path / "sim.py").write_text(SIM_COMMAND, encoding="utf-8")
    simulator_yaml(state, "provider: command\ncommand: [python3, ../sim.py]\ntimeout_s: 90\nmax_concurrency: 4\n")
    ids = [f"c-0000hol{i}" for i in range(3)]
    for cid in ids:
        sim_case(state, cid, f"hold the line {cid}")
    (tmp_path / "hold").write_text("on")
    with helpdesk(state) as env:
        work = state / "work"
        assert run_script("convert_suite", state, "-o", work / "converted.json", env=env).rc == 0
        picks = [a for c in ids for a in ("--case", c)] + ["--allow-invalid"]
        assert run_script("make_plan", work / "converted.json", "--mode", "targeted", "--state-dir", state,
                          "-o", work / "plan.json", *picks, env=env).rc == 0
        out = state / "reports" / json.loads((work / "plan.json").read_text())["run_id"]
        proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(work / "plan.json"),
                                 "--out", str(out), "--progress", "never"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        log = tmp_path / "calls.log"
        while time.monotonic() < deadline:   # every conversation is at its second user turn, at once
            if len(list(tmp_path.glob("held-*.pid"))) == len(ids):
                break
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        _end_held(tmp_path)   # the held simulator commands outlive the runner (their own session): end them
        firsts = [float(line.split()[0]) for line in log.read_text().splitlines()[:len(ids)]]
        assert max(firsts) - min(firsts) < 5          # the three first turns were asked together
        assert not any((cases_view(out) / c / "verdict.json").exists() for c in ids)
        (tmp_path / "hold").unlink()
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--resume", "--progress", "never",
                       env=env)
    assert r.rc == 0, r.stdout + r.stderr
    for cid in ids:
        v = verdict(out, cid)
        assert (v["verdict"], v["simulator"]["outcome"], v["turns_sent"]) == ("infra_error", "max_turns_reached", 2)
    assert run_script("run_cases", "--verify", out).rc == 0


def _end_held(root: Path) -> None:
    """Kill every held simulator command (each wrote its own pid: only ours, by pid)."""
    for pid_file in root.glob("held-*.pid"):
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)   # it leads its own session (the runner's rule)
        except (ProcessLookupError, ValueError, PermissionError):
            pass
        pid_file.unlink()



LOGGING_STANDIN = r'''
import os, runpy, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "calls.log"), "a") as log:
    log.write(f"{time.time()}\n")
runpy.run_path(os.path.join(here, ".assay", "simulator", "standin.py"), run_name="__main__")
'''


def test_replay_gives_the_same_simulated_user_byte_for_byte(tmp_path):
    pytest.importorskip("assay.replay.session")      # the record/replay issue's cache
    state = copy_state(tmp_path)
    (tmp_path / "logged.py").write_text(LOGGING_STANDIN, encoding="utf-8")
    simulator_yaml(state, "provider: command\ncommand: [python3, ../logged.py]\n")
    with helpdesk(state) as env:
        work = state / "work"
        assert run_script("convert_suite", state, "-o", work / "converted.json", env=env).rc == 0
        assert run_script("make_plan", work / "converted.json", "--mode", "targeted", "--state-dir", state,
                          "-o", work / "plan.json", "--case", REFUND, "--case", SNOOP, env=env).rc == 0
        plan = json.loads((work / "plan.json").read_text())
        rec = state / "reports" / plan["run_id"]
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", rec, "--record", "--progress", "never",
                       env=env)
        assert r.rc == 0, r.stdout + r.stderr
    calls = len((tmp_path / "calls.log").read_text().splitlines())
    # another second of the same minute (the recording's own id ends in the second it was made)
    replay_plan = dict(plan, run_id=plan["run_id"][:-3] + ("58Z" if plan["run_id"].endswith("59Z") else "59Z"))
    (work / "replay.json").write_text(json.dumps(replay_plan))
    rep = state / "reports" / replay_plan["run_id"]
    r = run_script("run_cases", "--plan", work / "replay.json", "--out", rep, "--replay", "--progress", "never",
                   env=env)                                       # the app is stopped: nothing is called
    assert r.rc == 0, r.stdout + r.stderr
    assert len((tmp_path / "calls.log").read_text().splitlines()) == calls     # nor the simulator
    for cid in (REFUND, SNOOP):
        a, b = verdict(rec, cid), verdict(rep, cid)
        assert a["verdict"] == b["verdict"] and [t["user"] for t in a["turns"]] == [t["user"] for t in b["turns"]]
        for n in range(1, a["turns_sent"] + 1):
            for name in ("simulator.json", "answer.txt"):
                assert (cases_view(rec) / cid / "turns" / str(n) / name).read_bytes() == \
                       (cases_view(rep) / cid / "turns" / str(n) / name).read_bytes()
        assert (cases_view(rec) / cid / "simulator.json").read_bytes() == (cases_view(rep) / cid / "simulator.json").read_bytes()


def refusing_model(req):
    """An OpenAI-compatible server: /v1/chat/completions only, and only for key sk-right."""
    if req.path != "/v1/chat/completions":
        return Reply(404, {"error": {"message": f"no route {req.path}"}})
    if req.headers.get("Authorization") != "Bearer sk-right":
        return Reply(401, {"error": {"message": "invalid api key"}})
    return Reply(200, {"error": "unexpected: the probe should have stopped the run"})


@pytest.mark.parametrize("base, key, fix", [
    ("", "sk-right", "usually ends in /v1"),                 # base_url without /v1: every call a 404
    ("/v1", "sk-wrong", "check the simulator's key in $SIM_KEY")])
def test_a_simulator_configured_wrong_is_exit_3_at_pre_flight(tmp_path, base, key, fix):
    state = copy_state(tmp_path)
    work = state / "work"
    with FakeApp(refusing_model) as model:
        simulator_yaml(state, f"provider: openai\nmodel: gpt-test\nbase_url: {model.url}{base}\n"
                              "api_key: ${SIM_KEY}\n")
        env = dict(os.environ, SIM_KEY=key, HELPDESK_BASE_URL="http://127.0.0.1:9",
                   HELPDESK_OTLP_FILE=str(tmp_path / "o"))
        assert run_script("convert_suite", state, "-o", work / "converted.json", env=env).rc == 0
        assert run_script("make_plan", work / "converted.json", "--mode", "targeted", "--state-dir", state,
                          "-o", work / "plan.json", "--case", REFUND, env=env).rc == 0
        out = state / "reports" / json.loads((work / "plan.json").read_text())["run_id"]
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--progress", "never", env=env)
        assert len(model.requests) == 1                      # one probe, before any case
    assert r.rc == 3, r.stdout + r.stderr
    err = json.loads(r.stdout)["error"]
    assert f"simulator probe POST {model.url}{base}/chat/completions (key $SIM_KEY) got HTTP" in err
    assert fix in err and "(simulator/simulator.yaml); no case was sent" in err and key not in err
    assert not (out / "cases").exists() or not any((out / "cases").iterdir())
    assert not (out / "cases.jsonl").exists() or not (out / "cases.jsonl").read_text().strip()   # no case recorded


def test_the_dry_run_lists_a_simulated_user_as_the_run_sends_it(tmp_path):
    """`run_cases.py --dry-run`, which the run skill says to use on anything unfamiliar and for the cost,
    said of each simulated user 'not run: no simulator configured' while the example's simulator.yaml
    played it in the real run, and counted it one app call; it reads the plan's simulator as the run
    does, and counts a simulated user's max_turns (the example's: 4). Without simulator.yaml it is
    still listed as skipped."""
    state = copy_state(tmp_path / "with")
    bare = copy_state(tmp_path / "without")
    sim = bare / "simulator"
    (sim / "simulator.yaml").rename(sim / "simulator.yml")
    with helpdesk(state) as env:
        rows = {}
        for st in (state, bare):
            work = st / "work"
            assert run_script("convert_suite", st, "-o", work / "converted.json", env=env).rc == 0
            r = run_script("make_plan", work / "converted.json", "--mode", "targeted", "--state-dir", st,
                           "-o", work / "plan.json", "--case", REFUND, "--case", "c-003bd57c", env=env)
            assert r.rc == 0, r.stdout + r.stderr
            dry = run_script("run_cases", "--plan", work / "plan.json", "--dry-run", env=env)
            assert dry.rc == 0, dry.stdout + dry.stderr
            rows[st] = dry.json
    listed = {c["id"]: c for c in rows[state]["cases"]}
    assert listed[REFUND]["skip_reason"] is None and listed[REFUND]["app_calls"] == 4
    assert rows[state]["cost_inputs"]["calls"] == 4 + 1 and rows[state]["cost_inputs"]["sendable_cases"] == 2
    unconfigured = {c["id"]: c for c in rows[bare]["cases"]}
    assert "no simulator configured" in unconfigured[REFUND]["skip_reason"]
    assert rows[bare]["cost_inputs"]["calls"] == 1


def test_a_simulator_reply_cut_off_at_max_tokens_is_never_kept_in_the_replay_cache(tmp_path):
    """--record / --judge-cache: a simulated user's reply cut off at max_tokens (its turn never read) was
    kept in the record/replay cache, so the rerun the error asks for (max_tokens raised, --judge-cache)
    was answered with the same cut-off reply and never asked the simulator again. The judge cache's rule (providers.stopped_error)
    now holds for the simulator's too (simulate.runtime.cacheable)."""
    pytest.importorskip("assay.replay.session")
    state = copy_state(tmp_path)
    seen: list = []
    cut = {"on": True}
    whole = anthropic_user(seen)

    def handler(req):
        reply = whole(req)
        if cut["on"] and isinstance(reply.body, dict) and reply.body.get("stop_reason") == "tool_use":
            reply.body["stop_reason"] = "max_tokens"
        return reply
    with FakeApp(handler) as model, helpdesk(state) as env:
        simulator_yaml(state, f"provider: anthropic\nmodel: claude-test\nbase_url: {model.url}\napi_key: ${{SIM_KEY}}\n")
        env["SIM_KEY"] = "sk-sim-secret-123"
        work = state / "work"
        assert run_script("convert_suite", state, "-o", work / "converted.json", env=env).rc == 0
        assert run_script("make_plan", work / "converted.json", "--mode", "targeted", "--state-dir", state,
                          "-o", work / "plan.json", "--case", REFUND, env=env).rc == 0
        plan = json.loads((work / "plan.json").read_text())
        first = state / "reports" / plan["run_id"]
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", first, "--record", "--progress", "never",
                       env=env)
        assert r.rc == 0, r.stdout + r.stderr
        v = verdict(first, REFUND)
        assert v["simulator"]["outcome"] == "simulator_unparseable" and "cut off at the token limit" in \
            v["infra_reason"], v
        asked = len(seen)
        cut["on"] = False        # max_tokens raised: the reply now ends of itself
        again = dict(plan, run_id=plan["run_id"][:-3] + ("58Z" if plan["run_id"].endswith("59Z") else "59Z"))
        (work / "again.json").write_text(json.dumps(again))
        second = state / "reports" / again["run_id"]
        r = run_script("run_cases", "--plan", work / "again.json", "--out", second, "--judge-cache", "--progress",
                       "never", env=env)
        assert r.rc == 0, r.stdout + r.stderr
    assert len(seen) > asked, "the simulator was not asked again: the cut-off reply was replayed from the cache"
    v = verdict(second, REFUND)
    assert (v["verdict"], v["simulator"]["outcome"]) == ("pass", "goal_reached"), v
