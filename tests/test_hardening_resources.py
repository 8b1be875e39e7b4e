"""The runner's own resources running out (docs/runner-contract.md, "Security", "The runner's
resources"): a full disk (ENOSPC) or no file descriptor left (EMFILE) stops the run with exit 5
(3 in pre-flight), a JSON error naming the cause and the fix, no traceback, and no case marked as
the app's failure; `--resume` then finishes the run.

EMFILE: run_cases.py in a subprocess under a low RLIMIT_NOFILE. ENOSPC: a real full disk, a small
tmpfs mounted for the test (when the tests run as root and may mount; skipped otherwise), and,
always, the OSError injected at the one writer (`core.writer.write_bytes`) in this process.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import subprocess
import sys

import pytest

from fakeapp import FakeApp, Reply, case, make_plan, make_state, run_runner, write_plan
from helpers import SCRIPTS
from rundir_util import cases_view


def _blamed_the_app(out) -> list[str]:
    """Cases whose verdict says the app failed because of the runner's descriptors or disk."""
    bad = []
    for v in (cases_view(out)).glob("*/verdict.json"):
        doc = json.loads(v.read_text())
        text = json.dumps(doc)
        if "Too many open files" in text or "No space left" in text:
            bad.append(v.parent.name)
    return bad


def test_out_of_file_descriptors_is_named_and_never_blamed_on_the_app(tmp_path):
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = make_plan(state, [case(f"c-{i:02d}", "hi") for i in range(40)], app_url=app.url)
        plan["adapter"]["invocation"]["max_concurrency"] = 16
        path = write_plan(state, plan)
        seen = set()
        for limit in (12, 16, 20, 24, 28):
            out = state / "reports" / plan["run_id"]
            if out.exists():
                shutil.rmtree(out)
            proc = subprocess.run([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out",
                                   str(out), "--progress", "never"], capture_output=True, text=True, timeout=120,
                                  preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
            assert "Traceback" not in proc.stderr, (limit, proc.stderr[-2000:])
            assert proc.returncode in (0, 3, 5), (limit, proc.returncode, proc.stdout)
            if proc.returncode:
                err = json.loads(proc.stdout.strip().splitlines()[-1])
                assert err["cause"] == "EMFILE" and "ulimit -n" in err["error"] and "not the app" in err["error"], err
                # the script by its name, and mid-run the way back: --resume (the in-process test names
                # the script itself; a user's subprocess named the script's path and lost this sentence)
                assert err["error"].startswith("run_cases.py: "), err
                if proc.returncode == 5:
                    assert "--resume" in err["error"], err
                seen.add(proc.returncode)
            if out.exists():
                assert _blamed_the_app(out) == [], limit
        assert 5 in seen, "no limit ran out mid-run: the test did not test anything"
        # with descriptors back, --resume finishes the run
        res = run_runner("--plan", path, "--out", out, "--resume", "--progress", "never")
        assert res.rc == 0, res.stdout
        assert run_runner("--verify", out).rc == 0


def test_a_full_disk_injected_at_the_writer_is_exit_5_and_resume_finishes(tmp_path, monkeypatch):
    """In-process: the writer raises ENOSPC from its 10th write on (an injected fault, not a real disk),
    a file or a case's journal line alike (the journal is appended through writer.append_all)."""
    import contextlib
    import io

    from assay.core import writer
    from assay.core.cli import run_command
    from assay.run.command import EXAMPLE, add_arguments, run
    from assay.core.cli import make_parser

    real, real_append = writer.write_bytes, writer.append_all
    calls = {"n": 0, "appends": 0}

    def fault(where):
        calls["n"] += 1
        if calls["n"] > 10:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), where)

    def full(path, data, **kw):
        fault(os.fspath(path))
        return real(path, data, **kw)

    def full_append(fd, data, path=None):
        calls["appends"] += 1
        fault("cases.jsonl")
        return real_append(fd, data, path)

    def parser():
        p = make_parser("run_cases.py", "run_cases", EXAMPLE)
        add_arguments(p)
        return p
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = make_plan(state, [case(f"c-{i:02d}", "hi") for i in range(12)], app_url=app.url)
        path = write_plan(state, plan)
        out_dir = state / "reports" / plan["run_id"]
        monkeypatch.setattr(writer, "write_bytes", full)
        monkeypatch.setattr(writer, "append_all", full_append)
        buf_out, buf_err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(buf_out), contextlib.redirect_stderr(buf_err):
            rc = run_command(parser, run, argv=["--plan", str(path), "--out", str(out_dir), "--progress", "never"],
                             script="run_cases.py")
        monkeypatch.setattr(writer, "write_bytes", real)
        monkeypatch.setattr(writer, "append_all", real_append)
        assert calls["appends"] and calls["n"] > 10   # the fault was hit, case lines among the writes
        assert rc == 5 and "Traceback" not in buf_err.getvalue(), (rc, buf_out.getvalue(), buf_err.getvalue())
        err = json.loads(buf_out.getvalue().strip().splitlines()[-1])
        assert err["cause"] == "ENOSPC" and "--resume" in err["error"] and "not the app" in err["error"], err
        assert _blamed_the_app(out_dir) == []
        res = run_runner("--plan", path, "--out", out_dir, "--resume", "--progress", "never")
        assert res.rc == 0, res.stdout
        assert run_runner("--verify", out_dir).rc == 0


def _can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None and sys.platform.startswith("linux")


@pytest.mark.skipif(not _can_mount(), reason="mounting a small tmpfs needs root")
def test_a_real_full_disk_is_exit_5_and_resume_finishes_after_space_is_freed(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)], capture_output=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.decode()[:200]}")
    try:
        state = make_state(mnt)
        big = "x" * 40_000
        with FakeApp(lambda r: Reply(200, {"message": f"hi {big}"}) if r.method == "POST" else Reply(200, {"ok": 1})) as app:
            plan = make_plan(state, [case(f"c-{i:02d}", "hi") for i in range(30)], app_url=app.url)
            path = write_plan(state, plan)
            out = state / "reports" / plan["run_id"]
            res = run_runner("--plan", path, "--out", out, "--progress", "never")
            assert res.rc in (3, 5) and "Traceback" not in res.stderr, (res.rc, res.stdout, res.stderr[-2000:])
            err = json.loads(res.stdout.strip().splitlines()[-1])
            assert err["cause"] == "ENOSPC" and "not the app" in err["error"], err
            # the file it was writing, named (a journal or run.log append named none)
            assert os.path.basename(err.get("path") or "") in {"cases.jsonl", "run.log", "results.json",
                                                             "manifest.yaml", "verdicts.jsonl"} or \
                os.path.basename(os.path.dirname(err.get("path") or "")) == out.name, err
            assert err["path"] in err["error"], err
            if res.rc == 5:
                assert "--resume" in err["error"], err
            assert _blamed_the_app(out) == []
            subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
            res = run_runner("--plan", path, "--out", out, "--resume", "--progress", "never")
            assert res.rc == 0, res.stdout
            assert run_runner("--verify", out).rc == 0
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
