"""A shard's prefix is made unfinished when its run starts, not only when it publishes: a re-run
of the same plan (the ConfigMap not replaced, an index retried after the app broke) whose pod
fails before it publishes must not leave the previous attempt's shard in the store, where the
merge would take it as this attempt's and gate a broken app open. A local S3-compatible server
(moto, its own process), a real loopback app, run_cases.py as the pods."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from fakeapp import Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import ROOT, SCRIPTS, run_script
from s3server import BUCKET, have_moto, served

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
        return Reply(200, {"message": "wrong" if self.broken else f"re: {req.json['message']}", "route": "r"})


CASES = [case(f"c-{i}", f"msg {i}", split=["full"]) for i in range(4)]


@pytest.fixture()
def world(tmp_path, s3_server):
    desk = Desk()
    with served(BUCKET, desk, s3_server) as (server, app):
        state = make_state(tmp_path)
        plan = make_plan(state, CASES, adapter_doc=adapter(app.url, max_concurrency=2), run_id=RUN_ID,
                         mode="regression", selecting_split="full")
        yield {"server": server, "state": state, "desk": desk, "app": app,
               "plan": write_plan(state, add_shards(plan, 2))}


def pod(world, index: int, publish: str = SHARDS, plan=None, run_id: str = RUN_ID, job: str = "job-uid-1",
        args: tuple = ("--shard", "auto")):
    """One pod of the Indexed Job: --shard auto from JOB_COMPLETION_INDEX; its disk gone after."""
    import shutil
    r = run_runner("--plan", plan or world["plan"], *args, "--publish", publish, "--progress", "never",
                   env=dict(world["server"].env, JOB_COMPLETION_INDEX=str(index), ASSAY_SHARD_INDEX="",
                            ASSAY_SHARD_ATTEMPT=job))
    shutil.rmtree(world["state"] / "reports" / f"{run_id}.shard-{index + 1}", ignore_errors=True)
    return r


def merge(world, attempt: str = "job-uid-1"):
    """merge_runs.py from the store, told the shards Job's uid (--attempt, as the recipe's merge Job is)."""
    import shutil
    shutil.rmtree(world["state"] / "reports" / RUN_ID, ignore_errors=True)
    return run_script("merge_runs", "--plan", world["plan"], "--attempt", attempt, "--out",
                      world["state"] / "reports" / RUN_ID, f"{SHARDS}/{RUN_ID}/", env=world["server"].env)


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



@pytest.mark.parametrize("args, said", [
    # the merged run's dir given as --out (a shard's is <run_id>.shard-<I>): refused before the claim
    (("--shard", "auto", "--out", "{reports}/" + RUN_ID), f"must be '{RUN_ID}.shard-"),
    # --shard auto lost from the Job's args: every pod would run the whole plan
    ((), "JOB_COMPLETION_INDEX='0' is set"),
])
def test_a_rerun_whose_pods_refuse_their_arguments_never_merges_the_previous_attempt(world, args, said):
    """The Job re-applied with the same plan and its args edited wrong: every pod stopped (exit 2, FailIndex)
    at a refusal that came before it made its shard unfinished (an --out that is not the shard's run dir;
    no --shard in a shard's slot), so the earlier Job's shards were still finished in the bucket, the merge
    took them as this Job's (exit 0) and the gate PASSed an app that had broken since. A pod now claims
    the shard of its slot before these refusals too."""
    assert [pod(world, i).rc for i in (0, 1)] == [0, 0]
    assert merge(world).rc == 0 and run_script("gate", world["state"] / "reports" / RUN_ID).rc == 0
    world["desk"].broken = True
    args = tuple(a.replace("{reports}", str(world["state"] / "reports")) for a in args)
    again = [pod(world, i, job="job-uid-2", args=args) for i in (0, 1)]
    assert [r.rc for r in again] == [2, 2], [r.stdout for r in again]
    assert said in again[0].json["error"], again[0].json["error"]
    r = merge(world)
    assert r.rc == 6, r.stdout   # before: exit 0, the earlier Job's shards, and the gate PASS
    assert r.json["unfinished_shards"] == [1, 2] and "retry the index" in r.json["error"], r.stdout
    assert run_script("gate", world["state"] / "reports" / RUN_ID).rc != 0


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


def merge_job(world, plan, run_id: str, attempt: str = "job-uid-1") -> subprocess.CompletedProcess:
    """The merge Job of skills/run/references/kubernetes.md, its script run as written (sh -c), the
    image's paths put where this test keeps them: assay's scripts, the state dir, the plan; `attempt`:
    the shards Job's uid, which the recipe's wait step sets in it (SHARDS_JOB_UID)."""
    page = (ROOT / "skills" / "run" / "references" / "kubernetes.md").read_text(encoding="utf-8")
    docs = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", page, re.S)]
    job = next(d for d in docs if isinstance(d, dict) and d.get("metadata", {}).get("name") == "assay-merge")
    container = job["spec"]["template"]["spec"]["containers"][0]
    script = (container["args"][0].replace("python3 /opt/assay/scripts/", f"{sys.executable} {SCRIPTS}/")
              .replace("/app/.assay", str(world["state"])).replace("/plan/plan.json", str(plan)))
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env.update(world["server"].env, RUN_ID=run_id, ASSAY_SHARDS=SHARDS, ASSAY_STORE=f"s3://{BUCKET}/assay/runs",
               SHARDS_JOB_UID=attempt)
    import os
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **env}
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env, timeout=600)


def test_the_merge_jobs_script_never_gates_an_earlier_merge_of_the_plan(world):
    """The recipe's merge script decides "merged or refused" by the merged run's results.json. Where
    --out already held an earlier merge of the same plan (a volume kept between attempts, a local
    try), a refused merge left that one there: the script published it again and the gate opened
    (exit 0, PASS) on an app whose shards had just failed. The script clears --out first."""
    base_id = "regression-20261204T110000Z"   # an earlier green run of the series: --baseline auto's choice
    base_plan = write_plan(world["state"], add_shards(make_plan(
        world["state"], CASES, adapter_doc=adapter(world["app"].url, max_concurrency=2), run_id=base_id,
        mode="regression", selecting_split="full"), 2), "base-plan.json")
    assert [pod(world, i, plan=base_plan, run_id=base_id).rc for i in (0, 1)] == [0, 0]
    merged = run_script("merge_runs", "--plan", base_plan, "--attempt", "job-uid-1", "--out",
                        world["state"] / "reports" / base_id, f"{SHARDS}/{base_id}/", env=world["server"].env)
    assert merged.rc == 0, merged.stdout
    assert run_script("publish_run", world["state"] / "reports" / base_id, f"s3://{BUCKET}/assay/runs",
                      env=world["server"].env).rc == 0
    # this plan: its shards published and merged once (the earlier attempt's merge stays in --out)
    assert [pod(world, i).rc for i in (0, 1)] == [0, 0]
    assert merge(world).rc == 0
    # the app breaks; the plan runs again; every pod stops at pre-flight; the merge Job runs
    world["desk"].broken = True
    assert [pod(world, i).rc for i in (0, 1)] == [3, 3]
    job = merge_job(world, world["plan"], RUN_ID)
    assert job.returncode != 0, job.stdout + job.stderr   # before: exit 0, the gate open against the base
    assert "merge refused" in job.stdout, job.stdout
    assert "PASS" not in job.stdout
    assert not (world["state"] / "reports" / RUN_ID / "results.json").exists()


def test_missing_shards_say_what_the_job_did_wrong(world):
    """The merge names two Job mistakes behind missing shards: pods without --shard auto (each published
    the whole plan at the run's own prefix: before, "run shard 1, 2 again (its pod's log says why it
    stopped)" although every pod had finished, exit 0), and completions fewer than the plan's shards
    (the last indexes never had a pod whose log could say why)."""
    plain = f"s3://{BUCKET}/assay/plain"
    r = run_runner("--plan", world["plan"], "--out", world["state"] / "reports" / RUN_ID, "--publish", plain,
                   "--progress", "never", env=dict(world["server"].env, JOB_COMPLETION_INDEX="", ASSAY_SHARD_INDEX=""))
    assert r.rc == 0, r.stdout + r.stderr
    out = world["state"] / "reports" / "merged" / RUN_ID
    r = run_script("merge_runs", "--plan", world["plan"], "--out", out, f"{plain}/{RUN_ID}/", env=world["server"].env)
    assert r.rc == 6 and r.json["missing_shards"] == [1, 2], r.stdout
    assert (f"a whole, unsharded run of this plan is published at {plain}/{RUN_ID}/ itself" in r.json["error"]
            and "add --shard auto" in r.json["error"]), r.json["error"]
    short = f"s3://{BUCKET}/assay/short"   # completions: 1 for a plan of 2 shards: index 0 only
    assert pod(world, 0, publish=short).rc == 0
    r = run_script("merge_runs", "--plan", world["plan"], "--out", out, f"{short}/{RUN_ID}/", env=world["server"].env)
    assert r.rc == 6 and r.json["missing_shards"] == [2], r.stdout
    assert "the Job's completions (1?) is fewer than the plan's 2 shards: set completions to 2" in r.json["error"]
    assert "unsharded" not in r.json["error"]
    assert not out.exists()


def test_a_rerun_whose_pods_refuse_the_plan_never_merges_the_previous_attempt(tmp_path, s3_server):
    """The Job re-applied with the plan's ConfigMap kept after a case was tightened in the image: every
    pod refused the stale plan (exit 2, FailIndex) before it made its shard unfinished, so the merge
    took the earlier Job's shards as this one's (exit 0) and the gate said PASS on a suite that never
    ran. A pod now claims its shard before any refusal of the run."""
    from test_no_silent_green import case_yaml, travel_reply, write_state
    state = write_state(tmp_path, {f"c-{i}": case_yaml(f"c-{i}") for i in range(4)})
    work, run_id = state / "work", "regression-20261205T000000Z"
    assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
    plan = work / "plan.json"
    r = run_script("make_plan", work / "converted.json", "--mode", "regression", "--state-dir", state, "-o", plan,
                   "--run-id", run_id, "--shards", "2")
    assert r.rc == 0, r.stdout
    out = state / "reports" / run_id
    with served(BUCKET, travel_reply, s3_server) as (server, app):
        def pods():
            rs = [run_runner("--plan", plan, "--shard", "auto", "--publish", SHARDS, "--progress", "never",
                             env=dict(server.env, TRAVEL_BASE_URL=app.url, JOB_COMPLETION_INDEX=str(i),
                                      ASSAY_SHARD_ATTEMPT="job-uid-1",
                                      ASSAY_SHARD_INDEX="")) for i in (0, 1)]
            for i in (1, 2):   # the pod's disk is gone after it
                shutil.rmtree(state / "reports" / f"{run_id}.shard-{i}", ignore_errors=True)
            return rs

        def merged():
            shutil.rmtree(out, ignore_errors=True)
            return run_script("merge_runs", "--plan", plan, "--attempt", "job-uid-1", "--out", out,
                              f"{SHARDS}/{run_id}/", env=server.env)

        assert [r.rc for r in pods()] == [0, 0]
        assert merged().rc == 0 and run_script("gate", out).rc == 0   # the app answers 120: open
        for case in (state / "datasets").glob("c-*.yaml"):   # the expectation tightened; the plan kept
            case.write_text(case.read_text(encoding="utf-8").replace("scalar: 120", "scalar: 99"), encoding="utf-8")
        again = pods()
        assert [r.rc for r in again] == [2, 2] and all("older than its state dir" in r.json["error"] for r in again)
        r = merged()
        assert r.rc == 6, r.stdout   # before: exit 0, the earlier Job's shards, and the gate PASS
        assert r.json["unfinished_shards"] == [1, 2] and "retry the index" in r.json["error"], r.stdout
        assert not (out / "results.json").exists()
