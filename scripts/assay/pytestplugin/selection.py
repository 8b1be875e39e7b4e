"""pytest's selection of the case items, and where it came from (references/pytest-plugin.md, step 2).

A selection typed on the command line (-k, -m, --deselect, --lf, --sw) is the session's choice: it
runs just what it selects. One only in the configuration (`addopts = -m unit` in the ini file,
PYTEST_ADDOPTS, a plugin's collection hook) deselected cases nobody asked to leave out: with every
case gone the session passed on the user's own tests (exit 0, nothing sent to the app), with some
gone it gated the rest as if they were the suite. Such a session is refused before anything is sent.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

import pytest

SELECTION = (("markexpr", "-m"), ("keyword", "-k"), ("deselect", "--deselect"), ("lf", "--lf"),
             ("stepwise", "--sw"))   # pytest's options that deselect collected items


def selection(config: pytest.Config, args: list[str] | None) -> list[tuple[str, str, Any]]:
    """(dest, flag, value) of the selection options in force: the session's (args None), or those
    `args` give on their own."""
    if args is None:
        ns: Any = config.option
    else:
        try:
            ns = config._parser.parse_known_args(args)   # pytest's own parser (every plugin's options)
        except Exception:  # noqa: BLE001  (another pytest: its flags as written, -k / -m / --deselect ...)
            return [(dest, flag, True) for dest, flag in SELECTION if any(str(a).startswith(flag) for a in args)]
    return [(dest, flag, getattr(ns, dest, None)) for dest, flag in SELECTION if getattr(ns, dest, None)]


def described(config: pytest.Config, dest: str, flag: str, value: Any) -> str:
    """`-m 'unit' (addopts in .../pytest.ini)`: the option as the session has it, and where it was set."""
    shown = repr(value) if isinstance(value, str) else " ".join(map(repr, value)) if isinstance(value, list) else ""
    sources = []
    for label, args in (("command line", list(config.invocation_params.args)),
                        (f"addopts in {config.inipath}" if config.inipath else "addopts",
                         list(config.getini("addopts") or [])),
                        ("PYTEST_ADDOPTS", shlex.split(os.environ.get("PYTEST_ADDOPTS", "")))):
        if args and any(d == dest for d, _, _ in selection(config, args)):
            sources.append(label)
    return f"{flag} {shown}".rstrip() + f" ({', '.join(sources) or 'set by a plugin'})"


def config_selection_refused(config: pytest.Config, total: int, kept: int) -> str | None:
    """The usage error for `total - kept` case(s) deselected with no selection on the command line
    (naming the options in force, where each was set, and the fix); None when the command line
    gave a selection of its own."""
    if selection(config, list(config.invocation_params.args)):
        return None
    active = selection(config, None)
    by = "; ".join(described(config, *one) for one in active) or \
        "no selection option: a plugin's or conftest's pytest_collection_modifyitems"
    what = ("nothing was sent to the app and no gate decided, yet the session would pass on your own tests"
            if not kept else f"the gate would decide on the other {kept} alone, as if they were the suite")
    marks = any(dest in ("markexpr", "keyword") for dest, _, _ in active)
    fix = ("every case carries the marker `assay`: keep the cases with `or assay` in the expression "
           "(-m \"unit or assay\", -k \"not slow or assay\"), or " if marks else "")
    return (f"--assay {config.getoption('assay')}: {total - kept} of {total} case(s) deselected by {by}, not by "
            f"a selection on this command line: {what}. Fix: {fix}take the filter out of the configuration; a "
            "selection typed on the command line (-k, -m, --deselect, --lf) runs just what it selects")
