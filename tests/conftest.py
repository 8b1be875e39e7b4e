import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import os

# Scripts driven by tests run in the test venv, which has every dependency; a test that
# simulates a missing package must get the exit-2 message, not a bootstrapped venv.
# tests/test_bootstrap.py removes this to prove the bootstrap itself.
os.environ.setdefault("ASSAY_NO_BOOTSTRAP", "1")

# The suite starts a few thousand Python processes (every script is driven as a subprocess). With
# PYTHONDONTWRITEBYTECODE set in the environment each of them would compile every module it imports
# from source (~0.15 s a process): the suite lets Python keep bytecode. Beside the sources (ignored by
# git), not under a PYTHONPYCACHEPREFIX: a prefix would also hide the bytecode pip compiled into the
# venv at install, and a fresh machine would compile every dependency again (~3,000 modules of the
# framework apps alone, ~5 CPU-s).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# The example's judge and simulator stand-ins are commands (`python3 ../judge_standin.py`), run
# once a judge call or a user turn: with the venv's bin first on PATH (as an activated venv has
# it) `python3` is the test interpreter itself, not a version manager's shim script.
_venv_bin = os.path.dirname(sys.executable)
if os.path.isfile(os.path.join(_venv_bin, "python3")) and \
        os.environ.get("PATH", "").split(os.pathsep)[0] != _venv_bin:
    os.environ["PATH"] = _venv_bin + os.pathsep + os.environ.get("PATH", "")


@pytest.fixture(scope="module")
def s3_server():
    """One local S3 server (moto, tests/s3server.py) for a module's store tests: `served(bucket, handler,
    s3_server)` resets it to empty for each test. A test that kills the server or counts its requests
    starts its own (`served` without a server)."""
    from s3server import S3Server
    server = S3Server().start()
    try:
        yield server
    finally:
        server.stop()


def pytest_collection_modifyitems(session, config, items):
    """The slow files (marked `slow`: the end-to-end ones and any file that takes more than ~7 s)
    first, each file's tests in their order: with parallel workers (`--dist loadfile` hands out whole
    files in this order) a long file started last would end the suite alone on one core while the
    others sit idle. The Makefile passes `--no-loadscope-reorder`: without it pytest-xdist (3.x)
    re-sorts the files by how many tests each holds, which starts the one-test demo files last."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The green-path hunt lists its rows (tests/test_green_path_hunt.py: every planted regression
    through every path to a decision), so `make test`'s output says what it walked."""
    rows = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])
            if getattr(r, "when", "call") == "call" and "test_green_path_hunt.py::" in getattr(r, "nodeid", "")]
    if not rows:
        return
    terminalreporter.section("green-path hunt")
    for r in sorted(rows, key=lambda r: r.nodeid):
        terminalreporter.write_line(f"{'closed' if r.passed else 'OPEN  '}  {r.nodeid.split('::', 1)[1]}")
