"""pytest's selection of the case items, and where it came from (references/pytest-plugin.md, step 2).

A selection typed on the command line (-k, -m, --deselect, --lf, --sw) is the session's choice: it
runs just what it selects. One only in the configuration (`addopts = -m unit` in the ini file,
PYTEST_ADDOPTS, a plugin's collection hook) deselected cases nobody asked to leave out: with every
case gone the session passed on the user's own tests (exit 0, nothing sent to the app), with some
gone it gated the rest as if they were the suite. So a case the typed selection alone keeps (all of
them when nothing is typed) that the session deselected refuses the session before anything is sent:
`addopts = -m unit` with `pytest --assay .assay -k "not flaky"` is refused, not "not gated".
"""

from __future__ import annotations

import argparse
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
    sources = []
    for label, args in (("command line", list(config.invocation_params.args)),
                        (f"addopts in {config.inipath}" if config.inipath else "addopts",
                         list(config.getini("addopts") or [])),
                        ("PYTEST_ADDOPTS", shlex.split(os.environ.get("PYTEST_ADDOPTS", "")))):
        if args and any(d == dest for d, _, _ in selection(config, args)):
            sources.append(label)
    return _shown(flag, value) + f" ({', '.join(sources) or 'set by a plugin'})"


def _shown(flag: str, value: Any) -> str:
    shown = repr(value) if isinstance(value, str) else " ".join(map(repr, value)) if isinstance(value, list) else ""
    return f"{flag} {shown}".rstrip()


def _matches(kind: str, expr: str, item: pytest.Item) -> bool | None:
    """pytest's own -k / -m evaluation of `expr` on `item` (its private matchers, as _pytest.mark uses
    them); None when this pytest has other ones."""
    try:
        from _pytest.mark import KeywordMatcher, MarkMatcher
        from _pytest.mark.expression import Expression
        if kind == "keyword":
            matcher: Any = KeywordMatcher.from_item(item)
        elif hasattr(MarkMatcher, "from_markers"):   # pytest >= 8.1
            matcher = MarkMatcher.from_markers(item.iter_markers())
        else:
            matcher = MarkMatcher.from_item(item)
        return bool(Expression.compile(expr).evaluate(matcher))
    except Exception:  # noqa: BLE001  (another pytest's internals: assay cannot tell)
        return None


def _last_failed(config: pytest.Config) -> dict | None:
    """pytest's cache of the last failures, as its --lf plugin holds it (None: another pytest)."""
    lastfailed = getattr(config.pluginmanager.get_plugin("lfplugin"), "lastfailed", None)
    return lastfailed if isinstance(lastfailed, dict) else None


def _failed(lastfailed: dict, item: pytest.Item) -> bool:
    try:   # pytest 9 keys it by the item's structured id, earlier ones by its node id
        return item.nodeid in lastfailed or getattr(item, "id", None) in lastfailed
    except TypeError:
        return False


def kept_by(config: pytest.Config, ns: Any, item: pytest.Item | None, lf_others: bool | None = None) -> bool | None:
    """Whether the selection in `ns` (the command line's options) alone keeps `item`: True, False, or
    None when it cannot tell (--sw: pytest's cache decides; an item never collected; pytest's matchers
    not the ones assay reads). `lf_others`: what --lf does with an item that did not fail last time."""
    if item is None:
        return None
    verdicts: list[bool | None] = []
    for dest in ("keyword", "markexpr"):
        expr = (getattr(ns, dest, None) or "").strip()
        if expr:
            verdicts.append(_matches(dest, expr, item))
    prefixes = tuple(getattr(ns, "deselect", None) or ())
    if prefixes:
        verdicts.append(not item.nodeid.startswith(prefixes))
    if getattr(ns, "lf", False):
        lastfailed = _last_failed(config)
        verdicts.append(True if lastfailed and _failed(lastfailed, item) else lf_others)
    if getattr(ns, "stepwise", False):
        verdicts.append(None)
    return False if False in verdicts else None if None in verdicts else True


def _lf_others(config: pytest.Config, ns: Any, offered: list[pytest.Item]) -> bool | None:
    """What pytest's --lf (after the other typed options) does with an item that did not fail last time:
    drops it when a last failure is among the items those options keep, else keeps it (with no failure
    recorded: `--lfnf all`, the default, keeps all; `none` drops all)."""
    lastfailed = _last_failed(config)
    if lastfailed is None:
        return None
    if not lastfailed:
        return {"all": True, "none": False}.get(getattr(config.option, "last_failed_no_failures", None))
    others = argparse.Namespace(**{**vars(ns), "lf": False})
    failures = [kept_by(config, others, item) for item in offered if _failed(lastfailed, item)]
    return False if True in failures else None if None in failures else True


def config_selection_refused(config: pytest.Config, total: int, kept: int, dropped: list[pytest.Item | None],
                             offered: list[pytest.Item]) -> str | None:
    """The usage error for the `dropped` case items (None: a case never collected as an item) that the
    selection typed on the command line alone keeps (every one when nothing is typed) but the session
    deselected (its configuration's -m/-k/--deselect, a plugin's hook), naming the options, where each
    was set, and the fix; also when assay cannot tell and no case is left while the configuration holds
    a selection. `offered`: every item before any selection (what --lf looks among). None when the typed
    selection accounts for every dropped case."""
    args = list(config.invocation_params.args)
    typed = selection(config, args)
    try:
        ns = config._parser.parse_known_args(args) if typed else None
    except Exception:  # noqa: BLE001  (another pytest's parser: assay cannot tell)
        ns = None
    lf_others = _lf_others(config, ns, offered) if ns is not None and getattr(ns, "lf", False) else None
    verdicts = [True if not typed else kept_by(config, ns, item, lf_others) if ns is not None else None
                for item in dropped]
    typed_values = {dest: value for dest, _, value in typed}
    own = [one for one in selection(config, None) if typed_values.get(one[0]) != one[2]]   # not as typed
    by = "; ".join(described(config, *one) for one in own) or \
        "no selection option: a plugin's or conftest's pytest_collection_modifyitems"
    what = ("nothing was sent to the app and no gate decided, yet the session would pass on your own tests"
            if not kept else f"the gate would decide on the other {kept} alone, as if they were the suite")
    marks = any(dest in ("markexpr", "keyword") for dest, _, _ in own)
    fix = ("every case carries the marker `assay`: keep the cases with `or assay` in the expression "
           "(-m \"unit or assay\", -k \"not slow or assay\"), or " if marks else "")
    fix += ("take the filter out of the configuration; a selection typed on the command line (-k, -m, "
            "--deselect, --lf) runs just what it selects (a -m typed there replaces the configuration's -m, a -k its -k)")
    at = f"--assay {config.getoption('assay')}"
    on_line = ", ".join(_shown(flag, value) for _, flag, value in typed)
    if True in verdicts:
        whose = (f"that the selection typed on this command line ({on_line}) keeps were deselected by {by}"
                 if typed else f"deselected by {by}, not by a selection on this command line")
        return f"{at}: {verdicts.count(True)} of {total} case(s) {whose}: {what}. Fix: {fix}"
    if None in verdicts and not kept and own:
        why = ("--sw keeps what pytest's cache says" if "stepwise" in typed_values
               else f"pytest {pytest.__version__}'s selection internals are not the ones assay reads")
        return (f"{at}: all {total} case(s) were deselected, and assay cannot tell whether by the selection typed "
                f"on this command line ({on_line}; {why}) or by {by}: {what}. Fix: {fix}")
    return None
