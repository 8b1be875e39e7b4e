"""Reading an interpreter's argv past its options: which word is the script it runs (pre-flight checks
it exists, assay.judge.config; assay.judge.command_files binds it), or the module / code it runs.
Nothing here reads a file.
"""

from __future__ import annotations

import posixpath
import re

SHELLS = ("sh", "bash", "dash", "zsh", "ksh")
PYTHON = re.compile(r"^(python|pypy)[0-9.]*$")
PY_VALUE_OPTIONS = "WX"   # `-W ignore`, `-X dev`: the next word (or the rest of the cluster) is their value
PY_LONG_VALUE_OPTIONS = ("--check-hash-based-pycs",)


def python_target(argv: list[str]) -> tuple[str, int, str] | None:
    """What a `python [options] ...` argv runs, read past the interpreter's options (clustered `-uB`,
    `-W ignore`, `-X dev`, `--`): ("m", i, module) / ("c", i, code) with i the index of the word holding
    it, ("script", i, path) for the script, or None (nothing named, `-` for stdin)."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return ("script", i + 1, argv[i + 1]) if i + 1 < len(argv) and argv[i + 1] != "-" else None
        if arg.startswith("--"):
            i += 2 if arg in PY_LONG_VALUE_OPTIONS else 1
            continue
        if not arg.startswith("-") or arg == "-":
            return ("script", i, arg) if arg != "-" else None
        for j, letter in enumerate(arg[1:], 1):
            rest = arg[j + 1:]
            if letter in "cm":
                if rest:
                    return letter, i, rest
                return (letter, i + 1, argv[i + 1]) if i + 1 < len(argv) else None
            if letter in PY_VALUE_OPTIONS:
                i += 0 if rest else 1   # the value is the rest of the word, or the next word
                break
        i += 1
    return None


def script_index(argv: list[str]) -> int | None:
    """The index of the word an interpreter's argv runs as its script, past the interpreter's options
    (`[python3, -u, judge.py]`: 2; `[node, --no-warnings, judge.js]`: 2), or None (`python -m`/`-c`,
    a shell's `-c` string, no such word): what pre-flight checks exists."""
    if len(argv) < 2:
        return None
    exe = posixpath.basename(argv[0])
    if PYTHON.match(exe):
        target = python_target(argv)
        return target[1] if target and target[0] == "script" and target[1] < len(argv) else None
    for i, arg in enumerate(argv[1:], 1):
        if not arg.startswith("-") or arg == "-":
            return i if arg != "-" else None
        if exe in SHELLS and not arg.startswith("--") and "c" in arg[1:]:
            return None   # `bash -c STRING`: the string is read apart (Reader), never a path
    return None
