"""A run id is never wedged by an early kill, and a hand-edited plan cannot point the run anywhere
(docs/runner-contract.md, "Security"): manifest.yaml is the run dir's first file, --resume starts a
run that never got one over; paths.state_dir must be an assay state dir and --out must be under its
reports/.
"""

from __future__ import annotations

import json
from pathlib import Path

from fakeapp import FakeApp, _run_runner_in_process, case, make_plan, make_state, run_runner, write_plan
from rundir_util import cases_view


def _plan(state, url):
    return make_plan(state, [case("c-1", "hello"), case("c-2", "world")], app_url=url)


def test_resume_starts_over_a_run_killed_before_its_manifest(tmp_path):
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = _plan(state, app.url)
        plan_path = write_plan(state, plan)
        out = state / "reports" / plan["run_id"]
        # what a kill in the first milliseconds left (the older start order): cases/, a half case dir
        (out / "cases" / "c-1").mkdir(parents=True)
        (out / "cases" / "c-1" / "request.json").write_text("{}")
        (out / "run.log").write_text('{"event": "preflight"')
        fresh = run_runner("--plan", plan_path, "--out", out, "--progress", "never")
        assert fresh.rc == 2 and "--resume starts it over" in fresh.json["error"], fresh.stdout
        res = run_runner("--plan", plan_path, "--out", out, "--resume", "--progress", "never")
        assert res.rc == 0, res.stdout
        assert app.count(method="POST") == 2
    assert json.loads((out / "results.json").read_text())["summary"]["status"] == "ok"
    assert run_runner("--verify", out).rc == 0


def test_resume_still_refuses_a_dir_with_a_finished_case_but_no_manifest(tmp_path):
    state = make_state(tmp_path)
    plan = _plan(state, "http://127.0.0.1:9")
    out = state / "reports" / plan["run_id"]
    (out / "cases" / "c-1").mkdir(parents=True)
    (out / "cases" / "c-1" / "verdict.json").write_text('{"case_id": "c-1"}')
    res = run_runner("--plan", write_plan(state, plan), "--out", out, "--resume")
    assert res.rc == 2 and "no manifest.yaml" in res.json["error"]
    assert (cases_view(out) / "c-1" / "verdict.json").exists()


def test_manifest_is_the_first_thing_in_the_run_dir(tmp_path, monkeypatch):
    """Every file goes through core.writer and every dir through Path.mkdir/os.mkdir: record the
    order of what appears in the run dir during a real (in-process) run."""
    from assay.core import writer
    import os
    state = make_state(tmp_path)
    seen: list[str] = []
    with FakeApp() as app:
        plan = _plan(state, app.url)
        out = state / "reports" / plan["run_id"]

        def note(path):
            p = Path(os.path.abspath(path))
            if p != out and out in p.parents and not seen:
                seen.append(str(p.relative_to(out)))
        real_write, real_mkdir, real_osmkdir = writer._replace_with, Path.mkdir, os.mkdir
        # the writer's one temp + rename (write_bytes and write_chunks, e.g. the streamed manifest)
        monkeypatch.setattr(writer, "_replace_with", lambda path, chunks: (note(path), real_write(path, chunks))[1])
        monkeypatch.setattr(Path, "mkdir", lambda self, *a, **k: (note(self), real_mkdir(self, *a, **k))[1])
        monkeypatch.setattr(os, "mkdir", lambda path, *a, **k: (note(path), real_osmkdir(path, *a, **k))[1])
        res = _run_runner_in_process("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert res.rc == 0, res.stdout
    assert seen == ["manifest.yaml"]


def test_a_state_dir_that_is_not_one_is_refused(tmp_path):
    state = make_state(tmp_path)
    plan = _plan(state, "http://127.0.0.1:9")
    for bad in ("/", str(tmp_path / "plain")):
        Path(bad).mkdir(exist_ok=True)
        hacked = dict(plan, paths=dict(plan["paths"], state_dir=bad))
        out = tmp_path / "anywhere" / "reports" / plan["run_id"]
        res = run_runner("--plan", write_plan(state, hacked), "--out", out)
        assert res.rc == 2 and res.json.get("key") == "paths.state_dir", res.stdout
        assert "not an assay state dir" in res.json["error"] or "filesystem root" in res.json["error"]
        assert not (tmp_path / "anywhere").exists()


def test_out_must_be_under_the_state_dirs_reports(tmp_path):
    state = make_state(tmp_path)
    plan = _plan(state, "http://127.0.0.1:9")
    out = state / "datasets" / plan["run_id"]
    res = run_runner("--plan", write_plan(state, plan), "--out", out)
    assert res.rc == 2 and res.json.get("key") == "--out" and "reports" in res.json["error"]
    assert not out.exists()


def test_resume_starts_over_a_run_killed_before_its_run_dir_existed(tmp_path):
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = _plan(state, app.url)
        out = state / "reports" / plan["run_id"]
        # a kill after the lock was taken and before the run dir was made leaves only the lock file
        (state / "reports" / f".{plan['run_id']}.lock").write_text('{"pid": 999999999}\n')
        res = run_runner("--plan", write_plan(state, plan), "--out", out, "--resume", "--progress", "never")
        assert res.rc == 0, res.stdout
        assert app.count(method="POST") == 2
    assert json.loads((out / "results.json").read_text())["summary"]["status"] == "ok"
    assert run_runner("--verify", out).rc == 0


def _read_only(path: Path):
    """Make `path` unwritable for this process: a read-only tmpfs over it as root (chmod does not stop
    root), chmod 555 otherwise. Returns an undo, or None when it cannot be done here."""
    import os
    import shutil
    import subprocess
    if os.geteuid() != 0:
        path.chmod(0o555)
        return lambda: path.chmod(0o755)
    if not shutil.which("mount") or subprocess.run(["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(path)],
                                                   capture_output=True).returncode != 0:
        return None
    return lambda: subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_a_reports_dir_it_cannot_write_is_a_clear_preflight_error_naming_it(tmp_path):
    import pytest
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = _plan(state, app.url)
        plan_path = write_plan(state, plan)
        out = state / "reports" / plan["run_id"]
        undo = _read_only(state / "reports")
        if undo is None:
            pytest.skip("cannot make a directory read-only for root here (no tmpfs mount)")
        try:
            r = run_runner("--plan", plan_path, "--out", out, "--progress", "never")
        finally:
            undo()
        posts = len(app.posts())
    # was: exit 1, 'internal error: OSError: [Errno 30] Read-only file system' and a traceback
    assert r.rc == 3 and "Traceback" not in r.stderr, (r.rc, r.stdout, r.stderr[-2000:])
    assert r.json["key"] == "--out" and r.json["path"].endswith(f".{plan['run_id']}.lock"), r.json
    assert str(state / "reports") in r.json["error"] and "writable" in r.json["error"], r.json
    assert posts == 0 and not out.exists()
