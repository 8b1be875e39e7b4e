"""The pytest plugin (entry point `pytest11: assay`): `pytest --assay STATE_DIR`.

One test item per case of the plan, the runner run once for all of them, the gate as the
session's outcome (references/pytest-plugin.md). This module only adds the options: nothing
activates, imports or runs unless --assay is given (every pytest run in an environment
where assay is installed loads it).
"""

from __future__ import annotations

import pytest

MODES = ("smoke", "regression", "targeted")
DEPENDENT = ("assay_mode", "assay_tag", "assay_k", "assay_baseline", "assay_resume")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("assay", "assay: the eval suite as test items (references/pytest-plugin.md)")
    group.addoption("--assay", metavar="STATE_DIR", default=None,
                    help="plan and run the app's assay suite (its .assay state dir) and report one test item "
                         "per case; the session fails when the gate closes")
    group.addoption("--assay-mode", choices=MODES, default=None,
                    help="run mode: smoke | regression (make_plan.py's default) | targeted (needs --assay-tag)")
    group.addoption("--assay-tag", metavar="T", default=None,
                    help="targeted: the cases whose unit or expect.route is T")
    group.addoption("--assay-k", metavar="N", type=int, default=None, help="repeats per case (not under smoke)")
    group.addoption("--assay-baseline", metavar="auto|RUN_DIR", default=None,
                    help="compare with a baseline run (auto: the run the gate compares with, gate.py --baseline auto) and "
                         "show the paired comparison in the terminal report")
    group.addoption("--assay-resume", action="store_true", default=None,
                    help="finish this state dir's interrupted pytest run of the same plan (its finished cases "
                         "are kept, as measured then) instead of starting a new run")


def _ini_keys_meant_as_options(config: pytest.Config) -> list[str]:
    """The ini keys pytest does not know whose name starts with `assay` (`assay = .assay`,
    `assay_mode = smoke`): pytest only warns about them, and the session ran without the suite."""
    unknown = getattr(config, "_get_unknown_ini_keys", None)   # pytest's own check (a private helper)
    try:
        keys = unknown() if callable(unknown) else ()
    except Exception:  # noqa: BLE001  (another pytest: no check rather than no session)
        keys = ()
    return sorted(k for k in keys if isinstance(k, str) and k.replace("-", "_").lower().startswith("assay"))


def pytest_configure(config: pytest.Config) -> None:
    meant = _ini_keys_meant_as_options(config)
    if meant:
        raise pytest.UsageError(
            f"{config.inipath or 'the ini file'}: {', '.join(meant)}: not an option the assay plugin reads from an "
            "ini file (pytest would only warn, and the session would run without it); give it on the command "
            "line, or for every session in addopts: addopts = --assay .assay --assay-mode smoke")
    state = config.getoption("assay", None)
    if state is None:
        given = [name for name in DEPENDENT if config.getoption(name, None) is not None]
        if given:
            raise pytest.UsageError(f"--{given[0].replace('_', '-')} needs --assay STATE_DIR "
                                    "(the app's .assay directory)")
        return
    if hasattr(config, "workerinput"):
        raise pytest.UsageError("--assay runs on the pytest-xdist controller only; run it with -n 0")
    config.addinivalue_line("markers", "assay: a case of the assay suite (pytest --assay; -m \"unit or assay\")")
    from .session import AssaySession
    config.pluginmanager.register(AssaySession(config, state), "assay-session")
