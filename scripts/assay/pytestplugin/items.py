"""The test items: one per case, its outcome read from the finished run dir.

pass -> passed; fail -> failed with the failed layers' expected vs actual (the JUnit
message, gate_outputs), or xfailed when the case is `gating: false` (it cannot close the
gate; a canary is never gating, but a failed one stopped the run and closes it: failed); unscored or skipped -> skipped with the reason, or failed when the case is gating
and the gate counts it as not-a-pass (it closes the gate); infra_error/infra_incomplete ->
skipped with the reason (the gate decides on their rate); not in the run (the run stopped
early) -> skipped, saying so.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ..core.visible import show_controls


class CaseFailed(Exception):
    """A case whose verdict closes the gate; its text is the whole failure report."""


class AssaySuite(pytest.Collector):
    """The state dir's cases (collected as a node under the session)."""

    plugin: Any = None

    def collect(self):
        try:
            cases = self.plugin.collected_cases()
        except Exception as exc:  # noqa: BLE001  (a refusal names the command and its fix)
            raise self.CollectError(show_controls(str(exc))) from None
        for case in cases:   # a terminal shows the name: an escape sequence in an id is written \x1b
            # the item's location is its case file (`-vv`: `<state>::<id> <- <state>/datasets/<id>.yaml`,
            # an editor's jump target); its node id stays <state dir>::<case id>, whatever the file is called
            item = AssayCase.from_parent(self, name=show_controls(case["id"]),
                                         path=self.plugin.case_file(case["id"]) or self.path)
            item.case = case
            if item.path != self.path:
                item.case_file = os.path.relpath(item.path, self.config.invocation_params.dir)
            item.plugin = self.plugin
            item.add_marker("assay")   # -m "unit or assay" keeps the cases beside a marker selection
            words = [case.get("title"), case.get("unit"), (case.get("expect") or {}).get("route"),
                     case.get("category"), "canary" if "canary" in (case.get("split") or []) else None]
            item.extra_keyword_matches.update(w for w in words if isinstance(w, str) and w)
            yield item


class AssayCase(pytest.Item):
    case: dict = {}
    case_file = ""   # the case's file, relative to where pytest was started
    plugin: Any = None

    def reportinfo(self):
        title = self.case.get("title")
        return self.path, None, show_controls(f"{self.name}: {title}") if title else self.name

    @property
    def case_id(self) -> str:
        """The case's own id (`name` is it as a terminal may show it)."""
        return str(self.case.get("id", self.name))

    def runtest(self) -> None:
        outcome(self.plugin.run_dir, self.plugin.rows.get(self.case_id), self.plugin.not_run_reason)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            where = getattr(self, "case_file", "")   # where its expectation is edited
            return show_controls(str(excinfo.value) + (f"\ncase file: {where}" if where else ""))
        return super().repr_failure(excinfo, style=style)


def _messages(run_dir: Path, row: dict) -> tuple[str, str]:
    """(one-line message, full body) as the gate's JUnit output words them, plus the repeats at k > 1."""
    from ..report.gate_outputs import case_message, failure_text
    from ..report.rundir import case_verdict
    view = SimpleNamespace(run_dir=run_dir)
    msg = case_message(view, row)
    body = failure_text(view, row, msg)
    repeats = (case_verdict(run_dir, str(row.get("case_id"))) or {}).get("repeats")
    if isinstance(repeats, list) and len(repeats) > 1:
        verdicts = [r.get("verdict") for r in repeats if isinstance(r, dict)]
        body += (f"\nrepeats: {verdicts.count('pass')} of {len(verdicts)} passed ("
                 + ", ".join(f"#{i}: {v}" for i, v in enumerate(verdicts, 1)) + "); pass^k needs every one")
    return msg, body


def outcome(run_dir: Path | None, row: dict | None, not_run: str | None) -> None:
    """Raise the pytest outcome of one case's results row (return = passed)."""
    if row is None or run_dir is None:
        pytest.skip(show_controls(f"not run: {not_run or 'the run has no verdict for this case'}"))
    verdict = row.get("verdict")
    if verdict == "pass":
        return
    msg, body = (show_controls(t) for t in _messages(run_dir, row))   # the app's answer, for a terminal
    from ..report.gate_case import case_gate
    if verdict == "fail":
        if row.get("gating") is False and not case_gate(run_dir, row).closes:
            pytest.xfail(msg)
        raise CaseFailed(body)
    if case_gate(run_dir, row).closes:
        raise CaseFailed(f"{msg}\nthis gating case is {verdict}, not a pass: it closes the gate")
    pytest.skip(msg)
