"""Skills' happy paths, headless, through the real pinned CLI and the scripted model: the scripted
steps follow each skill's numbered steps and run the scripts for real in a copy of the example; what
is asserted is what the user would see (files written, exit codes, the gate's decision).

- `/assay:run --smoke` from a Python that lacks PyYAML, jsonschema and Markdown: `--bare` skips the
  plugin's SessionStart hook, so the first script call prepares them (README, run-modes.md) and the
  session goes on from convert to report.html.
- `/assay:generate` adding one case (created with Edit: a `--bare` session has no Write tool), then
  the skill's validate step (convert, validate, make_plan) on the grown suite.
- `/assay:analyze` on a failing run (the example app with BREAK): which run, then its clusters.
- `/assay:start` on the example (cases, no baseline): coverage, looks, and the next step's cost
  from a plan (convert_suite first: a fresh copy has no converted.json).
- `/assay:optimize`: one candidate recorded, its surface edited, then reverted (a git checkout).
- `/assay:discover` in an app dir with a promptfoo config: the import, step 5's `git status` check,
  step 7's validation, findings.md.

The regression path and the CI recipe are tests/test_ci_recipe_headless.py; every documented call's
permission is tests/test_skills_permissions.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from claude_cli import unavailable
from headless import LONG, S, bash, git_checkout, plan_of, prepare_steps, run_parallel, run_session, take
from helpdesk_util import copy_state, helpdesk
from helpers import ROOT
from messages_server import first_json, text, tool

pytestmark = [pytest.mark.skipif(unavailable() is not None, reason=unavailable() or ""), pytest.mark.slow]

NEW_CASE = """id: c-5c1e0a01
unit: billing
split:
- full
category: happy
test_type: MFT
template_id: null
dataset_version_added: 2
origin: synthetic
review:
  status: pending
gating: false
input:
  messages:
  - role: user
    content: What is the status of invoice INV-1002?
  session: fresh
expect:
  route: billing
"""


def _smoke(base):
    """`/assay:run --smoke` under a Python without the packages, ASSAY_VENV fresh, bootstrap allowed."""
    state = copy_state(base / "smoke")
    bare = base / "bare-python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    out = lambda ctx: plan_of(ctx)["out"]  # noqa: E731
    steps = prepare_steps("smoke") + [
        tool("Bash", lambda ctx: bash(plan_of(ctx)["run"], "run the suite", timeout=LONG)),
        tool("Bash", lambda ctx: bash(f'{S}wait_run.py" "{out(ctx)}"', "wait", timeout=LONG)),
        tool("Bash", lambda ctx: bash(f'{S}gate.py" "{out(ctx)}"', "gate")),
        tool("Bash", lambda ctx: bash(f'{S}draft_report.py" "{out(ctx)}"', "draft the report")),
        tool("Bash", lambda ctx: bash(f'{S}md_to_html.py" "{out(ctx)}/report.md" "{out(ctx)}/report.html"', "render")),
        text("Smoke run done."),
    ]
    with helpdesk(state) as env:
        app_vars = {k: v for k, v in env.items() if k.startswith("HELPDESK_")}
        venv = base / "assay-venv"
        s = run_session("/assay:run --smoke", steps, cwd=state.parent, home=base / "home-smoke",
                        env={**app_vars, "ASSAY_VENV": str(venv), "PYTHONDONTWRITEBYTECODE": "1", "ASSAY_NO_BOOTSTRAP": ""},
                        python=str(bare / "bin" / "python"))
    return state, s, venv


def _generate(base):
    state = copy_state(base / "generate")
    case = state / "datasets" / "c-5c1e0a01.yaml"
    steps = [
        tool("Bash", bash(S + 'coverage.py" .assay', "coverage grid")),
        tool("Edit", {"file_path": str(case), "old_string": "", "new_string": NEW_CASE}),
        tool("Bash", bash(S + 'dedupe_cases.py" .assay', "near-duplicates")),
        # step 5: the manifest's counts follow the new case, and dataset_version is bumped once for the batch
        tool("Read", {"file_path": str(state / "datasets" / "dataset.yaml")}),
        tool("Edit", {"file_path": str(state / "datasets" / "dataset.yaml"),
                      "old_string": "dataset_version: 1\ncases: 55\nsplits:\n  full: 44",
                      "new_string": "dataset_version: 2\ncases: 56\nsplits:\n  full: 45"}),
        tool("Edit", {"file_path": str(state / "datasets" / "dataset.yaml"),
                      "old_string": "    billing:\n      total: 30\n      MFT: 22",
                      "new_string": "    billing:\n      total: 31\n      MFT: 23"}),
    ] + prepare_steps("smoke") + [text("1 case added, pending review: it cannot fail a build yet.")]
    return state, run_session("/assay:generate .assay --count 1", steps, cwd=state.parent, home=base / "home-gen")


def _analyze(base):
    state = copy_state(base / "analyze")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with helpdesk(state, broken=True) as app_env:
        for argv in (["convert_suite.py", ".assay", "-o", ".assay/work/converted.json", "--split-dir", ".assay/work"],
                     ["make_plan.py", ".assay/work/converted.json", "--mode", "smoke", "--state-dir", ".assay",
                      "-o", ".assay/work/plan.json"]):
            made = subprocess.run([sys.executable, str(ROOT / "scripts" / argv[0]), *argv[1:]], capture_output=True,
                                  text=True, cwd=state.parent, env=env, timeout=300)
            assert made.returncode == 0, made.stdout + made.stderr
        plan = json.loads(made.stdout)
        ran = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_cases.py"), "--plan", plan["plan"],
                              "--out", plan["out"]], capture_output=True, text=True, cwd=state.parent, env=app_env,
                             timeout=600)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    steps = [
        tool("Bash", bash(S + 'gate.py" .assay/reports --latest --json', "which run")),
        tool("Bash", lambda ctx: bash(f'{S}cluster_failures.py" .assay/reports/{ctx.json()["run_id"]} --top 5', "clusters")),
        text("The failures, grouped."),
    ]
    return state, plan, run_session("/assay:analyze", steps, cwd=state.parent, home=base / "home-analyze")


def _start(base):
    """`/assay:start` on the example (row 4: cases, no baseline): the suite's state, then the next step's cost."""
    state = copy_state(base / "start")
    steps = [
        tool("Read", {"file_path": str(state / "reports" / "baseline.json")}),   # no Glob tool in the session
        tool("Bash", bash(S + 'coverage.py" .assay', "the suite")),
        tool("Bash", bash(S + 'holdout.py" looks .assay', "the sealed set's looks")),
        tool("Bash", bash(S + 'convert_suite.py" .assay -o .assay/work/converted.json --split-dir .assay/work', "convert")),
        tool("Bash", bash(S + 'make_plan.py" .assay/work/converted.json --mode smoke --state-dir .assay'
                          ' -o .assay/work/plan.json', "the next step's cost")),
        text("Step 3 of 5: run the smoke test (/assay:run --smoke)."),
    ]
    return state, run_session("/assay:start", steps, cwd=state.parent, home=base / "home-start")


def _optimize(base):
    """`/assay:optimize`: one candidate recorded, its surface edited, then reverted (the app is a git checkout)."""
    app = base / "optimize"
    shutil.copytree(ROOT / "examples" / "helpdesk", app, ignore=shutil.ignore_patterns("work", "reports", "__pycache__"))
    git_checkout(app)
    before = (app / "desk.py").read_text()
    steps = [
        tool("Bash", bash(S + 'candidate.py" new .assay --id kb-desc-1 --surface desk.py'
                          ' --cluster "search_kb picked for refund questions"'
                          ' --reflection "refund routed to search_kb <- vague tool description <- say refunds"', "record")),
        tool("Read", {"file_path": str(app / "desk.py")}),
        tool("Edit", {"file_path": str(app / "desk.py"), "old_string": before.splitlines()[0],
                      "new_string": before.splitlines()[0] + "  # candidate kb-desc-1"}),
        tool("Bash", bash(S + 'candidate.py" revert .assay --id kb-desc-1', "revert")),
        text("Candidate kb-desc-1 reverted."),
    ]
    return app, before, run_session("/assay:optimize", steps, cwd=app, home=base / "home-optimize")


def _discover(base):
    """`/assay:discover` in an app dir holding a promptfoo config: import it, validate, write findings.md."""
    app = base / "discover"
    shutil.copytree(ROOT / "tests" / "fixtures" / "promptfoo" / "basic", app)
    git_checkout(app)
    steps = [
        tool("Bash", bash(S + 'import_promptfoo.py" promptfooconfig.yaml --state-dir .assay', "import the promptfoo suite")),
        tool("Bash", bash(f"git -C {app} status --porcelain -- promptfooconfig.yaml", "step 5: is the file clean")),
        tool("Bash", bash(S + 'convert_suite.py" .assay -o .assay/work/converted.json --split-dir .assay/work', "convert")),
        tool("Bash", bash(S + 'validate_cases.py" --cases .assay/work/suite.json --capabilities .assay/work/capabilities.json'
                          ' --adapter .assay/work/adapter.json', "validate")),
        tool("Edit", {"file_path": str(app / ".assay" / "findings.md"), "old_string": "",
                      "new_string": "# Findings\n\n- [observed: import] 2 assertions not converted (IMPORT.md)\n"}),
        text("Imported 4 cases; 2 lost a check (not_converted): rewrite or drop it before planning."),
    ]
    return app, run_session("/assay:discover", steps, cwd=app, home=base / "home-discover")


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    base = tmp_path_factory.mktemp("happy")
    return run_parallel({name: (lambda fn=fn: fn(base)) for name, fn in (
        ("smoke", _smoke), ("generate", _generate), ("analyze", _analyze), ("start", _start),
        ("optimize", _optimize), ("discover", _discover))})


def _clean(s):
    assert s.rc == 0 and s.result["is_error"] is False and s.result["permission_denials"] == [], s.why()
    assert not s.server.failures and s.server.overrun == 0 and s.server.steps_taken == len(s.server.script), s.why()


def test_smoke_from_a_python_without_the_packages_bootstraps_them_and_writes_the_report(sessions):
    state, s, venv = take(sessions, "smoke")
    _clean(s)
    assert not [e for e in s.events if e.get("subtype") == "hook_response"], "--bare skips the plugin's hooks"
    results = s.tool_results()
    if "package index" in results[0][1] and "network" in results[0][1]:
        pytest.skip(f"no package index reachable: {results[0][1][:300]}")
    assert "preparing its Python packages" in results[0][1], results[0][1][:1500]
    assert not any(err for _, _, err in results[1:]), s.why()
    assert all("preparing" not in out for _, out, _ in results[1:]), "one bootstrap, then reused"
    assert (venv / "bin" / "python").exists()
    runs = [d for d in (state / "reports").iterdir() if d.is_dir()]
    assert len(runs) == 1 and runs[0].name.startswith("smoke-")
    assert (runs[0] / "report.md").is_file() and "<table>" in (runs[0] / "report.html").read_text()
    gate = next(out for cmd, out, _ in results if "/scripts/gate.py" in cmd)
    assert gate.startswith(f"{runs[0].name}: PASS"), gate[:500]


def test_generate_adds_a_case_that_validates_and_plans(sessions):
    state, s = take(sessions, "generate")
    _clean(s)
    results = s.tool_results()
    assert not any(err for _, _, err in results), s.why()
    validated = first_json(results[-2][1])
    assert validated["error_count"] == 0 and validated["summary"]["cases"] == 56, results[-2][1][:1500]
    plan = first_json(results[-1][1])
    assert plan["mode"] == "smoke" and plan["run_id"].startswith("smoke-")
    converted = json.loads((state / "work" / "converted.json").read_text())
    assert "c-5c1e0a01" in json.dumps(converted)


def test_analyze_names_the_failing_run_and_clusters_its_failures(sessions):
    state, plan, s = take(sessions, "analyze")
    _clean(s)
    (_, which, closed), (_, clusters, err) = s.tool_results()
    # step 0: the newest run, finished (quotable); its gate is closed, so the call exits 1
    assert closed and which.startswith("Exit code 1\n"), which[:500]
    assert first_json(which)["run_id"] == plan["run_id"] and first_json(which)["status"] == "ok"
    assert not err
    found = first_json(clusters)
    assert found["clusters"] and all(c["count"] >= 1 for c in found["clusters"]), clusters[:1500]


def test_start_on_the_example_says_where_it_is_and_what_the_next_step_costs(sessions):
    state, s = take(sessions, "start")
    _clean(s)
    results = s.tool_results()
    assert results[0][2] and "does not exist" in results[0][1], "no baseline yet: row 4"
    assert not any(err for _, _, err in results[1:]), s.why()
    assert first_json(results[1][1])["cases"] == 55 and first_json(results[2][1])["looks"] == 0
    plan = first_json(results[-1][1])
    assert plan["cases"] == 20 and plan["k"] == 1 and plan["app_calls"] == 30   # the worked example's "30 app calls"


def test_optimize_records_a_candidate_and_reverts_its_edit(sessions):
    app, before, s = take(sessions, "optimize")
    _clean(s)
    results = s.tool_results()
    assert not any(err for _, _, err in results), s.why()
    assert (app / "desk.py").read_text() == before
    log = [json.loads(line) for line in (app / ".assay" / "candidates" / "log.jsonl").read_text().splitlines()]
    assert [e.get("action") or e.get("event") for e in log][-1] in ("revert", "reverted"), log


def test_discover_imports_a_promptfoo_suite_and_validates_what_it_wrote(sessions):
    app, s = take(sessions, "discover")
    _clean(s)
    results = s.tool_results()
    # the validate step (results[3]) exits 1: the three gating cases that lost a check (a javascript and a
    # similar assertion, a latency threshold checked per call by promptfoo) carry it in not_converted and
    # are refused until a person rewrites or drops it
    assert not any(err for n, (_, _, err) in enumerate(results) if n != 3), s.why()
    imported = first_json(results[0][1])
    assert imported["cases"] == 4 and imported["not_converted"], results[0][1][:800]
    validated = first_json(results[3][1])
    assert results[3][2] and validated["error_count"] == 3, results[3][1][:800]
    assert {f["code"] for f in validated["findings"] if f["severity"] == "ERROR"} == {"check_not_converted"}
    for written in ("profile.yaml", "adapter.yaml", "IMPORT.md", "findings.md"):
        assert (app / ".assay" / written).is_file(), written
