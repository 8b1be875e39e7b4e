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
  `command` and `env` dropped, and the shell's keywords in front, `if`, `then`, `do`, ...; a `for`/`case`
  header and a builtin that runs no file, `echo`, `set`, `export`, ..., skipped) read by the same rules,
  keyed by the word as written;
- a shell script file: `bash judge/judge.sh` (a shell given a file, past its options), the command itself
  when it is a `.sh` file or has a shell's shebang (`[./judge/judge.sh]`), and a file `.`/`source` runs
  from one: that file, and its commands read as a `bash -c` string's are, line by line (a command over
  several lines read whole, named by its first line; a here-document's body is not read), to the same
  MAX_DEPTH, with `$(dirname "$0")`, `$(dirname -- "$0")`, backquotes and `${0%/*}` the script's own
  directory as it is run (`"$(dirname "$0")/grade.py"` in judge/judge.sh binds `judge/grade.py`);
- `env [VAR=value ...] CMD ...`: CMD's argv.

What it cannot bind, `problems` says (score_agreement.py --write refuses it: a calibration must not
stand for a judge whose code it cannot see): a shell string or script line that does not parse, one that
changes directory (`cd`, `pushd`: the files it names are not where the state dir says), a word of either
that names a script (SCRIPT_SUFFIXES) which is not a file under the state dir (`$DIR/grade.py`: any
other variable or `$(...)`), a file a shell is given that is not there, and a script the argv names
(past the interpreter's options: `[python3, -u, judge.py]`) that is not a file. A script line's problem
is named by file and line (`judge/judge.sh line 3`) and says the fix.
"""

from __future__ import annotations

import os
import posixpath
import re
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
KEYWORDS = ("if", "then", "else", "elif", "do", "while", "until", "!", "{", "}")   # what follows is the command
HEADERS = ("for", "case", "select", "function")   # a loop's words, a case's, a function's name: nothing runs
NO_RUN = ("echo", "printf", ":", "true", "false", "set", "shift", "exit", "return", "wait", "export", "local",
          "readonly", "declare", "unset")   # builtins that run no file, whatever their words name
SOURCES = (".", "source")   # run a shell script in the same shell
SHELL_VALUE_OPTIONS = ("-o", "+o", "-O", "+O")   # `bash -o pipefail judge.sh`: the next word is their value
# `$(dirname "$0")` (`-- "$0"`, backquotes, `${0}`) and `${0%/*}`: the directory of the script being read;
# `$(dirname "${BASH_SOURCE[0]}")`: the directory of the file being read (a sourced one's own)
_ZERO = r'"?\$(?:0|\{0\}|(?P<src>BASH_SOURCE|\{BASH_SOURCE(?:\[0\])?\}))"?'
DIRNAME = re.compile(r'(?:\$\(|`)\s*dirname\s+(?:--\s+)?' + _ZERO + r'\s*(?:\)|`)|(?P<strip>\$\{0%/\*\})')


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
        self._fix: dict[str, str] = {}   # a shell script's line -> how to make what it runs findable
        self._read: set[Path] = set()    # the shell scripts read (each once: one that runs itself ends)
        self._zero: str | None = None    # `$0` of the shell script being read, as the judge runs it

    def _problem(self, where: str, text: str) -> None:
        fix = self._fix.get(where)
        self.problems.append(f"{text} ({fix})" if fix else text)

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
        if exe in SHELLS and self._shell(argv, names, depth, shell):
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
                    self._problem(where, f"{where} names {arg!r}, which is not a file under the state dir" if shell
                                  else f"{where} names {arg!r}, which is not a file (it resolves to {path}; "
                                  "a relative path is from the state dir)")
                    continue
                self._bind(arg, path)   # keyed by the argument as written: never a value on disk
                if i == 0 and is_shell_script(path) or i == 1 and exe in SOURCES:
                    # `[./judge/judge.sh]`, `. lib.sh`: what the script runs is the judge too
                    self._script(runs, path, depth, zero=runs if i == 0 else self._zero)

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

    def _shell(self, argv: list[str], names: list[str], depth: int, shell: str | None) -> bool:
        """`bash -c STRING`: each command of STRING read (True); `bash [options] judge`: the file it runs
        bound and read as a shell script when it is one, and False (the generic rule binds a script named
        by its suffix, or says it is not a file)."""
        i = 1
        while i < len(argv):
            arg = argv[i]
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
                text = argv[i + 1] if i + 1 < len(argv) else ""
                where = shell or f"{self.source} {names[i + 1] if i + 1 < len(names) else names[i]}"
                self._string(text, where, depth)
                return True
            if arg.startswith(("-", "+")):
                i += 2 if arg in SHELL_VALUE_OPTIONS else 1
                continue
            runs = resolved_arg(arg, self.env)
            path = self._path(runs)
            if path.is_file():
                self._bind(arg, path)   # `bash judge`: the file it runs, whatever its name
                self._script(runs, path, depth, zero=runs)
            elif not runs.endswith(SCRIPT_SUFFIXES):   # a script by its suffix: the generic rule says it
                where = shell or f"{self.source} {names[i]}"
                self._problem(where, f"{where} runs {arg!r} with {argv[0]}, which is not a file under the state dir")
            return False
        return False

    def _string(self, text: str, where: str, depth: int) -> None:
        if depth >= MAX_DEPTH:
            self.problems.append(f"{where} runs a shell string inside {MAX_DEPTH} shells; it is not read")
            return
        try:
            words = shell_words(text)
        except ValueError as exc:
            self.problems.append(f"{where}: the shell string does not parse ({exc})")
            return
        self._commands(commands_of(words), where, depth)

    def _commands(self, commands: list[list[str]], where: str, depth: int) -> None:
        """Each simple command of a shell string or script read by the argv rules, past the shell's
        keywords (`if`, `then`, `do`, ...); a loop's or case's header and a builtin that runs no file skipped."""
        for command in commands:
            while command and command[0] in KEYWORDS:
                command = command[1:]
            if not command or command[0] in HEADERS + NO_RUN:
                continue
            if command[0] in CHDIR:
                self._problem(where, f"{where} changes directory ({command[0]}), so the files it runs are not "
                              "where the state dir says")
                continue
            self._argv(command, [where] * len(command), depth + 1, shell=where)

    def _script(self, runs: str, path: Path, depth: int, zero: str | None) -> None:
        """A shell script file the judge runs (`[bash, judge/judge.sh]`, `[./judge/judge.sh]`, `. lib.sh`):
        read as a `bash -c` string is, line by line (a command over several lines, a `\\` continuation or an
        open quote, is read whole and named by its first line; a here-document's body is not read), with
        `$(dirname "$0")` the script's own directory (`runs`, the path it is run by, is `$0`; `zero`)."""
        if path.resolve() in self._read:
            return
        self._read.add(path.resolve())
        if depth >= MAX_DEPTH:
            self.problems.append(f"{runs} is a shell script run inside {MAX_DEPTH} shells; it is not read")
            return
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            self.problems.append(f"{runs}: the shell script cannot be read ({type(exc).__name__})")
            return
        outer, self._zero = self._zero, zero
        fix = (f'in {runs}, name each script it runs by its path from the state dir (the judge\'s working '
               'directory) or as "$(dirname "$0")/NAME", with no cd')
        n, heredoc = 0, None
        while n < len(lines):
            start, text = n, lines[n]
            n += 1
            if heredoc is not None:   # a here-document's body is the command's input, not commands
                heredoc = None if text.lstrip("\t") == heredoc else heredoc
                continue
            while True:
                while text.endswith("\\") and n < len(lines):
                    text, n = text[:-1] + lines[n], n + 1
                try:
                    words = shell_words(self._dirnames(text, runs))
                    break
                except ValueError as exc:
                    if n >= len(lines):
                        self.problems.append(f"{runs} line {start + 1}: the shell script does not parse ({exc})")
                        words = []
                        break
                    text, n = text + "\n" + lines[n], n + 1
            for here, word in zip(words, words[1:]):
                if here == "<<":
                    heredoc = word.lstrip("-")
            where = f"{runs} line {start + 1}"
            self._fix[where] = fix
            self._commands(commands_of(words), where, depth)
        self._zero = outer

    def _dirnames(self, text: str, runs: str) -> str:
        """`$(dirname "$0")/grade.py` -> `judge/grade.py` (the directory of `$0`, or of the file being read
        for `${BASH_SOURCE[0]}`); `${0%/*}` as the shell expands it. `$0` unknown (a file sourced from a
        `bash -c` string): left as written, so a script it names is a problem."""
        def sub(m: re.Match) -> str:
            zero = runs if m.group("src") else self._zero
            if zero is None:
                return m.group(0)
            if m.group("strip"):
                return posixpath.dirname(zero) if "/" in zero else zero
            return posixpath.dirname(zero) or "."
        return DIRNAME.sub(sub, text)


def shell_words(text: str) -> list[str]:
    """A shell string's words and operators (`;`, `&&`, `|`, `(`, a newline, ...); ValueError when it does
    not parse (an open quote)."""
    lex = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")   # a newline ends a command too
    lex.whitespace, lex.commenters, lex.whitespace_split = " \t\r", "", True
    return list(lex)


def commands_of(words: list[str]) -> list[list[str]]:
    """The simple commands of shell_words' list (split at operators, comments dropped)."""
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
    return [c for c in commands if c]


def is_shell_script(path: Path) -> bool:
    """A `.sh` file, or a script whose first line is a shell's shebang (`#!/bin/sh`, `#!/usr/bin/env bash`)."""
    if path.suffix == ".sh":
        return True
    try:
        with path.open("rb") as fh:
            first = fh.readline(200).decode("utf-8", "replace")
    except OSError:
        return False
    words = first[2:].split() if first.startswith("#!") else []
    if words and posixpath.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return bool(words) and posixpath.basename(words[0]) in SHELLS


def command_files(argv: list[str], state: Path, env: Mapping[str, str] | None,
                  source: str = "judge/judge.yaml") -> tuple[dict[str, Path], list[str]]:
    """({key: file} of each file the command runs from the state dir, [why a part cannot be bound])."""
    reader = Reader(state, env, source).read([str(a) for a in argv])
    return reader.files, reader.problems
