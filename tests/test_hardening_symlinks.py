"""No read, write or delete through a symlink inside a state or run directory (docs/runner-contract.md,
"Security"): the runner, --resume, --verify, gate.py and draft_report.py refuse with exit 2 naming
the link (--verify reports it as a defect, exit 6), and the link's target is never touched.
"""

from __future__ import annotations

import os
import shutil

import pytest

from fakeapp import FakeApp, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script
from rundir_util import cases_view


def _plan(state, app_url, **kw):
    return make_plan(state, [case("c-1", "hello"), case("c-2", "world")], app_url=app_url, **kw)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One finished run; tests plant a link, check, and put the real file back."""
    tmp = tmp_path_factory.mktemp("links")
    state = make_state(tmp)
    with FakeApp() as app:
        plan = _plan(state, app.url)
        plan_path = write_plan(state, plan)
        out = state / "reports" / plan["run_id"]
        res = run_runner("--plan", plan_path, "--out", out, "--progress", "never")
        assert res.rc == 0, res.stdout
        yield tmp, state, plan_path, out, app


def _outside(tmp, name, text="outside\n"):
    d = tmp / "outside"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text(text)
    return p


def _swap(path, target):
    """Move `path` aside and put a symlink to `target` in its place; returns the undo."""
    aside = path.with_name(path.name + ".real")
    os.rename(path, aside)
    os.symlink(target, path)

    def undo():
        os.unlink(path)
        os.rename(aside, path)
    return undo


def _refused(res, name):
    assert res.rc == 2, (res.rc, res.stdout, res.stderr)
    err = res.json
    assert name in err["error"] and err.get("symlink") is True, err
    assert "Traceback" not in res.stderr


def test_a_lock_file_symlink_is_refused_and_its_target_untouched(tmp_path):
    state = make_state(tmp_path)
    plan = _plan(state, "http://127.0.0.1:9")
    target = _outside(tmp_path, "victim.txt", "keep me\n")
    dangling = tmp_path / "outside" / "created.txt"
    os.symlink(target, state / "reports" / f".{plan['run_id']}.lock")
    res = run_runner("--plan", write_plan(state, plan), "--out", state / "reports" / plan["run_id"])
    _refused(res, f".{plan['run_id']}.lock")
    assert target.read_text() == "keep me\n"
    os.unlink(state / "reports" / f".{plan['run_id']}.lock")
    os.symlink(dangling, state / "reports" / f".{plan['run_id']}.lock")
    res = run_runner("--plan", write_plan(state, plan), "--out", state / "reports" / plan["run_id"])
    _refused(res, ".lock")
    assert not dangling.exists()


def test_a_gitignore_symlink_is_neither_read_nor_written(tmp_path):
    state = make_state(tmp_path)
    with FakeApp() as app:
        doc = adapter(app.url)
        doc["data"]["may_contain_pii"] = True
        plan = _plan(state, app.url, adapter_doc=doc)
        target = _outside(tmp_path, "ignore", "private\n")
        os.symlink(target, state / "reports" / ".gitignore")
        res = run_runner("--plan", write_plan(state, plan), "--out", state / "reports" / plan["run_id"])
    _refused(res, ".gitignore")
    assert target.read_text() == "private\n"
    assert not (state / "reports" / plan["run_id"]).exists()


def test_a_reports_dir_symlink_is_refused(tmp_path):
    state = make_state(tmp_path)
    (state / "elsewhere").mkdir()
    shutil.rmtree(state / "reports")
    os.symlink(state / "elsewhere", state / "reports")
    plan = _plan(state, "http://127.0.0.1:9")
    res = run_runner("--plan", write_plan(state, plan), "--out", state / "reports" / plan["run_id"])
    _refused(res, "reports")
    assert list((state / "elsewhere").iterdir()) == []


def test_a_holdout_ledger_symlink_is_refused(tmp_path):
    state = make_state(tmp_path)
    target = state / "work" / "other.jsonl"   # inside the state dir: still never written through a link
    target.write_text("")
    os.symlink(target, state / "datasets" / "holdout-looks.jsonl")
    cases = [case("c-h", "hi", split=("holdout",))]
    plan = make_plan(state, cases, mode="holdout", selecting_split="holdout")
    res = run_runner("--plan", write_plan(state, plan), "--out", state / "reports" / plan["run_id"])
    _refused(res, "holdout-looks.jsonl")
    assert target.read_text() == ""


def test_resume_never_appends_through_a_run_log_symlink(finished):
    tmp, state, plan_path, out, app = finished
    target = _outside(tmp, "log.txt", "mine\n")
    undo = _swap(out / "run.log", target)
    try:
        res = run_runner("--plan", plan_path, "--out", out, "--resume")
    finally:
        undo()
    _refused(res, "run.log")
    assert target.read_text() == "mine\n"


def test_resume_never_deletes_through_a_cases_symlink_and_verify_flags_it(finished):
    tmp, state, plan_path, out, app = finished
    precious = _outside(tmp, "cases.jsonl", (out / "cases.jsonl").read_text() + '{"case_id": "torn')
    before = precious.read_bytes()
    undo = _swap(out / "cases.jsonl", precious)   # the case journal: --resume would cut its torn tail
    try:
        res = run_runner("--plan", plan_path, "--out", out, "--resume")
        verify = run_runner("--verify", out)
    finally:
        undo()
    _refused(res, "cases.jsonl")
    assert precious.read_bytes() == before
    assert verify.rc == 6, verify.stdout
    assert any(p.startswith("cases.jsonl (a symlink") for p in verify.json["missing_artifacts"]), verify.json


def test_verify_treats_a_symlinked_verdict_as_a_defect(finished):
    tmp, state, plan_path, out, app = finished
    older = tmp / "older" / out.name      # the run as an older assay wrote it: cases/<id>/<file>
    if not older.exists():
        shutil.copytree(out, older)
        shutil.copytree(cases_view(out), older / "cases")
        (older / "cases.jsonl").unlink()
    out = older
    real = out / "cases" / "c-1" / "verdict.json"
    copy = _outside(tmp, "verdict.json", real.read_text())
    undo = _swap(real, copy)
    try:
        verify = run_runner("--verify", out)
    finally:
        undo()
    assert verify.rc == 6, verify.stdout
    assert "cases/c-1/verdict.json (a symlink" in " ".join(verify.json["missing_artifacts"])
    assert run_runner("--verify", out).rc == 0


def test_gate_and_draft_report_refuse_a_symlinked_results_json(finished):
    tmp, state, plan_path, out, app = finished
    copy = _outside(tmp, "results.json", (out / "results.json").read_text())
    undo = _swap(out / "results.json", copy)
    try:
        gate = run_script("gate", out)
        draft = run_script("draft_report", out, "-o", "-")
    finally:
        undo()
    _refused(gate, "results.json")
    _refused(draft, "results.json")


def test_draft_report_never_writes_through_a_report_symlink(finished):
    tmp, state, plan_path, out, app = finished
    target = _outside(tmp, "report.md", "mine\n")
    os.symlink(target, out / "report.md")
    try:
        res = run_script("draft_report", out, "--force")
    finally:
        os.unlink(out / "report.md")
    _refused(res, "report.md")
    assert target.read_text() == "mine\n"
