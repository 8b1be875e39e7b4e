"""examples/agent, the offline agent example (`make demo APP=agent`): its suite converts and lints
clean against its adapter (skills, fixture, check programs, tool names all resolve), each case has
exactly one scripted-model route and every route a case, and its fixture's tests fail before the
agent runs. The demo itself drives the pinned CLI for about two minutes; the agent path it takes
is tested in test_agent_claude.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import yaml

from helpers import ROOT, run_script

EXAMPLE = ROOT / "examples" / "agent"


def test_the_example_suite_converts_and_lints_clean(tmp_path):
    app = tmp_path / "agent"
    shutil.copytree(EXAMPLE, app, ignore=shutil.ignore_patterns("work", "reports", "__pycache__"))
    work = app / ".assay" / "work"
    r = run_script("convert_suite", app / ".assay", "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("validate_cases", "--cases", work / "suite.json", "--no-capabilities", "--adapter", work / "adapter.json")
    doc = r.json
    assert doc["error_count"] == 0, [f for f in doc["findings"] if f["severity"] == "ERROR"]
    assert doc["summary"]["cases"] == 12


def test_every_case_has_one_scripted_route_and_every_route_a_case():
    sys.path.insert(0, str(EXAMPLE))
    from scripted import scripts
    keys = list(scripts())
    prompts = [yaml.safe_load(p.read_text())["input"]["messages"][0]["content"]
               for p in sorted((EXAMPLE / ".assay" / "datasets").glob("*.yaml"))]
    for prompt in prompts:
        assert sum(1 for k in keys if k in prompt) == 1, prompt
    for key in keys:
        assert any(key in p for p in prompts), key


def test_the_fixture_tests_fail_before_the_agent():
    r = subprocess.run([sys.executable, "test_calc.py"], cwd=EXAMPLE / "repo", capture_output=True, text=True)
    assert r.returncode == 1 and "test_add FAILED" in r.stdout
