"""`assay <command> [args...]`: the console entry point a pip install puts on PATH.

Each command is a script of scripts/ (assay.core.commands finds them: the checkout's
scripts/ or the wheel's assay/_commands/), run exactly as `python3 scripts/<name>.py args...`
runs it: same flags, same JSON, same exit code. The list is the scripts that exist, never a
list kept by hand. A command is named by its file name (`run_cases`, also `run-cases`), or
by its first word when no other script starts with that word (`assay gate`, `assay convert`);
`assay run` is the runner (run_cases; run_history is `assay run-history`).
"""

from __future__ import annotations

import sys

from .core.commands import SCRIPTS_DIR, command_names, run_script, summary_line

# The one shorthand a first word cannot give (run_cases and run_history share "run").
ALIASES = {"run": "run_cases"}


def resolve(word: str) -> str | None:
    """The command a word names, or None."""
    names = command_names()
    stem = word.replace("-", "_")
    if stem in names:
        return stem
    if stem in ALIASES and ALIASES[stem] in names:
        return ALIASES[stem]
    starting = [n for n in names if n.split("_")[0] == stem]
    return starting[0] if len(starting) == 1 else None


def near(word: str) -> list[str]:
    """The commands a word that names none may have meant: those sharing its first three letters,
    holding it as one of their words (`plan` -> make_plan, `cases` -> run_cases ...), or spelled
    closest to it (`gaet` -> gate); any case."""
    import difflib
    stem = word.replace("-", "_").lower()
    names = command_names()
    found = [n for n in names if n.startswith(stem[:3]) or stem in n.split("_")]
    found += difflib.get_close_matches(stem, names, n=1, cutoff=0.6)
    return list(dict.fromkeys(sorted(found)))


def short_names() -> dict[str, str]:
    """command -> the shorthand it answers to besides its file name (when there is one)."""
    out = {target: alias for alias, target in ALIASES.items()}
    for name in command_names():
        first = name.split("_")[0]
        if first != name and name not in out and resolve(first) == name:
            out[name] = first
    return out


def usage() -> str:
    lines = ["usage: assay <command> [args...]   (assay <command> --help for its flags)", "",
             "Run one of assay's commands, as `python3 scripts/<command>.py` does: same flags, same JSON",
             "on stdout, same exit code. Commands (from " + str(SCRIPTS_DIR) + "):", ""]
    shorts = short_names()
    names = command_names()
    width = max((len(n.replace("_", "-")) + len(shorts.get(n, "")) + 3 for n in names), default=10)
    for name in names:
        label = name.replace("_", "-") + (f" ({shorts[name]})" if name in shorts else "")
        lines.append(f"  {label:<{width}} {summary_line(name)}")
    lines += ["", "Python: `import assay.api` (references/python-api.md); pytest: `pytest --assay .assay`",
              "(references/pytest-plugin.md)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if argv[0] == "--version":
        from .core.version import version_line
        print(version_line())
        return 0
    name = resolve(argv[0])
    if name is None:
        close = [n.replace("_", "-") for n in near(argv[0])]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        from .core.cli import emit
        emit({"error": f"assay: no command {argv[0]!r}{hint}; `assay --help` lists them", "commands": command_names()})
        return 2
    run_script(name, argv[1:])
    return 0
