"""The sharded GitHub Actions workflow in skills/run/references/run-modes.md is held to the code:
the job graph (plan -> matrix of shards -> merge), the per-shard timeout from the plan, the
artifact names, and every assay command in it parsed by that script's own argument parser."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import time

import pytest
import yaml

from fixtures_authoring import convert, make_state, run_inproc
from helpers import ROOT, SCRIPTS

TEXT = (ROOT / "skills" / "run" / "references" / "run-modes.md").read_text(encoding="utf-8")
COMMAND = re.compile(r'python3 "\$ASSAY_ROOT/scripts/([a-z_]+)\.py"([^\n]*)')


def workflow() -> dict:
    docs = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", TEXT, re.S)]
    found = [d for d in docs if isinstance(d, dict) and set(d.get("jobs", {})) == {"plan", "shard", "merge"}]
    assert len(found) == 1, "run-modes.md holds one sharded workflow (jobs plan, shard, merge)"
    return found[0]


def runs(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_job_graph_plan_then_a_matrix_of_shards_then_the_merge():
    jobs = workflow()["jobs"]
    assert "needs" not in jobs["plan"]
    assert jobs["shard"]["needs"] == "plan"
    assert jobs["shard"]["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert jobs["shard"]["strategy"]["fail-fast"] is False
    assert jobs["merge"]["needs"] == ["plan", "shard"]
    assert "always()" in jobs["merge"]["if"]          # a failed or missing shard still reaches the merge
    # the plan job's outputs are written by its plan step
    outputs = jobs["plan"]["outputs"]
    plan_step = next(s for s in jobs["plan"]["steps"] if s.get("id") == "plan")
    for name, value in outputs.items():
        assert value == f"${{{{ steps.plan.outputs.{name} }}}}"
        assert f'echo "{name}=' in plan_step["run"]


def test_shard_timeout_comes_from_the_plan_and_shards_meet_in_the_bucket():
    wf = workflow()
    steps = wf["jobs"]["shard"]["steps"]
    runner = next(s for s in steps if "run_cases.py" in s.get("run", ""))
    assert runner["timeout-minutes"] == "${{ fromJSON(needs.plan.outputs.timeout_minutes) }}"
    assert runner["run"].endswith('--publish "$ASSAY_SHARDS"')
    assert wf["env"]["ASSAY_SHARDS"].startswith("s3://") and wf["env"]["ASSAY_STORE"].startswith("s3://")
    assert wf["env"]["ASSAY_SHARDS"] != wf["env"]["ASSAY_STORE"]   # a PR's run is never a baseline
    merge = runs(wf["jobs"]["merge"])
    assert '"$ASSAY_SHARDS/$RUN_ID/"' in merge and "gate.py" in merge and "--baseline auto" in merge
    publish = next(s for s in wf["jobs"]["merge"]["steps"] if "publish_run.py" in s.get("run", ""))
    assert "refs/heads/main" in publish["if"] and '"$ASSAY_STORE"' in publish["run"]
    for job in ("shard", "merge"):   # the s3 extra is installed where the bucket is used
        assert '"$ASSAY_ROOT[s3]"' in runs(wf["jobs"][job])


def _parser(script: str):
    spec = importlib.util.spec_from_file_location(f"_ci_{script}", SCRIPTS / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_parser()


def _argv(rest: str) -> list[str]:
    """The command's arguments with the workflow's variables filled in as a shell would."""
    rest = re.sub(r"\$\{\{ needs\.plan\.outputs\.run_id \}\}", "regression-20261129T101500Z", rest)
    rest = re.sub(r"\$\{\{ matrix\.shard \}\}", "2", rest)
    rest = rest.replace("$RUN_ID", "regression-20261129T101500Z").replace("$SHARDS", "3")
    rest = rest.replace("$DURATIONS", "--durations .assay/durations")
    rest = rest.replace("$ASSAY_SHARDS", "s3://your-bucket/assay/shards").replace("$ASSAY_STORE", "s3://your-bucket/a")
    rest = rest.split(" > ")[0]
    assert "${{" not in rest and "$" not in rest.replace("$ASSAY_ROOT", ""), rest
    return shlex.split(rest)


def test_every_command_exists_with_those_flags():
    wf = workflow()
    seen = set()
    for job in wf["jobs"].values():
        for script, rest in COMMAND.findall(runs(job)):
            assert (SCRIPTS / f"{script}.py").is_file(), script
            parser = _parser(script)
            parser.parse_args(_argv(rest))     # an unknown flag or a bad value raises (exit 2 JSON)
            seen.add(script)
    assert seen == {"convert_suite", "validate_cases", "make_plan", "run_cases", "merge_runs", "gate", "publish_run"}


def test_the_parser_check_can_fail():
    from assay.core.errors import AssayError
    with pytest.raises(AssayError):
        _parser("run_cases").parse_args(_argv('--plan p --shrad 2 --out o'))


def test_the_summary_keys_the_plan_step_reads_exist(tmp_path):
    state = make_state(tmp_path)
    conv = convert(state) / "converted.json"
    r = run_inproc("make_plan", conv, "--state-dir", state, "--mode", "smoke", "--shards", "2",
                   "-o", tmp_path / "plan.json")
    assert r.rc == 0, r.stdout
    summary = json.loads(r.stdout)
    plan_run = next(s for s in workflow()["jobs"]["plan"]["steps"] if s.get("id") == "plan")["run"]
    assert "jq -c '[.shards[].shard]'" in plan_run and "jq '.timeout_minutes'" in plan_run
    assert [row["shard"] for row in summary["shards"]] == [1, 2]
    assert isinstance(summary["timeout_minutes"], int)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("jq") is None, reason="the plan step reads make_plan.py's summary with jq")
def test_the_latencies_the_merge_job_keeps_plan_the_next_run(tmp_path):
    """The merge job's "Keep this run's latencies" step copied `cases/*/verdict.json`, the layout of run
    dirs before the journal. A run of today keeps its verdicts in `cases.jsonl`: `find cases` failed the
    step under GitHub's `bash -e` after the gate had opened, the cache kept a manifest with no verdict,
    and every later plan job's `make_plan.py --durations` refused it (exit 2). Run as GitHub runs them
    (`bash -e`, no `shell:` key): a real run, the keep step, then the next plan step on what it kept."""
    from fakeapp import FakeApp
    from test_ci_recipe_noclaude import NO_CLAUDE, Job, steps, store_app, write_repo

    handler = store_app(cancel=("account", "Your order is cancelled."))

    repo = tmp_path / "checkout"
    repo.mkdir()
    state = write_repo(repo)
    with FakeApp(handler) as app:
        job = Job(repo, int(app.url.rsplit(":", 1)[1]), SHARDS="2", GITHUB_OUTPUT=str(tmp_path / "output"))
        ran = job.step(steps()[NO_CLAUDE])
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run,) = [p for p in (state / "reports").iterdir() if p.is_dir()]

    def step(job_name: str, pick) -> str:
        found = [s["run"] for s in workflow()["jobs"][job_name]["steps"] if pick(s)]
        assert len(found) == 1, job_name
        return found[0].replace("${{ needs.plan.outputs.run_id }}", run.name)

    keep = step("merge", lambda s: s.get("name") == "Keep this run's latencies for the next plan")
    kept = subprocess.run(["bash", "-e", "-c", keep], cwd=repo, env=job.env, capture_output=True, text=True, timeout=60)
    assert kept.returncode == 0, kept.stderr
    time.sleep(1.1)   # the plan step's RUN_ID has whole seconds
    planned = subprocess.run(["bash", "-e", "-c", step("plan", lambda s: s.get("id") == "plan")], cwd=repo,
                             env=job.env, capture_output=True, text=True, timeout=120)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    shards = json.loads((state / "work" / "plan.json").read_text(encoding="utf-8"))["shards"]
    assert shards["method"] == "duration" and shards["durations_from"] == run.name, shards
    assert "shards=[1,2]" in (tmp_path / "output").read_text(encoding="utf-8")
