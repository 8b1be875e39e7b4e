"""Runs in object storage meeting what one machine already holds in reports/ (the store trial):

- a shard retried on a machine where another run landed in reports/ since the other shard ran chose
  its case order from one more earlier run; the merge from the store takes it (the order is each
  machine's own, like its clock), and the merged run gates on every case as any run;
- `--baseline auto` from ASSAY_STORE chooses a run this machine holds a copy of that is not the
  store's (a download cut short): exit 2 naming the copy and what differs, never that run gated
  as closed and passed over for an older baseline; deleted, the store's copy is downloaded.

A local S3-compatible server (moto's server mode) and a real loopback app, each on its own port."""

from __future__ import annotations

import shutil

import pytest

from fakeapp import Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script
from s3server import BUCKET, have_moto, served

from assay.shard.assign import add_shards

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not have_moto(), reason="needs boto3 and moto (pip install -e '.[test,s3]')")]

EARLIER = "regression-20261204T090000Z"
LANDED = "regression-20261204T093000Z"
SHARDED = "regression-20261204T100000Z"
PR = "regression-20261204T110000Z"


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": f"re: {req.json['message']}"})


def suite():
    return [case(f"c-{i:02d}", f"msg {i}", split=["full"], expect={"answer": {"must_contain": [f"msg {i}"]}})
            for i in range(8)]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("storecopies")
    with served(BUCKET, handler) as (server, app):
        state = make_state(root)
        ad = adapter(app.url, max_concurrency=4)

        def plan(run_id, **kw):
            return make_plan(state, suite(), adapter_doc=ad, run_id=run_id, mode="regression",
                             selecting_split="full", **kw)
        earlier = run_runner("--plan", write_plan(state, plan(EARLIER), "earlier.json"), "--out",
                             state / "reports" / EARLIER, "--progress", "never")
        assert earlier.rc == 0, earlier.stdout
        yield {"server": server, "state": state, "plan": plan, "env": server.env}


def test_a_shard_retried_after_another_run_landed_merges_from_the_store(world):
    state, env = world["state"], world["env"]
    reports = state / "reports"
    plan_path = write_plan(state, add_shards(world["plan"](SHARDED), 2), "sharded.json")
    url = f"s3://{BUCKET}/shards"
    first = run_runner("--plan", plan_path, "--shard", "1", "--publish", url, "--progress", "never", env=env)
    assert first.rc == 0, first.stdout
    landed = run_runner("--plan", write_plan(state, world["plan"](LANDED), "landed.json"), "--out",
                        reports / LANDED, "--progress", "never")   # another run lands on this machine
    assert landed.rc == 0, landed.stdout
    # shard 2's first attempt failed; its retry reads one more earlier run than shard 1 did
    second = run_runner("--plan", plan_path, "--shard", "2", "--publish", url, "--progress", "never", env=env)
    assert second.rc == 0, second.stdout
    for i in (1, 2):
        shutil.rmtree(reports / f"{SHARDED}.shard-{i}")
    merged = run_script("merge_runs", "--plan", plan_path, "--out", reports / SHARDED, f"{url}/{SHARDED}/", env=env)
    assert merged.rc == 0, merged.stdout
    assert merged.json["status"] == "ok"
    gate = run_script("gate", reports / SHARDED)
    assert gate.rc == 0 and "8 pass" in gate.stdout, gate.stdout   # every case of both shards, gated


def test_a_local_copy_that_is_not_the_stores_is_named_not_gated(world):
    state, env = world["state"], world["env"]
    reports = state / "reports"
    base = f"{EARLIER}-main"
    shutil.copytree(reports / EARLIER, state / base)
    main = run_script("publish_run", reports / EARLIER, f"s3://{BUCKET}/main", env=env)
    assert main.rc == 0, main.stdout
    pr = run_runner("--plan", write_plan(state, world["plan"](PR), "pr.json"), "--out", reports / PR,
                    "--progress", "never")
    assert pr.rc == 0, pr.stdout
    store_env = dict(env, ASSAY_STORE=f"s3://{BUCKET}/main")
    (reports / EARLIER / "cases.jsonl").unlink()   # a download of it cut short
    r = run_script("gate", reports / PR, "--baseline", "auto", env=store_env)
    assert r.rc == 2, r.stdout
    assert f"chose {EARLIER}" in r.json["error"] and "not the store's copy" in r.json["error"], r.stdout
    assert "cases.jsonl missing" in r.json["error"] and r.json["path"] == str(reports / EARLIER), r.stdout
    shutil.rmtree(reports / EARLIER)   # as the error says: the store's copy is downloaded
    for _ in range(2):                  # and then used as it is
        r = run_script("gate", reports / PR, "--baseline", "auto", env=store_env)
        assert r.rc == 0 and f"compared with {EARLIER}" in r.stdout, r.stdout
    assert (reports / EARLIER / "cases.jsonl").read_bytes() == (state / base / "cases.jsonl").read_bytes()


def test_a_run_dir_under_another_name_is_never_its_own_baseline(world, tmp_path):
    """A candidate run dir not named by its run id (a CI artifact downloaded into ./run): `--baseline auto`
    took the dir's name for the run's, so every run in the store counted as started before it: the
    candidate's own published copy was chosen (refused as the same run, exit 2, an earlier open run
    there), then a newer run: "no verdict changed", gate open, compared with a run after it.
    Now the run's own id (results.json) decides which runs came before it and which one it is."""
    state, env = world["state"], world["env"]
    reports, store = state / "reports", f"s3://{BUCKET}/renamed"
    assert run_script("publish_run", reports / EARLIER, store, env=env).rc == 0
    cand, newer = "regression-20261204T120000Z", "regression-20261204T130000Z"
    for run_id in (cand, newer):
        r = run_runner("--plan", write_plan(state, world["plan"](run_id), f"{run_id}.json"), "--out",
                       reports / run_id, "--progress", "never", "--publish", store, env=env)
        assert r.rc == 0, r.stdout
        if run_id == cand:   # the candidate, downloaded as an artifact under another name
            shutil.copytree(reports / cand, tmp_path / "run")
            r = run_script("compare_runs", "auto", tmp_path / "run", "--store", store, "-o", tmp_path / "c.json",
                           env=env)
            assert r.rc == 0 and r.json["base"] == EARLIER, r.stdout   # before: its own copy, refused as one run
    r = run_script("compare_runs", "auto", tmp_path / "run", "--store", store, "-o", tmp_path / "c.json", env=env)
    assert r.rc == 0 and r.json["base"] == EARLIER, r.stdout   # before: the newer run
    r = run_script("gate", tmp_path / "run", "--baseline", "auto", env=dict(env, ASSAY_STORE=store))
    assert r.rc == 0 and f"compared with {EARLIER}" in r.stdout, r.stdout
