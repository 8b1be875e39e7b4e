"""Shards end to end: run_cases.py --shard I and merge_runs.py as subprocesses against a real
loopback app. One module-scoped set of shard runs feeds the merge checks (copies of it are
tampered with per test), so the suite stays fast."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import SCRIPTS, run_script
from rundir_util import COST_LATENCY_MASK

from assay.core.jsonio import sha256_json
from assay.shard.assign import add_shards
from rundir_util import cases_view, drop_case, run_files
from assay.core.casestore import scan

pytestmark = pytest.mark.slow

RUN_ID = "regression-20261129T101500Z"


def handler(req):
    """Deterministic: the answer echoes the message; the route is the message's last character;
    'boom' is a 503 on every attempt; 'canary' answers 'alive' unless told to break."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    if "boom" in msg:
        return Reply(503, "overloaded")
    if msg == "canary":
        return Reply(200, {"message": "dead" if handler.broken_canary else "alive", "route": "c"})
    return Reply(200, {"message": msg if not msg.endswith("7") else "other", "route": "r" + msg[-1]})


handler.broken_canary = False


def suite_cases(n=14, split="full"):
    cases = [case(f"c-{i:03d}", f"msg {i}", split=[split],
                  expect={"answer": {"must_contain": [f"msg {i}"]}, "route": f"r{i % 10}"}) for i in range(n)]
    cases.insert(3, case("k-1", "canary", split=[split, "canary"], expect={"answer": {"must_contain": ["alive"]}}))
    cases.append(case("c-boom", "boom", split=[split]))
    cases.append(case("c-skip", "x", split=[split], identity={"role": "admin"}))
    cases[5]["expect"]["result"] = {"scalar": "r5"}
    return cases


def sharded_plan(state, url, *, count=3, run_id=RUN_ID, mode="regression", split="full", k=2, cases=None):
    ad = adapter(url, max_concurrency=4, result_from_response="route")
    plan = make_plan(state, cases or suite_cases(split=split), adapter_doc=ad, run_id=run_id, mode=mode,
                     selecting_split=split, k=k, execution={"max_attempts": 2, "backoff_s": [0]})
    return add_shards(plan, count)


def run_shard(state, plan_path, run_id, i, *args):
    return run_runner("--plan", plan_path, "--shard", i, "--out", state / "reports" / f"{run_id}.shard-{i}",
                      "--progress", "never", *args)


def merge(state, plan_path, run_id, shard_dirs, *args):
    return run_script("merge_runs", "--plan", plan_path, "--out", state / "reports" / run_id, *args, *shard_dirs)


MASKS = [
    (re.compile(r'"(ts|started_at|finished_at|date)": "[^"]*"'), r'"\1": "<t>"'),
    (re.compile(r'"(latency_ms)": [0-9.e-]+'), r'"\1": 0'),
    COST_LATENCY_MASK,
    (re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'), "<uuid>"),
    (re.compile(r'"((?:repeats/\d+/)?(?:request|response)\.json)": "[0-9a-f]{64}"'), r'"\1": "<sha>"'),
    (re.compile(r'"(plan_sha256)": "[0-9a-f]{64}"'), r'"\1": "<sha>"'),   # the two plans differ in run_id
]


def snapshot(out):
    """Every file, masked; run.log as the set of (event, case) pairs of case events (a merged log
    holds each shard's preflight and canary events too, tagged with the shard)."""
    files = {}
    for rel, text in run_files(out).items():
        if rel == "run.log":
            events = [json.loads(line) for line in text.splitlines()]
            text = sorted({(e["event"], e.get("case_id"), e.get("verdict")) for e in events
                           if e["event"] in ("case_done",)})
        else:
            for rx, sub in MASKS:
                text = rx.sub(sub, text)
        files[rel] = text
    return files


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A plan of 18 cases (a canary, a 503, a skipped case) in 3 shards, k=2: each shard run
    once, the unsharded run once, and the merge once."""
    app = FakeApp(handler)
    state = make_state(tmp_path_factory.mktemp("shards"))
    plan = sharded_plan(state, app.url)
    plan_path = write_plan(state, plan)
    shard_results = [run_shard(state, plan_path, RUN_ID, i) for i in (1, 2, 3)]
    shard_dirs = [state / "reports" / f"{RUN_ID}.shard-{i}" for i in (1, 2, 3)]
    whole_id = "regression-20261129T101600Z"
    whole_plan = dict(plan, run_id=whole_id)
    whole = run_runner("--plan", write_plan(state, whole_plan, "whole.json"), "--out", state / "reports" / whole_id,
                       "--progress", "never")
    merged = merge(state, plan_path, RUN_ID, shard_dirs)
    yield {"app": app, "state": state, "plan": plan, "plan_path": plan_path, "shards": shard_results,
           "shard_dirs": shard_dirs, "whole": whole, "whole_dir": state / "reports" / whole_id, "merged": merged,
           "out": state / "reports" / RUN_ID}
    app.close()


def copies(world, tmp_path):
    """Fresh copies of the three shard dirs under a new state dir's reports/ (tests tamper with them).
    The plan names its state dir, so the copies' manifests get the relocated plan's hash."""
    state = make_state(tmp_path)
    plan = dict(world["plan"], paths=dict(world["plan"]["paths"], state_dir=str(state)))
    plan_path = write_plan(state, plan)
    dirs = []
    for d in world["shard_dirs"]:
        shutil.copytree(d, state / "reports" / d.name)
        dirs.append(state / "reports" / d.name)
        manifest = json.loads((dirs[-1] / "manifest.yaml").read_text())
        manifest["plan_sha256"] = sha256_json(plan)
        (dirs[-1] / "manifest.yaml").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return state, plan, plan_path, dirs


# ---------------------------------------------------------------- one shard
def test_a_shard_run_is_a_verifiable_run_of_its_slice(world):
    plan = world["plan"]
    for i, (r, d) in enumerate(zip(world["shards"], world["shard_dirs"]), start=1):
        assert r.rc == 0, r.stdout
        manifest = json.loads((d / "manifest.yaml").read_text())
        assert manifest["shard"] == {"index": i, "count": 3}
        assert manifest["plan_sha256"] == sha256_json(plan)
        expected = ["k-1"] + [c["id"] for c in plan["cases"] if plan["shards"]["assignment"].get(c["id"]) == i]
        assert sorted(c["id"] for c in manifest["cases"]) == sorted(expected)
        assert sorted(p.name for p in (cases_view(d)).iterdir()) == sorted(expected)
        v = run_runner("--verify", d)
        assert v.rc == 0, v.stdout
    # the canary ran first in every shard
    for d in world["shard_dirs"]:
        starts = [json.loads(x) for x in (d / "run.log").read_text().splitlines()]
        starts = [e for e in starts if e["event"] == "case_start"]
        assert starts[0]["case_id"] == "k-1"


def test_shard_refusals_are_exit_2_naming_the_fix(world, tmp_path):
    state, plan_path, run_id = world["state"], world["plan_path"], RUN_ID
    r = run_runner("--plan", plan_path, "--shard", 2, "--out", state / "reports" / run_id)
    assert r.rc == 2 and f"{run_id}.shard-2" in r.json["error"]
    r = run_shard(state, plan_path, run_id, 4)
    assert r.rc == 2 and "numbered 1..3" in r.json["error"]
    unsharded = write_plan(state, {k: v for k, v in world["plan"].items() if k != "shards"}, "plain.json")
    r = run_shard(state, unsharded, run_id, 1)
    assert r.rc == 2 and "make_plan.py --shards" in r.json["error"]
    baseline = ("--baseline-verdicts", world["whole_dir"] / "verdicts_for_stats.jsonl")
    r = run_shard(state, plan_path, run_id, 1, *baseline)   # its --out holds the finished shard: said first
    assert r.rc == 2 and "already holds" in r.json["error"], r.stdout
    done = state / "reports" / f"{run_id}.shard-1"
    aside = done.rename(tmp_path / "shard-1-aside")   # (this module's shards, put back below)
    try:
        r = run_shard(state, plan_path, run_id, 1, *baseline)
        assert r.rc == 2 and "merge_runs.py" in r.json["error"], r.stdout
        assert not done.exists() or not any(done.iterdir()), "a refused shard wrote its run dir"
    finally:
        if done.exists():
            import shutil
            shutil.rmtree(done)
        aside.rename(done)


# ---------------------------------------------------------------- the merge
def test_merged_run_equals_the_unsharded_run(world):
    assert world["whole"].rc == 0, world["whole"].stdout
    m = world["merged"]
    assert m.rc == 0, (m.stdout, m.stderr)
    out = world["out"]
    assert m.json["status"] == "ok" and m.json["out"] == str(out)
    whole, merged = snapshot(world["whole_dir"]), snapshot(out)
    assert "cases/c-001/repeats/2/verdict.json" in merged and "reliability.json" in merged
    assert "routing_report.json" in merged and "cases/c-004/actual.json" in merged
    assert whole.keys() == merged.keys()
    for name in whole:
        expect = whole[name].replace("regression-20261129T101600Z", RUN_ID) if isinstance(whole[name], str) \
            else whole[name]
        assert merged[name] == expect, name
    assert json.loads((out / "manifest.yaml").read_text())["plan_sha256"] == sha256_json(world["plan"])
    assert not list(out.parent.glob(".*.tmp")) and not list(out.parent.glob(".*.lock"))


def test_after_run_tools_need_no_special_case(world):
    out = world["out"]
    assert run_runner("--verify", out).rc == 0
    gate = run_script("gate", out)
    assert gate.rc in (0, 1) and RUN_ID in gate.stdout
    whole_gate = run_script("gate", world["whole_dir"])
    assert gate.rc == whole_gate.rc
    # the app's throttling is timing (run.log's throughput events), not a count: left out here
    def counts(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("  throttled by the app:")]
    assert counts(gate.stdout.replace(RUN_ID, "<id>")) == counts(whole_gate.stdout.replace(world["whole_dir"].name, "<id>"))
    assert run_script("stats", out / "verdicts_for_stats.jsonl",
                      world["whole_dir"] / "verdicts_for_stats.jsonl").rc in (0, 1)
    assert run_script("wait_run", out).rc == 0
    assert run_script("draft_report", out, "-o", out.parent / "merged-report.md").rc == 0
    latest = run_script("gate", out.parent, "--latest", "--mode", "regression", "--json")
    assert latest.rc in (0, 1)


def test_merge_is_idempotent(world, tmp_path):
    out = world["out"]
    before = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    again = merge(world["state"], world["plan_path"], RUN_ID, world["shard_dirs"])
    assert again.rc == 0, again.stdout
    after = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert before == after


def test_a_missing_shard_is_exit_6_and_nothing_is_written(world, tmp_path):
    state, _, plan_path, dirs = copies(world, tmp_path)
    r = merge(state, plan_path, RUN_ID, [dirs[0], dirs[2]])
    assert r.rc == 6, r.stdout
    assert r.json["missing_shards"] == [2] and "missing shard(s) 2" in r.json["error"]
    assert not (state / "reports" / RUN_ID).exists()
    # shard 2 run twice (a retried CI job, a second machine): both dirs named, not its cases one by one
    again = tmp_path / "machine-b" / dirs[1].name
    shutil.copytree(dirs[1], again)
    r = merge(state, plan_path, RUN_ID, [dirs[0], dirs[1], again, dirs[2]])
    assert r.rc == 6 and r.json["duplicated_shards"] == [2]
    assert r.json["duplicated_shard_dirs"] == {"2": [str(dirs[1]), str(again)]} and "duplicated_cases" not in r.json
    assert f"shard 2 given twice ({dirs[1]}, {again}): pass one run dir per shard" in r.json["error"]
    assert not (state / "reports" / RUN_ID).exists()
    typo = dirs[1].parent / (dirs[1].name + "x")   # a typo'd path: said as that
    r = merge(state, plan_path, RUN_ID, [dirs[0], typo, dirs[2]])
    assert r.rc == 2 and f"{typo}: no such directory" in r.json["error"], r.json
    assert not (state / "reports" / RUN_ID).exists()


def test_a_shard_from_another_plan_is_exit_2(world, tmp_path):
    state, plan, plan_path, dirs = copies(world, tmp_path)
    other = write_plan(state, dict(plan, k=3), "other.json")
    r = merge(state, other, RUN_ID, dirs)
    assert r.rc == 2 and "another plan" in r.json["error"] and r.json["key"] == "plan_sha256"
    # both digests named: the one the shard ran from and --plan's (a plan made again since, same run id)
    ran, given = sha256_json(plan), sha256_json(dict(plan, k=3))
    assert r.json["shard_plan_sha256"] == ran and r.json["plan_sha256"] == given, r.json
    assert f"plan_sha256 {ran[:16]}... differs from --plan's {given[:16]}..." in r.json["error"], r.json["error"]
    r = merge(state, plan_path, RUN_ID, [dirs[0], tmp_path / "nowhere", dirs[2]])
    assert r.rc == 2 and "nowhere" in r.json["error"]
    (state / "reports" / RUN_ID).mkdir()
    (state / "reports" / RUN_ID / "notes.txt").write_text("someone's run")
    r = merge(state, plan_path, RUN_ID, dirs)
    assert r.rc == 2 and "not a merge of this plan" in r.json["error"]
    assert (state / "reports" / RUN_ID / "notes.txt").exists()
    shutil.rmtree(state / "reports" / RUN_ID)
    manifest = json.loads((dirs[1] / "manifest.yaml").read_text())   # shard 2's machine had no trace file
    manifest["traces"] = dict(manifest["traces"], reason="traces.location not readable")
    (dirs[1] / "manifest.yaml").write_text(json.dumps(manifest))
    r = merge(state, plan_path, RUN_ID, dirs)
    assert r.rc == 2 and r.json["key"] == "traces" and "different 'traces'" in r.json["error"]
    # the error says where inside the key, with both values (a newcomer cannot diff two manifests by eye)
    assert r.json["where"] == "traces.reason" and '"traces.location not readable" vs ' in r.json["error"]
    assert not (state / "reports" / RUN_ID).exists()


def test_a_case_in_two_shards_is_exit_6_naming_it(world, tmp_path):
    state, plan, plan_path, dirs = copies(world, tmp_path)
    cid = next(c for c, i in plan["shards"]["assignment"].items() if i == 1)
    line = scan(dirs[0]).line(cid)   # the case's committed record, appended to another shard's journal
    with open(dirs[1] / "cases.jsonl", "ab") as f:
        f.write(line)
    r = merge(state, plan_path, RUN_ID, dirs)
    assert r.rc == 6, r.stdout
    assert f"{cid} in shards 1, 2" in r.json["error"]
    assert r.json["duplicated_cases"] == [f"{cid} in shards 1, 2"]
    assert not (state / "reports" / RUN_ID).exists()


def test_an_incomplete_shard_is_exit_6(world, tmp_path):
    state, plan, plan_path, dirs = copies(world, tmp_path)
    cid = next(c for c, i in plan["shards"]["assignment"].items() if i == 3)
    drop_case(dirs[2], cid)
    r = merge(state, plan_path, RUN_ID, dirs)
    assert r.rc == 6 and "shard 3 is not complete" in r.json["error"] and cid in r.json["error"]


def test_an_aborted_shard_makes_the_merged_run_that_abort(tmp_path):
    with FakeApp(handler) as app:
        state = make_state(tmp_path)
        run_id = "regression-20261129T111500Z"
        plan_path = write_plan(state, sharded_plan(state, app.url, count=2, run_id=run_id, k=1))
        assert run_shard(state, plan_path, run_id, 1).rc == 0
        handler.broken_canary = True
        try:
            r2 = run_shard(state, plan_path, run_id, 2)
        finally:
            handler.broken_canary = False
        assert r2.rc == 4, r2.stdout
        dirs = [state / "reports" / f"{run_id}.shard-{i}" for i in (1, 2)]
        r = merge(state, plan_path, run_id, dirs)
    assert r.rc == 4, r.stdout
    out = state / "reports" / run_id
    results = json.loads((out / "results.json").read_text())
    assert results["summary"]["status"] == "aborted_canary" and results["exit_code"] == 4
    assert json.loads((cases_view(out) / "k-1" / "verdict.json").read_text())["verdict"] == "fail"
    assert run_runner("--verify", out).rc == 0
    g = run_script("gate", out)   # the failed canary's record (shard 2's, not shard 1's passing one) is named
    assert g.rc == 1 and "gate closed: canary k-1 failed on answer: got HTTP 200" in g.stdout, g.stdout


def test_a_killed_shard_blocks_the_merge_until_resumed(tmp_path):
    def slow(req):
        if slow.on and req.method != "GET" and req.json["message"].startswith("msg"):
            time.sleep(0.1)
        return handler(req)
    slow.on = True
    with FakeApp(slow) as app:
        state = make_state(tmp_path)
        run_id = "regression-20261129T121500Z"
        plan = sharded_plan(state, app.url, count=2, run_id=run_id, k=1)
        plan["adapter"]["invocation"]["max_concurrency"] = 1
        plan_path = write_plan(state, plan)
        assert run_shard(state, plan_path, run_id, 1).rc == 0
        out2 = state / "reports" / f"{run_id}.shard-2"
        proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(plan_path),
                                 "--shard", "2", "--out", str(out2), "--progress", "never"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(scan(out2).ids()) < 3:
            time.sleep(0.02)
        assert proc.poll() is None, "the shard finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        dirs = [state / "reports" / f"{run_id}.shard-{i}" for i in (1, 2)]
        r = merge(state, plan_path, run_id, dirs)
        assert r.rc == 6, r.stdout
        assert "shard 2 is not complete" in r.json["error"] and "--resume" in r.json["error"]
        assert not (state / "reports" / run_id).exists()
        slow.on = False
        assert run_shard(state, plan_path, run_id, 2, "--resume").rc == 0
        r = merge(state, plan_path, run_id, dirs)
    assert r.rc == 0, r.stdout
    assert run_runner("--verify", state / "reports" / run_id).rc == 0


def holdout_shards(state, url, run_id):
    cases = [case(f"h-{i}", f"msg {i}", split=["holdout"]) for i in range(4)]
    return write_plan(state, sharded_plan(state, url, count=2, run_id=run_id, mode="holdout", split="holdout",
                                          k=1, cases=cases))


def test_holdout_ledger_gets_one_line_before_a_shard_result_is_readable(tmp_path):
    """A shard's run dir holds its holdout results whether or not it is ever merged: the first shard
    writes the plan's one look (the run id the merge writes), before any case; no shard or merge a second."""
    with FakeApp(handler) as app:
        state = make_state(tmp_path)
        run_id = "holdout-20261129T131500Z"
        plan_path = holdout_shards(state, app.url, run_id)
        ledger = state / "datasets" / "holdout-looks.jsonl"
        for i in (1, 2):
            assert run_shard(state, plan_path, run_id, i).rc == 0
            assert [json.loads(x)["run_id"] for x in ledger.read_text().splitlines()] == [run_id]
        dirs = [state / "reports" / f"{run_id}.shard-{i}" for i in (1, 2)]
        for _ in range(2):
            r = merge(state, plan_path, run_id, dirs)
            assert r.rc == 0, r.stdout
            rows = [json.loads(x) for x in ledger.read_text().splitlines()]
            assert [row["run_id"] for row in rows] == [run_id]
    results = (state / "reports" / run_id / "results.json").read_text()
    assert "h-0" not in results and "h-1" not in results
    assert "h-0" not in (state / "reports" / run_id / "run.log").read_text()


def ran_holdout_shards(tmp_path, run_id: str):
    """A holdout plan's two shards run against one state dir: (state, plan path, run id)."""
    with FakeApp(handler) as app:
        state = make_state(tmp_path)
        plan_path = holdout_shards(state, app.url, run_id)
        for i in (1, 2):
            assert run_shard(state, plan_path, run_id, i).rc == 0
    return state, plan_path, run_id


def test_holdout_shards_from_other_machines_without_publish_are_refused_at_the_merge(tmp_path):
    """A CI matrix without --publish: each shard job appended the look to its own checkout's ledger
    (thrown away), the merge job's fresh checkout had none, and the merge appended it there (thrown
    away too): the gate opened on look 1 every time and the budget never ran out. The merge now
    refuses a holdout plan whose look is not already on its ledger, naming --publish; nothing written."""
    state, plan_path, run_id = ran_holdout_shards(tmp_path, "holdout-20261129T151500Z")
    ledger = state / "datasets" / "holdout-looks.jsonl"
    ledger.unlink()   # the merge job's checkout: the shard jobs' ledgers went with their machines
    r = merge(state, plan_path, run_id, [state / "reports" / f"{run_id}.shard-{i}" for i in (1, 2)])
    assert r.rc == 2, r.stdout + r.stderr
    assert "--publish" in r.json["error"] and str(ledger) in r.json["error"] and run_id in r.json["error"]
    assert not (state / "reports" / run_id).exists() and not ledger.exists()
    assert run_script("gate", state / "reports", "--latest").rc != 0


def test_a_merge_that_cannot_record_its_look_makes_no_holdout_run_readable(tmp_path):
    """The merge appended the ledger line after renaming the merged holdout run into place: a merge
    stopped in between (here: the ledger cannot be written) left a readable holdout result whose look
    no ledger counted. The line comes first now; without it nothing is renamed into place."""
    state, plan_path, run_id = ran_holdout_shards(tmp_path, "holdout-20261129T141500Z")
    ledger = state / "datasets" / "holdout-looks.jsonl"
    ledger.unlink(missing_ok=True)
    ledger.mkdir()   # the merge cannot append its look, as a kill or a full disk would stop it
    r = merge(state, plan_path, run_id, [state / "reports" / f"{run_id}.shard-{i}" for i in (1, 2)])
    assert r.rc != 0 and "holdout-looks.jsonl" in r.json["error"], r.stdout
    assert not (state / "reports" / run_id).exists()
    assert not [p.name for p in (state / "reports").iterdir() if ".merge-" in p.name]


def test_the_merge_writes_comparison_json_against_a_baseline(world, tmp_path):
    state, _, plan_path, dirs = copies(world, tmp_path)
    baseline = world["whole_dir"] / "verdicts_for_stats.jsonl"
    r = merge(state, plan_path, RUN_ID, dirs, "--baseline-verdicts", baseline)
    assert r.rc == 0, r.stdout
    out = state / "reports" / RUN_ID
    comparison = json.loads((out / "comparison.json").read_text())
    assert comparison["baseline_run_id"] == world["whole_dir"].name
    assert json.loads((out / "manifest.yaml").read_text())["baseline_verdicts"]["run_id"] == world["whole_dir"].name
    assert run_runner("--verify", out).rc == 0
