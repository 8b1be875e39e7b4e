"""A shard's run dir given to compare_runs.py (or gate.py --baseline) is said to be one, first.

A newcomer compared the broken run with the clean run's `<run id>.shard-3` dir (it sits beside the
merged run in reports/, one row above it in the viewer's list): "4 newly failing, 12 added" with the
note "the suite changed (suite_sha256 differs)" -- a suite nobody had edited. The gate reads a shard's
dir as "a slice of the plan, not a run" (assay.report.gate_trust.shard_reason); the comparison's notes
now say the same words, first, on compare_runs.py, gate.py --baseline and the viewer alike.
"""

from __future__ import annotations

from assay.shard.assign import add_shards
from fakeapp import FakeApp, case, make_plan, make_state, write_plan
from helpers import run_script


def test_a_shard_dir_as_the_base_is_named_as_a_slice_of_the_plan_first(tmp_path):
    state = make_state(tmp_path)
    cases = [case(f"c-{i:08d}", "hello") for i in range(4)]
    with FakeApp() as app:
        base = add_shards(make_plan(state, cases, app_url=app.url), 2)
        plan_file = write_plan(state, base)
        shard = state / "reports" / f"{base['run_id']}.shard-2"
        r = run_script("run_cases", "--plan", plan_file, "--shard", 2, "--out", shard, "--progress", "never")
        assert r.rc == 0, r.stdout + r.stderr
        cand = make_plan(state, cases, app_url=app.url, run_id="smoke-20261130T101500Z")
        out = state / "reports" / cand["run_id"]
        r = run_script("run_cases", "--plan", write_plan(state, cand), "--out", out, "--progress", "never")
        assert r.rc == 0, r.stdout + r.stderr
    cmp = run_script("compare_runs", shard, out)
    assert cmp.rc == 0, cmp.stdout + cmp.stderr
    first = cmp.json["notes"][0]
    assert first.startswith(f"the base run {base['run_id']} ({shard.name}): this is shard 2/2's run dir, a slice "
                            "of the plan, not a run"), cmp.json["notes"]
    gate = run_script("gate", out, "--baseline", shard)
    assert "note: " + first in gate.stdout, gate.stdout
