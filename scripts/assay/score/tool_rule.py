"""A tool rule in an expectation (`expect.tools` lists, `expect.authz.forbidden_tools`): a tool name,
or a permission-style rule `Tool(pattern)` written as Claude Code's own permission rules are,
e.g. `Bash(rm -rf *)`. Pure; the one definition of when a call matches one (wave 4 §4).

A rule means what the same text means to Claude Code, or a forbidden rule misses calls the
agent's own deny rule would catch (checked against the pinned CLI's denials:
tests/test_tool_rules.py). In the pattern only `*` is a wildcard (any text); a trailing ` *` (or
the older `:*`) also matches the bare prefix (`rm -rf *` matches `rm -rf`). Another tool's first
string argument must match as a whole, or, for a path, as Claude Code reads a path rule in the
session's working directory (`path_matches`: `Edit(./README.md)`, `Edit(docs/*)` match the file
tool's absolute path under the agent's workdir). A command (Bash's `command`) matches when its whole text does, or
when any simple command in it does: a compound command is split at `&&`, `||`, `;`, `|`, `&`,
newlines, subshells and command substitutions; runs of whitespace are one space; leading
`VAR=value` assignments and the wrappers `timeout`, `nice`, `nohup`, `sudo`, `env`, `time`, `exec`
are set aside; `bash -c '...'` (sh, zsh) is read as its own command; `/bin/rm` is also read as `rm`.
A rule is still a pattern, not a meaning: `rm -fr build` does not match `rm -rf *` (nor does it
for Claude Code); assert the outcome too (`expect.files`).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any, Mapping

_OPERATORS = set(";&|()`<>\n")
_WRAPPERS = {"timeout", "nice", "nohup", "sudo", "env", "time", "exec"}
_SHELLS = {"bash", "sh", "zsh", "dash"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def rule_tool(rule: str) -> str:
    """The tool a rule names: `Bash` for `Bash(rm -rf *)`, the rule itself for a plain tool name."""
    return rule.split("(", 1)[0] if rule.endswith(")") and "(" in rule else rule


def _pattern(spec: str) -> re.Pattern[str]:
    spec = " ".join(spec.replace(":*", " *").split())
    tail = spec.endswith(" *")
    body = spec[:-2] if tail else spec
    # Each text between two `*` is taken where it first occurs after the one before, atomically (as
    # fnmatch does): any text may follow it, so a later place never matches where the first does not.
    # Written `a.*b.*c`, each `*` retried every split of the rest: `Bash(a*a*a*a*b)` against a 1 KB command
    # of `a`s took ~1 min, a 100 KB one years.
    parts = [re.escape(part) for part in body.split("*")]
    rx = parts[0] if len(parts) == 1 else (parts[0] + "".join(f"(?>.*?{p})" for p in parts[1:-1])
                                           + ".*" + parts[-1])
    return re.compile(rx + ("( .*)?" if tail else ""), re.S)


def _simple_commands(text: str, depth: int = 0) -> list[list[str]]:
    """The simple commands of a shell command line, each as its words (quotes removed)."""
    lex = shlex.shlex(text, posix=True, punctuation_chars="".join(sorted(_OPERATORS)))
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    try:
        tokens = list(lex)
    except ValueError:   # an unbalanced quote: read it as words
        tokens = text.replace("\n", " ; ").split()
    out: list[list[str]] = []
    words: list[str] = []
    for tok in tokens + [";"]:
        if tok and set(tok) <= _OPERATORS:
            if words:
                out += _unwrapped(words, depth)
            words = []
        elif tok != "$":   # the $ of a command substitution, $( ... )
            words.append(tok)
    return out


def _unwrapped(words: list[str], depth: int) -> list[list[str]]:
    """The command as written, and as the program it runs (assignments and wrappers set aside)."""
    out = [words]
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    while i < len(words) and words[i].rsplit("/", 1)[-1] in _WRAPPERS:
        i += 1
        while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.match(words[i])
                                  or re.fullmatch(r"[\d.]+[smhd]?", words[i])):
            i += 1 + (words[i] in ("-n", "-u", "-g", "-s", "-k"))   # an option's value
    rest = words[i:]
    if rest and "/" in rest[0]:
        rest = [rest[0].rsplit("/", 1)[-1]] + rest[1:]
    if rest and rest != words:
        out.append(rest)
    if rest and rest[0] in _SHELLS and "-c" in rest[1:] and depth < 3:
        inner = rest[rest.index("-c") + 1:]
        if inner:
            out += _simple_commands(inner[0], depth + 1)
    return out


def command_matches(pattern: str, command: str) -> bool:
    """Whether a command line matches a rule's pattern, as Claude Code reads it (module docstring)."""
    rx = _pattern(pattern)
    if rx.fullmatch(" ".join(command.split())):
        return True
    return any(rx.fullmatch(" ".join(words)) for words in _simple_commands(command))


# Claude Code's Edit rules cover every tool that writes a file (an Edit(...) rule denied a Write call).
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")


def rule_matches(rule: str, call: Mapping[str, Any], cwd: str | None = None) -> bool:
    """A tool name, or a permission-style rule `Tool(pattern)`: the call is that tool and its command
    (Bash's `command`; else its first string argument) matches the pattern, e.g. `Bash(rm -rf *)`;
    an `Edit(path)` rule also matches Write, MultiEdit and NotebookEdit calls, its path read as
    Claude Code reads it in the session's working directory `cwd` (`trajectory.cwd`: path_matches)."""
    if not (rule.endswith(")") and "(" in rule):
        return call.get("name") == rule
    tool, _, pattern = rule[:-1].partition("(")
    name = call.get("name")
    if name != tool and not (tool == "Edit" and name in EDIT_TOOLS):
        return False
    args = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
    if isinstance(args.get("command"), str):
        return command_matches(pattern, args["command"])
    text = next((v for v in args.values() if isinstance(v, str)), None)   # not a command line: as written
    if text is None:
        return False
    return (name == tool and _pattern(pattern).fullmatch(text) is not None) or path_matches(pattern, text, cwd)


def path_matches(pattern: str, path: str, cwd: str | None) -> bool:
    """A file tool's absolute path against a path rule, as Claude Code reads one (gitignore-style, in
    the session's working directory, the agent's workdir): `//etc/*` is absolute; `/docs/*` and a
    pattern with a slash inside (`docs/*`) are anchored at the workdir; one without (`*.md`,
    `./secret.txt`) names a file or dir at any depth; a matched dir covers what is in it; `*` stays
    within one path part, `**` crosses them. Claude Code's file tools pass absolute paths, so a rule
    compared with the path as written (`Edit(./README.md)`) never matched one: a forbidden edit passed."""
    if not isinstance(path, str) or not path.startswith("/") or not pattern or pattern.startswith("~"):
        return False
    full = posixpath.normpath(path)
    if pattern.startswith("//"):
        return _glob(pattern[1:], anchored=True).fullmatch(full)
    if not cwd:
        return False
    root = posixpath.normpath(cwd).rstrip("/")
    if not full.startswith(root + "/"):
        return False
    rel = full[len(root) + 1:]
    want = pattern
    while want.startswith("./"):
        want = want[2:]
    anchored = want.startswith("/") or "/" in want.rstrip("/")
    want = want.strip("/")
    return bool(want) and _glob(want, anchored=anchored).fullmatch(rel)


class _Glob:
    """A gitignore-style path pattern matched against a whole path (`*` one part, `**` any parts; a match
    of a dir covers its contents; unanchored, any depth), as the regex `(?:.*/)?` + pattern (`*` ->
    `[^/]*`, `**` or `**/` -> `.*`) + `(?:/.*)?` would, read by the pattern's states all at once (one
    pass over the path, as bits of an int): a backtracking regex retried each `*` at every split of the
    rest (`//a*a*a*b` against a path of 2,000 `a`s: ~2 s, 4,000: ~15 s; each more `*` a power more)."""

    def __init__(self, pattern: str, *, anchored: bool) -> None:
        self.anchored = anchored
        self.lit: dict[str, int] = {}          # char -> the states that read it
        self.any = self.part = 0               # the states of `**` (any text) and `*` (no `/`)
        state = 0
        for piece in re.split(r"(\*\*/?|\*)", pattern):
            if piece.startswith("**") or piece == "*":
                if piece == "*":
                    self.part |= 1 << state
                else:
                    self.any |= 1 << state
                state += 1
                continue
            for ch in piece:
                self.lit[ch] = self.lit.get(ch, 0) | 1 << state
                state += 1
        self.final = 1 << state

    def _closed(self, states: int) -> int:
        while True:                             # a star may read nothing: its next state too
            more = states | (states & (self.any | self.part)) << 1
            if more == states:
                return states
            states = more

    def fullmatch(self, path: str) -> bool:
        states = self._closed(1)
        for ch in path:
            if ch == "/" and states & self.final:
                return True                     # a matched dir covers what is in it
            states = ((states & self.lit.get(ch, 0)) << 1) | (states & self.any) | (
                states & self.part if ch != "/" else 0)
            if ch == "/" and not self.anchored:
                states |= 1                     # unanchored: the pattern may start after any `/`
            states = self._closed(states)
        return bool(states & self.final)


def _glob(pattern: str, *, anchored: bool) -> _Glob:
    return _Glob(pattern, anchored=anchored)
