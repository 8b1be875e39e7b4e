"""A permission-style tool rule in an expectation (`Bash(rm -rf *)`, assay.score.tool_rule) means what
the same text means to Claude Code: `expect.tools.forbidden` and `expect.authz.forbidden_tools` see
every call the agent's own deny rule of that text denies. The spellings below were each tried
against the pinned CLI (`--disallowedTools "Bash(rm -rf *)"`, every other Bash call allowed):
the last test replays them there and holds the two readings equal."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from assay.score.authz import score_authz
from assay.score.tool_rule import command_matches, rule_tool
from assay.score.trajectory import score_trajectory

RULE = "Bash(rm -rf *)"
# denied by the pinned CLI under the deny rule RULE (tried by hand, and replayed by the last test)
DENIED = ["rm -rf build", "rm -rf", "echo a && rm -rf build", "echo x; rm -rf build", "echo x | rm -rf build",
          "echo hi\nrm -rf build", "rm  -rf build", "rm\t-rf build", "timeout 5 rm -rf build",
          "nice -n 5 rm -rf build", "nohup rm -rf build", "FOO=1 rm -rf build", "(rm -rf build)",
          "echo $(rm -rf build)", "bash -c 'rm -rf build'", "/bin/rm -rf build"]
# run by the pinned CLI under the same rule: another spelling of the flags, the text quoted
RUN = ["rm -fr build", "echo 'rm -rf build'", "echo ok", "git commit --dry-run -m 'rm -rf x'"]


def _bash(command: str) -> dict:
    return {"tool_calls": [{"name": "Bash", "arguments": {"command": command, "description": "x"}}],
            "tool_log": {"seen": True}}


@pytest.mark.parametrize("command", DENIED)
def test_a_forbidden_rule_sees_each_spelling_claude_code_denies(command):
    got = score_trajectory(_bash(command), {"tools": {"forbidden": [RULE]}})
    assert got["verdict"] == "fail" and got["forbidden_violations"] == [{"tool": RULE, "calls": 1}], (command, got)


@pytest.mark.parametrize("command", RUN)
def test_a_forbidden_rule_passes_what_claude_code_runs(command):
    assert score_trajectory(_bash(command), {"tools": {"forbidden": [RULE]}})["verdict"] == "pass", command


def test_authz_forbidden_tools_reads_a_rule_as_the_trajectory_does():
    """authz.forbidden_tools compared tool names only: `Bash(rm -rf *)` there passed every call."""
    def authz(command: str) -> str:
        return score_authz(_bash(command), {"authz": {"forbidden_tools": [RULE]}}, answer="done",
                           response_json=None, id_pattern=None)["verdict"]
    assert authz("cd build && rm -rf .") == "fail"
    assert authz("rm -fr build") == "pass"
    assert score_authz(_bash("ls"), {"authz": {"forbidden_tools": ["Bash"]}}, answer="done", response_json=None,
                       id_pattern=None)["verdict"] == "fail"


def test_the_pattern_is_claude_codes():
    """Only `*` is a wildcard; a trailing ` *` (or `:*`) also matches the bare prefix; a word boundary holds."""
    assert command_matches("git push *", "git push") and command_matches("git push:*", "git push origin main")
    assert not command_matches("git push *", "git pushx")
    assert command_matches("ls*", "lsof") and not command_matches("ls *", "lsof")
    assert command_matches("cat a[1].txt", "cat a[1].txt") and not command_matches("cat a?.txt", "cat ab.txt")
    assert command_matches("* --version", "node --version")
    assert rule_tool(RULE) == "Bash" and rule_tool("mcp__calc__add") == "mcp__calc__add"


def test_the_pinned_cli_denies_exactly_what_the_rule_matches(tmp_path):
    """One real CLI session, the model scripted to run every spelling above: the CLI's own denials
    are the spellings the forbidden rule matches, no more, no fewer."""
    from claude_cli import CLAUDE, session_env, unavailable
    if unavailable():
        pytest.skip(unavailable())
    from messages_server import MessagesServer, text, tool
    work, home = tmp_path / "work", tmp_path / "home"
    (work / "build").mkdir(parents=True)
    commands = DENIED + RUN
    script = [tool("Bash", {"command": c, "description": "try"}) for c in commands] + [text("done")]
    with MessagesServer(script) as srv:
        p = subprocess.run([str(CLAUDE), "-p", "go", "--output-format", "stream-json", "--verbose",
                            "--permission-mode", "acceptEdits", "--allowedTools", "Bash", "--disallowedTools", RULE],
                           capture_output=True, text=True, env=session_env(home, srv.env()), cwd=work,
                           stdin=subprocess.DEVNULL, timeout=300)
    events = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    result = next((e for e in events if e.get("type") == "result"), None)
    assert result is not None, (p.returncode, p.stderr[-1500:])
    denied = [d["tool_input"]["command"] for d in result["permission_denials"]]
    matched = [c for c in commands if score_trajectory(_bash(c), {"tools": {"forbidden": [RULE]}})["verdict"] == "fail"]
    assert sorted(denied) == sorted(matched) == sorted(DENIED), (denied, matched)


# Edit path rules, each tried against the pinned CLI (a Write call of every path, the rules denied):
# the paths each denies, relative to the session's working directory (the agent's workdir)
PATHS = ["secret.txt", "other.txt", "docs/a.md", "docs/sub/b.md", "sub/secret.txt", "top.txt"]
PATH_RULES = {"Edit(./secret.txt)": ["secret.txt", "sub/secret.txt"], "Edit(docs/*)": ["docs/a.md", "docs/sub/b.md"],
              "Edit(/top.txt)": ["top.txt"]}


def _writes(work: str, cwd: str | None) -> dict:
    return {"tool_calls": [{"name": "Write", "arguments": {"file_path": f"{work}/{p}", "content": "x"}} for p in PATHS],
            "tool_log": {"seen": True}, "cwd": cwd}


@pytest.mark.parametrize("rule, denied", sorted(PATH_RULES.items()))
def test_a_path_rule_is_read_in_the_agents_workdir(rule, denied):
    """Claude Code's file tools pass absolute paths: `Edit(./secret.txt)` compared with the path as
    written never matched one, so a forbidden edit passed. Read in the session's cwd, gitignore-style."""
    from assay.score.tool_rule import rule_matches
    calls = _writes("/w/work", "/w/work")["tool_calls"]
    assert [p for p, c in zip(PATHS, calls) if rule_matches(rule, c, "/w/work")] == denied
    assert score_trajectory(_writes("/w/work", "/w/work"), {"tools": {"forbidden": [rule]}})["verdict"] == "fail"
    assert not any(rule_matches(rule, c, "/elsewhere") for c in calls)   # another workdir: not its files
    assert rule_matches("Edit(//etc/*)", {"name": "Edit", "arguments": {"file_path": "/etc/hosts"}})


def test_the_pinned_cli_denies_exactly_the_paths_the_rules_match(tmp_path):
    """One real CLI session writing every path under the Edit rules above: its denials are the
    paths the rules match on the transcript as assay reads it (the init event's cwd)."""
    from claude_cli import CLAUDE, session_env, unavailable
    if unavailable():
        pytest.skip(unavailable())
    from messages_server import MessagesServer, text, tool
    from assay.traces.claude_code import read_transcript
    work, home = tmp_path / "work", tmp_path / "home"
    (work / "docs" / "sub").mkdir(parents=True)
    (work / "sub").mkdir()
    script = [tool("Write", {"file_path": str(work / p), "content": "x"}) for p in PATHS] + [text("done")]
    with MessagesServer(script) as srv:
        p = subprocess.run([str(CLAUDE), "-p", "go", "--output-format", "stream-json", "--verbose",
                            "--permission-mode", "acceptEdits", "--disallowedTools", *PATH_RULES],
                           capture_output=True, text=True, env=session_env(home, srv.env()), cwd=work,
                           stdin=subprocess.DEVNULL, timeout=300)
    events = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    result = next((e for e in events if e.get("type") == "result"), None)
    assert result is not None, (p.returncode, p.stderr[-1500:])
    denied = sorted(d["tool_input"]["file_path"][len(str(work)) + 1:] for d in result["permission_denials"])
    trajectory = read_transcript(events)["trajectory"]
    assert trajectory["cwd"] == str(work)
    from assay.score.tool_rule import rule_matches
    matched = sorted({c["arguments"]["file_path"][len(str(work)) + 1:] for c in trajectory["tool_calls"]
                      for rule in PATH_RULES if rule_matches(rule, c, trajectory["cwd"])})
    assert denied == matched == sorted({x for v in PATH_RULES.values() for x in v}), (denied, matched)


def test_a_tool_name_is_exact_and_sudo_is_set_aside():
    """Mutation round 3: a case-folded tool name matched another tool; `sudo rm -rf` slipped `rm -rf *`."""
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]}
    assert score_trajectory(bash, {"tools": {"forbidden": ["Bash"]}})["verdict"] == "pass"
    assert command_matches("rm -rf *", "sudo rm -rf /") and command_matches("rm -rf *", "sudo -u root rm -rf x")


def test_a_rule_with_many_stars_reads_a_long_call_in_linear_time():
    """A forbidden rule with many `*` against a long call (an agent's 100 KB command or path): written as
    `a.*a.*...b`, each `*` retried every split of the rest (`Bash(a*a*a*a*b)` on a 1 KB command of `a`s
    took ~1 min; `//a*a*a*b` on a 2 KB path ~2 s, each more `*` a power more). In a child process, so a
    hang is bounded (never a speed bar); the verdicts are the rule's."""
    code = r"""
import json
from assay.score.trajectory import score_trajectory
def verdict(name, args, rule):
    t = {"tool_calls": [{"name": name, "arguments": args}], "tool_log": {"seen": True}, "cwd": "/w"}
    return score_trajectory(t, {"tools": {"forbidden": [rule]}})["verdict"]
long = "a" * 100_000
print(json.dumps([
    verdict("Bash", {"command": long}, "Bash(a*a*a*a*a*a*a*b)"),
    verdict("Bash", {"command": long + "b"}, "Bash(a*a*a*a*a*a*a*b)"),
    verdict("Bash", {"command": "echo " + long + " && rm -rf /tmp/x"}, "Bash(*a*a*a* rm -rf *)"),
    verdict("Write", {"file_path": "/" + long, "content": "x"}, "Edit(//a*a*a*a*a*a*b)"),
    verdict("Write", {"file_path": "/" + long + "b", "content": "x"}, "Edit(//a*a*a*a*a*a*b)"),
    verdict("Write", {"file_path": "/w/x/" + long, "content": "x"}, "Edit(a*a*a*a*a*b)"),
    verdict("Write", {"file_path": "/w/x/" + long + "b", "content": "x"}, "Edit(a*a*a*a*a*b)"),
]))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout) == ["pass", "fail", "fail", "pass", "fail", "pass", "fail"], r.stdout
