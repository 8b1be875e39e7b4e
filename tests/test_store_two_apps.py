"""Two apps (two teams, two services) publishing to one store prefix (the Kubernetes page's
`s3://your-bucket/assay/runs`), or writing into one reports/ dir: `--baseline auto` keyed its series
on mode, dataset version, harness version and k alone, so the candidate was compared with the OTHER
app's newest run: "the runs share no case id", every case removed and added, the paired statistics
over nothing, and `gate.py --baseline auto` named no regression of this app.

Now a run of another app is never the base: runs record their app (adapter.yaml `app.name`) and one
whose name is not the candidate's is passed over, named; a run with no name recorded (one written
before runs recorded it, or an app with no name) is the base only when it shares a case id with the
candidate, and the comparison says its app could not be checked by name.

A local S3-compatible server (moto's server mode) and a real loopback app, each on its own port."""

from __future__ import annotations

import json

import pytest

from fakeapp import Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script
from s3server import BUCKET, have_moto, served

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not have_moto(), reason="needs boto3 and moto (pip install -e '.[test,s3]')")]

ORDERS_BASE = "regression-20261205T090000Z"
BILLING_RUN = "regression-20261205T100000Z"
ORDERS_PR = "regression-20261205T110000Z"
BROKEN = "broken"   # the orders PR breaks this case's answer
PR = {"on": False}  # while the PR's build answers


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    return Reply(200, {"message": "sorry" if BROKEN in msg and PR["on"] else f"re: {msg}"})


def suite(prefix):
    return [case(f"{prefix}-{i:02d}", f"{prefix} msg {i}" + (f" {BROKEN}" if i == 3 else ""), split=["full"],
                 expect={"answer": {"must_contain": [f"{prefix} msg {i}"]}}) for i in range(6)]


def run(state, app_url, run_id, prefix, name, *, pr=False, env=None, publish=None, by_make_plan=False):
    ad = adapter(app_url, max_concurrency=4)
    if name is None:
        ad["app"] = {}
    else:
        ad["app"] = {"name": name}
    plan = make_plan(state, suite(prefix), adapter_doc=ad, run_id=run_id, mode="regression",
                     selecting_split="full")
    if by_make_plan:   # make_plan.py's record of the app, in the manifest of every run since the start
        plan["manifest_extra"]["app"] = {"name": name}
    args = ["--plan", write_plan(state, plan, f"{run_id}.json"), "--out", state / "reports" / run_id,
            "--progress", "never"]
    PR["on"] = pr
    try:
        r = run_runner(*args, *(["--publish", publish] if publish else []), env=env)
    finally:
        PR["on"] = False
    assert r.rc in (0, 1), r.stdout + r.stderr
    return state / "reports" / run_id


def as_before_the_change(run_dir):
    """A run written before runs recorded their app: no `app` key in manifest.yaml or results.json."""
    for name in ("manifest.yaml", "results.json"):
        doc = json.loads((run_dir / name).read_text(encoding="utf-8"))
        doc.pop("app", None)
        (run_dir / name).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with served(BUCKET, handler) as (server, app):
        yield {"server": server, "app": app, "env": server.env, "root": tmp_path_factory.mktemp("twoapps")}


def test_two_apps_in_one_prefix_each_is_compared_with_its_own(world):
    env, url, root = world["env"], world["app"].url, world["root"]
    store = f"s3://{BUCKET}/assay/runs"
    orders, billing = make_state(root / "orders"), make_state(root / "billing")
    run(orders, url, ORDERS_BASE, "ord", "orders", env=env, publish=store)
    run(billing, url, BILLING_RUN, "bil", "billing", env=env, publish=store)   # the other team, later
    cand = run(orders, url, ORDERS_PR, "ord", "orders", pr=True)   # breaks ord-03

    r = run_script("compare_runs", "auto", cand, "--store", store, "-o", orders / "c.json", env=env)
    assert r.rc in (0, 1), r.stdout + r.stderr
    assert r.json["base"] == ORDERS_BASE, r.stdout   # before: the billing run, sharing no case id
    doc = json.loads((orders / "c.json").read_text(encoding="utf-8"))
    assert [p["case_id"] for p in doc["buckets"]["newly_failing"]] == ["ord-03"], doc["notes"]
    notes = " ".join(doc.get("notes") or [])
    assert f"{BILLING_RUN} (app 'billing')" in notes and "as another app's" in notes, notes

    g = run_script("gate", cand, "--baseline", "auto", env=dict(env, ASSAY_STORE=store))
    assert g.rc == 1, g.stdout + g.stderr
    assert f"compared with {ORDERS_BASE}" in g.stdout and "ord-03" in g.stdout, g.stdout
    assert "newly failing" in g.stdout and BILLING_RUN in g.stdout, g.stdout


def test_a_run_from_before_names_were_recorded_is_still_its_own_apps_base(world):
    """Runs published before the change record no app: the candidate's own app's earlier run is still
    chosen (no silent "no baseline"), said to be unchecked by name; another app's old run sharing no
    case id with the candidate is passed over, named."""
    env, url, root = world["env"], world["app"].url, world["root"]
    store = f"s3://{BUCKET}/old"
    orders, billing = make_state(root / "orders-old"), make_state(root / "billing-old")
    for state, run_id, prefix, name in ((orders, ORDERS_BASE, "ord", "orders"),
                                        (billing, BILLING_RUN, "bil", "billing")):
        run_dir = run(state, url, run_id, prefix, name)
        as_before_the_change(run_dir)
        assert run_script("run_cases", "--verify", run_dir).rc == 0
        assert run_script("publish_run", run_dir, store, env=env).rc == 0
    cand = run(orders, url, ORDERS_PR, "ord", "orders", pr=True)
    import shutil
    shutil.rmtree(orders / "reports" / ORDERS_BASE)   # this machine holds the candidate only

    g = run_script("gate", cand, "--baseline", "auto", env=dict(env, ASSAY_STORE=store))
    assert g.rc == 1, g.stdout + g.stderr
    assert f"compared with {ORDERS_BASE}" in g.stdout and "ord-03" in g.stdout, g.stdout
    assert "could not be checked" in g.stdout and BILLING_RUN in g.stdout, g.stdout


def test_an_old_run_of_another_app_sharing_case_ids_is_passed_over_by_its_manifest(world):
    """Runs published before results.json recorded the app, from make_plan.py's plans: the manifest names
    each one's app (manifest_extra.app.name). Two apps sharing one suite (the same case ids): the billing
    run, newer, was chosen as the orders PR's base ("its app could not be checked by name"); now the
    store's manifest is read for such a run, as for the candidate, and it is passed over, named."""
    env, url, root = world["env"], world["app"].url, world["root"]
    store = f"s3://{BUCKET}/old-shared-suite"
    orders, billing = make_state(root / "orders-shared"), make_state(root / "billing-shared")
    for state, run_id, name in ((orders, ORDERS_BASE, "orders"), (billing, BILLING_RUN, "billing")):
        run_dir = run(state, url, run_id, "ord", name, by_make_plan=True)
        as_before_the_change(run_dir)
        assert run_script("run_cases", "--verify", run_dir).rc == 0
        assert run_script("publish_run", run_dir, store, env=env).rc == 0
    cand = run(orders, url, ORDERS_PR, "ord", "orders", pr=True, by_make_plan=True)
    import shutil
    shutil.rmtree(orders / "reports" / ORDERS_BASE)   # this machine holds the candidate only

    g = run_script("gate", cand, "--baseline", "auto", env=dict(env, ASSAY_STORE=store))
    assert g.rc == 1, g.stdout + g.stderr
    assert f"compared with {ORDERS_BASE}" in g.stdout and "ord-03" in g.stdout, g.stdout
    assert f"{BILLING_RUN} (app 'billing')" in g.stdout and "could not be checked" not in g.stdout, g.stdout


def test_only_another_apps_runs_is_a_refusal_naming_them(world, tmp_path):
    """One reports dir shared by two apps, and no earlier run of this app: exit 2 naming the other
    app's run it passed over, never a comparison with it."""
    url = world["app"].url
    state = make_state(tmp_path)
    run(state, url, BILLING_RUN, "bil", "billing")
    cand = run(state, url, ORDERS_PR, "ord", "orders")
    r = run_script("compare_runs", "auto", cand, "-o", tmp_path / "c.json")
    assert r.rc == 2, r.stdout + r.stderr
    assert BILLING_RUN in r.json["error"] and "'billing'" in r.json["error"] and "'orders'" in r.json["error"], r.json
