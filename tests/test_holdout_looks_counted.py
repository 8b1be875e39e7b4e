"""Every holdout result a user can read has its look on the holdout ledger.

A hand-built plan of another split (`selecting_split: full`) could hold a case split [full, holdout]:
the run sent it, wrote its holdout verdict in verdicts.jsonl, and appended no ledger line (the
ledger is asked for by the plan's split and mode only): a look no budget counted. A plan holding
such a case is refused now, exit 2 naming the case ids and the fix (lint code holdout_not_sealed)."""

from __future__ import annotations

from fakeapp import FakeApp, case, make_plan, make_state, run_runner, write_plan


def test_a_plan_with_a_holdout_case_in_another_split_is_refused_before_anything_is_sent(tmp_path):
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = make_plan(state, [case("c-1", split=["full"]), case("h-seen", split=["full", "holdout"]),
                                 case("h-too", split=["holdout", "smoke", "full"])],
                         app_url=app.url, mode="regression", selecting_split="full")
        out = state / "reports" / plan["run_id"]
        r = run_runner("--plan", write_plan(state, plan), "--out", out)
        posts = app.posts()
    assert r.rc == 2, r.stdout + r.stderr
    assert r.json["case_ids"] == ["h-seen", "h-too"] and "holdout_not_sealed" in r.json["error"]
    assert "split: [holdout]` alone" in r.json["error"]
    assert posts == [] and not out.exists()
    assert list((state / "datasets").iterdir()) == []


def test_a_holdout_run_in_ci_without_publish_says_its_look_is_only_in_this_checkouts_ledger(tmp_path):
    """A holdout run in a CI job (CI=true) appends its look to the ledger of a checkout the job throws
    away, and nothing checked the line was committed: the look counted nowhere. The run still records
    it (never an error), and now says, on stderr and in its summary's `notes`, that the look is only in
    this checkout's ledger file and must be committed (or the run made with --publish). Outside CI it
    says nothing of it."""
    state = make_state(tmp_path)
    ledger = "datasets/holdout-looks.jsonl"
    with FakeApp() as app:
        said = {}
        for ci, run_id in (("true", "holdout-20261201T120000Z"), ("", "holdout-20261202T120000Z")):
            plan = make_plan(state, [case("h-1", split=["holdout"])], app_url=app.url, run_id=run_id,
                             mode="holdout", selecting_split="holdout")
            r = run_runner("--plan", write_plan(state, plan), "--out", state / "reports" / run_id,
                           "--progress", "never", env={"CI": ci})
            assert r.rc == 0, r.stdout + r.stderr
            said[ci] = r
    assert len((state / ledger).read_text().splitlines()) == 2   # both looks recorded, as ever
    notes = said["true"].json["notes"]
    assert len(notes) == 1 and "its look is recorded only in this checkout's ledger" in notes[0], notes
    assert f"commit {ledger} from this job" in notes[0] and "--publish" in notes[0], notes
    assert f"assay: note: {notes[0]}" in said["true"].stderr, said["true"].stderr
    assert "notes" not in said[""].json and "this checkout's ledger" not in said[""].stderr, said[""].stdout
