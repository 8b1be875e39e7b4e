"""The words a failed check is printed with, one definition for the report, JUnit and clusters.

- `check_label(check)`: a layer check's name. Answer checks carry `check` (`must_contain`);
  argument checks (`tool_selection`) carry `tool` and `arg` instead: `issue_refund.amount`,
  or `issue_refund (not called)` when the tool never ran. Never `None`.
- `judged_failures(run_dir, case_id)`: the failed criteria of a judged case, read from its
  `judge.json` (the verdict's judged layer holds only the rubric verdicts): each
  `{pin, node_id, criterion, reason}` of a failed node of a failed rubric. A holdout case's
  judge.json is never read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..core.ids import is_safe_case_id
from ..core.jsonio import loads
from .facts import read_case_file


def check_label(check: Mapping[str, Any]) -> str:
    name = check.get("check")
    if name is not None:
        return str(name)
    tool, arg = check.get("tool"), check.get("arg")
    if tool is not None and arg is not None:
        return f"{tool}.{arg}"
    if tool is not None:
        return f"{tool} (not called)" if check.get("reason") == "tool_not_called" else str(tool)
    return "check"


def judged_failures(run_dir: Path, case_id: str) -> list[dict[str, str]]:
    if not is_safe_case_id(case_id):
        return []
    try:
        verdict = loads(read_case_file(run_dir, case_id, "verdict.json") or "null")
        doc = loads(read_case_file(run_dir, case_id, "judge.json") or "null")
    except ValueError:
        return []
    if not isinstance(doc, dict) or (isinstance(verdict, dict) and verdict.get("holdout")):
        return []
    out = []
    for rubric in doc.get("rubrics") or []:
        if not isinstance(rubric, dict) or rubric.get("verdict") != "fail":
            continue
        for node in rubric.get("nodes") or []:
            if isinstance(node, dict) and node.get("verdict") == "fail":
                out.append({"pin": str(rubric.get("pin")), "node_id": str(node.get("node_id")),
                            "criterion": " ".join(str(node.get("criterion") or "").split()),
                            "reason": " ".join(str(node.get("reason") or "").split())})
    return out


def judged_words(layer: Mapping[str, Any], failures: list[dict[str, str]]) -> str:
    """'refund-eta-v1 states-arrival: The reply says when … (judge: no arrival time)'; without
    judge.json, the failed rubric pins (never the layer's raw JSON)."""
    if failures:
        return "; ".join(f"{f['pin']} {f['node_id']}: {f['criterion']}" + (f" (judge: {f['reason']})" if f["reason"] else "")
                         for f in failures)
    pins = [str(r.get("pin")) for r in layer.get("rubrics") or [] if isinstance(r, dict) and r.get("verdict") == "fail"]
    return ("rubric(s) failed: " + ", ".join(pins) + " (criteria in judge.json)") if pins else "the judge said fail"
