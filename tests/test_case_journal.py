"""The case journal (runner contract §8.1): one committed line per finished case, a torn tail
never read as a case, kill -9 then --resume, and an older run dir (cases/<id>/) still read."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from fakeapp import Reply, app, case, make_plan, run_runner, state  # noqa: F401 (fixtures)
from helpers import SCRIPTS, run_script
from rundir_util import drop_case
from assay.core import casestore


def echo(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": f"re: {req.json['message']}"})


def cases(n):
    return [case(f"c-{i:03d}", f"msg {i}", expect={"answer": {"must_contain": [f"msg {i}"]}}) for i in range(n)]


def write_plan(state, plan, name="plan.json"):
    path = state / "work" / name
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def go(state, plan):
    out = state / "reports" / plan["run_id"]
    return run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never"), out


# ------------------------------------------------------------------ pure: the store
def test_a_torn_line_is_never_a_case_and_a_committed_one_is(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    j = casestore.Journal(run)
    j.append(casestore.record_line("c-1", {"case_id": "c-1", "verdict": "pass"}, {"answer.txt": b"hi \xe2\x9c\x93"}))
    j.close()
    whole = casestore.record_line("c-2", {"case_id": "c-2", "verdict": "fail"}, {"answer.txt": b"no"})
    with open(run / casestore.JOURNAL, "ab") as f:
        f.write(whole[:-7])                       # a kill mid-append: no newline
    store = casestore.scan(run)
    assert store.layout == "journal" and store.ids() == ["c-1"] and store.torn == len(whole) - 7
    assert store.read("c-1", "answer.txt") == "hi ✓".encode() and store.verdict("c-2") is None
    assert [cid for cid, _ in store.verdicts()] == ["c-1"] and [r.case_id for r in store.records()] == ["c-1"]
    assert json.loads(store.read("c-1", "verdict.json")) == {"case_id": "c-1", "verdict": "pass"}
    # the line's key order lets a reader take the id and verdict without parsing the artifacts
    assert casestore.head_of(whole, verdict=True) == ("c-2", {"case_id": "c-2", "verdict": "fail"})
    assert casestore.head_of(whole[:30], verdict=True) == ("c-2", None)


def test_a_secret_never_reaches_the_journal(tmp_path):
    from assay.core import writer
    writer.register_secrets(["s3cr3t-token"])
    try:
        line = casestore.record_line("c-1", {"case_id": "c-1", "note": "got s3cr3t-token"},
                                     {"request.json": b'{"h": "s3cr3t-token"}'})
    finally:
        writer.register_secrets([])
    assert b"s3cr3t-token" not in line and b"<redacted>" in line


# ------------------------------------------------------------------ the runner
def test_kill_9_mid_run_then_a_torn_record_then_resume(app, state):
    def slow(req):
        if req.method != "GET":
            time.sleep(0.02)
        return echo(req)
    app.handler = slow
    plan = make_plan(state, cases(30), app_url=app.url)
    path = write_plan(state, plan)
    out = state / "reports" / plan["run_id"]
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out", str(out),
                             "--progress", "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(casestore.scan(out).ids()) < 4:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    store = casestore.scan(out)
    done = store.ids()
    assert 4 <= len(done) < 30
    # what a kill inside the append leaves: the first half of a finished case's line, no newline
    victim = done[-1]
    half = store.line(victim)[:40]
    drop_case(out, victim)
    with open(out / casestore.JOURNAL, "ab") as f:
        f.write(half)
    assert victim not in casestore.scan(out).ids()
    v = run_runner("--verify", out)
    assert v.rc == 6
    assert any(p.startswith("cases.jsonl (a torn last record") for p in v.json["missing_artifacts"])
    assert f"cases/{victim}/verdict.json (case never finished)" in v.json["missing_artifacts"]
    before = len(app.posts())
    r = run_script("run_cases", "--plan", path, "--out", out, "--resume", "--progress", "never")
    assert r.rc == 0, r.stdout + r.stderr
    assert len(app.posts()) - before == 30 - len(done) + 1        # the torn case ran again, no other twice
    ok = run_runner("--verify", out)
    assert ok.rc == 0 and ok.json["cases_finished"] == 30 and ok.json["files"] < 12, ok.stdout
    rows = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [row["case_id"] for row in rows] == [c["id"] for c in plan["cases"]]


def test_an_older_run_dir_with_case_dirs_is_still_read(app, state):
    """A run dir as assay wrote it before the journal (cases/<id>/<file>, verdict.json last):
    --verify, gate.py and the viewer read it; --resume refuses it, naming why."""
    app.handler = echo
    plan = make_plan(state, cases(3) + [case("c-fail", "msg x", expect={"answer": {"must_contain": ["nope"]}})],
                     app_url=app.url)
    r, out = go(state, plan)
    assert r.rc == 0, r.stdout
    for rec in casestore.scan(out).records():      # rewrite it in the older layout, byte for byte
        for name in rec.names():
            p = out / "cases" / rec.case_id / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(rec.read(name))
    (out / casestore.JOURNAL).unlink()
    assert casestore.scan(out).layout == "dirs"
    v = run_runner("--verify", out)
    assert v.rc == 0 and v.json["cases_finished"] == 4, v.stdout
    edited = out / "cases" / "c-001" / "answer.txt"
    edited.write_text("edited")
    v = run_runner("--verify", out)
    assert v.rc == 6 and "cases/c-001/answer.txt (edited: its sha256 differs from the one verdict.json recorded)" \
        in v.json["missing_artifacts"]
    edited.write_bytes(casestore.dir_record(out / "cases" / "c-000").read("answer.txt").replace(b"0", b"1"))
    g = run_script("gate", out)
    assert "c-fail" in g.stdout and g.rc != 0
    from assay.view.case import case_doc
    doc = case_doc(out.parent, out.name, "c-fail")
    assert doc["verdict"]["verdict"] == "fail" and f"{out.name}/cases/c-fail/answer.txt" in doc["files"]
    res = run_runner("--plan", write_plan(state, plan), "--out", out, "--resume")
    assert res.rc == 2 and "older assay" in res.json["error"]
