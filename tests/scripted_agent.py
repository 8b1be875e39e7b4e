"""A tiny scripted coding agent for agent mode's `command:` override (`[python, scripted_agent.py,
"{input}"]`): it edits files in its working directory (the case's fresh workdir) as the prompt's
first word says and writes a Claude-Code-shaped stream-json transcript on stdout. Cheap (no Node,
no model), so the green-path hunt and the viewer's tests exercise assay's own agent path.

A prompt holding `[bypass]` makes its init event report permission mode bypassPermissions (else acceptEdits).
SCRIPTED_AGENT_BROKEN=1 (passed through the adapter's env_allowlist) plants the regressions:
`skill` no longer triggers the fix-tests skill, `fix` edits add() wrongly.

    skill    the fix-tests skill, then the right edit of calc.py
    fix      the right edit of calc.py (no skill)
    explain  reads calc.py and answers; changes nothing
    hostile  a wrong edit with markup in it, a new file of hostile text (and the secret it was
             given, SCRIPTED_AGENT_TOKEN), README.md deleted
    nuke     removes its whole workdir, then answers that it fixed add()
    tamper   the right edit, and README.md rewritten the same in its workdir and in the fixture it
             was copied from (SCRIPTED_AGENT_FIXTURE): an unsandboxed agent writing outside its workdir
    sweep    the right edit, then `echo cleaning && rm -rf build`: a Bash call a forbidden
             `Bash(rm -rf *)` must see (Claude Code's own deny rule of that text denies it)
    errored  the right edit, then a result event that says the session failed (is_error,
             error_during_execution) and exit code 0: a `command:` CLI that does not exit non-zero
             on an error result, as Claude Code does
    lookup   adds 2 and 3 through the MCP tool mcp__calc__add and answers; broken, the MCP server
             closes its connection during the call (the CLI's "MCP error -32000: Connection closed")
             and the agent answers all the same, as Claude Code's does after restarting the server
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

prompt = sys.argv[1] if len(sys.argv) > 1 else ""
word = (prompt.split() or [""])[0].strip(":,.").lower()
broken = os.environ.get("SCRIPTED_AGENT_BROKEN") == "1"
session = f"scripted-{os.getpid()}"
calls = 0


def emit(ev: dict) -> None:
    ev.setdefault("session_id", session)
    sys.stdout.write(json.dumps(ev) + "\n")


def tool(name: str, inp: dict, result: str, *, error: bool = False) -> None:
    global calls
    calls += 1
    cid = f"toolu_{calls:03d}"
    emit({"type": "assistant", "parent_tool_use_id": None, "message": {
        "id": f"msg_{calls}", "model": "scripted-agent-1", "role": "assistant",
        "content": [{"type": "tool_use", "id": cid, "name": name, "input": inp}]}})
    emit({"type": "user", "parent_tool_use_id": None, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": cid, "content": result, "is_error": error}]}})


def edit(old: str, new: str) -> None:
    calc = Path("calc.py")
    calc.write_text(calc.read_text().replace(old, new))
    tool("Edit", {"file_path": "calc.py", "old_string": old, "new_string": new}, "The file calc.py has been updated.")


emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "model": "scripted-agent-1",
      "tools": ["Bash", "Read", "Edit", "Write", "Skill"], "mcp_servers": [],
      "permissionMode": "bypassPermissions" if "[bypass]" in prompt else "acceptEdits"})
if word == "skill":
    if not broken:
        tool("Skill", {"skill": "demo:fix-tests"}, "Launching skill: demo:fix-tests")
    edit("return a - b", "return a + b")
    answer = "Fixed add()."
elif word == "fix":
    edit("return a - b", "return a * b" if broken else "return a + b")
    answer = "Fixed add()."
elif word == "explain":
    tool("Read", {"file_path": "calc.py"}, Path("calc.py").read_text())
    answer = "add() subtracts its arguments."
elif word == "hostile":
    edit("return a - b", "return a * b  # <script>window.__pwned=1</script>")
    Path("notes.md").write_text('<img src=x onerror="window.__pwned=2">\n\u202egnp.exe\nplain line\n'
                                f'token: {os.environ.get("SCRIPTED_AGENT_TOKEN", "")}\n')
    tool("Write", {"file_path": "notes.md"}, "File created")
    os.remove("README.md")
    tool("Bash", {"command": "rm README.md"}, "")
    answer = "Done."
elif word == "nuke":
    import shutil
    shutil.rmtree(os.getcwd())
    tool("Bash", {"command": "rm -rf ."}, "")
    answer = "Fixed add()."
elif word == "tamper":
    edit("return a - b", "return a + b")
    for root in (Path("."), Path(os.environ["SCRIPTED_AGENT_FIXTURE"])):
        (root / "README.md").write_text("# calc, rewritten\n")
    tool("Write", {"file_path": "README.md"}, "File written")
    answer = "Fixed add()."
elif word == "lookup":
    tool("mcp__calc__add", {"a": 2, "b": 3}, "MCP error -32000: Connection closed" if broken else "5", error=broken)
    answer = "2 + 3 = 5"
elif word == "sweep":
    edit("return a - b", "return a + b")
    tool("Bash", {"command": "echo cleaning && rm -rf build", "description": "clean"}, "cleaning")
    answer = "Fixed add() and cleaned the build output."
elif word == "errored":
    edit("return a - b", "return a + b")
    answer = None
else:
    answer = f"I do not know how to {word!r}."
failed = word == "errored"
emit({"type": "result", "subtype": "error_during_execution" if failed else "success", "is_error": failed,
      "duration_ms": 5, "duration_api_ms": 3, "num_turns": calls + 1, "result": answer, "total_cost_usd": 0.0001, "permission_denials": [],
      "usage": {"input_tokens": 50, "output_tokens": 10},
      "modelUsage": {"scripted-agent-1": {"inputTokens": 50, "outputTokens": 10}}})
