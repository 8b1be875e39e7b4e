"""The command layer every script shares: argv in, JSON out, an exit code.

A script is `main = command(build_parser, run, needs=(...))`; `run(args)` returns
`(exit_code, json_or_None)` or raises AssayError. Only this module turns errors into
stdout JSON and exit statuses. A traceback is a bug: it prints on stderr with exit 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
from typing import Any, Callable, Iterable

from . import writer
from .errors import AssayError
from .version import version_line

# import name -> (pip name, why)
DEPENDENCIES = {
    "yaml": "pyyaml",
    "jsonschema": "jsonschema",
    "markdown": "markdown",
}
INSTALL_ALL = "pip install pyyaml jsonschema markdown"


# Imported only where first needed: a valid document never needs jsonschema (assay.schemas.fast),
# a JSON-only command never parses YAML, and importing them costs a process more than starting
# the interpreter does. So their presence is checked here without importing them (an absent one
# is the exit 2 below, or the bootstrap), and an install that is present but does not import is
# named where it is first imported (`missing_from` turns that ImportError into the same exit 2).
def missing_dependencies(needs: Iterable[str]) -> list[str]:
    """The modules in `needs` that are not installed."""
    missing = []
    for mod in needs:
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(mod)
    return missing


def missing_from(exc: ImportError) -> str | None:
    """The dependency a failed import is about, if it is one of ours (else None: a bug)."""
    name = (exc.name or "").split(".")[0]
    if name in DEPENDENCIES:
        return name
    text = str(exc)
    return next((mod for mod in DEPENDENCIES if re.search(rf"\b{mod}\b", text)), None)


def dependency_error(missing: list[str], script: str, why: str | None = None) -> AssayError:
    pips = " ".join(DEPENDENCIES.get(m, m) for m in missing)
    withs = " ".join(f"--with {DEPENDENCIES.get(m, m)}" for m in missing)
    extra = {"bootstrap": why} if why else {}
    return AssayError(
        f"missing Python package(s): {', '.join(missing)}"
        + (f" ({why})" if why else "")
        + f". Install with `pip install {pips}` "
        f"(or everything: `{INSTALL_ALL}`), or run without installing: "
        f"`uv run {withs} python {script} ...`",
        2,
        missing=missing,
        fix=f"pip install {pips}",
        **extra,
    )


class JsonArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are JSON on stdout with exit 2, like every other bad input."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise AssayError(f"{self.prog}: {message} (see --help)", 2, usage=self.format_usage().strip())


def make_parser(prog: str, description: str, example: str) -> JsonArgumentParser:
    parser = JsonArgumentParser(
        prog=prog,
        description=description,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version_line())
    return parser


def emit(obj: Any, stream=None) -> None:
    stream = stream or sys.stdout
    # stdout is an output like any file: the registered secrets never reach it (core.writer)
    stream.write(json.dumps(writer.redact_value(obj), ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n")
    stream.flush()


def exit_now(code: int) -> None:
    """End the process with `code` once its work and output are done, skipping the interpreter's
    teardown: exit handlers run (the regex workers are closed), stdout/stderr are flushed,
    then os._exit. Deallocating a large run's objects one by one took 50-150 ms at the end of
    a 2,000-case run, after every file was written and closed (the runner writes with os.write
    and closes its descriptors itself). Under a profiler, coverage or a debugger: a normal exit."""
    import atexit
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's; elsewhere: a normal exit
    if run_exit_handlers is None or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # a profiler, coverage or a debugger writes its results at a normal exit
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _reconfigure_utf8() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(encoding="utf-8")  # type: ignore[attr-defined]
        except (AttributeError, ValueError):
            pass


def run_command(
    build_parser: Callable[[], argparse.ArgumentParser],
    run: Callable[[argparse.Namespace], tuple[int, Any]],
    *,
    needs: Iterable[str] = (),
    argv: list[str] | None = None,
    script: str = "",
) -> int:
    _reconfigure_utf8()
    writer.register_secrets([])  # each command starts with none; the runner registers its own
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)  # --help / --version exit 0 here, before any dependency check
        missing = missing_dependencies(needs)
        if missing:
            # Re-enter the prepared environment (core/bootstrap.py); returns only when it cannot.
            from .bootstrap import ensure_dependencies
            failed = ensure_dependencies(missing, script or sys.argv[0], argv)
            why = f"{failed.reason}; fix: {failed.fix}" if failed else None
            raise dependency_error(missing, script or parser.prog, why)
        code, out = run(args)
        if out is not None:
            emit(out)
        return code
    except AssayError as err:
        emit(err.to_json())
        return err.code
    except KeyboardInterrupt:
        emit({"error": "interrupted"})
        return 130
    except SystemExit:
        raise
    except ImportError as exc:
        mod = missing_from(exc)
        if mod is None:
            return _internal_error(exc, script)
        err = dependency_error([mod], script or os.path.basename(sys.argv[0]))   # installed, but broken
        emit(err.to_json())
        return err.code
    except BaseException as exc:  # a traceback is a bug: say so, exit 1
        return _internal_error(exc, script)


def _internal_error(exc: BaseException, script: str = "") -> int:
    """A traceback is a bug: say so, exit 1 (unless the machine ran out of disk or descriptors)."""
    from .resources import is_runner_resource, resource_error
    if is_runner_resource(exc):  # the disk or the descriptors ran out: the machine, not a bug
        name = os.path.basename(script or sys.argv[0])   # scripts pass __file__: the name, not the path
        err = resource_error(exc, what=name if name.endswith(".py") else f"{name}.py")
        emit(err.to_json())
        return err.code
    import traceback   # only a bug pays for it
    sys.stderr.write(writer.redact_text(traceback.format_exc()))
    emit({"error": f"internal error: {type(exc).__name__}: {exc}", "internal": True})
    return 1
