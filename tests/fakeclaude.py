"""A stand-in for `claude -p ... --output-format stream-json --verbose`: reads the same argv, does
what the prompt's first word says in its working directory, and writes a stream-json transcript
in the CLI's documented event shapes. It lets the agent invoker be tested end to end without
Node; the real CLI with a scripted model is tests/test_agent_claude.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

argv = sys.argv[1:]
prompt = argv[argv.index("-p") + 1] if "-p" in argv else sys.stdin.read()
resume = argv[argv.index("--resume") + 1] if "--resume" in argv else None
session = resume or f"sess-{os.getpid()}"
word = prompt.split()[0] if prompt.split() else ""
n = 0
MODEL = os.environ.get("FAKE_CLAUDE_MODEL", "claude-scripted-1")   # the init event's model and its usage's
VERSION = os.environ.get("FAKE_CLAUDE_VERSION", "2.0.0")   # "none": an init event that names no CLI version


def emit(ev: dict) -> None:
    ev.setdefault("session_id", session)
    sys.stdout.write(json.dumps(ev) + "\n")
    sys.stdout.flush()


def tool(name: str, inp: dict, result: str, *, is_error: bool = False, parent: str | None = None) -> str:
    global n
    n += 1
    cid = f"toolu_{n:03d}"
    emit({"type": "assistant", "parent_tool_use_id": parent, "message": {
        "id": f"msg_{n}", "model": MODEL, "role": "assistant",
        "content": [{"type": "tool_use", "id": cid, "name": name, "input": inp}]}})
    emit({"type": "user", "parent_tool_use_id": parent, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": cid, "content": result, "is_error": is_error}]}})
    return cid


def finish(text: str, *, denials=(), usage: bool = True, subtype: str = "success", is_error: bool = False) -> None:
    ev = {"type": "result", "subtype": subtype, "is_error": is_error, "duration_ms": 12, "duration_api_ms": 5,
          "num_turns": n + 1, "result": text, "total_cost_usd": 0.0123, "permission_denials": list(denials)}
    if usage:
        ev["usage"] = {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 5,
                       "cache_creation_input_tokens": 0}
        ev["modelUsage"] = {MODEL: {"inputTokens": 100, "outputTokens": 20,
                            "cacheReadInputTokens": 5, "cacheCreationInputTokens": 0}}
    emit(ev)


mcp_up = word != "mcpdown"   # "mcpdown": the MCP server did not start, so the session lacks its tool
emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "model": MODEL,
      **({} if VERSION == "none" else {"claude_code_version": VERSION}),
      "tools": ["Bash", "Read", "Edit", "Skill", "Task"] + (["mcp__calc__add"] if mcp_up else []), "argv": argv,
      "mcp_servers": [{"name": "calc", "status": "connected" if mcp_up else "failed"}], "permissionMode": "default"})
if word == "task":         # an arm with the plugin fixes it through the skill; without, it guesses wrong
    word = "fix" if "--plugin-dir" in argv else "wrong"
if word == "fix":          # the skill, then the right edit
    tool("Skill", {"skill": "demo:fix-tests"}, "Launching skill: demo:fix-tests")
    src = open("calc.py").read()
    open("calc.py", "w").write(src.replace("return a - b", "return a + b"))
    tool("Edit", {"file_path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}, "ok")
    finish("fixed calc.add")
elif word == "wrong":      # no skill, a wrong edit, a file it should not touch
    open("calc.py", "w").write("def add(a, b):\n    return a * b\n")
    open("README.md", "a").write("touched\n")
    tool("Edit", {"file_path": "calc.py"}, "ok")
    finish("done")
elif word == "deny":       # a command the permission rules refuse
    cid = tool("Bash", {"command": "rm -rf build"}, "Claude requested permissions to use Bash, but you "
               "haven't granted it yet.", is_error=True)
    finish("could not clean", denials=[{"tool_name": "Bash", "tool_use_id": cid, "tool_input": {"command": "rm -rf build"}}])
elif word == "mcp":        # an MCP tool and a subagent
    tool("mcp__calc__add", {"a": 2, "b": int(prompt.split()[1])}, "5")
    task = tool("Task", {"description": "look", "prompt": "look around", "subagent_type": "explorer"}, "found it")
    tool("Read", {"file_path": "calc.py"}, "def add...", parent=task)
    finish("2 + 3 = 5")
elif word == "mcpdown":    # the model calls the tool anyway: the CLI refuses it, as the real one does
    tool("mcp__calc__add", {"a": 2, "b": 3}, "<tool_use_error>Error: No such tool available: mcp__calc__add"
         "</tool_use_error>", is_error=True)
    finish("2 + 3 = 5")
elif word == "hang":       # a grandchild and a sleep: the deadline kills the whole group
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "fakeclaude-grandchild"])
    time.sleep(600)
elif word == "cut":        # killed mid-run: no result event
    tool("Read", {"file_path": "calc.py"}, "def add")
elif word == "garbage":
    sys.stdout.write("{\"type\": \"assistant\", \"message\": {\"content\": [\n")
elif word == "secret":
    finish(f"the token is {os.environ.get('FAKE_SECRET', '(none)')}")
elif word == "nousage":
    finish("no usage here", usage=False)
elif word == "flaky":      # passes on one repeat in three (a counter outside the workdir)
    path = os.path.join(os.environ["FLAKY_DIR"], "count")
    count = int(open(path).read()) + 1 if os.path.exists(path) else 1
    open(path, "w").write(str(count))
    if count % 3 == 0:
        tool("Skill", {"skill": "fix-tests"}, "ok")
    finish(f"try {count}")
elif word == "escape":     # writes outside its workdir
    target = os.environ.get("ESCAPE_TARGET", "/tmp/never")
    try:
        open(target, "w").write("escaped\n")
        finish("wrote outside")
    except OSError as exc:
        finish(f"write failed: {exc.strerror}")
elif word == "turns":
    open("turns.log", "a").write(f"{prompt} resume={resume}\n")
    finish(f"turn said {prompt!r} resume={resume}")
elif word == "maxturns":
    finish("", subtype="error_max_turns", is_error=True)
else:
    finish(f"echo {prompt}")
