"""The command-line face of the helpdesk example (examples/helpdesk/cli.py) and
`make demo APP=cli` (demo.py --app cli on a copy of examples/helpdesk/.assay-cli)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, run_script
from rundir_util import cases_view

CLI = ROOT / "examples" / "helpdesk" / "cli.py"
DEMO = ROOT / "examples" / "helpdesk" / "demo.py"
STATE = ROOT / "examples" / "helpdesk" / ".assay-cli"


def cli(*args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run([str(CLI), *args], input=stdin, capture_output=True, text=True, env={**base, **(env or {})},
                          timeout=60, cwd="/")


def test_answers_json_on_stdout_with_exit_codes_and_continues_the_traceparent(tmp_path):
    otlp = tmp_path / "spans.jsonl"
    trace_id, caller = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    r = cli("--otlp-file", str(otlp), stdin="What is the total of my open invoices?\n",
            env={"TRACEPARENT": f"00-{trace_id}-{caller}-01"})
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert body["route"] == "billing" and body["data"]["value"] == 245.75 and body["trace_id"] == trace_id
    spans = [s for line in otlp.read_text().splitlines()
             for s in json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]]
    assert {s["traceId"] for s in spans} == {trace_id}
    assert [s.get("parentSpanId") for s in spans if s["name"] == "helpdesk-cli"] == [caller]


@pytest.fixture
def cli_main(monkeypatch, capsys):
    """examples/helpdesk/cli.py's main() in this process: (exit code, stdout JSON)."""
    monkeypatch.syspath_prepend(str(CLI.parent))
    for name in ("cli", "desk", "otlp"):  # generic names: never leak them to other test modules
        monkeypatch.delitem(sys.modules, name, raising=False)
    import cli as cli_module
    monkeypatch.delenv("HELPDESK_OTLP_FILE", raising=False)
    monkeypatch.delenv("TRACEPARENT", raising=False)

    def call(*argv: str, stdin: str = "", tenant: str | None = None):
        if tenant:
            monkeypatch.setenv("HELPDESK_TENANT", tenant)
        else:
            monkeypatch.delenv("HELPDESK_TENANT", raising=False)
        monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(stdin))
        code = cli_module.main(list(argv))
        return code, json.loads(capsys.readouterr().out)
    yield call
    for name in ("cli", "desk", "otlp"):
        sys.modules.pop(name, None)


def test_refusal_tenant_and_usage_exit_codes(cli_main):
    code, body = cli_main("What's the weather in Paris tomorrow?")
    assert code == 2 and body["route"] == "out_of_scope"
    code, body = cli_main("Show me invoice INV-2001", tenant="globex")
    assert code == 0 and "300.00" in body["answer"]
    assert cli_main("Show me invoice INV-2001")[0] == 0 and "300.00" not in cli_main("Show me invoice INV-2001")[1]["answer"]
    assert cli_main(stdin="")[0] == 64
    assert cli_main("hi", tenant="nobody")[0] == 3


@pytest.mark.slow
def test_demo_app_cli_break_closes_the_gate_with_traces_collected(tmp_path):
    state = tmp_path / ".assay-cli"
    shutil.copytree(STATE, state, ignore=shutil.ignore_patterns("work", "reports"))
    adapter = state / "adapter.yaml"   # the copy's app repo is still this repository (command[0] is relative to it)
    adapter.write_text(adapter.read_text().replace("repo: ../../..", f"repo: {ROOT}"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BREAK", "FLAKY")}
    env["ASSAY_SCRATCH_DIR"] = str(tmp_path / "scratch")
    r = subprocess.run([sys.executable, str(DEMO), "--app", "cli", "--state-dir", str(state), "--break"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr          # the planted regressions close the gate
    assert "run_cases       exit 0" in r.stdout and "gate            CLOSED" in r.stdout
    (run_dir,) = [p for p in (state / "reports").iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.yaml").read_text())
    assert manifest["invocation"]["mode"] == "cli" and manifest["traces"]["collected"] is True
    verdicts = {json.loads(line)["case_id"]: json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()}
    assert verdicts["c-bed8e365"]["verdict"] == "pass"   # out of scope: exit 2 is what the case expects
    assert verdicts["c-6f3f04e8"]["verdict"] == "fail"   # the cross-tenant leak, with identity via env
    for cid in verdicts:
        assert json.loads((cases_view(run_dir) / cid / "verdict.json").read_text())["trace_status"] == "complete"
    assert run_script("run_cases", "--verify", run_dir).rc == 0
    # failing cases keep their scratch dirs; passing ones do not
    area = Path(manifest["invocation"]["scratch_area"])
    kept = sorted(p.name for p in (area / "cases").iterdir())
    assert kept == sorted(cid for cid, v in verdicts.items() if v["verdict"] != "pass")
