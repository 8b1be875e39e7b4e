"""make_plan.py --shards N [--durations RUN_DIR]: round-robin, duration packing, the plan's
shards block and its rules. The runner and merge side: tests/test_shard_run.py."""

from __future__ import annotations

import json
import random

import pytest

from fixtures_authoring import convert, make_state, run_inproc
from helpers import run_script

from assay.core.errors import AssayError
from assay.plan.shards import shard_cases, slice_plan
from assay.plan.validate import validate_plan
from assay.shard.assign import case_weights, pack, predicted_walls, round_robin


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    state = make_state(tmp_path_factory.mktemp("app"))
    return state, convert(state) / "converted.json"


def make(state, conv, tmp_path, *args):
    out = tmp_path / "plan.json"
    r = run_script("make_plan", conv, "--state-dir", state, "-o", out, *args)
    assert r.rc == 0, (r.stdout, r.stderr)
    return json.loads(out.read_text()), r


def durations_dir(root, latencies):
    run = root / "regression-20261128T101500Z"
    (run / "cases").mkdir(parents=True)
    (run / "manifest.yaml").write_text(json.dumps({"run_id": run.name}))
    for cid, ms in latencies.items():
        (run / "cases" / cid).mkdir()
        (run / "cases" / cid / "verdict.json").write_text(json.dumps({"case_id": cid, "latency_ms": ms}))
    return run


def test_round_robin_in_plan_order_canaries_in_every_shard(suite, tmp_path):
    state, conv = suite
    plan, r = make(state, conv, tmp_path, "--mode", "smoke", "--shards", "2")
    validate_plan(plan)
    assert plan["shards"]["assignment"] == {"c-00000001": 1, "c-00000002": 2, "c-00000003": 1,
                                            "c-00000004": 2, "c-00000005": 1}
    assert plan["shards"]["method"] == "round-robin" and plan["shards"]["predicted_wall_s"] is None
    summary = r.json
    assert [(row["shard"], row["cases"], row["canaries"]) for row in summary["shards"]] == [(1, 3, 2), (2, 2, 2)]
    assert summary["timeout_minutes"] == 60 and "--shard <I>" in summary["run_shard"]
    assert "merge_runs.py" in summary["merge"] and "shard 2/2: 2 case(s) + 2 canary" in r.stderr
    for i in (1, 2):   # canaries first, in plan order, in every shard's slice
        ids = [c["id"] for c in shard_cases(plan, i)]
        assert {"c-00000008", "c-00000009"} <= set(ids)


def test_duration_packing_balances_a_skewed_run(suite, tmp_path):
    state, conv = suite
    latencies = {"c-00000001": 900, "c-00000002": 500, "c-00000003": 400, "c-00000004": 300,
                 "c-00000005": 300, "c-00000006": 100}            # c-00000007 unknown: the median, 350
    run = durations_dir(tmp_path, latencies)
    plan, r = make(state, conv, tmp_path, "--mode", "regression", "--shards", "3", "--durations", run)
    block = plan["shards"]
    assert block["method"] == "duration" and block["durations_from"] == run.name
    assert block["assignment"] == {"c-00000001": 1, "c-00000002": 2, "c-00000003": 3, "c-00000004": 2,
                                   "c-00000005": 3, "c-00000006": 2, "c-00000007": 3}
    # k=3, max_concurrency 4: loads 900, 900, 1050 ms x 3 / 4
    assert block["predicted_wall_s"] == [0.675, 0.675, 0.787]
    assert [row["predicted_wall_s"] for row in r.json["shards"]] == [0.675, 0.675, 0.787]
    assert "predicted wall 0.8s" in r.stderr
    # round-robin over the same weights would put 1550 ms on shard 1
    weights = case_weights(plan["cases"], latencies, 3)
    rr = predicted_walls(plan["cases"], round_robin(plan["cases"], 3), 3, weights, 4)
    assert max(rr) > 1.4 * max(block["predicted_wall_s"])


def test_packing_a_heavy_tail_keeps_shards_within_a_few_percent():
    rng = random.Random(7)
    cases = [{"id": f"c-{i}", "split": ["full"]} for i in range(400)]
    latency = {c["id"]: rng.paretovariate(1.5) * 100 for c in cases}
    weights = case_weights(cases, latency, 1)
    walls = predicted_walls(cases, pack(cases, 4, weights), 4, weights, 1)
    assert max(weights.values()) < sum(weights.values()) / 4          # no single case dominates
    assert max(walls) <= 1.05 * sum(walls) / 4


def test_shard_refusals(suite, tmp_path):
    state, conv = suite
    for args, needle in ((("--shards", "8"), "only 7 non-canary case(s)"),
                         (("--shards", "2", "--durations", tmp_path / "nowhere"), "not a run directory"),
                         (("--shards", "2", "--durations", durations_dir(tmp_path, {"c-00000001": None})),
                          "no finished case with a latency_ms")):
        r = run_inproc("make_plan", conv, "--state-dir", state, "--mode", "regression", *args)
        assert r.rc == 2 and needle in r.json["error"], r.stdout


def test_shards_block_rules(suite, tmp_path):
    state, conv = suite
    plan, _ = make(state, conv, tmp_path, "--mode", "smoke", "--shards", "2")

    def broken(**assignment):
        bad = json.loads(json.dumps(plan))
        bad["shards"]["assignment"].update(assignment)
        for k, v in list(bad["shards"]["assignment"].items()):
            if v is None:
                del bad["shards"]["assignment"][k]
        with pytest.raises(AssayError) as err:
            validate_plan(bad)
        assert err.value.code == 2
        return err.value.message

    assert "names canary 'c-00000008'" in broken(**{"c-00000008": 1})
    assert "'c-00000003' (cases[2]) has no shard" in broken(**{"c-00000003": None})
    assert "not a shard of 1..2" in broken(**{"c-00000003": 3})
    assert "not in the plan" in broken(**{"c-99": 1})
    assert "hold no case" in broken(**{"c-00000002": 1, "c-00000004": 1})
    with pytest.raises(AssayError, match="numbered 1..2"):
        slice_plan(plan, 3)


def test_a_sharded_holdout_plan_says_its_shards_elsewhere_need_the_store(suite, tmp_path):
    """Shards of a holdout plan on other machines record the look in ledgers thrown away with them: the
    plan's summary says to run them with --publish and merge from the store (a smoke plan does not)."""
    state, conv = suite
    _, r = make(state, conv, tmp_path, "--mode", "holdout", "--shards", "1")
    assert any("--publish" in n and "merged from the store" in n for n in r.json["notes"]), r.json["notes"]
    assert "note: a holdout plan's shards" in r.stderr
    _, smoke = make(state, conv, tmp_path, "--mode", "smoke", "--shards", "2")
    assert not any("--publish" in n for n in smoke.json["notes"] or [])
