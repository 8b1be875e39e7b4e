"""A shard's prefix is made unfinished when its run starts, not only when it publishes: a re-run
of the same plan (the ConfigMap not replaced, an index retried after the app broke) whose pod
fails before it publishes must not leave the previous attempt's shard in the store, where the
merge would take it as this attempt's and gate a broken app open. A local S3-compatible server
(moto, its own process), a real loopback app, run_cases.py as the pods."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script
from s3server import BUCKET, S3Server, have_moto

from assay.shard.assign import add_shards

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not have_moto(), reason="needs boto3 and moto (pip install -e '.[test,s3]')")]

RUN_ID = "regression-20261204T120000Z"
SHARDS = f"s3://{BUCKET}/assay/shards"


class Desk:
    """Answers each message back (every case passes); broken, its health check fails (so a pod
    stops at pre-flight, exit 3) and its answers are wrong."""

    def __init__(self) -> None:
        self.broken = False

    def __call__(self, req):
        if req.method == "GET":
            return Reply(503 if self.broken else 200, {"ok": not self.broken})
        return Reply(200, {"message": "wrong" if self.broken else req.json["message"], "route": "r"})


@pytest.fixture()
def world(tmp_path):
    server = S3Server().start()
    server.client().create_bucket(Bucket=BUCKET)
    desk = Desk()
    app = FakeApp(desk)
    app.__enter__()
    try:
        state = make_state(tmp_path)
        cases = [case(f"c-{i}", f"msg {i}", split=["full"]) for i in range(4)]
        plan = make_plan(state, cases, adapter_doc=adapter(app.url, max_concurrency=2), run_id=RUN_ID,
                         mode="regression", selecting_split="full")
        yield {"server": server, "state": state, "desk": desk, "app": app,
               "plan": write_plan(state, add_shards(plan, 2))}
    finally:
        app.__exit__(None, None, None)
        server.stop()


def pod(world, index: int, publish: str = SHARDS):
    """One pod of the Indexed Job: --shard auto from JOB_COMPLETION_INDEX; its disk gone after."""
    import shutil
    r = run_runner("--plan", world["plan"], "--shard", "auto", "--publish", publish, "--progress", "never",
                   env=dict(world["server"].env, JOB_COMPLETION_INDEX=str(index), ASSAY_SHARD_INDEX=""))
    shutil.rmtree(world["state"] / "reports" / f"{RUN_ID}.shard-{index + 1}", ignore_errors=True)
    return r


def merge(world):
    import shutil
    shutil.rmtree(world["state"] / "reports" / RUN_ID, ignore_errors=True)
    return run_script("merge_runs", "--plan", world["plan"], "--out", world["state"] / "reports" / RUN_ID,
                      f"{SHARDS}/{RUN_ID}/", env=world["server"].env)


def test_a_rerun_whose_pods_fail_before_publishing_never_merges_the_previous_attempt(world):
    assert [pod(world, i).rc for i in (0, 1)] == [0, 0]
    first = merge(world)
    assert first.rc == 0, first.stdout
    assert run_script("gate", world["state"] / "reports" / RUN_ID).rc == 0   # the app was healthy: open
    # the app breaks; the same plan runs again; every pod stops at pre-flight (exit 3, FailIndex)
    world["desk"].broken = True
    again = [pod(world, i) for i in (0, 1)]
    assert [r.rc for r in again] == [3, 3], [r.stdout for r in again]
    # the merge Job still runs (the recipe runs it after a Failed Job, to name the failed indexes)
    r = merge(world)
    assert r.rc == 6, r.stdout   # before: exit 0, the first attempt's shards merged, and the gate open
    doc = json.loads(r.stdout)
    assert doc["unfinished_shards"] == [1, 2] and "retry the index" in doc["error"]
    assert not (world["state"] / "reports" / RUN_ID / "results.json").exists()
    # the index retried once the app is back: the shard is finished again, and only it
    world["desk"].broken = False
    assert pod(world, 0).rc == 0
    r = merge(world)
    assert r.rc == 6 and json.loads(r.stdout)["unfinished_shards"] == [2], r.stdout


def test_a_wrong_bucket_or_missing_credentials_are_said_before_the_first_case(world):
    for publish, env, said in [
        (f"s3://{BUCKET}-typo/assay/shards", {}, "NoSuchBucket"),
        (SHARDS, {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_EC2_METADATA_DISABLED": "true"}, "no AWS credentials found"),
    ]:
        before = len(world["app"].requests)
        r = run_runner("--plan", world["plan"], "--shard", "1", "--publish", publish, "--progress", "never",
                       env=dict(world["server"].env, **env))
        assert r.rc == 2 and said in r.json["error"], r.stdout
        assert len(world["app"].requests) == before   # no case sent (before: the whole shard ran, then exit 2)
        assert not (world["state"] / "reports" / f"{RUN_ID}.shard-1").exists()
