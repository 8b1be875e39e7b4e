"""A holdout look taken on a cluster is counted: the shards record it in the store before any case.

Each pod's state dir is its own and thrown away (so is the merge Job's), so the ledger line a shard
(or the merge) appends there reached no ledger that outlived the pod: a holdout Job whose shards sat
in the bucket unmerged (holdout results, readable) counted no look anywhere, and the merge pod's gate
counted only the looks its image's ledger held plus its own, so the look budget never ran out on a
cluster. A holdout run with --publish now records its look at `<prefix>/holdout-looks/<run-id>.json`
before its pre-flight, and merge_runs.py from the store, and every --publish holdout run, folds the
store's looks (of the plan's dataset_version) into the ledger before anything else. A local
S3-compatible server (moto), a real loopback app, run_cases.py / merge_runs.py / gate.py as
subprocesses; each pod and the merge Job start from the image's state dir."""

from __future__ import annotations

import json
import shutil

import pytest

from fakeapp import Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script
from s3server import BUCKET, have_moto, served

from assay.shard.assign import add_shards

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not have_moto(), reason="needs boto3 and moto (pip install -e '.[test,s3]')")]

SHARDS = f"s3://{BUCKET}/assay/shards"
EARLIER = [{"run_id": f"holdout-2026110{i}T120000Z", "date": f"2026-11-0{i}T12:00:00Z", "mode": "holdout",
            "reason": "an earlier look, committed with the suite"} for i in range(1, 5)]


def echo(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": f"re: {req.json['message']}"})


def test_holdout_looks_of_pods_that_share_no_disk_are_counted_and_close_the_gate_past_the_budget(tmp_path, s3_server):
    image = tmp_path / "image"   # the state dir as the image holds it: 4 looks committed
    state = make_state(tmp_path / "app-root")
    (state / "datasets" / "holdout-looks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in EARLIER))
    shutil.copytree(state, image)
    ledger = state / "datasets" / "holdout-looks.jsonl"

    def fresh_pod():   # a pod's disk: the image's state dir, nothing another pod wrote
        shutil.rmtree(state)
        shutil.copytree(image, state)

    cases = [case(f"h-{i}", f"msg {i}", split=["holdout"]) for i in range(2)]
    with served(BUCKET, echo, s3_server) as (server, app):
        def holdout_job(run_id):
            plan = add_shards(make_plan(state, cases, adapter_doc=adapter(app.url), run_id=run_id, mode="holdout",
                                        selecting_split="holdout"), 2)
            for index in (0, 1):
                fresh_pod()
                path = write_plan(state, plan)
                r = run_runner("--plan", path, "--shard", "auto", "--publish", SHARDS, "--progress", "never",
                               env=dict(server.env, JOB_COMPLETION_INDEX=str(index), ASSAY_SHARD_INDEX="",
                                        ASSAY_SHARD_ATTEMPT=f"job-{run_id}"))
                assert r.rc == 0, r.stdout + r.stderr
            return plan

        # Job 1: published, never merged (its holdout results readable in the bucket)
        holdout_job("holdout-20261201T120000Z")
        keys = {o["Key"] for o in server.client().list_objects_v2(Bucket=BUCKET)["Contents"]}
        assert "assay/shards/holdout-looks/holdout-20261201T120000Z.json" in keys
        # Job 2, then the merge Job on its own fresh disk, and the gate: look 6 of a budget of 5 (the
        # merge pod's own ledger without the store's looks: the image's 4 and its own, 5, within it)
        run_id = "holdout-20261202T120000Z"
        plan = holdout_job(run_id)
        fresh_pod()
        path = write_plan(state, plan)
        out = state / "reports" / run_id
        merged = run_script("merge_runs", "--plan", path, "--attempt", f"job-{run_id}", "--out", out,
                            f"{SHARDS}/{run_id}/", env=server.env)
        assert merged.rc == 0, merged.stdout + merged.stderr
        rows = [json.loads(x) for x in ledger.read_text().splitlines()]
        assert [r["run_id"] for r in rows] == [r["run_id"] for r in EARLIER] + ["holdout-20261201T120000Z", run_id]
        gate = run_script("gate", out)
        # the merged run published where later runs read (the recipe's publish_run.py): its look goes first
        published = run_script("publish_run", out, f"s3://{BUCKET}/assay/runs", env=server.env)
        assert published.rc == 0, published.stdout
        look = server.client().get_object(Bucket=BUCKET, Key=f"assay/runs/holdout-looks/{run_id}.json")
        assert json.loads(look["Body"].read())["run_id"] == run_id
    assert gate.rc != 0 and "holdout look 6 of a budget of 5" in gate.stdout, gate.stdout


def test_holdout_looks_with_a_store_counts_the_looks_published_there(tmp_path, s3_server):
    """`holdout.py looks` read only this checkout's ledger: a team whose holdout runs publish (their
    looks at `<prefix>/holdout-looks/`, the pods' ledgers thrown away) saw none of them counted. With
    `--store` (or $ASSAY_STORE) it folds the store's looks of the suite's dataset_version into the
    ledger first, the merge's fold, and counts them; a look of another dataset_version is not counted."""
    from pathlib import Path
    team = tmp_path / "team" / ".assay"   # the checkout that asks: one look committed
    shutil.copytree(Path(__file__).resolve().parent.parent / "examples" / "helpdesk" / ".assay", team,
                    ignore=shutil.ignore_patterns("reports", "work"))
    ledger = team / "datasets" / "holdout-looks.jsonl"
    ledger.write_text(json.dumps(EARLIER[0]) + "\n", encoding="utf-8")
    pod = make_state(tmp_path / "pod")   # a pod's own disk
    store = f"s3://{BUCKET}/assay/team"
    run_id = "holdout-20261203T120000Z"
    with served(BUCKET, echo, s3_server) as (server, app):
        plan = make_plan(pod, [case("h-1", "msg 1", split=["holdout"])], adapter_doc=adapter(app.url),
                         run_id=run_id, mode="holdout", selecting_split="holdout")
        r = run_runner("--plan", write_plan(pod, plan), "--out", pod / "reports" / run_id, "--publish", store,
                       "--progress", "never", env=server.env)
        assert r.rc == 0, r.stdout + r.stderr
        old = {"run_id": "holdout-20261001T120000Z", "mode": "holdout", "dataset_version": 0}
        server.client().put_object(Bucket=BUCKET, Key="assay/team/holdout-looks/holdout-20261001T120000Z.json",
                                   Body=json.dumps(old).encode())

        alone = run_script("holdout", "looks", team, env=server.env)
        assert alone.rc == 0 and alone.json["looks"] == 1, alone.stdout
        looks = run_script("holdout", "looks", team, "--store", store, env=server.env)
        assert looks.rc == 0, looks.stdout + looks.stderr
        doc = looks.json
        assert (doc["looks"], doc["folded"], doc["remaining"], doc["store"]) == (2, 1, 3, f"{store}/"), doc
        assert doc["last"]["run_id"] == run_id, doc
        assert [json.loads(x)["run_id"] for x in ledger.read_text().splitlines()] == [EARLIER[0]["run_id"], run_id]
        again = run_script("holdout", "looks", team, env=dict(server.env, ASSAY_STORE=store))   # one line per run id
        assert again.rc == 0 and (again.json["looks"], again.json["folded"]) == (2, 0), again.stdout
        wrong = run_script("holdout", "unseal", team, "--store", store, "--reason", "x", env=server.env)
        assert wrong.rc == 2 and "--store" in wrong.json["error"], wrong.stdout
