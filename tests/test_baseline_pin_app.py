"""reports/baseline.json pinning a run of ANOTHER app (a team sharing one state dir for two apps that
share a suite, or a pin left from before the app was renamed): `--baseline auto` passes over another
app's runs when it picks the newest one, but took the pin as it was. The orders PR that breaks c-2 was
compared with billing's run, which failed c-2 too: "still failing", no newly failing case named, the
billing answers read as orders' past. Now the pin is asked the same question as auto's choice
(`Own.admits`), by every surface that reads it: exit 2 naming the pin file, both apps and the fix.

And a run written before runs recorded their app in results.json still names it in its manifest
(make_plan.py's manifest_extra.app.name): `--baseline auto` read the results.json head only, so such a
run of another app sharing the candidate's case ids was chosen as the base ("could not be checked by
name"). Now it is read there, as for the candidate, and passed over.

Real runs of a real loopback app; every script a subprocess."""

from __future__ import annotations

import json
import shutil

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script

pytestmark = pytest.mark.slow   # five real runs, then gate/compare/report/runner as subprocesses

ORDERS_BASE = "regression-20261205T090000Z"
BILLING_RED = "regression-20261205T100000Z"     # billing's run: c-2 fails there too
BILLING_GREEN = "regression-20261205T103000Z"   # billing's next run, all passing
ORDERS_PR = "regression-20261205T110000Z"       # the orders PR: breaks c-2
NEXT = "regression-20261205T120000Z"
BROKEN = {"on": False}


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    return Reply(200, {"message": "sorry" if msg.endswith("2") and BROKEN["on"] else f"re: {msg}"})


def plan_of(state, url, run_id, name):
    ad = adapter(url)
    ad["app"] = {"name": name}
    cases = [case(f"c-{i}", f"shared msg {i}", split=["full"]) for i in range(3)]   # one suite, two apps
    plan = make_plan(state, cases, adapter_doc=ad, run_id=run_id, mode="regression", selecting_split="full")
    plan["manifest_extra"]["app"] = {"name": name}   # make_plan.py's record of the app
    return plan


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    state = make_state(tmp_path_factory.mktemp("pinapp"))
    with FakeApp(handler) as app:
        for run_id, name, broken in ((ORDERS_BASE, "orders", False), (BILLING_RED, "billing", True),
                                     (BILLING_GREEN, "billing", False), (ORDERS_PR, "orders", True)):
            BROKEN["on"] = broken
            try:
                r = run_runner("--plan", write_plan(state, plan_of(state, app.url, run_id, name), f"{run_id}.json"),
                               "--out", state / "reports" / run_id, "--progress", "never")
            finally:
                BROKEN["on"] = False
            assert r.rc in (0, 1), r.stdout + r.stderr
        yield {"state": state, "url": app.url}


def pin(state, run_id):
    (state / "reports" / "baseline.json").write_text(json.dumps({"run_id": run_id, "dataset_version": 1,
                                                                 "harness_version": "0.1.0"}) + "\n")


def copy_state(world, tmp_path, runs):
    state = make_state(tmp_path)
    for run_id in runs:
        shutil.copytree(world["state"] / "reports" / run_id, state / "reports" / run_id)
    return state


def refused_for_the_pin(r, state):
    assert r.rc == 2, r.stdout + r.stderr
    err = r.json["error"]
    assert str(state / "reports" / "baseline.json") in err and BILLING_RED in err, err
    assert "'billing'" in err and "'orders'" in err and "Re-pin baseline.json" in err and "delete it" in err, err


def test_a_pin_of_another_app_is_refused_by_gate_compare_and_report(world, tmp_path):
    state = copy_state(world, tmp_path, (ORDERS_BASE, BILLING_RED, ORDERS_PR))
    pin(state, BILLING_RED)
    cand = state / "reports" / ORDERS_PR
    # before: compared with billing's run, c-2 "still failing" and no newly failing case named
    refused_for_the_pin(run_script("gate", cand, "--baseline", "auto"), state)
    refused_for_the_pin(run_script("compare_runs", "auto", cand, "-o", tmp_path / "c.json"), state)
    assert not (tmp_path / "c.json").exists()
    refused_for_the_pin(run_script("draft_report", cand, "--baseline", "auto"), state)


def test_a_pin_of_another_app_is_refused_by_the_runner_before_any_spend(world, tmp_path):
    state = copy_state(world, tmp_path, (ORDERS_BASE, BILLING_RED))
    pin(state, BILLING_RED)
    plan = write_plan(state, plan_of(state, world["url"], NEXT, "orders"), "next.json")
    r = run_runner("--plan", plan, "--out", state / "reports" / NEXT, "--baseline-verdicts", "auto",
                   "--progress", "never")
    assert r.rc == 2, r.stdout + r.stderr
    err = json.loads(r.stdout.strip().splitlines()[0])["error"]
    assert "baseline.json" in err and "'billing'" in err and "--baseline-verdicts RUN_DIR" in err, err
    assert not (state / "reports" / NEXT).exists()   # exit 2 writes nothing


def test_a_pin_of_this_app_is_still_the_baseline(world, tmp_path):
    state = copy_state(world, tmp_path, (ORDERS_BASE, BILLING_RED, ORDERS_PR))
    pin(state, ORDERS_BASE)
    g = run_script("gate", state / "reports" / ORDERS_PR, "--baseline", "auto")
    assert g.rc == 1, g.stdout + g.stderr
    assert f"compared with {ORDERS_BASE}" in g.stdout and "newly failing" in g.stdout and "c-2" in g.stdout, g.stdout


def as_before_runs_recorded_their_app(run_dir):
    """A run written before runs recorded `app`: none in results.json or manifest.yaml; its manifest
    keeps make_plan.py's manifest_extra.app.name."""
    for name in ("manifest.yaml", "results.json"):
        doc = json.loads((run_dir / name).read_text(encoding="utf-8"))
        doc.pop("app", None)
        (run_dir / name).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    assert run_script("run_cases", "--verify", run_dir).rc == 0


def test_an_old_run_of_another_app_sharing_case_ids_is_passed_over_by_its_manifest(world, tmp_path):
    state = copy_state(world, tmp_path, (ORDERS_BASE, BILLING_GREEN, ORDERS_PR))
    for run_id in (ORDERS_BASE, BILLING_GREEN):
        as_before_runs_recorded_their_app(state / "reports" / run_id)
    r = run_script("compare_runs", "auto", state / "reports" / ORDERS_PR, "-o", tmp_path / "c.json")
    assert r.rc in (0, 1), r.stdout + r.stderr
    assert r.json["base"] == ORDERS_BASE, r.stdout   # before: billing's, "its app could not be checked by name"
    notes = " ".join(json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))["notes"])
    assert f"{BILLING_GREEN} (app 'billing')" in notes and "could not be checked" not in notes, notes
    # a pin of that old billing run is refused the same way
    pin(state, BILLING_GREEN)
    g = run_script("gate", state / "reports" / ORDERS_PR, "--baseline", "auto")
    assert g.rc == 2 and "'billing'" in g.json["error"] and "baseline.json" in g.json["error"], g.stdout + g.stderr
