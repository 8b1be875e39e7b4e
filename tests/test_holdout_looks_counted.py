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
