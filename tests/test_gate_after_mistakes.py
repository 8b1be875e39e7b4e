"""What the gate (and the report commands after it) said after a user's mistake, on real runs of a
loopback app driven as a user drives them (run_cases.py, gate.py, draft_report.py, md_to_html.py as
subprocesses):

- a gating case deleted from the suite between the baseline and the candidate read only "1 removed":
  a case that failed there, deleted, turned the gate green with nothing named. The removed gating
  cases are now named (failing there first, a few named and the rest counted);
- a baseline whose own gate was closed (pinned in reports/baseline.json, or given by path) was used
  without a word: it is now called a red baseline, with its first reason (assay.verdict's);
- a case the app answered with a 404 read "c-2 (http, answer)": the failing-case lines now say the
  status ("http, answer; HTTP 404");
- a shard's run dir (run_cases.py --shard) was no run dir to draft_report.py and md_to_html.py: the
  report could be written over the shard's results.json, a merged run's report into a shard's dir (or
  a shard's into the merged run's), and the shard's report was titled as the run's. Now a shard's
  report is titled by its dir, the runner's files of a shard are refused as a target, so is the other
  one's dir, and a run or shard dir given to md_to_html.py as its input names the report to pass.
"""

from __future__ import annotations

import json
import shutil

import pytest

from assay.shard.assign import add_shards
from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan
from helpers import run_script

GREEN, RED, CAND, BROKEN = ("smoke-20261129T000000Z", "smoke-20261130T000000Z", "smoke-20261201T000000Z",
                            "smoke-20261202T000000Z")


def cid(i: int) -> str:
    return f"c-{i:08d}"


def answering(wrong: int | None = None, status: int = 200):
    """Echo every message (the cases pass), except case `wrong`'s: another answer, or `status`."""
    def reply(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = req.json["message"]
        if wrong is not None and msg == f"hello {wrong}":
            return Reply(status, {"message": "not what was asked"})
        return Reply(200, {"message": f"re: {msg}"})
    return reply


def run(state, run_id: str, ids, handler):
    with FakeApp(handler) as app:
        plan = make_plan(state, [case(cid(i), f"hello {i}") for i in ids], app_url=app.url, run_id=run_id)
        r = run_script("run_cases", "--plan", write_plan(state, plan, f"{run_id}.json"),
                       "--out", state / "reports" / run_id, "--progress", "never")
    assert r.rc == 0, r.stdout + r.stderr
    return state / "reports" / run_id


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """GREEN: 4 cases pass; RED: case 3 fails; CAND: case 3 deleted from the suite, the rest pass;
    BROKEN: the same 3 cases, the app answers case 2 with a 404."""
    state = make_state(tmp_path_factory.mktemp("removed"))
    run(state, GREEN, (1, 2, 3, 4), answering())
    run(state, RED, (1, 2, 3, 4), answering(wrong=3))
    run(state, CAND, (1, 2, 4), answering())
    run(state, BROKEN, (1, 2, 4), answering(wrong=2, status=404))
    return state


def test_a_deleted_gating_case_is_named_with_its_verdict_in_the_baseline(runs, tmp_path):
    reports = runs / "reports"
    summary = tmp_path / "summary.md"
    r = run_script("gate", reports / CAND, "--baseline", reports / RED, "--github-summary",
                   env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.rc == 0, r.stdout + r.stderr   # a removed case is no longer gated: said, not closed
    removed = [line for line in r.stdout.splitlines() if "removed since the baseline" in line]
    assert removed == ["  gating cases removed since the baseline (only_in_base: no longer run, so no longer gated; "
                       f"failing there first): 1: {cid(3)} (fail there)"], r.stdout
    assert f"Gating cases removed since the baseline (no longer gated): 1: `{cid(3)}` (fail there)" in summary.read_text()
    j = run_script("gate", reports / CAND, "--baseline", reports / RED, "--json")
    assert j.json["comparison"]["removed_gating"] == [cid(3)]
    # against the green baseline the removed case passed there: named all the same
    g = run_script("gate", reports / CAND, "--baseline", "auto")
    assert f"compared with {GREEN}: 1 removed" in g.stdout, g.stdout
    assert f"failing there first): 1: {cid(3)} (pass there)" in g.stdout, g.stdout


def test_a_red_baseline_is_said_to_be_red(runs, tmp_path):
    state = tmp_path / ".assay"
    shutil.copytree(runs, state)   # the pin is this test's own
    reports = state / "reports"
    g = run_script("gate", reports / CAND, "--baseline", "auto")   # no pin: the newest open run, GREEN
    assert g.rc == 0 and f"compared with {GREEN}: " in g.stdout and "its own gate is closed" not in g.stdout, g.stdout
    (reports / "baseline.json").write_text(json.dumps({"run_id": RED}), encoding="utf-8")
    r = run_script("gate", reports / CAND, "--baseline", "auto")
    assert r.rc == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[1:3] == [f"  compared with {RED}: 1 removed", "  buckets: 1 only_in_base, 3 still_passing"], r.stdout
    note = (f"  note: the baseline {RED} is red: its own gate is closed (1 gating failure(s): {cid(3)} (answer)); "
            "a case failing there too is still_failing here, never newly failing (its failure here still closes "
            "this gate); re-pin reports/baseline.json to a run whose gate was open")
    assert lines[3] == note, r.stdout   # the first note
    summary = tmp_path / "summary.md"
    md = run_script("gate", reports / CAND, "--baseline", "auto", "--github-summary", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert md.rc == 0 and f"Note: the baseline {RED} is red: its own gate is closed (" in summary.read_text()
    j = run_script("gate", reports / CAND, "--baseline", reports / RED, "--json")
    assert j.json["comparison"]["notes"][0].startswith(f"the baseline {RED} is red: its own gate is closed (")
    assert j.json["comparison"]["notes"][0].endswith("compare with a run whose gate was open (--baseline auto chooses one)")


def test_a_failed_app_call_says_its_status(runs):
    reports = runs / "reports"
    r = run_script("gate", reports / BROKEN)
    assert r.rc == 1
    closed = [line for line in r.stdout.splitlines() if line.startswith("  gate closed: 1 gating failure(s)")]
    assert closed == [f"  gate closed: 1 gating failure(s): {cid(2)} (http, answer; HTTP 404)"], r.stdout
    b = run_script("gate", reports / BROKEN, "--baseline", reports / CAND, "--json")
    assert b.json["reasons"][0].startswith(f"1 gating case(s) newly failing against {CAND} (passed there): "
                                           f"{cid(2)} (http, answer; HTTP 404: "), b.json["reasons"]
    assert b.json["reasons"][1] == f"1 gating failure(s): {cid(2)} (http, answer; HTTP 404)"


def test_a_shards_report_never_passes_for_the_merged_runs_nor_lands_on_its_files(tmp_path):
    state = make_state(tmp_path)
    run_id = "smoke-20261203T000000Z"
    reports = state / "reports"
    with FakeApp(answering(wrong=3)) as app:
        plan = add_shards(make_plan(state, [case(cid(i), f"hello {i}") for i in range(1, 5)], app_url=app.url,
                                    run_id=run_id), 2)
        plan_file = write_plan(state, plan)
        shards = [reports / f"{run_id}.shard-{i}" for i in (1, 2)]
        for i, out in enumerate(shards, start=1):
            r = run_script("run_cases", "--plan", plan_file, "--shard", i, "--out", out, "--progress", "never")
            assert r.rc == 0, r.stdout + r.stderr
    merged = reports / run_id
    r = run_script("merge_runs", "--plan", plan_file, "--out", merged, *shards)
    assert r.rc == 0, r.stdout + r.stderr
    shard = shards[1]
    # the input: a directory names the report to pass (a shard's: and the merged run's report)
    r = run_script("md_to_html", shard)
    assert r.rc == 2 and r.json["error"] == (
        f"{shard}: shard 2 of run {run_id}'s directory, not a Markdown report; draft it first (draft_report.py "
        f"{shard}), then pass {shard / 'report.md'}; that is the report of shard 2 of run {run_id}, a slice of the "
        f"plan, not the run: for the run's, draft the merged run (draft_report.py {merged})"), r.stdout
    for d in (shard, merged):
        assert run_script("draft_report", d).rc == 0
    assert (shard / "report.md").read_text().startswith(f"# assay report: {run_id}.shard-2\n")
    assert (merged / "report.md").read_text().startswith(f"# assay report: {run_id}\n")
    r = run_script("md_to_html", merged)
    assert r.rc == 2 and r.json["error"] == (f"{merged}: run {run_id}'s directory, not a Markdown report; pass "
                                             f"{merged / 'report.md'}"), r.stdout
    # the output: never over a shard's own files, never the one's report in the other's dir
    kept = (shard / "results.json").read_bytes()
    r = run_script("md_to_html", shard / "report.md", shard / "results.json")
    assert r.rc == 2 and r.json["error"].startswith(f"{shard / 'results.json'}: a file the runner wrote for shard 2 of "
                                                    f"run {run_id}; writing the report over it would destroy the run")
    r = run_script("draft_report", shard, "-o", shard / "manifest.yaml", "--force")
    assert r.rc == 2 and "a file the runner wrote for shard 2 of run" in r.json["error"], r.stdout
    assert (shard / "results.json").read_bytes() == kept
    r = run_script("md_to_html", merged / "report.md", shards[0] / "report.html")
    assert r.rc == 2 and r.json["error"].startswith(
        f"{shards[0] / 'report.html'}: inside shard 1 of run {run_id}'s directory, but the report is of run {run_id}")
    r = run_script("md_to_html", shard / "report.md", merged / "report.html")
    assert r.rc == 2 and r.json["error"].startswith(
        f"{merged / 'report.html'}: inside run {run_id}'s directory, but the report is of shard 2 of run {run_id}")
    assert not (merged / "report.html").exists() and not (shards[0] / "report.html").exists()
    for d in (shard, merged):   # each report in its own dir is rendered
        r = run_script("md_to_html", d / "report.md", d / "report.html")
        assert r.rc == 0, r.stdout + r.stderr


def test_many_removed_cases_name_a_few_and_count_the_rest():
    from assay.compare.gate_words import MAX_NAMED, removed_gating, removed_words
    n = MAX_NAMED + 3   # the last failed there: named first
    pairs = [{"case_id": cid(i), "gating": True, "canary": False, "verdict": {"base": "fail" if i == n else "pass"}}
             for i in range(1, n + 1)]
    pairs.append({"case_id": "k-1", "gating": False, "canary": True, "verdict": {"base": "fail"}})   # no gating case
    removed = removed_gating({"buckets": {"only_in_base": pairs}})
    assert removed_words(removed) == ", ".join([f"{cid(n)} (fail there)"] + [f"{cid(i)} (pass there)"
                                                                           for i in range(1, MAX_NAMED)]) + " and 3 more"


def test_compare_and_the_report_say_a_red_baseline_is_red(runs, tmp_path):
    """compare_runs.py auto and draft_report.py --baseline (auto, or a path) say what gate.py says of a
    baseline whose own gate was closed (assay.verdict's decision, its words), first among the notes."""
    state = tmp_path / ".assay"
    shutil.copytree(runs, state)   # the pin is this test's own
    reports = state / "reports"
    c = run_script("compare_runs", "auto", reports / CAND, "-o", tmp_path / "open.json")
    assert c.rc == 0 and c.json["base"] == GREEN and not any("is red" in n for n in c.json["notes"]), c.stdout
    (reports / "baseline.json").write_text(json.dumps({"run_id": RED}), encoding="utf-8")
    why = f"1 gating failure(s): {cid(3)} (answer)"
    pinned = (f"the baseline {RED} is red: its own gate is closed ({why}); a case failing there too is still_failing "
              "here, never newly failing (its failure here still closes this gate); re-pin reports/baseline.json to "
              "a run whose gate was open")
    c = run_script("compare_runs", "auto", reports / CAND, "-o", tmp_path / "compare.json", "--html", tmp_path / "c.html")
    assert c.rc == 0 and c.json["base"] == RED and c.json["notes"][0] == pinned, c.stdout
    assert json.loads((tmp_path / "compare.json").read_text())["notes"][0] == pinned
    assert f"the baseline {RED} is red: its own gate is closed" in (tmp_path / "c.html").read_text()
    # given by path, compare_runs.py compares any two runs (a lift's base is often red): no gate words
    c = run_script("compare_runs", reports / RED, reports / CAND)
    assert c.rc == 0 and not any("is red" in n for n in c.json["notes"]), c.json["notes"]
    r = run_script("draft_report", reports / CAND, "--baseline", "auto", "-o", "-")
    assert r.rc == 0, r.stdout + r.stderr
    assert f"> {pinned}" in r.stdout.replace("\\", ""), r.stdout
    r = run_script("draft_report", reports / CAND, "--baseline", reports / RED, "-o", "-")
    assert r.rc == 0 and (f"> the baseline {RED} is red: its own gate is closed ({why}); "
                          in r.stdout.replace("\\", "")), r.stdout
    assert "compare with a run whose gate was open (--baseline auto chooses one)" in r.stdout
