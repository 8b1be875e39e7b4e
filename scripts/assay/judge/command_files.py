"""The files a command judge runs from the state dir, read from its argv (never run): part of the judge
as surely as judge.yaml (assay.judge.binding hashes them into the judge's identity).

- a script handed to an interpreter (`[python3, judge.py]`, `[node, judge.cjs]`: an argument ending in
  one of SCRIPT_SUFFIXES), or the command itself when it is a script or a relative path
  (`[judge/judge.py]`, `[./judge]`); a Python script's modules beside it (assay.judge.local_imports);
- `python -m pkg.mod` (`-mpkg.mod`): the module's files under the state dir, the command's working
  directory and so first on Python's import path (each package's `__init__.py`, the module's `.py`, or
  a package's `__main__.py`) and the modules they import from there; one that is not there is an
  installed module, bound like a program on PATH (by its argv only);
- `python -c CODE`: the modules CODE imports from the state dir;
- `bash -c STRING` (`sh`, `dash`, `zsh`, `ksh`; `-c` alone or in a cluster, `-ec`): each simple command
  of STRING (split at `;`, `&&`, `||`, `|`, `&`, parentheses, with leading `VAR=value` words, `exec`,
  `command` and `env` dropped) read by the same rules, keyed by the word as written; `bash judge.sh`
  (a shell given a file): that file;
- `env [VAR=value ...] CMD ...`: CMD's argv.

What it cannot bind, `problems` says (score_agreement.py --write refuses it: a calibration must not
stand for a judge whose code it cannot see): a shell string that does not parse, one that changes
directory (`cd`, `pushd`: the files it names are not where the state dir says), a word of a shell
string that names a script (SCRIPT_SUFFIXES) which is not a file under the state dir, and a script
the argv names (past the interpreter's options: `[python3, -u, judge.py]`) that is not a file.
"""

from __future__ import annotations

import os
import posixpath
import shlex
from pathlib import Path
from typing import Mapping

from ..core.secrets import ENV_REF
from .argv import PYTHON, SHELLS, python_target
from .config import SCRIPT_SUFFIXES
from .local_imports import follow, local_modules, module_files

CHDIR = ("cd", "pushd", "popd")
PREFIXES = ("exec", "command", "env", "nohup", "time")
MAX_DEPTH = 3   # a shell string running a shell string running ...: deeper is not followed


def runs_a_file(arg: str, *, first: bool) -> bool:
    """Whether a command argument is a script the judge runs: a script handed to an interpreter, or the
    command itself when it is a script or a relative path (editing it changes the judge as surely)."""
    if arg.endswith(SCRIPT_SUFFIXES):
        return True
    return first and "/" in arg and not os.path.isabs(arg)


def resolved_arg(arg: str, env: Mapping[str, str] | None) -> str:
    """A command argument with its `${VAR}`s filled from `env` (to find the script it names), or as
    written when one has no value."""
    names = ENV_REF.findall(arg)
    if not names or env is None or any(not env.get(n) for n in names):
        return arg
    return ENV_REF.sub(lambda m: str(env[m.group(1)]), arg)


class Reader:
    """Reads one judge's argv: `files` {key (the argument as written, or a path under the state dir):
    file} and `problems` (why a part of it cannot be bound), in words naming judge.yaml's command[i]."""

    def __init__(self, state: Path, env: Mapping[str, str] | None, source: str = "judge/judge.yaml") -> None:
        self.state, self.env, self.source = Path(state), env, source
        self.files: dict[str, Path] = {}
        self.problems: list[str] = []

    def read(self, argv: list[str]) -> "Reader":
        self._argv(argv, [f"command[{i}]" for i in range(len(argv))], 0)
        return self

    def _bind(self, key: str, path: Path) -> None:
        self.files.setdefault(key, path)
        where = posixpath.dirname(key)   # its modules: beside the argument as written, too
        for rel, module in local_modules(path):
            self.files.setdefault(f"{where}/{rel}" if where else rel, module)

    def _path(self, runs: str) -> Path:
        return Path(runs) if os.path.isabs(runs) else self.state / runs

    def _argv(self, argv: list[str], names: list[str], depth: int, shell: str | None = None) -> None:
        while argv and (argv[0] in PREFIXES or "=" in argv[0] and not argv[0].startswith(("-", "/", "."))):
            argv, names = argv[1:], names[1:]   # `env X=1 python3 judge.py`, `exec ...`: what they run
        if not argv:
            return
        exe = posixpath.basename(resolved_arg(argv[0], self.env))
        if exe in SHELLS and self._shell(argv, names, depth):
            return
        if PYTHON.match(exe) and self._python(argv, depth):
            return
        script = python_target(argv) if PYTHON.match(exe) else None
        script_at = script[1] if script and script[0] == "script" else None
        for i, arg in enumerate(argv):
            runs = resolved_arg(arg, self.env)   # [python3, "${JUDGE_SCRIPT}"]: the script the value names
            if runs_a_file(runs, first=i == 0) or i == script_at:   # python's script, past its options
                path = self._path(runs)
                if not path.is_file():
                    if i == script_at and not runs_a_file(runs, first=i == 0) and path.is_dir():
                        continue   # `python3 pkgdir`: a directory's __main__.py (not a script it names)
                    where = shell or f"{self.source} {names[i]}"
                    self.problems.append(f"{where} names {arg!r}, which is not a file under the state dir" if shell
                                         else f"{where} names {arg!r}, which is not a file (it resolves to {path}; "
                                         "a relative path is from the state dir)")
                    continue
                self._bind(arg, path)   # keyed by the argument as written: never a value on disk

    def _python(self, argv: list[str], depth: int) -> bool:
        """`python [options] -m mod` / `python [options] -c CODE`: bind what they run (True); any other
        python argv (a script, past the interpreter's options): False (the generic rule binds it)."""
        target = python_target(argv)
        if target is None or target[0] == "script":
            return False
        kind, _, value = target
        value = resolved_arg(value, self.env)
        if kind == "c":
            for rel, module in follow(self.state, [], source=value):
                self.files.setdefault(rel, module)
            return True
        parts = module_files(self.state, value)
        starts = [(self.state.joinpath(*p), p[:-1]) for p in parts]
        for p, (path, _) in zip(parts, starts):
            self.files.setdefault(posixpath.join(*p), path)
        for rel, module in follow(self.state, starts):
            self.files.setdefault(rel, module)
        return True

    def _shell(self, argv: list[str], names: list[str], depth: int) -> bool:
        """`bash -c STRING`: each command of STRING read (True); `bash [options] judge`: the file it runs
        bound when it is one, and False (the generic rule binds a script named by its suffix)."""
        for i, arg in enumerate(argv[1:], 1):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
                text = argv[i + 1] if i + 1 < len(argv) else ""
                where = f"{self.source} {names[i + 1] if i + 1 < len(names) else names[i]}"
                self._string(text, where, depth)
                return True
            path = self._path(resolved_arg(arg, self.env))
            if not arg.startswith(("-", "+")) and path.is_file():
                self._bind(arg, path)   # `bash judge`: the file it runs, whatever its name
                return False
        return False

    def _string(self, text: str, where: str, depth: int) -> None:
        if depth >= MAX_DEPTH:
            self.problems.append(f"{where} runs a shell string inside {MAX_DEPTH} shells; it is not read")
            return
        try:
            lex = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")   # a newline ends a command too
            lex.whitespace, lex.commenters, lex.whitespace_split = " \t\r", "", True
            words = list(lex)
        except ValueError as exc:
            self.problems.append(f"{where}: the shell string does not parse ({exc})")
            return
        commands: list[list[str]] = [[]]
        comment = False
        for word in words:
            if word and all(c in "();<>|&\n" for c in word):
                commands.append([])
                comment = comment and "\n" not in word
            elif comment or word.startswith("#"):   # a comment, to the end of its line
                comment = True
            else:
                commands[-1].append(word)
        for command in (c for c in commands if c):
            if command[0] in CHDIR:
                self.problems.append(f"{where} changes directory ({command[0]}), so the files it runs are not "
                                     "where the state dir says")
                continue
            self._argv(command, [where] * len(command), depth + 1, shell=where)


def command_files(argv: list[str], state: Path, env: Mapping[str, str] | None,
                  source: str = "judge/judge.yaml") -> tuple[dict[str, Path], list[str]]:
    """({key: file} of each file the command runs from the state dir, [why a part cannot be bound])."""
    reader = Reader(state, env, source).read([str(a) for a in argv])
    return reader.files, reader.problems
