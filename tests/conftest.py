import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import os

# Scripts driven by tests run in the test venv, which has every dependency; a test that
# simulates a missing package must get the exit-2 message, not a bootstrapped venv.
# tests/test_bootstrap.py removes this to prove the bootstrap itself.
os.environ.setdefault("ASSAY_NO_BOOTSTRAP", "1")

# The suite starts a few thousand Python processes (every script is driven as a subprocess). With
# PYTHONDONTWRITEBYTECODE set in the environment each of them compiles every module it imports
# from source (~0.15 s a process); the bytecode goes to a cache outside the tree instead.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None or not os.environ.get("PYTHONPYCACHEPREFIX"):
    import tempfile
    os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), f"assay-pycache-{os.getuid()}"))

# The example's judge and simulator stand-ins are commands (`python3 ../judge_standin.py`), run
# once a judge call or a user turn: with the venv's bin first on PATH (as an activated venv has
# it) `python3` is the test interpreter itself, not a version manager's shim script.
_venv_bin = os.path.dirname(sys.executable)
if os.path.isfile(os.path.join(_venv_bin, "python3")) and \
        os.environ.get("PATH", "").split(os.pathsep)[0] != _venv_bin:
    os.environ["PATH"] = _venv_bin + os.pathsep + os.environ.get("PATH", "")


import pytest  # noqa: E402


@pytest.hookimpl(tryfirst=True)   # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    """The tests that share a module-scoped fixture (an example run, a built venv) run on one xdist
    worker (`--dist loadgroup`, the Makefile's): under plain `load` every worker that drew one of
    them would build the fixture again. Every other test spreads one by one as before."""

    for item in items:
        if _has_module_fixture(item) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.path.stem))


def _has_module_fixture(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if fixturedef.scope in ("module", "package", "session") and \
                    str(getattr(fixturedef, "baseid", "")).split("::")[0].endswith(item.path.name):
                return True
    return False
