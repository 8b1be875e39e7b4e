"""The cli invoker's pieces in-process: the session runner's caps and kill, argv filling,
the scratch area, a `cwd` path, and the exit-code mapping (real child processes, /bin/sh)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import SCRIPTS  # noqa: F401  (puts scripts/ on sys.path)

from assay.core.errors import AssayError
from assay.invoke import orphans
from assay.invoke import procgroup
from assay.invoke.cli import CliInvoker, fill_argv, scratch_area
from assay.invoke.templates import UNSET


def test_grace_and_stream_cap():
    assert procgroup.grace_for(60) == 2.0 and procgroup.grace_for(1) == 0.5 and procgroup.grace_for(0.01) == 0.1
    s = procgroup.Stream(cap=4)
    s.add(b"abc")
    s.add(b"defg")
    assert bytes(s.data) == b"abcd" and s.total == 7 and s.truncated


def test_fill_argv_and_scratch_area():
    values = {"<user turn>": "hi there", "<uuid>": "u-1", "<persona>": None, "<case id>": "c-1", "<session>": UNSET}
    assert fill_argv(["--q", "<user turn>", "--p=<persona>", "<session>", "id:<case id>"], values) == \
        ["--q", "hi there", "--p=", "id:c-1"]
    a = scratch_area("smoke-20261129T101500Z", Path("/x/reports/smoke-20261129T101500Z"), {"ASSAY_SCRATCH_DIR": "/s"})
    b = scratch_area("smoke-20261129T101500Z", Path("/y/reports/smoke-20261129T101500Z"), {"ASSAY_SCRATCH_DIR": "/s"})
    assert a.parent == b.parent == Path("/s") and a != b and a.name.startswith("smoke-20261129T101500Z-")
    assert a == scratch_area("smoke-20261129T101500Z", Path("/x/reports/smoke-20261129T101500Z"), {"ASSAY_SCRATCH_DIR": "/s"})


def invoker(tmp_path, **inv):
    app = tmp_path / "app"
    (app / "work").mkdir(parents=True, exist_ok=True)
    invocation = {"mode": "cli", "command": ["/bin/sh", "-c", 'pwd; printf "%s" "$1" >&2; exit "${CODE:-0}"', "sh",
                                             "<user turn>"], "env_allowlist": ["CODE"], **inv}
    return CliInvoker(invocation, {}, environ={"CODE": os.environ.get("X_CODE", "0")}, timeout_s=5,
                      app_root=app, area=tmp_path / "scratch" / "run-1", state_dir=app / ".assay")


def case(expect=None):
    return {"id": "c-1", "input": {"messages": [{"role": "user", "content": "ping"}]}, "expect": expect or {}}


def test_cwd_path_is_relative_to_the_app_repo_and_exit_codes_map(tmp_path, monkeypatch):
    inv = invoker(tmp_path, cwd="work")
    wire, recorded = inv.prepare(case(), "u-1")
    assert recorded == {"mode": "cli", "argv": ["/bin/sh", "-c", 'pwd; printf "%s" "$1" >&2; exit "${CODE:-0}"', "sh",
                                                "ping"], "stdin": "none", "cwd": "work", "env": ["CODE"]}
    out = inv.send(wire)
    assert out.kind == "response" and out.status == 0 and out.body_text.strip() == str(tmp_path / "app" / "work")
    assert out.cli["stderr"] == "ping" and out.cli["scratch"] is None
    monkeypatch.setenv("X_CODE", "5")
    inv5 = invoker(tmp_path, cwd="work")
    assert inv5.send(inv5.prepare(case(), "u")[0]).kind == "exit"                        # not expected: infra
    got = inv5.send(inv5.prepare(case({"exit_code": 2}), "u")[0])                         # expected: an answer
    assert got.kind == "response" and got.status == 5
    inv.close()


def test_preflight_refuses_a_scratch_area_inside_the_app_repo(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    with pytest.raises(AssayError) as err:
        CliInvoker({"mode": "cli", "command": ["/bin/sh"]}, {}, environ={}, timeout_s=1, app_root=app,
                   area=app / "tmp" / "run-1", state_dir=app / ".assay")
    assert err.value.code == 3 and "ASSAY_SCRATCH_DIR" in err.value.message


def test_a_planted_symlink_for_the_scratch_area_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "assay-scratch-x")
    inv = CliInvoker({"mode": "cli", "command": ["/bin/sh"]}, {}, environ={}, timeout_s=1, app_root=tmp_path / "app",
                     area=tmp_path / "assay-scratch-x" / "run-1", state_dir=tmp_path / "app" / ".assay")
    with pytest.raises(AssayError) as err:
        inv.health(resume=False)
    assert err.value.code == 3 and "symlink" in err.value.message


def test_sweep_kills_a_recorded_group_and_forgets_a_dead_one(tmp_path):
    import subprocess
    reg = orphans.GroupRegistry(tmp_path)
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 60"], start_new_session=True)
    reg.add(proc.pid)
    (tmp_path / "999999999").write_text('{"pgid": 999999999, "boot_id": null, "start_ticks": 1}')
    assert reg.sweep() == [proc.pid]
    proc.wait(timeout=10)
    assert proc.returncode == -9 and list(tmp_path.iterdir()) == []


def test_turns_of_one_conversation_attempt_share_a_scratch_dir_and_a_resend_gets_a_fresh_one(tmp_path):
    script = "if [ -f note ]; then cat note; else echo kept > note; echo wrote; fi"
    inv = CliInvoker({"mode": "cli", "command": ["/bin/sh", "-c", script, "sh", "<uuid>"]}, {}, environ={},
                     timeout_s=5, app_root=tmp_path / "app", area=tmp_path / "scratch" / "run-1",
                     state_dir=tmp_path / "app" / ".assay")
    turn1, _ = inv.prepare(case(), "conv-1")
    turn2, _ = inv.prepare(case(), "conv-1")
    first, second = inv.send(turn1), inv.send(turn2)
    assert (first.body_text, second.body_text) == ("wrote\n", "kept\n")
    assert first.cli["scratch"] == second.cli["scratch"] == "cases/c-1/1"
    again = inv.send(turn1)                                    # the same request sent again: a fresh dir
    restart = inv.send(inv.prepare(case(), "conv-2")[0])       # a restarted conversation: a fresh dir
    assert (again.cli["scratch"], restart.cli["scratch"]) == ("cases/c-1/2", "cases/c-1/3")
    assert again.body_text == restart.body_text == "wrote\n"
    inv.finish_case("c-1", passed=True)
    assert not (tmp_path / "scratch" / "run-1" / "cases" / "c-1").exists()
    inv.close()


KILLED_IN_THE_WINDOW = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from assay.invoke import orphans
from assay.invoke import procgroup
reg = orphans.GroupRegistry(Path(sys.argv[2]))
# the runner dies right after the command started and before its group is recorded
reg.add = lambda pgid: os.kill(os.getpid(), signal.SIGKILL)
procgroup.run_in_session(["/bin/sh", "-c", 'sleep 300 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; wait', sys.argv[3]],
                         env={"PATH": os.defpath}, cwd=None, stdin_bytes=None, timeout_s=60, registry=reg)
"""


def test_a_runner_killed_between_start_and_record_leaves_no_orphan(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    reg_dir, pidfile = tmp_path / "pgroups", tmp_path / "grandchild.pid"
    reg_dir.mkdir()
    proc = subprocess.run([sys.executable, "-c", KILLED_IN_THE_WINDOW, str(SCRIPTS), str(reg_dir), str(pidfile)],
                          capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    deadline = time.monotonic() + 20
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    grandchild = int(pidfile.read_text())
    try:
        pgid = os.getpgid(grandchild)
        assert procgroup.group_members(pgid), "the orphan runs"
        assert orphans.GroupRegistry(reg_dir).sweep() == [pgid]      # what --resume's pre-flight does
        deadline = time.monotonic() + 10
        while _alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(grandchild), "the grandchild outlived the sweep"
        assert list(reg_dir.iterdir()) == []
    finally:
        if _alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def _alive(pid: int) -> bool:
    fields = procgroup._stat_fields(str(pid))
    return bool(fields) and fields[0] not in ("Z", "X")
