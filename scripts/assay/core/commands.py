"""Where the commands are (scripts/<step>.py), and how to call one in-process.

In a checkout and in the plugin layout the commands sit beside the library, in scripts/;
a pip-installed wheel ships them as package data in assay/_commands/ (pyproject.toml maps
that package to scripts/). `SCRIPTS_DIR` is the one answer, used by the gate's re-check,
wait_run's resume command, make_plan's runner command, the `assay` console entry and the
Python API. The command list is whatever *.py files that directory holds: never a list
kept by hand.

`call(name, argv)` runs a command's own `build_parser` and `run` in this process, exactly
as `python3 scripts/<name>.py argv...` would, and hands back the exit code, the JSON
document it would print, and what it wrote on stdout and stderr.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import AssayError

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def scripts_dir() -> Path:
    shipped = PACKAGE_DIR / "_commands"  # a wheel install
    if (shipped / "run_cases.py").is_file():
        return shipped
    return PACKAGE_DIR.parent  # a checkout, an editable install, the plugin layout


SCRIPTS_DIR = scripts_dir()


def command_names() -> list[str]:
    """Every command there is: the stems of SCRIPTS_DIR/*.py (a script is a command)."""
    return sorted(p.stem for p in SCRIPTS_DIR.glob("*.py") if not p.name.startswith("_"))


def script_path(name: str) -> Path:
    path = SCRIPTS_DIR / f"{name}.py"
    if name.startswith("_") or "/" in name or not path.is_file():
        raise AssayError(f"no command {name!r} in {SCRIPTS_DIR}; commands: {', '.join(command_names())}", 2)
    return path


def summary_line(name: str, width: int = 96) -> str:
    """A command's docstring's first sentence, without its `name.py ...:` prefix (read, not imported)."""
    try:
        doc = ast.get_docstring(ast.parse(script_path(name).read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError, ValueError):
        return ""
    text = " ".join(doc.strip().split("\n\n")[0].split())
    if text.startswith(f"{name}.py") and ": " in text:
        text = text.split(": ", 1)[1]
    for end in (". ", "? "):
        if end in text:
            text = text[:text.index(end) + 1]
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


_LOADED: dict[str, ModuleType] = {}


def load(name: str) -> ModuleType:
    """The command's module (its `build_parser` and `run`), loaded from its file once per process."""
    if name not in _LOADED:
        path = script_path(name)
        spec = importlib.util.spec_from_file_location(f"assay._command_{name}", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        _LOADED[name] = module
    return _LOADED[name]


@dataclass
class Outcome:
    code: int                 # the exit code the script would exit with
    doc: Any                  # the JSON document it would print on stdout (None when it prints text)
    stdout: str = ""          # text it wrote on stdout (gate.py's summary without --json)
    stderr: str = ""          # text it wrote on stderr (warnings, the plan line)


# One command at a time in a process: a command's secrets (writer.register_secrets, what every file it
# writes is redacted of) and its captured stdout are the process's, so a second thread's command,
# clearing them as it starts and ends, would let a running command write the app's token to disk.
_ONE = threading.RLock()


def call(name: str, argv: list[Any], *, needs: tuple[str, ...] = (), capture_stderr: bool = True) -> Outcome:
    """Run command `name` in this process with `argv`; an AssayError becomes its error document.
    stderr (the runner's progress, warnings) is captured unless `capture_stderr=False`. Calls from
    several threads run one after another (`_ONE`)."""
    with _ONE:
        return _call(name, argv, needs=needs, capture_stderr=capture_stderr)


def _call(name: str, argv: list[Any], *, needs: tuple[str, ...], capture_stderr: bool) -> Outcome:
    from . import writer
    from .cli import dependency_error, missing_dependencies

    module = load(name)
    out, err = io.StringIO(), io.StringIO()
    writer.register_secrets([])  # each command starts with none; the runner registers its own
    try:
        with contextlib.redirect_stdout(out), \
                (contextlib.redirect_stderr(err) if capture_stderr else contextlib.nullcontext()):
            args = module.build_parser().parse_args([str(a) for a in argv])
            missing = missing_dependencies(needs)
            if missing:
                raise dependency_error(missing, str(script_path(name)))
            code, doc = module.run(args)
    except AssayError as exc:
        code, doc = exc.code, exc.to_json()
    except ImportError as exc:   # a dependency present but broken, met where it is first imported
        from .cli import missing_from
        mod = missing_from(exc)
        if mod is None:
            raise
        err = dependency_error([mod], str(script_path(name)))
        code, doc = err.code, err.to_json()
    except SystemExit as exc:  # --help / --version
        code, doc = (exc.code if isinstance(exc.code, int) else 0), None
    try:
        # what the script would print passes the same redaction (the runner's secrets still registered)
        doc = writer.redact_value(doc) if doc is not None else None
        return Outcome(code, doc, writer.redact_text(out.getvalue()), writer.redact_text(err.getvalue()))
    finally:
        writer.register_secrets([])


def run_script(name: str, argv: list[str]) -> None:
    """`assay <name> argv...`: the script as `python3 scripts/<name>.py argv...` runs it (its own exit)."""
    import runpy
    path = script_path(name)
    sys.argv = [str(path), *argv]
    runpy.run_path(str(path), run_name="__main__")
