"""The example's scripted model: what a model would do for each case, as steps of the scripted
Messages-API server (tests/messages_server.py). It is a test fixture, not a model: it never reads
the skill, so a run against it shows that the harness, the plugin, the MCP server and the checks
work end to end, not that a model uses the skill well. The real use is with your own key.

`RoutedServer` picks one script per case: the first one whose key appears in the case's prompt
(each script keeps its own position, so the k repeats of a case walk their script in turn)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from messages_server import MessagesServer, text, tool  # noqa: E402


def _first_user_text(body) -> str:
    msgs = body.get("messages") if isinstance(body, dict) else None
    if not msgs or not isinstance(msgs[0], dict):
        return ""
    content = msgs[0].get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


@dataclass
class RoutedServer(MessagesServer):
    """One scripted model per case, picked by a key found in the first user message."""
    routes: dict = field(default_factory=dict)

    def answer(self, path, body):
        first = _first_user_text(body)
        route = next((srv for key, srv in self.routes.items() if key in first), None)
        if route is None:
            return super().answer(path, body)
        entry = route.answer(path, body)
        self.requests.append(entry)
        return entry


def workdir(ctx) -> str:
    """The agent's working directory, from the `pwd` the script ran first."""
    return next(r.text.strip() for r in ctx.results if r.text.strip().startswith("/"))


def edit(path: str, old: str, new: str):
    return tool("Edit", lambda ctx: {"file_path": f"{workdir(ctx)}/{path}", "old_string": old, "new_string": new})


SKILL = tool("Skill", {"skill": "calc-helper:fix-tests"})
PWD = tool("Bash", {"command": "pwd"})
FIX_ADD = edit("calc.py", "return a - b", "return a + b")
FIX_MUL = edit("calc.py", "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b")


def scripts() -> dict[str, list]:
    """Prompt key -> the scripted model's steps for that case."""
    return {
        "The add test in test_calc.py fails": [SKILL, PWD, FIX_ADD, text("Fixed add in calc.py.")],
        "The mul test fails too": [SKILL, PWD, FIX_MUL, text("Fixed mul in calc.py.")],
        "Make all the tests pass": [SKILL, PWD, FIX_ADD, FIX_MUL, text("Fixed add and mul.")],
        "without touching the README": [SKILL, PWD, FIX_ADD, text("Fixed add; nothing else touched.")],
        "What does calc.py do?": [PWD, tool("Read", lambda ctx: {"file_path": f"{workdir(ctx)}/calc.py"}),
                                  text("calc.py adds and multiplies two numbers (both have a bug).")],
        "Which tests exist": [PWD, tool("Read", lambda ctx: {"file_path": f"{workdir(ctx)}/test_calc.py"}),
                              text("Two: test_add and test_mul.")],
        "Add a line to docs/usage.md": [PWD, edit("docs/usage.md", "# Usage\n", "# Usage\n\nThe module is tested.\n"),
                                        text("Added the line.")],
        "Remove the stale build output": [tool("Bash", {"command": "rm build/out.txt"}), text("Removed build/out.txt.")],
        "Push the fix to origin": [tool("Bash", {"command": "git push origin main"}),
                                   text("I could not push: the command was not allowed.")],
        "add 2 and 3": [tool("mcp__calc__add", {"a": 2, "b": 3}), text("2 + 3 = 5")],
        "add 10 and 32": [tool("mcp__calc__add", {"a": 10, "b": 32}), text("10 + 32 = 42")],
        "what is 1 + 1": [text("1 + 1 = 2")],
    }


def server() -> RoutedServer:
    """A fresh scripted model for one run (every case's script from its first step)."""
    return RoutedServer([], routes={k: MessagesServer(list(v)) for k, v in scripts().items()})
