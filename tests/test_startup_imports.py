"""The much-spawned commands import only what their common path uses (bench/startup.py measures the CPU):
the linters never load the HTTP stack (http.client, email, ssl), the gate loads xml.etree only for --junit,
wait_run never loads hashlib, a trace-less run loads no span reader, regex worker or paired tests,
convert_suite never loads the simulator's prompt (dataclasses), and a rarely used pattern is compiled on
its first use (core.patterns)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpdesk_util import copy_state, helpdesk
from helpers import ROOT

SCRIPTS = ROOT / "scripts"
HTTP_STACK = {"http.client", "ssl", "email.parser", "assay.invoke.http"}


def imported(argv, env, ok=(0,)):
    proc = subprocess.run([sys.executable, "-X", "importtime", str(SCRIPTS / argv[0]), *argv[1:]],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode in ok, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc, {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example's state dir converted and planned, one real smoke run, and the environment."""
    state = copy_state(tmp_path_factory.mktemp("startup"))
    work = state / "work"
    with helpdesk(state) as env:
        for argv in (["convert_suite.py", str(state), "-o", str(work / "converted.json"), "--split-dir", str(work / "split")],
                     ["make_plan.py", str(work / "converted.json"), "--mode", "smoke", "--state-dir", str(state),
                      "-o", str(work / "plan.json")]):
            imported(argv, env)
        run_dir = state / "reports" / json.loads((work / "plan.json").read_text(encoding="utf-8"))["run_id"]
        imported(["run_cases.py", "--plan", str(work / "plan.json"), "--out", str(run_dir), "--progress", "never"], env)
        yield state, run_dir, env


def test_the_linters_never_load_the_http_stack(example):
    state, _, env = example
    work = state / "work"
    _, mods = imported(["validate_cases.py", "--cases", str(work / "converted.json"), "--capabilities",
                        str(work / "split" / "capabilities.json"), "--adapter", str(work / "split" / "adapter.json")], env)
    assert "assay.lint.engine" in mods and "assay.invoke.approot" in mods   # the lint ran, the app root was asked
    assert not mods & HTTP_STACK, sorted(mods & HTTP_STACK)
    _, mods = imported(["make_plan.py", str(work / "converted.json"), "--mode", "smoke", "--state-dir", str(state),
                        "-o", str(work / "plan-again.json")], env)
    assert "assay.plan.lint_gate" in mods and not mods & HTTP_STACK, sorted(mods & HTTP_STACK)


def test_the_gate_loads_xml_only_for_junit(example, tmp_path):
    _, run_dir, env = example
    plain, mods = imported(["gate.py", str(run_dir)], env, ok=(0, 1))
    assert "assay.verdict.decide" in mods and "xml.etree.ElementTree" not in mods
    assert "assay.report.gate_outputs" not in mods
    junit = tmp_path / "junit.xml"
    with_junit, mods = imported(["gate.py", str(run_dir), "--junit", str(junit)], env, ok=(0, 1))
    assert "xml.etree.ElementTree" in mods and junit.read_text(encoding="utf-8").startswith("<?xml")
    assert (with_junit.returncode, with_junit.stdout) == (plain.returncode, plain.stdout)


def test_wait_run_does_not_load_hashlib(example):
    _, run_dir, env = example
    proc, mods = imported(["wait_run.py", str(run_dir), "--timeout-s", "0"], env)
    assert "assay.report.wait" in mods and "hashlib" not in mods, proc.stdout


def test_a_lazy_pattern_compiles_once_on_first_use():
    code = ("import re, sys; sys.path.insert(0, %r)\n"
            "from assay.core.patterns import lazy_pattern\n"
            "calls = []; real = re.compile\n"
            "re.compile = lambda *a: calls.append(a) or real(*a)\n"
            "p = lazy_pattern(r'ab+c', re.I); before = len(calls)\n"
            "first, second = p(), p()\n"
            "print(before, len(calls), first is second, bool(first.fullmatch('ABBC')))" % str(SCRIPTS))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["0", "1", "True", "True"], r.stderr


# A trace-less run whose cases hold no pattern and no pairwise rubric (most runs, and most of the
# suite's): no span reader or span model, no secrets, no regex worker's subprocess, no exact paired tests.
TRACELESS_RUN_SKIPS = {"assay.traces.otlp_file", "assay.traces.otlp_writer", "assay.traces.normalize",
                       "assay.traces.conventions", "secrets", "subprocess", "assay.stats.paired"}


def test_a_traceless_run_loads_no_span_reader_regex_worker_or_paired_tests(tmp_path):
    from fakeapp import FakeApp, case, make_plan, make_state, write_plan
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = make_plan(state, [case("c-1", "hello"), case("c-2", "bye"), case("c-3", "yo")], app_url=app.url)
        out = state / "reports" / plan["run_id"]
        proc, mods = imported(["run_cases.py", "--plan", str(write_plan(state, plan)), "--out", str(out),
                               "--progress", "never"], None)
    assert "assay.run.engine" in mods and "assay.traces.collect" in mods and "assay.stats.pairwise" in mods
    assert not mods & TRACELESS_RUN_SKIPS, sorted(mods & TRACELESS_RUN_SKIPS)
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["summary"]["passes"] == 3, proc.stdout


def test_convert_suite_does_not_load_the_simulator_prompt(example, tmp_path):
    state, _, env = example
    proc, mods = imported(["convert_suite.py", str(state), "-o", str(tmp_path / "converted.json")], env)
    assert "assay.simulate.config" in mods   # the simulator's config is read (the example has one)
    assert not mods & {"assay.simulate.prompt", "dataclasses"}, sorted(mods & {"assay.simulate.prompt", "dataclasses"})
    converted = json.loads((tmp_path / "converted.json").read_text(encoding="utf-8"))
    assert converted["simulator_config"] == json.loads((state / "work" / "converted.json").read_text(encoding="utf-8"))["simulator_config"]
