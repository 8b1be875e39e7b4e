"""run_cases.py --shard auto: the shard from JOB_COMPLETION_INDEX (0-based, a Kubernetes Indexed
Job's) else ASSAY_SHARD_INDEX (1-based, as --shard I); exit 2 naming both when neither is set or
the one set is not a shard of the plan. --out defaults to <state>/reports/<run_id>.shard-<I>."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, case, make_plan, make_state, run_runner, write_plan

from assay.core.errors import AssayError
from assay.plan.shards import shard_from_env
from assay.shard.assign import add_shards

RUN_ID = "smoke-20261204T101500Z"
JOB_UID = "5d2e7c1a-0b3f-4c55-9e21-7f4a1c0d9e01"   # the Job's controller uid (the recipe's ASSAY_SHARD_ATTEMPT)
UNSET = {"JOB_COMPLETION_INDEX": "", "ASSAY_SHARD_INDEX": ""}
PLAN3 = {"shards": {"count": 3}}


@pytest.mark.parametrize("env, shard", [
    ({"JOB_COMPLETION_INDEX": "0"}, 1),
    ({"JOB_COMPLETION_INDEX": "2"}, 3),
    ({"ASSAY_SHARD_INDEX": "1"}, 1),
    ({"ASSAY_SHARD_INDEX": "3"}, 3),
    ({"JOB_COMPLETION_INDEX": "1", "ASSAY_SHARD_INDEX": "3"}, 2),   # Kubernetes' wins
    ({"JOB_COMPLETION_INDEX": "", "ASSAY_SHARD_INDEX": "2"}, 2),    # empty is unset
])
def test_shard_from_env(env, shard):
    assert shard_from_env(PLAN3, env) == shard


@pytest.mark.parametrize("env, named", [
    ({}, "neither JOB_COMPLETION_INDEX nor ASSAY_SHARD_INDEX"),
    ({"JOB_COMPLETION_INDEX": "3"}, "JOB_COMPLETION_INDEX='3'"),
    ({"JOB_COMPLETION_INDEX": "-1"}, "JOB_COMPLETION_INDEX='-1'"),
    ({"ASSAY_SHARD_INDEX": "0"}, "ASSAY_SHARD_INDEX='0'"),
    ({"ASSAY_SHARD_INDEX": "4"}, "ASSAY_SHARD_INDEX='4'"),
    ({"ASSAY_SHARD_INDEX": "two"}, "ASSAY_SHARD_INDEX='two'"),
])
def test_shard_from_env_refuses_naming_both(env, named):
    with pytest.raises(AssayError) as err:
        shard_from_env(PLAN3, env)
    assert err.value.code == 2 and named in err.value.message


def test_an_index_past_the_plans_shards_says_the_likely_cause():
    """A Job with more completions than the plan's --shards: the error says so (the k8s trial)."""
    for env in ({"JOB_COMPLETION_INDEX": "3"}, {"ASSAY_SHARD_INDEX": "4"}):
        with pytest.raises(AssayError) as err:
            shard_from_env(PLAN3, env)
        assert "more completions than the plan's --shards 3" in err.value.message
    with pytest.raises(AssayError) as err:
        shard_from_env(PLAN3, {"ASSAY_SHARD_INDEX": "0"})
    assert "completions" not in err.value.message
    assert "JOB_COMPLETION_INDEX 0..2" in err.value.message and "ASSAY_SHARD_INDEX 1..3" in err.value.message


def test_shard_auto_runs_the_index_kubernetes_gives(tmp_path):
    state = make_state(tmp_path)
    with FakeApp() as app:
        cases = [case(f"c-{i}", f"m{i}") for i in range(6)]
        plan = add_shards(make_plan(state, cases, app_url=app.url, run_id=RUN_ID), 3)
        path = write_plan(state, plan)
        r = run_runner("--plan", path, "--shard", "auto", "--progress", "never", env=UNSET)
        assert r.rc == 2, r.stdout
        assert "neither JOB_COMPLETION_INDEX nor ASSAY_SHARD_INDEX" in r.json["error"]
        r = run_runner("--plan", path, "--shard", "auto", "--progress", "never",
                       env={**UNSET, "JOB_COMPLETION_INDEX": "3"})
        assert r.rc == 2 and "JOB_COMPLETION_INDEX='3'" in r.json["error"], r.stdout
        assert not any((state / "reports").iterdir())   # nothing written
        # index 1 (0-based) is shard 2; --out defaults to the shard's own run dir
        r = run_runner("--plan", path, "--shard", "auto", "--progress", "never",
                       env={**UNSET, "JOB_COMPLETION_INDEX": "1", "ASSAY_SHARD_ATTEMPT": JOB_UID})
        assert r.rc == 0, (r.stdout, r.stderr)
        out = state / "reports" / f"{RUN_ID}.shard-2"
        manifest = json.loads((out / "manifest.yaml").read_text())
        assert manifest["shard"] == {"index": 2, "count": 3, "attempt": JOB_UID}
        assert sorted(c["id"] for c in manifest["cases"]) == ["c-1", "c-4"]


def test_a_pod_without_shard_auto_is_refused_before_it_runs_the_whole_plan(tmp_path):
    """An Indexed Job whose args lost `--shard auto` (or a slot given ASSAY_SHARD_INDEX and no --shard):
    each pod ran the whole plan, exit 0, and published it to the one unsharded prefix (N pods racing
    over it, the app called N times per case), where the merge then found no shard. Now refused,
    naming the variable and the fix, before a case is sent or a file written."""
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = add_shards(make_plan(state, [case(f"c-{i}", f"m{i}") for i in range(4)], app_url=app.url,
                                    run_id=RUN_ID), 2)
        path = write_plan(state, plan)
        for env, out in (({**UNSET, "JOB_COMPLETION_INDEX": "1"}, ("--out", state / "reports" / RUN_ID)),
                         ({**UNSET, "JOB_COMPLETION_INDEX": "0"}, ()),   # no --out either: the same words
                         ({**UNSET, "ASSAY_SHARD_INDEX": "2"}, ("--out", state / "reports" / RUN_ID))):
            r = run_runner("--plan", path, *out, "--progress", "never", env=env)
            assert r.rc == 2, r.stdout + r.stderr
            name = next(k for k, v in env.items() if v)
            assert r.json["key"] == "--shard" and r.json["variable"] == name, r.json
            assert "add --shard auto" in r.json["error"] and "the plan has 2 shards" in r.json["error"], r.json
        assert not app.requests and not any((state / "reports").iterdir())
        # the whole plan still runs where no slot is set
        r = run_runner("--plan", path, "--out", state / "reports" / RUN_ID, "--progress", "never", env=UNSET)
        assert r.rc == 0, r.stdout + r.stderr
