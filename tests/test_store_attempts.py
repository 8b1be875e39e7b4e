"""A shard records which attempt (Job) of the plan wrote it, and the merge refuses the shards of two.

The hole: the Indexed Job re-applied with the same plan (same run id) after the app broke on shard
3's cases; pods 0 and 1 finish and publish, index 2 has not started, so the bucket still holds the
first attempt's shard 3 (a pod clears only its own shard when it starts). A merge run then took
that shard as this attempt's: exit 0, and the gate PASSed a broken app. The recipe sets
ASSAY_SHARD_ATTEMPT from the Job's controller uid; a retried pod of the same Job (same uid, after a
kill, --resume) still merges. The merge is told the Job it is for (merge_runs.py --attempt, the
shards Job's uid, as the recipe's merge Job is) and refuses every other Job's shard, so a re-applied
Job whose pods all stopped before they knew their shard (nothing claimed) never merges as the earlier
Job's run. A local S3-compatible server (moto), a real loopback app, run_cases.py / merge_runs.py /
gate.py as subprocesses."""

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
from s3server import BUCKET, have_moto, served

from assay.core.casestore import scan
from assay.plan.shards import ATTEMPT_ENV
from assay.shard.assign import add_shards

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not have_moto(), reason="needs boto3 and moto (pip install -e '.[test,s3]')")]

RUN_ID = "regression-20261205T120000Z"
SHARDS = f"s3://{BUCKET}/assay/shards"
JOB_A, JOB_B = "3f0c2a4e-1111-4a1e-9c55-0d9a7b1e0a01", "8b7d1c2f-2222-4f0e-8e11-5c3b2a9d0b02"   # controller uids


class Desk:
    """Answers each message back; `broken` messages get a wrong answer (the health check stays
    green, so the pods run), `delay_s` slows every answer (time to kill a pod mid-shard)."""

    def __init__(self) -> None:
        self.broken: set[str] = set()
        self.delay_s = 0.0

    def __call__(self, req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        time.sleep(self.delay_s)
        message = req.json["message"]
        return Reply(200, {"message": "wrong" if message in self.broken else f"re: {message}", "route": "r"})


CASES = [case(f"c-{i}", f"msg {i}", split=["full"]) for i in range(9)]


@pytest.fixture()
def world(tmp_path, s3_server):
    desk = Desk()
    with served(BUCKET, desk, s3_server) as (server, app):
        state = make_state(tmp_path)
        plan = add_shards(make_plan(state, CASES, adapter_doc=adapter(app.url, max_concurrency=1), run_id=RUN_ID,
                                    mode="regression", selecting_split="full"), 3)
        third = [c["input"]["messages"][0]["content"] for c in CASES if plan["shards"]["assignment"][c["id"]] == 3]
        assert third
        yield {"server": server, "state": state, "desk": desk, "app": app, "plan": write_plan(state, plan),
               "third": set(third)}


def env(world, index: int, job: str | None, slot: str = "JOB_COMPLETION_INDEX") -> dict[str, str]:
    """A pod's env: JOB_COMPLETION_INDEX (0-based, a Job's); ASSAY_SHARD_INDEX (1-based, any other scheduler)."""
    index = index if slot == "JOB_COMPLETION_INDEX" else index + 1
    return dict(world["server"].env, **{"JOB_COMPLETION_INDEX": "", "ASSAY_SHARD_INDEX": "", slot: str(index),
                                        ATTEMPT_ENV: job or ""})


def pod(world, index: int, job: str | None, *args: str, keep: bool = False, slot: str = "JOB_COMPLETION_INDEX"):
    """One pod of the Indexed Job `job` (its controller uid, as the recipe's downward API sets it)."""
    r = run_runner("--plan", world["plan"], "--shard", "auto", "--publish", SHARDS, "--progress", "never", *args,
                   env=env(world, index, job, slot))
    if not keep:   # the pod's disk is gone after it
        shutil.rmtree(world["state"] / "reports" / f"{RUN_ID}.shard-{index + 1}", ignore_errors=True)
    return r


def merge_and_gate(world, attempt: str | None = None):
    """merge_runs.py from the store (--attempt: the shards Job's uid, as the recipe passes it), then gate.py."""
    out = world["state"] / "reports" / RUN_ID
    shutil.rmtree(out, ignore_errors=True)
    told = ("--attempt", attempt) if attempt is not None else ()
    merged = run_script("merge_runs", "--plan", world["plan"], *told, "--out", out, f"{SHARDS}/{RUN_ID}/",
                        env=world["server"].env)
    gate = run_script("gate", out)
    return merged, gate


def test_a_merge_before_every_index_of_a_rerun_started_never_takes_the_earlier_jobs_shard(world):
    assert [pod(world, i, JOB_A).rc for i in (0, 1, 2)] == [0, 0, 0]
    merged, gate = merge_and_gate(world, JOB_A)
    assert merged.rc == 0 and gate.rc == 0, merged.stdout + gate.stdout   # the app was healthy: open
    # the app breaks on shard 3's cases; the Job is re-applied with the same plan (a new uid);
    # pods 0 and 1 finish and publish; index 2 has not started; the merge runs now (not told the Job)
    world["desk"].broken = world["third"]
    assert [pod(world, i, JOB_B).rc for i in (0, 1)] == [0, 0]
    merged, gate = merge_and_gate(world)
    assert merged.rc == 6, merged.stdout   # before: exit 0 with the first Job's shard 3, and the gate PASSed
    doc = json.loads(merged.stdout)
    assert [(g["attempt"], g["shards"]) for g in doc["mixed_attempts"]] == [(JOB_B, [1, 2]), (JOB_A, [3])]
    for said in (f"shard(s) 1, 2 by attempt {JOB_B}", f"shard(s) 3 by attempt {JOB_A}",
                 "has not written shard(s) 3 yet", "wait until every index of the newer Job has finished",
                 "make a new plan"):
        assert said in doc["error"], doc["error"]
    assert not (world["state"] / "reports" / RUN_ID / "results.json").exists()
    assert gate.rc != 0 and "PASS" not in gate.stdout, gate.stdout
    # told the new Job (the recipe's merge): shard 3 is named with the uid it carries and the one expected
    merged, _ = merge_and_gate(world, JOB_B)
    assert merged.rc == 6 and merged.json["other_attempts"] == [
        {"shard": 3, "attempt": JOB_A, "started_at": merged.json["other_attempts"][0]["started_at"]}], merged.stdout
    for said in (f"shard(s) 3 by attempt {JOB_A}", f"not by --attempt {JOB_B}", "wrote shard(s) 1, 2 only",
                 "wait until every index of that Job has finished"):
        assert said in merged.json["error"], merged.json["error"]
    # a retried pod of the same Job (same uid) is that attempt's: still refused only for shard 3
    assert pod(world, 0, JOB_B).rc == 0
    merged, _ = merge_and_gate(world)
    assert merged.rc == 6 and [g["shards"] for g in json.loads(merged.stdout)["mixed_attempts"]] == [[1, 2], [3]]
    # index 2 of the new Job starts, is killed mid-shard, and its retry resumes it (same uid): one attempt
    world["desk"].delay_s = 0.3
    out3 = world["state"] / "reports" / f"{RUN_ID}.shard-3"
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(world["plan"]),
                             "--shard", "auto", "--publish", SHARDS, "--progress", "never"],
                            env=dict(__import__("os").environ, **env(world, 2, JOB_B)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out3.is_dir() and scan(out3).ids()):
        time.sleep(0.02)
    assert proc.poll() is None, "the shard finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    world["desk"].delay_s = 0.0
    other = pod(world, 2, JOB_A, "--resume", keep=True)   # another Job's pod never resumes it as its own
    assert other.rc == 2 and ATTEMPT_ENV in other.json["error"] and JOB_B in other.json["error"], other.stdout
    assert pod(world, 2, JOB_B, "--resume").rc == 0
    merged, gate = merge_and_gate(world, JOB_B)
    assert merged.rc == 0 and merged.json["attempt"] == JOB_B, merged.stdout
    assert gate.rc == 1 and "PASS" not in gate.stdout, gate.stdout   # the broken shard 3 closes the gate


def test_shards_without_an_attempt_merge_as_before(world):
    """Outside Kubernetes (a CI matrix, a scheduler's slot: ASSAY_SHARD_INDEX) no attempt is recorded and
    the merge checks none."""
    assert [pod(world, i, None, slot="ASSAY_SHARD_INDEX").rc for i in (0, 1, 2)] == [0, 0, 0]
    merged, gate = merge_and_gate(world)
    assert merged.rc == 0 and gate.rc == 0, merged.stdout + gate.stdout
    # told an attempt (a Job's uid), shards that record none are not that Job's
    merged, _ = merge_and_gate(world, JOB_A)
    assert merged.rc == 6 and [r["attempt"] for r in merged.json["other_attempts"]] == [None, None, None]
    assert "shard(s) 1, 2, 3 by attempt (none recorded)" in merged.json["error"], merged.json["error"]


@pytest.mark.parametrize("stop", ["plan unreadable", "publish URL typo'd"])
def test_a_rerun_whose_every_pod_stops_before_it_knows_its_shard_never_merges_the_earlier_job(world, stop):
    """The Job re-applied with the same plan after the app broke on shard 3's cases, and every pod of it
    stops before it knows its shard (the plan's path wrong, the --publish URL typo'd): none claims a
    shard, so the store holds the first Job's three finished shards, and the merge took them as this
    Job's run (exit 0) and the gate PASSed results the new Job never produced. Told the new Job's uid
    (--attempt, as the recipe's merge Job is), the merge refuses each shard, naming the uid it carries,
    the one expected and the fix; not told any, it refuses (exit 2) naming the uid the shards carry."""
    assert [pod(world, i, JOB_A).rc for i in (0, 1, 2)] == [0, 0, 0]   # the app healthy: all pass
    world["desk"].broken = world["third"]
    wrong = (("--plan", str(world["plan"]) + ".missing") if stop == "plan unreadable"
             else ("--publish", f"s3:/{BUCKET}/assay/shards"))
    sent = len(world["app"].requests)
    runs = [pod(world, i, JOB_B, *wrong) for i in (0, 1, 2)]
    assert [r.rc for r in runs] == [2, 2, 2], [r.stdout for r in runs]
    assert len(world["app"].requests) == sent   # the new Job measured nothing
    merged, gate = merge_and_gate(world)   # a merge not told which Job: refused, not the earlier Job's run
    assert merged.rc == 2 and merged.json["attempts_found"] == [JOB_A], merged.stdout   # before: exit 0, and
    # the gate PASSed the first Job's shards, results the new Job never produced
    for said in (f"written by attempt {JOB_A}", "not told which attempt", "--attempt <the shards Job's uid>",
                 "kubectl get job assay-shards -o jsonpath='{.metadata.uid}'"):
        assert said in merged.json["error"], merged.json["error"]
    assert gate.rc != 0 and "PASS" not in gate.stdout, gate.stdout
    merged, gate = merge_and_gate(world, JOB_B)   # the recipe's merge: told the shards Job's uid
    assert merged.rc == 6, merged.stdout
    assert [(r["shard"], r["attempt"]) for r in merged.json["other_attempts"]] == [(1, JOB_A), (2, JOB_A), (3, JOB_A)]
    assert merged.json["attempt"] == JOB_B
    for said in (f"shard(s) 1, 2, 3 by attempt {JOB_A}", f"not by --attempt {JOB_B}",
                 f"no shard here was written by attempt {JOB_B}", "before it knew its shard",
                 "a new run id", "kubectl get job assay-shards -o jsonpath='{.metadata.uid}'"):
        assert said in merged.json["error"], merged.json["error"]
    assert not (world["state"] / "reports" / RUN_ID / "results.json").exists()
    assert gate.rc != 0 and "PASS" not in gate.stdout, gate.stdout
    # the recipe's merge Job, its script as written, with the uid its wait step sets: refused
    from test_store_rerun import merge_job
    job = merge_job(world, world["plan"], RUN_ID, attempt=JOB_B)
    assert job.returncode != 0 and "merge refused" in job.stdout and "PASS" not in job.stdout, job.stdout + job.stderr
    assert f"not by --attempt {JOB_B}" in job.stdout
    job = merge_job(world, world["plan"], RUN_ID, attempt="")   # applied without the wait step's uid
    assert job.returncode != 0 and "--attempt is empty" in job.stdout and "PASS" not in job.stdout, job.stdout
    for bad in ("", "not an id!"):   # said before anything is downloaded
        r = run_script("merge_runs", "--plan", world["plan"], "--attempt", bad, "--out",
                       world["state"] / "reports" / RUN_ID, f"{SHARDS}/{RUN_ID}/", env=world["server"].env)
        assert r.rc == 2 and r.json["key"] == "--attempt", r.stdout


def test_an_attempt_id_of_each_pod_is_named_not_taken_for_a_rerun(world):
    """ASSAY_SHARD_ATTEMPT set from the pod's own uid (metadata.uid, the downward API's first example)
    instead of the Job's: every shard its own attempt. The merge refused (right), but said to wait for
    "the newer Job" to write the other shards, which no wait ever does; it now names the pod-level id
    and the controller-uid label."""
    assert [pod(world, i, f"pod-{i}-7c1e0a").rc for i in (0, 1, 2)] == [0, 0, 0]
    merged, gate = merge_and_gate(world)
    assert merged.rc == 6, merged.stdout
    doc = json.loads(merged.stdout)
    assert len(doc["mixed_attempts"]) == 3
    for said in ("every shard records its own attempt", f"{ATTEMPT_ENV} differs from pod to pod",
                 "batch.kubernetes.io/controller-uid", "metadata.uid"):
        assert said in doc["error"], doc["error"]
    assert "has not written" not in doc["error"], doc["error"]
    assert gate.rc != 0 and "PASS" not in gate.stdout


def test_a_jobs_pod_without_an_attempt_is_refused_before_its_first_case(world):
    """An Indexed Job whose manifest leaves ASSAY_SHARD_ATTEMPT out (written before the variable, or its
    label misspelt: the downward API then gives an empty value) recorded no attempt in any shard, the
    same "none" for every Job: re-applied with the same plan after the app broke on shard 3's cases, a
    merge before index 2 ran took the first Job's shard 3 (exit 0) and the gate PASSed a broken app.
    A pod of a Job (--shard auto from JOB_COMPLETION_INDEX) now refuses without it (exit 2, FailIndex)
    before its first case, after making its shard's prefix unfinished, and says where the value comes from."""
    runs = [pod(world, i, None) for i in (0, 1, 2)]   # the first Job, the app healthy
    assert [r.rc for r in runs] == [2, 2, 2], [r.stdout for r in runs]   # before: 0, 0, 0
    for r in runs:
        for said in (f"{ATTEMPT_ENV} is not set", "batch.kubernetes.io/controller-uid", "kubernetes.md"):
            assert said in r.json["error"], r.json["error"]
    assert not [q for q in world["app"].requests if q.method == "POST"], "a case was sent"
    # the Job re-applied (the same plan) after the app broke on shard 3; indexes 0 and 1 ran
    world["desk"].broken = world["third"]
    assert [pod(world, i, None).rc for i in (0, 1)] == [2, 2]
    merged, gate = merge_and_gate(world)
    assert merged.rc == 6, merged.stdout   # before: exit 0, the first Job's shard 3, and the gate PASSed
    assert json.loads(merged.stdout)["missing_shards"] == [1, 2, 3], merged.stdout
    assert gate.rc != 0 and "PASS" not in gate.stdout, gate.stdout
