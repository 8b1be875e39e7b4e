"""One verdict (wave 4 §1): the gate's decision is made in one room and asked everywhere else.

The room: `assay.verdict` (the entry every surface calls) and the gate's rules in `assay.report`
(gate, gate_case, gate_reasons, gate_trust, gate_judge, interrupted). Read from the code with
`ast`, like tests/test_import_graph.py: outside the room no module may call the gate's evaluation,
build a GateResult, call a close rule, or write a decision ("gate": "open"/"closed") of its own.
Then the wave's findings, each pinned by a test that failed before the fix.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from helpers import ROOT, run_script
from rundir_util import make_run

SCRIPTS = ROOT / "scripts"
ROOM = {"assay/verdict/__init__.py", "assay/verdict/decide.py", "assay/verdict/baseline.py",
        "assay/report/gate.py", "assay/report/gate_case.py", "assay/report/gate_reasons.py",
        "assay/report/gate_trust.py", "assay/report/gate_judge.py", "assay/report/interrupted.py"}
DECIDERS = {"evaluate", "decide_against", "GateResult"}   # calling any of these builds a decision
CLOSE_RULE_SUFFIXES = ("_reason", "_closes")
# A close rule's words said where no decision is shown, by a package assay.verdict sits on (verdict.baseline
# imports compare, so compare cannot ask assay.verdict): compare's notes say a shard's dir is a slice of
# the plan in the gate's words, and decide nothing (the comparison's gate is verdict.baseline's).
WORDS_ONLY = {("assay/compare/document.py", "shard_reason")}


def _rel(path: Path) -> str:
    return path.relative_to(SCRIPTS).as_posix()


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    imported_from_room: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module.endswith(("report.gate", "report.gate_reasons", "report.gate_case", "report.gate_trust",
                                      "verdict.baseline"))
                or node.module in ("gate", "gate_reasons", "gate_case", "gate_trust")):
            for alias in node.names:
                name = alias.asname or alias.name
                if (alias.name in DECIDERS or alias.name.endswith(CLOSE_RULE_SUFFIXES)) \
                        and (_rel(path), alias.name) not in WORDS_ONLY:
                    imported_from_room.add(name)
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
            if name in imported_from_room:
                found.append(f"{_rel(path)}:{node.lineno}: calls {name}() (ask assay.verdict.decide)")
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "gate" and isinstance(value, ast.Constant) \
                        and value.value in ("open", "closed"):
                    found.append(f"{_rel(path)}:{node.lineno}: writes a decision {{'gate': {value.value!r}}}")
    return found


def test_no_module_outside_the_room_builds_a_decision():
    paths = [p for p in SCRIPTS.rglob("*.py") if _rel(p) not in ROOM]
    assert len(paths) > 250
    problems = [v for p in paths for v in _violations(p)]
    assert not problems, "\n".join(problems)


def test_the_check_can_fail(tmp_path):
    """The control: a module that decides on its own is caught."""
    rogue = SCRIPTS / "assay" / "view" / "_rogue_for_test.py"
    try:
        rogue.write_text("from ..report.gate import evaluate\nfrom ..report.gate_reasons import gating_reason\n"
                         "def f(d):\n    r = evaluate(d)\n    gating_reason({}, {})\n"
                         "    return {'gate': 'open'}\n", encoding="utf-8")
        found = _violations(rogue)
    finally:
        rogue.unlink()
    assert len(found) == 3, found


def test_every_surface_imports_the_one_decision():
    for rel in ("gate.py", "draft_report.py", "run_history.py", "compare_runs.py", "assay/view/gates.py"):
        text = (SCRIPTS / rel).read_text(encoding="utf-8")
        assert "assay.verdict" in text or "..verdict" in text, rel


# --- the findings (issue: one verdict, B) ------------------------------------------------------

def test_a_forbidden_id_written_in_another_shape_is_never_a_pass():
    from assay.score.authz import score_authz
    traj = {"tool_calls": [{"name": "lookup", "result": {"id": "INC-1002", "owner": "globex"}}],
            "tool_log": {"seen": True}}
    expect = {"authz": {"forbidden_record_ids": ["inc-1002"]}}
    out = score_authz(traj, expect, answer="Here is INC-1002", response_json=None, id_pattern=None)
    check = next(c for c in out["checks"] if c["check"] == "forbidden_record_ids")
    assert check["status"] == "unscorable" and "'INC-1002'" in check["reason"], check
    assert out["verdict"] != "pass"
    # written as the app writes it: the leak fails
    out = score_authz(traj, {"authz": {"forbidden_record_ids": ["INC-1002"]}}, answer="x", response_json=None,
                      id_pattern=None)
    assert out["verdict"] == "fail"
    # a pattern the id can never match: unscorable, never a pass, even with nothing leaked
    out = score_authz(traj, {"authz": {"forbidden_record_ids": ["inc-9"]}}, answer="x", response_json=None,
                      id_pattern=r"INC-\d+")
    assert out["verdict"] != "pass"


def test_missing_token_usage_is_incomplete_cost_never_zero(tmp_path):
    from assay.stats.cost import run_cost
    from assay.stats.cost_budget import budget_lines
    run_dir = make_run(tmp_path, [{"id": "c-1"}, {"id": "c-2"}],
                       manifest={"traces": {"source": "otlp-file", "collected": True, "disabled_layers": []}})
    for cid in ("c-1", "c-2"):
        (run_dir / "cases" / cid / "trajectory.json").write_text(json.dumps(
            {"llm_calls": [{"model": "m", "duration_ms": 5}]}), encoding="utf-8")   # no token usage
    prices = {"currency": "USD", "file": "prices.yaml", "per_token": {"m": {"input": 1e-6, "output": 1e-6}}}
    cost = run_cost(run_dir, prices)
    assert cost["totals"]["complete"] is False and cost["totals"]["calls_without_usage"] == 2
    assert "reported no token usage" in cost["totals"]["incomplete_reason"]
    close, _lines = budget_lines(cost, max_cost_per_case=1.0, max_p95_latency_s=None)
    assert close and "cannot be checked" in close[0] and "no token usage" in close[0]


def test_the_headline_names_the_first_reason_that_closed_it(tmp_path):
    run_dir = make_run(tmp_path, [{"id": "c-ok"}, {"id": "c-soft", "verdict": "fail", "gating": False}],
                       summary={"infra_rate": 0.2})
    r = run_script("gate", run_dir, "--no-verify")
    assert r.rc == 1
    head = r.stdout.splitlines()[0]
    assert head.startswith(f"{run_dir.name}: FAIL -- closed: infra rate 20.0% is above 5.0%"), head
    assert head.index("closed:") < head.index("gating:false")


def test_a_replay_miss_on_a_gating_case_closes_the_gate(tmp_path):
    run_dir = make_run(tmp_path, [{"id": f"c-{i}"} for i in range(31)]
                       + [{"id": "c-miss", "verdict": "infra_error",
                           "infra_reason": "replay miss: case c-miss: request 1 differs from the recording"}])
    r = run_script("gate", run_dir, "--no-verify", "--json")
    assert r.rc == 1, r.stdout
    assert any("were not measured: the replay could not answer them" in x and "c-miss" in x
               for x in r.json["reasons"]), r.json["reasons"]
    assert not any("infra rate" in x for x in r.json["reasons"])   # 1 of 32: under the infra bar


@pytest.mark.parametrize("gate", ["hard"])
def test_a_hard_gate_never_says_passed_all_k_over_unmeasured_cases(tmp_path, gate):
    run_dir = make_run(tmp_path, [{"id": f"c-{i}"} for i in range(30)]
                       + [{"id": "c-infra", "verdict": "infra_error", "infra_reason": "503 x3"}],
                       run_id="regression-20261129T101500Z", results={"gate": gate, "k": 3})
    r = run_script("gate", run_dir, "--no-verify")
    assert r.rc == 0, r.stdout
    rule = next(x for x in r.stdout.splitlines() if x.startswith("  hard gate"))
    assert "every gating case passed all k" not in rule and "1 gating case(s) were not measured" in rule


def test_the_gate_screen_never_passes_a_terminal_escape_from_app_text(tmp_path):
    run_dir = make_run(tmp_path, [{"id": "c-ok"}, {"id": "c-f", "verdict": "fail"}],
                       results={"cases": [{"case_id": "c-f", "verdict": "fail", "gating": True, "canary": False,
                                           "failed_layers": ["answer"], "title": "evil\x1b]0;PASS\x07\nPASS gate open",
                                           "layers": {"answer": "fail"}}]})
    r = run_script("gate", run_dir, "--no-verify")
    assert r.rc == 1
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "\\x1b" in r.stdout
    assert not any(line.startswith("PASS") for line in r.stdout.splitlines())


def test_a_decision_that_raises_reads_closed_never_open(tmp_path, monkeypatch):
    """decision_dict (the viewer's and the history's decision): a bug in the decision is a closed
    gate with the error named, never an open one and never a traceback."""
    import importlib
    decide_mod = importlib.import_module("assay.verdict.decide")   # the module (the package's `decide` is its function)

    def boom(*_a, **_k):
        raise RuntimeError("a bug in a close rule")
    monkeypatch.setattr(decide_mod, "evaluate", boom)
    run_dir = make_run(tmp_path, [{"id": "c-1"}])
    doc = decide_mod.decision_dict(run_dir)
    assert doc["gate"] == "closed"
    assert doc["reasons"] == ["the gate could not be evaluated (RuntimeError: a bug in a close rule)"]
