"""assay.api from several threads: one command runs at a time (core.commands.call).

A service ran `api.run()` in one thread and, meanwhile, `api.gate()` on another run in a second.
Each command sets the process's secrets as it starts (the runner registers the app's token, what
every file it writes is redacted of) and clears them as it ends; the gate's call cleared the
runner's, and the runner then wrote the app's bearer token, echoed in an answer, into the run dir.
"""

from __future__ import annotations

import threading

from assay import api
from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, write_plan

TOKEN = "tK7pQ2vX9mR4wL8sN3bY6cF1hJ5dG0zA"


def test_a_second_threads_command_never_clears_a_running_commands_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("ECHO_TOKEN", TOKEN)
    arrived, go = threading.Event(), threading.Event()

    def echo(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        arrived.set()
        go.wait(120)   # the first case waits until the other thread's command has had its chance
        return Reply(200, {"message": "hello, your key is " + str(req.headers.get("Authorization"))})

    state = make_state(tmp_path)
    with FakeApp(echo) as app:
        doc = adapter(app.url, auth={"type": "bearer", "token_env": "ECHO_TOKEN"})
        plan = write_plan(state, make_plan(state, [case(f"c-{i:08d}", "hello") for i in range(3)], adapter_doc=doc))
        done: dict = {}
        runner = threading.Thread(target=lambda: done.update(run=api.run(plan)))
        runner.start()
        assert arrived.wait(120), "the runner never sent a case"
        other = threading.Thread(target=lambda: done.update(gate=_gate(tmp_path / "no-such-run")))
        other.start()
        other.join(2)   # without one-at-a-time it ends here, having cleared the runner's secrets
        go.set()
        runner.join(300)
        other.join(300)
    assert done["run"]["exit_code"] == 0, done
    assert done["gate"] == 2, done   # the second command ran too, after the first
    out = state / "reports" / done["run"]["run_id"]
    leaked = [str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert leaked == [], leaked
    assert b"your key is Bearer <redacted>" in (out / "cases.jsonl").read_bytes()   # the app did echo it


def _gate(run_dir) -> int:
    try:
        api.gate(run_dir)
    except api.CommandError as err:
        return err.code
    return 0
