"""The Kubernetes recipe (skills/run/references/kubernetes.md) held to the Kubernetes API's own
models (the `kubernetes` client package's OpenAPI classes, test extra) and to assay's parsers:
every key is a field of batch/v1 Job (a round trip through V1Job loses nothing), the shards'
Job is Indexed with per-index retries and FailIndex on assay's own exit codes, and every assay
command in either Job parses with that script's own argument parser. (`kubectl apply
--dry-run=client` is not used: it asks an API server for discovery, and none runs here.)"""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
import yaml

from helpers import ROOT
from test_shard_ci import _parser

kubernetes = pytest.importorskip("kubernetes", reason="needs the kubernetes client package (pip install -e '.[test]')")

PAGE = ROOT / "skills" / "run" / "references" / "kubernetes.md"
# exit codes a retry cannot change (docs/runner-contract.md §13): bad plan or usage (or the store
# refused), pre-flight, a failed canary, a scorer error; 1, 5, 6 and kills are retried
FAIL_INDEX_CODES = {2, 3, 4, 7}
NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
COMMAND = re.compile(r"python3 /opt/assay/scripts/([a-z_]+)\.py([^\n]*)")


def jobs() -> dict[str, dict]:
    docs = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)]
    found = {d["metadata"]["name"]: d for d in docs if isinstance(d, dict) and d.get("kind") == "Job"}
    assert set(found) == {"assay-shards", "assay-merge"}, sorted(found)
    return found


def as_model(doc: dict):
    from kubernetes.client import ApiClient
    client = ApiClient()
    model = client._ApiClient__deserialize(doc, "V1Job")
    return model, client.sanitize_for_serialization(model)


@pytest.mark.parametrize("name", ["assay-shards", "assay-merge"])
def test_every_key_is_a_field_of_the_api(name):
    doc = jobs()[name]
    model, back = as_model(doc)
    assert back == doc, "a key the Job API does not have (a typo?) was dropped in the round trip"
    assert NAME.fullmatch(model.metadata.name) and len(model.metadata.name) <= 63
    assert model.spec.template.spec.restart_policy == "Never"


def test_the_round_trip_catches_a_typo():
    doc = jobs()["assay-shards"]
    doc["spec"]["backoffLimitPerIndx"] = doc["spec"].pop("backoffLimitPerIndex")
    assert as_model(doc)[1] != doc


def env_of(container) -> dict[str, str]:
    return {e.name: e.value for e in container.env or [] if e.value is not None}


def test_the_shards_job_is_indexed_and_fails_an_index_only_on_assays_verdicts():
    job, _ = as_model(jobs()["assay-shards"])
    spec = job.spec
    assert spec.completion_mode == "Indexed"
    assert spec.completions >= 1 and 1 <= spec.parallelism <= spec.completions
    assert spec.backoff_limit_per_index >= 1 and spec.max_failed_indexes == spec.completions
    (container,) = spec.template.spec.containers
    fail = [r for r in spec.pod_failure_policy.rules if r.action == "FailIndex"]
    assert len(fail) == 1 and fail[0].on_exit_codes.operator == "In"
    assert set(fail[0].on_exit_codes.values) == FAIL_INDEX_CODES
    assert fail[0].on_exit_codes.container_name == container.name
    # the runner, with --shard auto (JOB_COMPLETION_INDEX) and --publish to the shards' prefix
    env = env_of(container)
    assert container.command == ["python3", "/opt/assay/scripts/run_cases.py"]
    args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in container.args]
    ns = _parser("run_cases").parse_args(args)
    assert ns.shard == "auto" and ns.publish == env["ASSAY_SHARDS"] and ns.publish.startswith("s3://")
    assert ns.out is None   # --shard's default: <state>/reports/<run_id>.shard-<I>
    assert {"AWS_REGION", "AWS_ENDPOINT_URL"} <= set(env)
    assert container.env_from[0].secret_ref.name == "assay-s3"
    # the attempt a shard records (the merge refuses two Jobs' shards): the Job's controller uid,
    # from the downward API (a label every pod of one Job carries, a retried one too)
    from assay.plan.shards import ATTEMPT_ENV
    (attempt,) = [e for e in container.env if e.name == ATTEMPT_ENV]
    assert attempt.value is None and attempt.value_from.field_ref.field_path == \
        "metadata.labels['batch.kubernetes.io/controller-uid']"


def test_the_merge_job_merges_from_the_shards_prefix_publishes_and_gates():
    shards, _ = as_model(jobs()["assay-shards"])
    merge, _ = as_model(jobs()["assay-merge"])
    assert merge.spec.backoff_limit == 0
    (container,) = merge.spec.template.spec.containers
    env = env_of(container)
    assert env["ASSAY_SHARDS"] == env_of(shards.spec.template.spec.containers[0])["ASSAY_SHARDS"]
    assert env["ASSAY_STORE"].startswith("s3://") and env["ASSAY_STORE"] != env["ASSAY_SHARDS"]
    script = container.args[0]
    seen = []
    for name, rest in COMMAND.findall(script):
        for var, value in env.items():
            rest = rest.replace(f"${var}", value)
        assert "$" not in rest, rest
        ns = _parser(name).parse_args(shlex.split(rest))
        seen.append((name, ns))
    assert [n for n, _ in seen] == ["merge_runs", "publish_run", "gate"]
    merge_ns, publish_ns, gate_ns = (ns for _, ns in seen)
    assert merge_ns.shard_dirs == [f"{env['ASSAY_SHARDS']}/{env['RUN_ID']}/"]
    # the Job whose shards it takes: the shards Job's uid, which the wait step sets (empty here: refused)
    assert '--attempt "$SHARDS_JOB_UID"' in script and env["SHARDS_JOB_UID"] == "" and merge_ns.attempt == ""
    assert merge_ns.out.endswith("/" + env["RUN_ID"]) and publish_ns.run_dir == merge_ns.out == gate_ns.path
    assert publish_ns.store == env["ASSAY_STORE"] and gate_ns.baseline == "auto"



# A stand-in for kubectl with the two Jobs' final states (KUBE_STATES: {"assay-shards": "Failed", ...}):
# `get job NAME -o jsonpath=...` answers the expressions the recipe uses (a Job's uid: KUBE_UIDS),
# `set env --local -f FILE -o yaml K=V` prints FILE's objects with K=V in each container, `apply -f FILE|-`
# keeps what it applied in KUBE_APPLIED, `wait --for=condition=complete`
# on a Failed Job times out as the real one does (it never returns for a failed Job: kubernetes/kubectl
# #1629), `logs` prints the Job's log; any other command is refused, so a new one in the page is seen here.
FAKE_KUBECTL = r'''#!/usr/bin/env python3
import json, os, re, sys
import yaml
states = json.loads(os.environ["KUBE_STATES"])
uids = json.loads(os.environ["KUBE_UIDS"])
a = sys.argv[1:]
if a[:2] == ["get", "job"] and len(a) == 5 and a[3] == "-o" and a[4].startswith("jsonpath="):
    state, expr = states[a[2]], a[4][len("jsonpath="):]
    out = ""
    for part in re.findall(r"\{([^}]*)\}", expr):
        m = re.fullmatch(r'\.status\.conditions\[\?\(@\.type=="(\w+)"\)\]\.status', part)
        if m:
            out += "True" if m.group(1) == state else ""
        elif part == ".status.succeeded":
            out += "1" if state == "Complete" else ""
        elif part == ".status.failed":
            out += "1" if state == "Failed" else ""
        elif part == ".metadata.uid":
            out += uids[a[2]]
        else:
            sys.exit(f"fake kubectl: jsonpath {part!r} not emulated")
    print(out, end="")
elif a[:3] == ["set", "env", "--local"] and a[3] == "-f" and a[5:7] == ["-o", "yaml"] and len(a) == 8:
    name, _, value = a[7].partition("=")
    docs = list(yaml.safe_load_all(open(a[4])))
    for doc in docs:
        for c in doc["spec"]["template"]["spec"]["containers"]:
            c["env"] = [e for e in c.get("env", []) if e["name"] != name] + [{"name": name, "value": value}]
    print(yaml.safe_dump_all(docs))
elif a[:2] == ["apply", "-f"] and len(a) == 3:
    text = sys.stdin.read() if a[2] == "-" else open(a[2]).read()
    if not text.strip():
        sys.exit("error: no objects passed to apply")
    with open(os.environ["KUBE_APPLIED"], "a") as f:
        f.write(text + "\n---\n")
    print("job.batch/assay-merge created")
elif a[0] == "wait" and "--for=condition=complete" in a:
    job = next(x for x in a if x.startswith("job/"))[4:]
    if states[job] != "Complete":
        sys.exit(f"error: timed out waiting for the condition on jobs/{job}")
    print(f"job.batch/{job} condition met")
elif a[:1] == ["logs"]:
    print("regression-20261204T120000Z: FAIL -- closed: 1 gating failure(s)")
else:
    sys.exit(f"fake kubectl: {a} not emulated")
'''


def wait_block() -> str:
    section = PAGE.read_text(encoding="utf-8").split("## 4. Wait, then merge and gate", 1)[1]
    return re.search(r"```\n(.*?)```", section, re.S).group(1)


def run_wait_step(tmp_path, states: dict) -> tuple[subprocess.CompletedProcess, list]:
    """§4's commands as a user runs them (sh, no `set -e`), beside the page's assay-merge.yaml, against
    the fake kubectl: the result and the objects it applied."""
    import json
    import os
    import stat
    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.parent.mkdir()
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "assay-merge.yaml").write_text(yaml.safe_dump(jobs()["assay-merge"]))
    applied = tmp_path / "applied.yaml"
    env = dict(os.environ, PATH=f"{kubectl.parent}{os.pathsep}{os.environ['PATH']}", KUBE_STATES=json.dumps(states),
               KUBE_UIDS=json.dumps({"assay-shards": SHARDS_UID, "assay-merge": "0b1e2d3c-merge-job-uid"}),
               KUBE_APPLIED=str(applied))
    r = subprocess.run(["sh", "-c", wait_block()], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert "not emulated" not in r.stderr, r.stderr
    return r, ([d for d in yaml.safe_load_all(applied.read_text()) if d] if applied.exists() else [])


SHARDS_UID = "6f1d2c3b-4a59-4e8f-9d0c-1b2a3c4d5e6f"


def test_the_wait_step_tells_the_merge_job_which_jobs_shards_to_merge(tmp_path):
    """The merge Job applied as the page's file (kubectl apply -f assay-merge.yaml) merged whatever shards the
    bucket held under the plan's run id: a Job re-applied with the same plan whose every pod stopped before it
    knew its shard left the earlier Job's, and the gate opened on them. The wait step now reads the shards
    Job's uid and applies the merge Job with it (SHARDS_JOB_UID), which the merge gets as --attempt."""
    r, applied = run_wait_step(tmp_path, {"assay-shards": "Complete", "assay-merge": "Complete"})
    assert r.returncode == 0, (r.stdout, r.stderr)
    (job,) = applied
    model, back = as_model(job)
    assert back == job and model.metadata.name == "assay-merge"
    (container,) = model.spec.template.spec.containers
    env = env_of(container)
    assert env["SHARDS_JOB_UID"] == SHARDS_UID   # before: "" (or absent): the merge not told which Job
    (rest,) = [rest for name, rest in COMMAND.findall(container.args[0]) if name == "merge_runs"]
    for var, value in env.items():
        rest = rest.replace(f"${var}", value)
    assert _parser("merge_runs").parse_args(shlex.split(rest)).attempt == SHARDS_UID


@pytest.mark.parametrize("merge, rc_is_zero", [("Failed", False), ("Complete", True)])
def test_the_wait_step_exits_with_the_merge_jobs_answer(tmp_path, merge, rc_is_zero):
    # §4's commands as a user runs them (sh, no `set -e`): a closed gate fails the merge Job, and the
    # step must end non-zero, at once; `kubectl wait --for=condition=complete; kubectl logs` waited out its
    # 30 minutes on a failed Job, then ended with the logs' exit 0: a closed gate read as green
    r, _ = run_wait_step(tmp_path, {"assay-shards": "Failed", "assay-merge": merge})
    assert "gating failure" in r.stdout   # the merge Job's log (its gate's screen) is shown either way
    assert (r.returncode == 0) == rc_is_zero, (r.returncode, r.stdout, r.stderr)
