"""A report written into a run directory: never over a file the runner wrote, never into another
run's directory. Real runs of a fake app on a real port, then draft_report.py and md_to_html.py as a
user types them: `md_to_html.py A/report.md B/report.html` wrote run B's page with run A's PASS banner
while B's gate was closed, and `draft_report.py A -o A/results.json --force` replaced the run's results."""

from __future__ import annotations

import pytest
from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan
from helpers import run_script

PASSING, FAILING = "smoke-20261201T100000Z", "smoke-20261202T100000Z"


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": f"echo: {(req.json or {}).get('message', '')}", "route": "billing"})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    state = make_state(tmp_path_factory.mktemp("target"))
    reports = state / "reports"
    with FakeApp(handler) as app:
        for run_id, want in ((PASSING, "hello"), (FAILING, "refund")):
            cases = [case("canary-echo", "ping", split=("smoke", "canary")),
                     case("c-a", "hello", expect={"answer": {"must_contain": [want]}})]
            plan = write_plan(state, make_plan(state, cases, app_url=app.url, run_id=run_id), name=f"{run_id}.json")
            r = run_script("run_cases", "--plan", plan, "--out", reports / run_id, "--progress", "never")
            assert r.rc == 0, r.stdout + r.stderr[-2000:]
    assert run_script("gate", reports / PASSING).rc == 0
    assert run_script("gate", reports / FAILING).rc == 1
    d = run_script("draft_report", reports / PASSING)
    assert d.rc == 0, d.stdout + d.stderr
    assert "**PASS · gate open**" in (reports / PASSING / "report.md").read_text(encoding="utf-8")
    return reports


def test_md_to_html_into_another_runs_dir_is_refused(runs):
    out = runs / FAILING / "report.html"
    h = run_script("md_to_html", runs / PASSING / "report.md", out)
    assert h.rc == 2, h.stdout
    assert not out.exists()   # run B's page never reads run A's PASS
    err = h.json["error"]
    assert f"inside run {FAILING}'s directory" in err and f"the report is of run {PASSING}" in err
    assert str(runs / PASSING / "report.html") in err and "Traceback" not in h.stderr


def test_draft_report_into_another_runs_dir_is_refused(runs):
    d = run_script("draft_report", runs / PASSING, "-o", runs / FAILING / "report.md")
    assert d.rc == 2, d.stdout
    assert not (runs / FAILING / "report.md").exists()
    assert f"-o {runs / PASSING / 'report.md'}" in d.json["error"]


@pytest.mark.parametrize("name", ["results.json", "verdicts.jsonl", "manifest.yaml"])
def test_report_over_a_runner_file_is_refused_even_with_force(runs, name):
    target = runs / PASSING / name
    before = target.read_bytes()
    d = run_script("draft_report", runs / PASSING, "-o", target, "--force")
    h = run_script("md_to_html", runs / PASSING / "report.md", target)
    for r in (d, h):
        assert r.rc == 2, r.stdout
        assert f"a file the runner wrote for run {PASSING}" in r.json["error"], r.stdout
    assert target.read_bytes() == before
    assert run_script("gate", runs / PASSING).rc == 0   # the run is still whole


def test_own_run_and_outside_paths_still_write(runs, tmp_path):
    h = run_script("md_to_html", runs / PASSING / "report.md", runs / PASSING / "report.html")
    assert h.rc == 0, h.stdout
    assert 'class="verdict v-pass"' in (runs / PASSING / "report.html").read_text(encoding="utf-8")
    d = run_script("draft_report", runs / FAILING, "-o", tmp_path / "b.md")
    assert d.rc == 0, d.stdout
    assert run_script("md_to_html", tmp_path / "b.md", tmp_path / "b.html").rc == 0


def test_a_pass_report_of_a_run_edited_after_drafting_is_not_rendered(runs, tmp_path):
    """verdicts.jsonl hand-edited after the PASS report was drafted: the gate closes (--verify), so
    md_to_html.py refuses to render the PASS page, naming the problem and the re-draft."""
    import shutil
    run = tmp_path / "reports" / PASSING
    shutil.copytree(runs / PASSING, run)
    (run / "report.html").unlink(missing_ok=True)
    verdicts = run / "verdicts.jsonl"
    verdicts.write_text(verdicts.read_text(encoding="utf-8").replace('"verdict": "pass"', '"verdict": "fail"'),
                        encoding="utf-8")
    assert run_script("gate", run).rc == 1
    h = run_script("md_to_html", run / "report.md", run / "report.html")
    assert h.rc == 2, h.stdout
    assert not (run / "report.html").exists()
    err = h.json["error"]
    assert "reads PASS" in err and "verdicts.jsonl" in err and "draft_report.py" in err and "--force" in err
    d = run_script("draft_report", run, "--force")   # the re-draft reads FAIL, and renders
    assert d.rc == 0 and "**FAIL · gate closed**" in (run / "report.md").read_text(encoding="utf-8")
    assert run_script("md_to_html", run / "report.md", run / "report.html").rc == 0
