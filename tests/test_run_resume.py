"""Completeness, --verify, --resume after kill -9, the runner lock, and concurrency 8 = concurrency 1."""

from __future__ import annotations

import json
import re

from rundir_util import COST_LATENCY_MASK, ORDER_MASK
import signal
import subprocess
import sys
import time

import pytest

from fakeapp import RUN_ID, Reply, adapter, app, case, make_plan, run_runner, state
from helpers import SCRIPTS, run_script
from rundir_util import case_json, drop_case, edit_case, masked_snapshot
from assay.core.casestore import scan

pytestmark = pytest.mark.slow


def write(state, plan, name="plan.json"):
    path = state / "work" / name
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def go(state, plan, *args, name="plan.json"):
    """In-process (fast); the kill -9 and lock tests below start real processes."""
    out = state / "reports" / plan["run_id"]
    return run_runner("--plan", write(state, plan, name), "--out", out, "--progress", "never", *args), out


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def echo_handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    return Reply(200, {"message": msg if not msg.endswith("7") else "other", "route": "r" + msg[-1]})


def many_cases(n):
    return [case(f"c-{i:03d}", f"msg {i}", expect={"answer": {"must_contain": [f"msg {i}"]}, "route": f"r{i % 10}"})
            for i in range(n)]


# ---------------------------------------------------------------- verify
def test_verify_names_deleted_and_edited_artifacts(app, state):
    app.handler = echo_handler
    r, out = go(state, make_plan(state, many_cases(3), app_url=app.url))
    assert r.rc == 0
    (out / "report.md").write_text("# report")        # the skill's files after the run are allowed
    (out / "report.html").write_text("<p>report</p>")
    assert run_runner("--verify", out).rc == 0
    edit_case(out, "c-001", "answer.txt", None)
    edit_case(out, "c-002", "response.json", b'{"status": 200}')
    v = run_runner("--verify", out)
    assert v.rc == 6, v.stdout
    missing = v.json["missing_artifacts"]
    assert any(m.startswith("cases/c-001/answer.txt") for m in missing)
    assert any(m.startswith("cases/c-002/response.json (edited") for m in missing)
    assert len(missing) == 2, missing


def test_verify_names_an_edited_verdict_and_results(app, state):
    app.handler = echo_handler
    r, out = go(state, make_plan(state, many_cases(3), app_url=app.url))
    doc = case_json(out, "c-000")
    doc["verdict"] = "fail"
    edit_case(out, "c-000", "verdict.json", json.dumps(doc).encode())
    res = json.loads((out / "results.json").read_text())
    res["summary"]["passes"] += 5
    (out / "results.json").write_text(json.dumps(res))
    (out / "stray.txt").write_text("x")
    v = run_runner("--verify", out)
    assert v.rc == 6
    text = "\n".join(v.json["missing_artifacts"])
    assert "cases/c-000/verdict.json (edited" in text
    assert "verdicts.jsonl" in text and "results.json (summary" in text and "stray.txt" in text


def test_completeness_failure_at_run_end_is_exit_6(app, state, monkeypatch):
    # A file the contract never lists appears in the run dir mid-run: the end-of-run check catches it.
    def handler(req):
        if req.method != "GET":
            (state / "reports" / RUN_ID / "intruder").mkdir(exist_ok=True)
        return echo_handler(req)
    app.handler = handler
    r, out = go(state, make_plan(state, many_cases(2), app_url=app.url))
    assert r.rc == 6, r.stdout
    res = json.loads((out / "results.json").read_text())
    assert res["summary"]["status"] == "incomplete" and res["exit_code"] == 6
    assert any("intruder" in m for m in res["summary"]["missing_artifacts"])


# ---------------------------------------------------------------- resume
def test_kill_9_then_resume_matches_an_uninterrupted_run(app, state):
    def slow(req):
        if req.method != "GET":
            time.sleep(0.02)
        return echo_handler(req)
    app.handler = slow
    cases = [dict(c, split=["holdout"]) for c in many_cases(40)]
    plan = make_plan(state, cases, app_url=app.url, mode="holdout", selecting_split="holdout",
                     run_id="holdout-20261129T101500Z")
    path = write(state, plan)
    out = state / "reports" / plan["run_id"]
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out", str(out),
                             "--progress", "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if len(scan(out).ids()) >= 5:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (state / "reports" / f".{plan['run_id']}.lock").exists()   # stale: must not block --resume
    assert json.loads((out / "results.json").read_text())["summary"]["status"] == "running"
    v = run_runner("--verify", out)
    assert v.rc == 6 and "c-0" not in v.stdout     # holdout cases are named by index, never by id
    r = run_script("run_cases", "--plan", path, "--out", out, "--resume", "--progress", "never")
    assert r.rc == 0, r.stdout + r.stderr
    assert run_runner("--verify", out).rc == 0
    rows = jsonl(out / "verdicts.jsonl")
    assert [row["case_id"] for row in rows] == [c["id"] for c in cases]   # none lost, none duplicated
    ledger = jsonl(state / "datasets" / "holdout-looks.jsonl")
    assert [row["run_id"] for row in ledger] == [plan["run_id"]]
    # the same verdicts as an uninterrupted run
    plan2 = dict(plan, run_id="holdout-20261129T111500Z")
    r2, out2 = go(state, plan2, name="plan2.json")
    assert r2.rc == 0
    assert jsonl(out2 / "verdicts.jsonl") == rows


def test_resume_refuses_a_changed_plan_and_keeps_finished_cases(app, state):
    app.handler = echo_handler
    plan = make_plan(state, many_cases(3), app_url=app.url)
    r, out = go(state, plan)
    assert r.rc == 0
    again = run_runner("--plan", write(state, plan), "--out", out)   # the same plan again, into a finished run
    assert again.rc == 2 and "already holds a finished run (status ok)" in again.json["error"] \
        and "new run id" in again.json["error"] and "--resume" not in again.json["error"], again.json
    changed = dict(plan, cases=many_cases(4))
    r = run_runner("--plan", write(state, changed, "p2.json"), "--out", out, "--resume")
    assert r.rc == 2 and "plan_sha256" in r.json["error"]
    assert "new run id" in r.json["error"] and f"move {out} aside" in r.json["error"]   # each way out named
    # resume of a finished run: nothing re-invoked
    before = len(app.posts())
    drop_case(out, "c-001")      # a case with no committed record is redone
    r = run_runner("--plan", write(state, plan), "--out", out, "--resume", "--progress", "never")
    assert r.rc == 0, r.stdout
    assert len(app.posts()) == before + 1
    assert run_runner("--verify", out).rc == 0


def test_resume_with_a_kept_failed_canary_is_exit_4_with_nothing_invoked(app, state):
    app.handler = lambda req: Reply(200, {"message": "wrong"})
    plan = make_plan(state, [case("k-1", "hello", split=["smoke", "canary"]), case("c-1", "hello")], app_url=app.url)
    r, out = go(state, plan)
    assert r.rc == 4
    before = len(app.requests)
    r = run_runner("--plan", write(state, plan), "--out", out, "--resume", "--progress", "never")
    assert r.rc == 4 and r.json["status"] == "aborted_canary"
    assert len([q for q in app.requests[before:] if q.method != "GET"]) == 0


# ---------------------------------------------------------------- the lock
def test_second_runner_on_the_same_run_id_is_refused(app, state):
    release = {"go": False}

    def blocking(req):
        if req.method != "GET":
            while not release["go"]:
                time.sleep(0.01)
        return echo_handler(req)
    app.handler = blocking
    plan = make_plan(state, many_cases(1), app_url=app.url)
    path = write(state, plan)
    out = state / "reports" / RUN_ID
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out", str(out),
                             "--progress", "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lock = state / "reports" / f".{RUN_ID}.lock"
        deadline = time.monotonic() + 30
        while not app.posts() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lock.exists() and json.loads(lock.read_text())["pid"] == proc.pid
        r = run_script("run_cases", "--plan", path, "--out", out, "--resume")
        assert r.rc == 2 and "locked" in r.json["error"]
    finally:
        release["go"] = True
        proc.wait(timeout=60)
    assert proc.returncode == 0
    assert not (state / "reports" / f".{RUN_ID}.lock").exists()


# ---------------------------------------------------------------- determinism under concurrency
MASKS = [
    (re.compile(r'"(ts|started_at|finished_at|date)": "[^"]*"'), r'"\1": "<t>"'),
    (re.compile(r'"(latency_ms)": [0-9.e-]+'), r'"\1": 0'),
    COST_LATENCY_MASK,
    ORDER_MASK,
    (re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'), "<uuid>"),
    (re.compile(r'"((?:repeats/\d+/)?(?:request|response)\.json)": "[0-9a-f]{64}"'), r'"\1": "<sha>"'),
    (re.compile(r'"(plan_sha256)": "[0-9a-f]{64}"'), r'"\1": "<sha>"'),
    (re.compile(r'"max_concurrency": \d+'), '"max_concurrency": "<c>"'),
    (re.compile(r'"run_id": "[a-z]+-[0-9TZ]+"'), '"run_id": "<id>"'),
]


def snapshot(out):
    return masked_snapshot(out, MASKS)


def test_concurrency_8_equals_concurrency_1(app, state):
    def handler(req):
        if req.method != "GET" and "boom" in req.json["message"]:
            return Reply(503, "overloaded")
        return echo_handler(req)
    app.handler = handler
    cases = many_cases(30) + [case("k-1", "msg k", split=["canary"]), case("c-boom", "boom"),
                              case("c-skip", "x", identity={"role": "admin"})]
    for c in cases:
        c["split"] = sorted(set(c["split"]) - {"smoke"} | {"full"})
    cases[5]["expect"]["result"] = {"scalar": "r5"}
    snaps = []
    for conc, run_id in ((1, "regression-20261129T101500Z"), (8, "regression-20261129T101600Z")):
        ad = adapter(app.url, max_concurrency=conc, result_from_response="route")
        plan = make_plan(state, cases, adapter_doc=ad, run_id=run_id, mode="regression", selecting_split="full", k=2)
        r, out = go(state, plan)
        assert r.rc == 0, r.stdout
        snaps.append(snapshot(out))
    assert "cases/c-001/repeats/2/verdict.json" in snaps[0] and "reliability.json" in snaps[0]
    assert snaps[0].keys() == snaps[1].keys()
    for name in snaps[0]:
        assert snaps[0][name] == snaps[1][name], name


def test_end_of_run_check_catches_a_file_deleted_mid_run(app, state):
    # The end-of-run check takes finished records from memory but still reads the journal's
    # index: a committed record removed after its case finished is named (exit 6), as --verify names it.
    seen = []

    def handler(req):
        if req.method != "GET":
            seen.append(req.json["message"])
            if len(seen) == 3:   # wait until c-000 has finished (its record committed)
                run_dir = state / "reports" / RUN_ID
                deadline = time.monotonic() + 10
                while "c-000" not in scan(run_dir).ids() and time.monotonic() < deadline:
                    time.sleep(0.01)
                drop_case(run_dir, "c-000")
        return echo_handler(req)
    app.handler = handler
    r, out = go(state, make_plan(state, many_cases(3), app_url=app.url))
    assert r.rc == 6, r.stdout
    res = json.loads((out / "results.json").read_text())
    assert res["summary"]["missing_artifacts"][0] == "cases/c-000/verdict.json (case never finished)"


def finished_run_and_its_records(app, state):
    """A clean 4-case run: (out, the records --verify's full read gives, {case id: record})."""
    sys.path.insert(0, str(SCRIPTS))
    from assay.rundir.completeness import check_run_dir
    app.handler = echo_handler
    r, out = go(state, make_plan(state, many_cases(4), app_url=app.url))
    assert r.rc == 0, r.stdout
    full, records, _ = check_run_dir(out, schemas=False, records=True)
    assert full == []
    return out, records, {rec["case_id"]: rec for rec in records}


def test_end_of_run_check_with_known_records_equals_the_full_read(app, state):
    from assay.rundir import derived
    from assay.rundir.completeness import check_run_dir
    out, records, known = finished_run_and_its_records(app, state)
    assert check_run_dir(out, schemas=False, known=known, records=True)[:2] == ([], records)  # == the full read
    drop_case(out, "c-001")
    edit_case(out, "c-002", "stray.txt", b"x")
    (out / "intruder").mkdir()
    full, records, _ = check_run_dir(out, schemas=False)
    # the runner's own check takes c-002's record from memory (it composed that line itself): all
    # but the artifact a hand edit slipped into the committed line
    assert check_run_dir(out, schemas=False, known=known)[0] == [p for p in full if "stray.txt" not in p]
    assert "cases/c-001/verdict.json (case never finished)" in full
    assert "cases/c-002/stray.txt (not part of the run-dir contract)" in full
    assert any("stray.txt" in p for p in full) and any("intruder" in p for p in full)
    assert derived.slim(known["c-000"]) == known["c-000"]


def test_end_of_run_check_trusts_only_the_exact_bytes_it_wrote(app, state):
    """`written` lets the runner's own check skip re-parsing a derived file whose bytes are exactly
    what it wrote; any other bytes (an edit, a torn write) get the full comparison."""
    out, _, known = finished_run_and_its_records(app, state)
    from assay.rundir.completeness import check_run_dir
    names = ("verdicts.jsonl", "verdicts_for_stats.jsonl", "results.json")
    written = {rel: (out / rel).read_bytes() for rel in names}
    assert check_run_dir(out, schemas=False, known=known, written=written)[0] == []
    # bytes that are not the ones written: the full check runs and names the file
    lines = (out / "verdicts.jsonl").read_text().splitlines(keepends=True)
    (out / "verdicts.jsonl").write_text("".join(lines[:-1]))
    results = json.loads((out / "results.json").read_text())
    results["summary"]["passes"] += 1
    (out / "results.json").write_text(json.dumps(results))
    problems = check_run_dir(out, schemas=False, known=known, written=written)[0]
    assert any(p.startswith("verdicts.jsonl (") for p in problems), problems
    assert any("passes disagree with a recount" in p for p in problems), problems
    # the bytes match but a case dir is gone: the listing no longer holds exactly `known`, so the
    # derived files are compared in full too (and name the missing case)
    for rel, data in written.items():
        (out / rel).write_bytes(data)
    drop_case(out, "c-003")
    problems = check_run_dir(out, schemas=False, known=known, written=written)[0]
    assert "cases/c-003/verdict.json (case never finished)" in problems
    assert any(p.startswith("verdicts.jsonl (") for p in problems), problems


def test_verify_layer_cache_reports_what_the_full_schema_check_reports(app, state):
    # --verify validates each distinct layer object once; a bad layer (even one identical to
    # layers already seen valid elsewhere) is still named exactly as the full validation names it.
    import sys
    sys.path.insert(0, str(SCRIPTS))
    from assay.rundir.completeness import check_run_dir
    from assay.rundir.verdict_schema import _VerdictSchema
    from assay.schemas import iter_errors
    app.handler = echo_handler
    r, out = go(state, make_plan(state, many_cases(4), app_url=app.url))
    assert r.rc == 0, r.stdout
    assert _VerdictSchema().ok and check_run_dir(out)[0] == []
    edits = {"c-001": ("authz", {"verdict": "maybe"}), "c-002": ("judged", {"verdict": "unscored"}),
             "c-003": ("loops", "n/a")}
    for cid, (layer, value) in edits.items():
        doc = case_json(out, cid)
        doc["layers"][layer] = value
        edit_case(out, cid, "verdict.json", json.dumps(doc).encode())
    problems = check_run_dir(out)[0]
    for cid in edits:
        doc = case_json(out, cid)
        e = iter_errors(doc, "verdict")[0]
        want = f"cases/{cid}/verdict.json (does not match the verdict schema at {e['key']}: {e['message']})"
        assert want in problems, (want, problems)
