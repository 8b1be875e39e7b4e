"""Runs in object storage, end to end: a local S3-compatible server (moto's server mode, its own
process on a free loopback port), three "pods" (run_cases.py processes with JOB_COMPLETION_INDEX
set and --shard auto --publish) against a real loopback app, their local run dirs deleted (pods
share no disk), then merge_runs.py from s3://. One sharded run is shared by every test; each
refusal is checked on a copy of its shards under another prefix."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time

import pytest

from fakeapp import Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import SCRIPTS, run_script
from s3server import BUCKET, SECRET, have_moto, served

from assay.shard.assign import add_shards

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not have_moto(), reason="needs boto3 and moto (pip install -e '.[test,s3]')")]

RUN_ID = "regression-20261204T120000Z"
WHOLE_ID = "regression-20261204T110000Z"
COUNT = 3
JOB_UID = "5d2e7c1a-0b3f-4c55-9e21-7f4a1c0d9e02"   # the Job's controller uid (the recipe's ASSAY_SHARD_ATTEMPT)


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    return Reply(200, {"message": f"re: {msg}" if not msg.endswith("7") else "other", "route": "r" + msg[-1]})


def suite():
    cases = [case(f"c-{i:02d}", f"msg {i}", split=["full"], expect={"answer": {"must_contain": [f"msg {i}"]}})
             for i in range(12)]
    cases.insert(2, case("k-1", "msg canary", split=["full", "canary"]))
    return cases


def verdicts(run_dir):
    rows = [json.loads(x) for x in (run_dir / "verdicts.jsonl").read_text().splitlines() if x.strip()]
    return {r["case_id"]: r["verdict"] for r in rows}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    with served(BUCKET, handler) as (server, app):
        state = make_state(root)
        ad = adapter(app.url, max_concurrency=4)
        base = make_plan(state, suite(), adapter_doc=ad, run_id=RUN_ID, mode="regression", selecting_split="full")
        plan_path = write_plan(state, add_shards(base, COUNT))
        whole_path = write_plan(state, dict(base, run_id=WHOLE_ID), "whole.json")
        env = dict(server.env, JOB_COMPLETION_INDEX="", ASSAY_SHARD_INDEX="")
        pods = [subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(plan_path),
                                  "--shard", "auto", "--publish", f"s3://{BUCKET}/runs", "--progress", "never"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**_env(env), "JOB_COMPLETION_INDEX": str(i),
                                      "ASSAY_SHARD_ATTEMPT": JOB_UID}) for i in range(COUNT)]
        outs = [(p.wait(timeout=300), *p.communicate()) for p in pods]
        whole = run_runner("--plan", whole_path, "--out", state / "reports" / WHOLE_ID, "--progress", "never")
        # keep one shard dir aside (the killed-publish test publishes it again), then the pods' disks are gone
        kept = root / "kept" / f"{RUN_ID}.shard-2"
        kept.parent.mkdir()
        import shutil
        shutil.copytree(state / "reports" / f"{RUN_ID}.shard-2", kept)
        for i in range(1, COUNT + 1):
            shutil.rmtree(state / "reports" / f"{RUN_ID}.shard-{i}")
        merged = run_script("merge_runs", "--plan", plan_path, "--attempt", JOB_UID, "--out",
                            state / "reports" / RUN_ID, f"s3://{BUCKET}/runs/{RUN_ID}/", env=server.env)
        yield {"server": server, "state": state, "plan_path": plan_path, "pods": outs, "whole": whole,
               "merged": merged, "kept": kept, "env": server.env, "app_url": app.url,
               "env_no_store": dict(server.env, ASSAY_STORE="")}


def _env(extra):
    import os
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


def copy_run(world, prefix, *, skip=()):
    """The shared run's shards copied under s3://BUCKET/<prefix>/<run-id>/ (keys in `skip` left out)."""
    c = world["server"].client()
    src = f"runs/{RUN_ID}/"
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=src):
        for obj in page.get("Contents") or []:
            rel = obj["Key"][len(src):]
            if not any(rel.startswith(s) for s in skip):
                c.copy_object(Bucket=BUCKET, Key=f"{prefix}/{RUN_ID}/{rel}",
                              CopySource={"Bucket": BUCKET, "Key": obj["Key"]})
    return f"s3://{BUCKET}/{prefix}/{RUN_ID}/"


def merge_from(world, url):
    return run_script("merge_runs", "--plan", world["plan_path"], "--attempt", JOB_UID, "--out",
                      world["state"] / "reports" / RUN_ID, url, env=world["env"])


def test_pods_publish_their_shards_and_the_merge_from_the_store_equals_the_unsharded_run(world):
    for rc, out, err in world["pods"]:
        assert rc == 0, (out, err)
        doc = json.loads(out)
        assert doc["published"].startswith(f"s3://{BUCKET}/runs/{RUN_ID}/shard-")
    published = sorted(json.loads(out)["published"] for _, out, _ in world["pods"])
    assert published == [f"s3://{BUCKET}/runs/{RUN_ID}/shard-{i}-of-{COUNT}/" for i in range(1, COUNT + 1)]
    assert world["whole"].rc == 0, world["whole"].stdout
    m = world["merged"]
    assert m.rc == 0, (m.stdout, m.stderr)
    assert m.json["status"] == "ok" and m.json["from_store"] == f"s3://{BUCKET}/runs/{RUN_ID}/"
    out = world["state"] / "reports" / RUN_ID
    whole = verdicts(world["state"] / "reports" / WHOLE_ID)
    assert verdicts(out) == whole and whole["c-07"] == "fail" and whole["c-01"] == "pass"
    assert run_runner("--verify", out).rc == 0
    gate = run_script("gate", out)
    assert gate.rc != 0 and "c-07" in gate.stdout   # the gate on the merged dir, as today
    # no secret in any output, and none in the store
    for rc, o, e in world["pods"]:
        assert SECRET not in o + e
    assert SECRET not in m.stdout + m.stderr
    c = world["server"].client()
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="runs/"):
        for obj in page.get("Contents") or []:
            assert SECRET.encode() not in c.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()


def test_a_deleted_shard_is_refused_and_named(world):
    r = merge_from(world, copy_run(world, "deleted", skip=(f"shard-2-of-{COUNT}/",)))
    assert r.rc == 6, r.stdout
    assert "missing shard(s) 2" in r.json["error"] and r.json["missing_shards"] == [2]
    assert "nothing at all" not in r.json["error"]
    # it says which Job index that is (Kubernetes counts from 0) and how to get the shard
    assert "shard 2 (the Job's index 1: JOB_COMPLETION_INDEX=1) again" in r.json["error"], r.stdout
    # a typo'd prefix: nothing there at all, and the error asks whether the prefix is the shards'
    r = merge_from(world, f"s3://{BUCKET}/runz/{RUN_ID}/")
    assert r.rc == 6 and "nothing at all is under that prefix" in r.json["error"], r.stdout
    # and --baseline auto from an empty store prefix says the prefix holds no run at all
    r = run_script("gate", world["state"] / "reports" / RUN_ID, "--baseline", "auto",
                   env=dict(world["env"], ASSAY_STORE=f"s3://{BUCKET}/runz"))
    assert r.rc == 2 and "no run at all is published under that prefix" in r.stdout, r.stdout


def test_a_half_uploaded_shard_is_refused_and_named(world):
    r = merge_from(world, copy_run(world, "half", skip=(f"shard-3-of-{COUNT}/manifest.yaml",)))
    assert r.rc == 6, r.stdout
    assert "unfinished shard(s) 3" in r.json["error"] and r.json["unfinished_shards"] == [3]


def test_a_shard_from_another_plan_is_refused_and_named(world):
    url = copy_run(world, "foreign")
    c = world["server"].client()
    key = f"foreign/{RUN_ID}/shard-1-of-{COUNT}/manifest.yaml"
    manifest = json.loads(c.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    manifest["plan_sha256"] = "0" * 64
    c.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(manifest).encode())
    r = merge_from(world, url)
    assert r.rc == 2 and "another plan" in r.json["error"], r.stdout
    # named by its prefix in the store (the download it was read from is gone)
    assert f"{url}shard-1-of-{COUNT}" in r.json["error"] and "assay-merge-" not in r.stdout, r.stdout
    # a shard of a plan with another count, beside this run's
    c.copy_object(Bucket=BUCKET, Key=f"foreign4/{RUN_ID}/shard-2-of-4/manifest.yaml",
                  CopySource={"Bucket": BUCKET, "Key": f"runs/{RUN_ID}/shard-2-of-{COUNT}/manifest.yaml"})
    r = merge_from(world, copy_run(world, "foreign4"))
    assert r.rc == 2 and "shard-2-of-4" in r.json["error"], r.stdout


def test_a_killed_publish_is_refused_then_retried(world):
    url = copy_run(world, "killed", skip=(f"shard-2-of-{COUNT}/",))
    c = world["server"].client()
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "publish_run.py"), str(world["kept"]), f"s3://{BUCKET}/killed"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(world["env"]))
    prefix = f"killed/{RUN_ID}/shard-2-of-{COUNT}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if c.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("KeyCount"):
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait(timeout=60)
    landed = {o["Key"][len(prefix):] for o in c.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents") or []}
    assert landed, "the publish never started"
    if "manifest.yaml" not in landed:   # killed before the last key (the usual case): unfinished, named
        r = merge_from(world, url)
        assert r.rc == 6 and r.json["unfinished_shards"] == [2], r.stdout
    else:   # the kill came after the last key: then every other key is there too (the manifest is last)
        assert landed == {q.relative_to(world["kept"]).as_posix() for q in world["kept"].rglob("*") if q.is_file()} \
            | {".assay-published.json"}   # and the record that the publish checked it (assay.store.published)
    again = run_script("publish_run", world["kept"], f"s3://{BUCKET}/killed", env=world["env"])
    assert again.rc == 0 and again.json["published"] == f"s3://{BUCKET}/{prefix}", again.stdout
    r = merge_from(world, url)
    assert r.rc == 0 and r.json["status"] == "ok", r.stdout


def test_a_finished_run_edited_after_it_ran_is_refused_without_resume_advice(world, tmp_path):
    """A run dir whose files fail --verify after it finished (an edit): refused (exit 6) saying so; its
    runner finished, so `--resume` (the unfinished run's fix) is not offered."""
    edited = tmp_path / world["kept"].name
    shutil.copytree(world["kept"], edited)
    rows = (edited / "verdicts.jsonl").read_text().splitlines(keepends=True)
    (edited / "verdicts.jsonl").write_text("".join(rows[:-1]))   # a row dropped by hand
    r = run_script("publish_run", edited, f"s3://{BUCKET}/edited", env=world["env"])
    assert r.rc == 6 and "fail the check although the run finished" in r.json["error"], r.stdout
    assert "--resume" not in r.json["error"], r.json["error"]


GREEN_ID = "regression-20261204T100000Z"


def test_baseline_and_history_come_from_the_store(world, tmp_path):
    state, env = world["state"], world["env"]
    store = f"s3://{BUCKET}/runs"
    # an earlier green run of the series, published from a machine whose disk is gone
    green = make_plan(state, suite()[:4], adapter_doc=adapter(world["app_url"], max_concurrency=4), run_id=GREEN_ID,
                      mode="regression", selecting_split="full")
    r = run_runner("--plan", write_plan(state, green, "green.json"), "--out", state / "reports" / GREEN_ID,
                   "--progress", "never", "--publish", store, env=env)
    assert r.rc == 0 and r.json["published"] == f"{store}/{GREEN_ID}/", r.stdout
    import shutil
    shutil.rmtree(state / "reports" / GREEN_ID)
    for run_id in (WHOLE_ID, RUN_ID):   # the unsharded and the merged run (both red: c-07)
        assert run_script("publish_run", state / "reports" / run_id, store, env=env).rc == 0
    candidate = state / "reports" / RUN_ID
    # reports/ alone has no open-gate run of the series; the store has one, found and downloaded
    r = run_script("compare_runs", "auto", candidate, "-o", tmp_path / "c.json", env=world["env_no_store"])
    assert r.rc == 2 and "open gate" in r.json["error"], r.stdout
    r = run_script("compare_runs", "auto", candidate, "-o", tmp_path / "c.json", "--store", store, env=env)
    assert r.rc == 0 and r.json["base"] == GREEN_ID, r.stdout
    assert (state / "reports" / GREEN_ID / "cases.jsonl").is_file()
    r = run_script("compare_runs", "auto", candidate, "-o", tmp_path / "c2.json",
                   env=dict(env, ASSAY_STORE=store))
    assert r.rc == 0 and r.json["base"] == GREEN_ID, r.stdout
    # history from the store: the three published runs, read without downloading them whole
    r = run_script("run_history", tmp_path, "--store", store, "-o", tmp_path / "h.json", env=env)
    assert r.rc == 0, r.stdout
    doc = json.loads((tmp_path / "h.json").read_text())
    assert doc["store"] == store + "/" and doc["runs_used"] == 3
    assert [run["run_id"] for s in doc["series"] for run in s["runs"]] == [GREEN_ID, WHOLE_ID, RUN_ID]
    assert "at publish" in doc["method"]["verified"]
    # the viewer over the store: only the runs asked for, downloaded whole, nothing written to a state dir
    r = run_script("view", "--store", store, "--run", GREEN_ID, "--bundle", tmp_path / "bundle", env=env)
    assert r.rc == 0, r.stdout
    bundled = (tmp_path / "bundle").rglob("*")
    names = " ".join(p.name for p in bundled)
    assert GREEN_ID in names and WHOLE_ID not in names
    r = run_script("view", "--store", store, "--run", "smoke-20200101T000000Z", "--bundle", tmp_path / "b2", env=env)
    assert r.rc == 2 and "no such run" in r.json["error"], r.stdout


def test_readers_name_a_store_prefix_without_a_run(world, tmp_path):
    """view.py and run_history.py over a typo'd prefix (nothing there) or the shards' prefix (no run
    merged and published there): exit 2 naming the store URL, never the reader's removed temporary
    dir nor an empty history read as "no runs"; a state dir with no reports/ yet still gets its history."""
    env, fresh = world["env"], tmp_path / "fresh" / ".assay"
    fresh.mkdir(parents=True)
    typo, shards_only = f"s3://{BUCKET}/runz", copy_run(world, "shardsonly", skip=("manifest.yaml",)).rsplit(RUN_ID, 1)[0]
    r = run_script("view", "--store", typo, "--bundle", tmp_path / "b", env=env)
    assert r.rc == 2 and r.json["error"] == f"{typo}/: no run at all is published under that prefix: is it the one " \
        "publish_run.py writes to?", r.stdout
    r = run_script("view", "--store", shards_only, "--bundle", tmp_path / "b", env=env)
    assert r.rc == 2 and f"{shards_only}: none of its run ids is a finished run" in r.json["error"], r.stdout
    assert RUN_ID in r.json["error"] and "merge_runs.py" in r.json["error"] and "assay-view-" not in r.stdout
    r = run_script("run_history", fresh, "--store", typo, env=env)
    assert r.rc == 2 and r.json["error"].startswith(f"{typo}/: no run at all is published"), r.stdout
    r = run_script("run_history", fresh, "--store", shards_only, env=env)   # the shards' run id: an excluded run
    assert r.rc == 0 and r.json["excluded_runs"] == 1, r.stdout
    assert (fresh / "reports" / "history.json").is_file()
