"""A run's app, one definition for every reader (assay.core.runapp.app_name): runs record it as a
top-level `app` in manifest.yaml and results.json (adapter.yaml `app.name`, whatever the plan), and
`--baseline auto` told two apps' runs apart by it; compare_runs.py's "different apps" note and the
history's series read `manifest_extra.app.name` instead, which a hand-written plan (no make_plan.py)
never carries. Two apps' runs from such plans, in one reports dir: compare said nothing of the apps,
and run_history.py drew both apps' pass rates as one trend (a drift that is only the other app).
Now every reader reads the top-level `app`, and `manifest_extra.app.name` only for a run written
before runs recorded it (behaviour for those unchanged). Real runs of a fake app on a real port."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script

pytestmark = pytest.mark.slow   # four real runs, compare_runs.py and run_history.py as subprocesses

RUNS = (("regression-20261205T090000Z", "orders"), ("regression-20261205T100000Z", "billing"),
        ("regression-20261205T110000Z", "orders"), ("regression-20261205T120000Z", "billing"))


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    return Reply(200, {"message": "sorry" if "billing" in msg else f"re: {msg}"})   # billing fails its cases


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    state = make_state(tmp_path_factory.mktemp("runapp"))
    with FakeApp(handler) as app:
        for run_id, name in RUNS:
            ad = adapter(app.url)
            ad["app"] = {"name": name}
            cases = [case(f"c-{i}", f"{name} msg {i}", split=["full"]) for i in range(3)]
            plan = make_plan(state, cases, adapter_doc=ad, run_id=run_id, mode="regression", selecting_split="full")
            assert "app" not in plan["manifest_extra"]   # a hand-written plan: no make_plan.py record of the app
            r = run_runner("--plan", write_plan(state, plan, f"{run_id}.json"), "--out", state / "reports" / run_id,
                           "--progress", "never")
            assert r.rc in (0, 1), r.stdout + r.stderr
            manifest = json.loads((state / "reports" / run_id / "manifest.yaml").read_text(encoding="utf-8"))
            assert manifest["app"] == name
    return state / "reports"


def test_compare_says_two_runs_are_of_different_apps_from_the_app_they_recorded(reports, tmp_path):
    (orders, _), (billing, _) = RUNS[:2]
    r = run_script("compare_runs", reports / orders, reports / billing, "-o", tmp_path / "compare.json")
    assert r.rc == 0, r.stdout + r.stderr
    assert ("different apps: base 'orders', candidate 'billing' (adapter.yaml app.name): were the right two runs "
            "given?") in r.json["notes"], r.json["notes"]
    same = run_script("compare_runs", reports / orders, reports / RUNS[2][0], "-o", tmp_path / "same.json")
    assert same.rc == 0 and not any(n.startswith("different apps") for n in same.json["notes"]), same.json["notes"]


def test_the_history_keeps_each_apps_runs_in_its_own_series(reports, tmp_path):
    res = run_script("run_history", reports.parent, "--no-verify", "--html", tmp_path / "h.html")
    assert res.rc == 0, res.stdout + res.stderr
    doc = json.loads((reports / "history.json").read_text(encoding="utf-8"))
    got = {s["app"]: [r["run_id"] for r in s["runs"]] for s in doc["series"]}
    assert got == {"orders": [RUNS[0][0], RUNS[2][0]], "billing": [RUNS[1][0], RUNS[3][0]]}, doc["series"]


def test_a_run_written_before_runs_recorded_their_app_is_still_read_by_manifest_extra(tmp_path):
    """The fallback, in one process (the readers above are its subprocess tests)."""
    from assay.core.runapp import app_name
    old = {"manifest_extra": {"app": {"name": "orders"}}}
    assert app_name(old) == "orders"
    assert app_name({**old, "app": "billing"}) == "billing"        # the recorded key wins when present
    assert app_name({**old, "app": None}) is None                  # recorded as unnamed
    assert app_name({"adapter": {"app": {"name": "plan-only"}}}) == "plan-only"
