"""merge_runs.py is fail-closed on what it reads and leaves nothing behind (docs/runner-contract.md,
"Shards across machines"): a shard whose results.json or run.log cannot be read fails `--verify`
and is refused (exit 6, naming it), and the temp dirs of a killed merge are removed by the next.
"""

from __future__ import annotations

import pytest

from assay.shard.assign import add_shards
from fakeapp import FakeApp, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script


def _shards(tmp_path):
    """(state, plan path, the two shard dirs, the merged --out) of a fresh 2-shard run."""
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = add_shards(make_plan(state, [case(f"c-{i}", "hi") for i in range(4)], app_url=app.url), 2)
        path = write_plan(state, plan)
        dirs = []
        for i in (1, 2):
            out = state / "reports" / f"{plan['run_id']}.shard-{i}"
            assert run_runner("--plan", path, "--out", out, "--shard", i, "--progress", "never").rc == 0
            dirs.append(out)
    return state, path, dirs, state / "reports" / plan["run_id"]


@pytest.mark.parametrize("rel, how", [("results.json", "garbage"), ("results.json", "dir"), ("run.log", "dir"),
                                      ("results.json", "not utf-8")])
def test_a_shard_with_an_unreadable_results_or_run_log_is_refused(tmp_path, rel, how):
    state, plan_path, copies, out = _shards(tmp_path)
    target = copies[0] / rel
    target.unlink()
    if how == "dir":
        target.mkdir()
    else:
        target.write_bytes(b"garbage{" if how == "garbage" else b'{"run_id": "\xff"}')
    verify = run_runner("--verify", copies[0])
    assert verify.rc == 6 and any(p.startswith(rel) for p in verify.json["missing_artifacts"]), verify.stdout
    res = run_script("merge_runs", "--plan", plan_path, "--out", out, *copies)
    assert res.rc == 6 and rel in res.stdout and "Traceback" not in res.stderr, (res.stdout, res.stderr[-1500:])
    assert not out.exists()


def test_a_killed_merges_temp_dirs_are_removed_by_the_next_merge(tmp_path):
    state, plan_path, copies, out = _shards(tmp_path)
    left = [out.parent / f".{out.name}.merge-999999.tmp", out.parent / f".{out.name}.merge-888888.old"]
    for d in left:
        (d / "cases").mkdir(parents=True)
        (d / "manifest.yaml").write_text("{}")
    other = out.parent / ".someone-else.merge-1.tmp"      # not this run's: left alone
    other.mkdir()
    res = run_script("merge_runs", "--plan", plan_path, "--out", out, *copies)
    assert res.rc == 0, res.stdout
    assert not any(d.exists() for d in left) and other.is_dir()
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".")) == [other.name]
    assert run_runner("--verify", out).rc == 0
