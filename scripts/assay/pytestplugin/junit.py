"""The gate as a testcase of pytest's own JUnit XML (`--junitxml`), as `gate.py --junit` writes it.

Every case item can pass while the gate closes (a budget, the infra rate, a failed canary, a
hollow case, a replay miss): the session exits 1, and a report holding only the items read "all
tests passed" on every dashboard that reads JUnit. So the session's gate goes into the report
as one testcase more, classname `assay.gate`, name `gate` (gate_outputs.junit_xml's words):
failed with the gate's reasons when it closed, passed when it opened. It is handed to pytest's
junitxml plugin (LogXML) alone, as a report of its own: no collected item, so no terminal
line, no pass/fail count, no -k match, no --lf entry. The decision is the session's one call to
gate.py (assay.verdict); the reasons are its `gate closed: ...` lines, one per reason.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

NODEID = "assay.gate::gate"     # LogXML's classname `assay.gate`, name `gate`
REASON = "  gate closed: "      # gate_lines.summary_lines: one line per reason, last on the screen


class _GateFailure:
    """A failure's longrepr as LogXML reads one: `reprcrash.message` the one-line message attribute,
    str() the element's text."""

    def __init__(self, message: str, text: str) -> None:
        self.reprcrash = SimpleNamespace(message=message)
        self.text = text

    def __str__(self) -> str:
        return self.text

    def toterminal(self, tw: Any) -> None:   # a TerminalRepr's interface, should anything print it
        tw.line(self.text)


def reasons(gate_lines: list[str]) -> list[str]:
    """The gate's reasons, from its screen (each as gate.py printed it: controls shown, one line)."""
    return [line[len(REASON):] for line in gate_lines if line.startswith(REASON)]


def add_gate_testcase(config: pytest.Config, *, closed: bool, gate_lines: list[str],
                      run_dir: Any, where: str) -> None:
    """Hand the gate's testcase to the session's LogXML (nothing without --junitxml). `where`: the
    state dir as the case items' node ids name it (junit_family xunit1's `file` attribute)."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:   # another pytest's junitxml: the report as pytest writes it
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    screen = "\n".join(gate_lines + [f"run dir: {run_dir}"])
    longrepr = None
    if closed:
        why = reasons(gate_lines)
        if why:
            message, text = f"gate closed: {why[0]}", "\n".join(why)
        else:   # gate.py refused to decide (exit 2): the session fails, and so does this testcase
            message = text = f"gate not decided: {gate_lines[0]}"
        longrepr = _GateFailure(message, f"{text}\n\n{screen}")
    # the screen is the call's captured stdout: in <system-out> under junit_logging = system-out / all
    common = dict(nodeid=NODEID, location=(where, None, "gate"), keywords={}, duration=0.0,
                  sections=[("Captured stdout call", screen + "\n")])
    xml.pytest_runtest_logreport(pytest.TestReport(
        outcome="failed" if closed else "passed", longrepr=longrepr, when="call", **common))
    xml.pytest_runtest_logreport(pytest.TestReport(outcome="passed", longrepr=None, when="teardown", **common))
