"""The Claude Code stream-json transcript as a trajectory (assay.traces.claude_code) and the agent
layers' scorers (assay.score.agent): pure functions, on transcripts written from the documented
event shapes."""

from __future__ import annotations

import json

from assay.score.agent import score_check, score_files, score_permissions, score_skills
from assay.score.trajectory import score_trajectory
from assay.traces.claude_code import declared_name, read_stream


def line(ev: dict) -> str:
    return json.dumps(ev)


INIT = {"type": "system", "subtype": "init", "session_id": "s-1", "model": "claude-x", "tools": ["Bash", "Skill"],
        "mcp_servers": [{"name": "calc", "status": "connected"}]}


def use(cid: str, name: str, inp: dict, parent=None) -> dict:
    return {"type": "assistant", "parent_tool_use_id": parent, "session_id": "s-1",
            "message": {"content": [{"type": "text", "text": "..."}, {"type": "tool_use", "id": cid, "name": name, "input": inp}]}}


def res(cid: str, content, is_error=False, parent=None) -> dict:
    return {"type": "user", "parent_tool_use_id": parent, "session_id": "s-1",
            "message": {"content": [{"type": "tool_result", "tool_use_id": cid, "content": content, "is_error": is_error}]}}


RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "done", "session_id": "s-1",
          "num_turns": 4, "duration_ms": 900, "total_cost_usd": 0.01,
          "usage": {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 7},
          "permission_denials": [{"tool_name": "Bash", "tool_use_id": "t3", "tool_input": {"command": "rm -rf /"}}]}


def transcript(*events) -> bytes:
    return ("\n".join(line(e) for e in events) + "\n").encode()


def test_steps_skills_subagents_denials_and_usage():
    got = read_stream(transcript(
        INIT, use("t1", "Skill", {"skill": "demo:fix"}), res("t1", "ok"),
        use("t2", "mcp__calc__add", {"a": 1}), res("t2", [{"type": "text", "text": "2"}]),
        use("t3", "Bash", {"command": "rm -rf /"}), res("t3", "denied", is_error=True),
        use("t4", "Task", {"subagent_type": "explorer", "description": "d"}),
        use("t5", "Read", {"file_path": "x"}, parent="t4"), res("t5", "body", parent="t4"), res("t4", "found"),
        RESULT))
    assert got["status"] == "ok"
    t = got["trajectory"]
    assert [c["name"] for c in t["tool_calls"]] == ["Skill", "mcp__calc__add", "Bash", "Task", "Read"]
    assert t["skills"] == ["demo:fix"]
    assert t["tool_calls"][1]["result"] == "2" and t["tool_calls"][1]["mcp"] == {"server": "calc", "tool": "add"}
    assert t["tool_calls"][2]["error"] == "denied"
    assert t["tool_calls"][4]["agent"] == "explorer"
    assert [a["name"] for a in t["agents"]] == ["claude-code", "explorer"]
    assert t["permission_denials"] == [{"tool": "Bash", "call_id": "t3"}]
    assert t["llm_calls"][0]["model"] == "claude-x" and t["llm_calls"][0]["input_tokens"] == 17
    assert t["result"]["num_turns"] == 4 and t["session_id"] == "s-1"
    assert "rm -rf" not in json.dumps(t["permission_denials"])


def test_mcp_tools_are_declarable_by_either_name():
    assert declared_name("mcp__calc__add", ["add"]) == "add"
    assert declared_name("mcp__calc__add", ["mcp__calc__add"]) == "mcp__calc__add"
    assert declared_name("mcp__calc__add", []) == "mcp__calc__add"
    got = read_stream(transcript(INIT, use("t1", "mcp__calc__add", {}), res("t1", "2"), RESULT), declared=["add"])
    assert got["trajectory"]["tool_calls"][0]["name"] == "add"


def test_cut_off_malformed_and_empty_transcripts_are_incomplete_and_named():
    cut = read_stream(transcript(INIT, use("t1", "Read", {})))
    assert cut["status"] == "incomplete" and "without a result event" in cut["reason"]
    bad = read_stream(transcript(INIT) + b'{"type": "assistant", "mess\n')
    assert bad["status"] == "incomplete" and "line 2" in bad["reason"]
    assert read_stream(b"")["status"] == "incomplete"


def test_no_usage_is_a_model_call_without_tokens_never_zero_cost():
    got = read_stream(transcript(INIT, {k: v for k, v in RESULT.items() if k != "usage"}))
    call = got["trajectory"]["llm_calls"][0]
    assert "input_tokens" not in call and "output_tokens" not in call


def test_skill_names_match_bare_or_namespaced():
    traj = {"skills": ["demo:fix"]}
    assert score_skills(traj, {"skills": {"must_trigger": ["fix"]}})["verdict"] == "pass"
    assert score_skills(traj, {"skills": {"must_trigger": ["demo:fix"]}})["verdict"] == "pass"
    assert score_skills(traj, {"skills": {"must_trigger": ["other:fix"]}})["verdict"] == "fail"
    assert score_skills(traj, {"skills": {"must_not_trigger": ["fix"]}})["verdict"] == "fail"


def test_files_check_and_permissions_decide_from_what_was_measured():
    facts = {"files": {"exists": {"a": True}, "absent": {"b": False}, "contains": {"a": {"file": True, "missing": []}},
                       "unchanged": {"docs/*": []}}}
    assert score_files(facts, {"files": {"exists": ["a"]}})["verdict"] == "pass"
    facts["files"]["unchanged"] = {"docs/*": ["docs/x.md"]}
    assert score_files(facts, {"files": {"exists": ["a"]}})["verdict"] == "fail"
    ok = {"check": {"ran": True, "exit_code": 0, "command": ["t"], "output": "ok"}}
    assert score_check(ok, {"check": {"command": "t"}})["verdict"] == "pass"
    assert score_check(ok, {"check": {"command": "t", "exit_code": 1}})["verdict"] == "fail"
    traj = {"permission_denials": [{"tool": "Bash"}]}
    assert score_permissions(traj, {})["verdict"] == "fail"
    assert score_permissions({"permission_denials": []}, {})["verdict"] == "n/a"
    assert score_permissions(traj, {"permissions": {"max_denied": 1}})["verdict"] == "pass"


def test_forbidden_accepts_permission_rule_patterns():
    traj = {"tool_calls": [{"name": "Bash", "arguments": {"command": "rm -rf build"}}]}
    assert score_trajectory(traj, {"tools": {"forbidden": ["Bash(rm -rf *)"]}})["verdict"] == "fail"
    assert score_trajectory(traj, {"tools": {"forbidden": ["Bash(git push *)"]}})["verdict"] == "pass"
    assert score_trajectory(traj, {"tools": {"forbidden": ["Bash"]}})["verdict"] == "fail"


def test_a_refused_skill_call_is_not_a_trigger():
    got = read_stream(transcript(INIT, use("t1", "Skill", {"skill": "nope"}), res("t1", "Unknown skill: nope", is_error=True),
                                 RESULT))
    assert got["trajectory"]["skills"] == [] and got["trajectory"]["tool_calls"][0]["skill"] == "nope"


def test_a_tool_check_naming_a_tool_the_session_did_not_have_is_never_a_pass():
    """A forbidden name the session lacks can never fail (a typo); a required one passes only on a call
    the CLI refused ("No such tool available"). Either pass is unscored, naming the closest tool."""
    from assay.score.tool_names import hold_to_session, not_in_session
    init = {**INIT, "tools": ["Bash", "Skill", "mcp__calc__add", "mcp__calc__delete_all"]}
    got = read_stream(transcript(init, use("t1", "mcp__calc__delete_all", {}), res("t1", "ok"),
                                 use("t2", "mcp__calc__sub", {"a": 1}),
                                 res("t2", "<tool_use_error>Error: No such tool available: mcp__calc__sub</tool_use_error>",
                                     is_error=True), RESULT))
    traj = got["trajectory"]
    typo = {"tools": {"forbidden": ["mcp__calc__delete"]}}
    assert score_trajectory(traj, typo)["verdict"] == "pass"          # the check alone cannot see the typo
    held = hold_to_session({"trajectory": score_trajectory(traj, typo)}, not_in_session(typo, traj))
    assert held["trajectory"]["verdict"] == "unscored"
    assert "did you mean 'mcp__calc__delete_all'" in held["trajectory"]["reason"]
    refused = {"tools": {"subset": ["mcp__calc__sub"]}, "args": {"mcp__calc__sub": {"a": 1}}}
    unknown = not_in_session(refused, traj)
    assert set(unknown) == {"trajectory", "tool_selection"}
    assert hold_to_session({"trajectory": score_trajectory(traj, refused)}, unknown)["trajectory"]["verdict"] == "unscored"
    # names the session had, permission-style rules, a bare MCP name and another arm's server: left alone
    fine = {"tools": {"forbidden": ["Bash(rm -rf *)", "Skill", "add", "mcp__other__drop"]}}
    assert not_in_session(fine, traj) == {}
    assert not_in_session(typo, {"tool_calls": []}) == {}              # no session tools listed: not an agent transcript


def test_files_contains_fails_on_missing_text_or_a_missing_file():
    """Mutation round 3: a file that lacked the asserted text passed expect.files.contains."""
    spec = {"files": {"contains": {"a": ["fixed"]}}}
    assert score_files({"files": {"contains": {"a": {"file": True, "missing": ["fixed"]}}}}, spec)["verdict"] == "fail"
    assert score_files({"files": {"contains": {"a": {"file": False}}}}, spec)["verdict"] == "fail"
    assert score_files({"files": {"contains": {"a": {"file": True, "missing": []}}}}, spec)["verdict"] == "pass"
