"""The headless CI job of skills/run/references/run-modes.md ("Headless/CI gate"), run as written by
bash — `claude -p "/assay:run --regression"` with the recipe's flags, the two trust checks, then the
tokenless gate — with the real pinned CLI, the scripted model (tests/messages_server.py) following
the run skill's numbered steps, and the example app on a free port. Twice in one state dir: the app
healthy (a first run: the skill pins it in reports/baseline.json; the job exits 0), then BREAK (the
baseline diffed, the report drafted, edited and rendered; the job exits 1 with the gating failures
named). The job's exit code is the gate's: the session succeeds both times. And when the session
itself fails (the API refuses it), the first check stops the job with exit 2 before any gate."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from claude_cli import CLAUDE, session_env, unavailable
from headless import LONG, S, bash, plan_of, prepare_steps
from helpdesk_util import copy_state, helpdesk
from helpers import ROOT
from messages_server import MessagesServer, api_error, text, tool

pytestmark = [pytest.mark.skipif(unavailable() is not None, reason=unavailable() or ""), pytest.mark.slow,
              pytest.mark.skipif(shutil.which("jq") is None, reason="the CI recipe's checks need jq (apt install jq)")]


def recipe_job() -> str:
    """The job's shell lines, exactly the section's first four code blocks (the session, two checks, the gate)."""
    text_ = (ROOT / "skills" / "run" / "references" / "run-modes.md").read_text(encoding="utf-8")
    section = text_.split("## Headless/CI gate", 1)[1].split("\n## ", 1)[0].split("### ", 1)[0]
    blocks = re.findall(r"```\n(.*?)```", section, re.S)
    assert len(blocks) == 4 and blocks[0].startswith("claude -p") and "gate.py" in blocks[3], blocks
    return "\n".join(blocks)


def regression_steps(app_dir, first_run: bool) -> list:
    """The run skill's steps for `/assay:run --regression` in `app_dir`, each call as the skill spells it."""
    plan = plan_of

    def run(ctx):  # §2, with §4's baseline when reports/baseline.json named one
        pin = ctx.json(-1) if "run_id" in ctx.last else None
        extra = (f' --baseline-verdicts .assay/reports/{pin["run_id"]}/verdicts_for_stats.jsonl' if pin else "")
        return bash(plan(ctx)["run"] + extra, "run the suite", timeout=LONG)

    def pin(ctx):  # §4 first run: pin it, after the gate
        manifest = ctx.last
        version = lambda key: re.search(rf'"?{key}"?: "?([^",\n]+)"?', manifest).group(1)  # noqa: E731
        pinned = {"run_id": plan(ctx)["run_id"], "dataset_version": int(version("dataset_version")),
                  "harness_version": version("harness_version")}
        # the skill: with the Write tool; under --bare (Bash, Read, Edit only) Edit with an empty old_string
        return {"file_path": str(app_dir / ".assay" / "reports" / "baseline.json"), "old_string": "",
                "new_string": json.dumps(pinned) + "\n"}

    out = lambda ctx: plan(ctx)["out"]  # noqa: E731
    steps = prepare_steps("regression") + [
        tool("Read", {"file_path": str(app_dir / ".assay" / "reports" / "baseline.json")}),
        tool("Bash", run),
        tool("Bash", lambda ctx: bash(f'{S}wait_run.py" "{out(ctx)}"', "wait for the run", timeout=LONG)),
        tool("Bash", lambda ctx: bash(f'{S}gate.py" "{out(ctx)}"', "gate the run")),
        tool("Bash", lambda ctx: bash(f'{S}draft_report.py" "{out(ctx)}"', "draft the report")),
        tool("Read", lambda ctx: {"file_path": f"{out(ctx)}/report.md"}),
        tool("Edit", lambda ctx: {"file_path": f"{out(ctx)}/report.md", "old_string": "<!-- /assay:clusters -->",
                                  "new_string": "Scripted reading of the clusters.\n<!-- /assay:clusters -->"}),
        tool("Bash", lambda ctx: bash(f'{S}md_to_html.py" "{out(ctx)}/report.md" "{out(ctx)}/report.html"', "render")),
    ]
    if first_run:   # §4: no pointer yet, so pin this run (after the gate) from its manifest's versions
        steps += [tool("Read", lambda ctx: {"file_path": f"{out(ctx)}/manifest.yaml"}), tool("Edit", pin),
                  text("Run finished; baseline established.")]
    else:
        steps.append(text("Run finished; the report is written."))
    return steps


def _job(app_dir, env_app, home, first_run, script=None):
    job = app_dir / "job.sh"
    job.write_text(recipe_job())
    with MessagesServer(script if script is not None else regression_steps(app_dir, first_run)) as srv:
        app_vars = {k: v for k, v in env_app.items() if k.startswith("HELPDESK_")}
        env = session_env(home, {**app_vars, **srv.env(), "ASSAY_ROOT": str(ROOT)})
        (home / "bin" / "claude").symlink_to(CLAUDE)
        p = subprocess.run(["bash", str(job)], capture_output=True, text=True, env=env, cwd=app_dir,
                           stdin=subprocess.DEVNULL, timeout=900)
    events = [json.loads(line) for line in (app_dir / "run-output.jsonl").read_text().splitlines() if line.startswith("{")]
    return p, events, srv


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    base = tmp_path_factory.mktemp("ci")
    state = copy_state(base / "app")
    out = {}
    for name, broken in (("healthy", False), ("break", True)):
        with helpdesk(state, broken=broken, app_dir=f"app-{name}") as env:
            out[name] = _job(state.parent, env, base / f"home-{name}", first_run=not broken)
            (state.parent / f"run-output-{name}.jsonl").write_text((state.parent / "run-output.jsonl").read_text())
    # the API refuses every request (a 400 is not retried; a 401 is, and would reach the script's end):
    # the session fails, so the job stops at the first check, exit 2, and never reaches the gate
    out["rejected"] = _job(state.parent, {}, base / "home-rejected", False,
                           script=[api_error(400, "invalid_request_error", "scripted refusal")] * 10)
    return state, out


def _result(events):
    return [e for e in events if e.get("type") == "result"][-1]


@pytest.mark.parametrize("name", ["healthy", "break"])
def test_the_session_succeeds_with_no_denial_and_the_skill_steps_all_ran(jobs, name):
    _, out = jobs
    p, events, srv = out[name]
    result = _result(events)
    assert result["is_error"] is False and result["permission_denials"] == [], (p.stdout, p.stderr, result)
    assert not srv.failures and srv.overrun == 0 and srv.steps_taken == len(srv.script), srv.summary()
    errors = [b["content"] for e in events if e.get("type") == "user" and isinstance(e["message"]["content"], list)
              for b in e["message"]["content"] if b.get("type") == "tool_result" and b.get("is_error")]
    # the one expected error: the first run reads reports/baseline.json, which is not there yet; the
    # broken run's own gate call exits 1 (the session goes on to the report, as the skill says)
    expected = "does not exist" if name == "healthy" else "Exit code 1\nregression-"
    assert len(errors) == 1 and expected in str(errors[0]), errors
    init = next(e for e in events if e.get("subtype") == "init")
    assert "assay" in [pl["name"] for pl in init["plugins"]] and not init.get("plugin_errors")


def test_healthy_app_the_job_exits_0_and_the_run_is_pinned_and_reported(jobs):
    state, out = jobs
    p, _, _ = out["healthy"]
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-2000:])
    assert ": PASS" in p.stdout.splitlines()[0]
    pinned = json.loads((state / "reports" / "baseline.json").read_text())
    run = state / "reports" / pinned["run_id"]
    assert pinned["run_id"].startswith("regression-") and (run / "report.html").is_file()
    assert "Scripted reading of the clusters." in (run / "report.md").read_text()
    assert (state.parent / "assay-junit.xml").is_file()


def test_broken_app_the_job_exits_1_naming_the_gating_failures_and_the_baseline_is_diffed(jobs):
    state, out = jobs
    p, _, _ = out["break"]
    assert p.returncode == 1, (p.stdout[-3000:], p.stderr[-2000:])
    first = p.stdout.splitlines()[0]
    assert ": FAIL" in first and "regression-" in first
    assert re.search(r"\b[1-9]\d* gating\b", p.stdout), p.stdout[:1500]
    assert re.search(r"\bc-[0-9a-f]{8} \(", p.stdout), "the gating failures are named, case by case"
    pinned = json.loads((state / "reports" / "baseline.json").read_text())["run_id"]
    runs = sorted(d for d in (state / "reports").iterdir() if d.is_dir() and d.name != pinned)
    assert len(runs) == 1 and (runs[0] / "comparison.json").is_file() and (runs[0] / "report.html").is_file()
    assert "failures" in (state.parent / "assay-junit.xml").read_text()


def test_a_failed_session_is_exit_2_before_any_gate(jobs):
    _, out = jobs
    p, events, srv = out["rejected"]
    assert p.returncode == 2, (p.stdout[-2000:], p.stderr[-2000:])
    assert _result(events)["is_error"] is True and srv.main_requests
    assert "scripted refusal" in p.stdout, "check 1 prints the session's error"
    assert "PASS" not in p.stdout and "FAIL" not in p.stdout, "the gate never ran"
