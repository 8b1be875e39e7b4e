"""Dependencies with no manual step: a private virtual environment, made once, re-entered.

Every script runs on the standard library until it needs PyYAML, jsonschema or
Markdown. When one of them is missing from the interpreter that started it, the
command layer calls `ensure_dependencies`, which

1. finds the environment: `$ASSAY_VENV` if set, else `venv-<key>` under
   `$CLAUDE_PLUGIN_DATA` (the plugin's persistent data directory, set by Claude
   Code for the plugin's hooks) or under `${XDG_CACHE_HOME:-~/.cache}/assay`;
   `<key>` hashes the requirement list and the Python minor version, so a new
   list makes a new environment instead of patching an old one;
2. creates it if it is not ready (`python -m venv`, then `pip install` of
   RUNTIME_REQUIREMENTS (and OPTIONAL_REQUIREMENTS where a wheel of them is there), run from the
   interpreter's bundled pip wheel when it has one), under a file lock, built beside and renamed into place,
   so two scripts racing, or a kill half-way, never leave a half-made one in use;
3. re-executes the same script with the same arguments in that environment.

The plugin's SessionStart hook (`hooks/session_start.py`) does steps 1-2 ahead
of time and exports ASSAY_VENV for the session's shell calls. `ASSAY_NO_BOOTSTRAP=1`
turns all of this off (the script then names the pip command and exits 2).
Standard library only: this module must import where nothing else is installed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

# The one list of runtime requirements (pyproject.toml's `dependencies` is held to it by a test).
RUNTIME_REQUIREMENTS = ("PyYAML>=6.0", "jsonschema>=4.17", "Markdown>=3.4")
# Installed with them when a built wheel of it is there (pyproject.toml's `fast` extra, held to it by a
# test): the faster decoder of big run files (core.jsonio.bulk). Never needed: without it every answer
# is the same, a 100,000-case run's readers slower; a platform with no wheel builds the environment
# without it (one more pip run), never fails for it.
OPTIONAL_REQUIREMENTS = ("msgspec>=0.18",)
MIN_PYTHON = (3, 11)
READY_MARKER = ".assay-ready"
PIP_TIMEOUT_S = 600


class BootstrapError(Exception):
    """The environment could not be prepared; `fix` says what the person can do."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


def requirements_key(version: Sequence[int] | None = None) -> str:
    major, minor = (version or sys.version_info)[:2]
    text = "\n".join(RUNTIME_REQUIREMENTS + OPTIONAL_REQUIREMENTS) + f"\npython{major}.{minor}\n"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def venv_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("ASSAY_VENV"):
        return Path(env["ASSAY_VENV"]).expanduser()
    if env.get("CLAUDE_PLUGIN_DATA"):
        base = Path(env["CLAUDE_PLUGIN_DATA"]).expanduser()
    else:
        cache = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
        base = Path(cache).expanduser() / "assay"
    return base / f"venv-{requirements_key()}"


def venv_python(directory: Path) -> Path:
    if os.name == "nt":  # pragma: no cover - documented, not exercised here
        return directory / "Scripts" / "python.exe"
    return directory / "bin" / "python"


def is_ready(directory: Path) -> bool:
    try:
        return (directory / READY_MARKER).read_text().strip() == requirements_key() and \
            venv_python(directory).exists()
    except OSError:
        return False


def python_too_old(version: Sequence[int] | None = None) -> str | None:
    v = tuple((version or sys.version_info)[:2])
    if v < MIN_PYTHON:
        return (f"assay needs Python >= {MIN_PYTHON[0]}.{MIN_PYTHON[1]}; this is "
                f"{v[0]}.{v[1]} ({sys.executable})")
    return None


def _run(argv: list[str], what: str) -> None:
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=PIP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BootstrapError(f"{what} failed: {exc}", _manual_fix()) from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise BootstrapError(f"{what} failed (exit {proc.returncode}): {' | '.join(tail)}", _hint(what, tail))


def _manual_fix() -> str:
    return "pip install " + " ".join(f"'{r}'" for r in RUNTIME_REQUIREMENTS)


def _hint(what: str, tail: list[str]) -> str:
    joined = " ".join(tail).lower()
    if "ensurepip" in joined or "venv" in what and "no module named" in joined:
        return ("install the venv module (Debian/Ubuntu: `apt-get install python3-venv`), "
                f"or install the packages yourself: `{_manual_fix()}`")
    if any(s in joined for s in ("network", "connection", "resolve", "no matching distribution", "proxy")):
        return (f"no package index was reachable; on a machine with one run `{_manual_fix()}`, "
                "or point pip at your mirror (PIP_INDEX_URL) and retry")
    return _manual_fix()


def create_venv(directory: Path, log=None) -> None:
    """Build the environment beside `directory` and rename it into place (idempotent, locked)."""
    log = log or sys.stderr
    too_old = python_too_old()
    if too_old:
        raise BootstrapError(too_old, "install Python 3.11 or newer and start Claude Code (or the script) with it")
    directory.parent.mkdir(parents=True, exist_ok=True)
    lock_path = directory.parent / f".{directory.name}.lock"
    with open(lock_path, "a+") as lock:
        try:
            import fcntl
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - non-POSIX
            pass
        if is_ready(directory):
            return
        staging = directory.parent / f".{directory.name}.building-{os.getpid()}"
        _remove_tree(staging)
        print(f"assay: preparing its Python packages in {directory} (first use only; needs a "
              "package index) ...", file=log, flush=True)
        _build(staging)
        (staging / READY_MARKER).write_text(requirements_key() + "\n")
        _remove_tree(directory)
        # pyvenv.cfg names the base interpreter, not the venv's own path, so bin/python
        # works after the rename (its pip launcher scripts would not: call `python -m pip`).
        os.replace(staging, directory)


def bundled_pip_wheel() -> Path | None:
    """The pip wheel this Python ships for ensurepip, or None (a distribution that strips it)."""
    try:
        import ensurepip
    except ImportError:
        return None
    wheels = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    return wheels[-1] if wheels else None


def _build(staging: Path) -> None:
    """A venv at `staging` with pip and the runtime requirements. With the bundled pip wheel the
    venv is made without pip and one pip run from that wheel installs pip itself and the
    requirements, none of them byte-compiled at install (each module is compiled on its first
    import): `python -m venv` would byte-compile pip and setuptools first, ~5 CPU-seconds of a
    first use. Without the wheel it is `python -m venv`, then the venv's pip."""
    what = "installing " + ", ".join(RUNTIME_REQUIREMENTS)
    quiet = ["--quiet", "--disable-pip-version-check", "--no-input"]
    wheel = bundled_pip_wheel()
    if wheel is not None:
        _run([sys.executable, "-m", "venv", "--without-pip", str(staging)], "creating the virtual environment")
        pip = [str(venv_python(staging)), str(wheel / "pip"), "install", *quiet, "--no-compile", str(wheel)]
    else:
        _run([sys.executable, "-m", "venv", str(staging)], "creating the virtual environment")
        pip = [str(venv_python(staging)), "-m", "pip", "install", *quiet]
    names = [r.split(">")[0] for r in OPTIONAL_REQUIREMENTS]
    try:   # one pip run with the optional ones, a built wheel or nothing; without them when pip names one
        _run([*pip, *(f"--only-binary={n}" for n in names), *RUNTIME_REQUIREMENTS, *OPTIONAL_REQUIREMENTS], what)
    except BootstrapError as exc:
        if not any(n.lower() in exc.reason.lower() for n in names):
            raise   # no index, no venv module: the same error as without them, at once
        _run([*pip, *RUNTIME_REQUIREMENTS], what)


def _remove_tree(path: Path) -> None:
    import shutil
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, ignore_errors=True)


def opted_out() -> BootstrapError | None:
    """The error to give when `ASSAY_NO_BOOTSTRAP` turns the mechanism off (scripts and the hook), else None."""
    if os.environ.get("ASSAY_NO_BOOTSTRAP"):
        return BootstrapError("ASSAY_NO_BOOTSTRAP is set, so no environment was prepared", _manual_fix())
    return None


def ensure_dependencies(missing: list[str], script: str, argv: list[str]) -> BootstrapError | None:
    """Re-execute `script argv` inside the prepared environment (never returns on success).

    Returns a BootstrapError when it cannot (turned off, already inside it, or the
    environment could not be made); the caller turns that into the exit-2 message.
    """
    off = opted_out()
    if off is not None:
        return off
    directory = venv_dir()
    if os.environ.get("ASSAY_BOOTSTRAPPED"):
        return BootstrapError(f"still missing inside the prepared environment {directory} "
                              f"(delete it to rebuild it)", f"rm -rf '{directory}'")
    try:
        if not is_ready(directory):
            create_venv(directory)
    except BootstrapError as err:
        return err
    except OSError as exc:
        return BootstrapError(f"cannot prepare {directory}: {exc}", _manual_fix())
    python = str(venv_python(directory))
    env = dict(os.environ, ASSAY_BOOTSTRAPPED="1")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(python, [python, os.path.abspath(script), *argv], env)
    return None  # pragma: no cover - execve does not return
