"""Redact, then cut (issue 25 item 2): every place assay shortens text that may hold a secret goes
through `core.writer.clip` / `clip_bytes`, so a secret straddling the cut leaves no part of
itself behind. Each site is driven with the secret placed so that the old cut-then-redact kept
10 or more of its characters (a prefix, or a suffix for a tail)."""

from __future__ import annotations

import json
import sys

import pytest

from helpers import SCRIPTS  # noqa: F401  (puts scripts/ on sys.path)

from assay.core import writer
from assay.judge.providers import read_reply
from assay.invoke import http as http_mod
from assay.invoke import procgroup
from assay.invoke.cli import CliInvoker
from assay.judge.runtime import JudgeRuntime
from assay.judge.transport import run_command
from assay.traces.plan import trace_id_from_response
from assay.score.base import short
from fakeapp import FakeApp, Reply

SECRET = "zQ4m8Kd2Lp6Wn0Xr3Tb7Yc1Vf5Hg9Js"


def no_piece(text) -> bool:
    text = text if isinstance(text, str) else json.dumps(text)
    return all(p not in text for p in (SECRET, SECRET[:10], SECRET[-10:]))


@pytest.fixture
def registered():
    writer.register_secrets([SECRET])
    yield
    writer.register_secrets([])


def test_clip_redacts_before_it_cuts(registered):
    text = "a" * 70 + SECRET + "b" * 50
    assert no_piece(writer.clip(text, 80)) and writer.clip(text, 80) == "a" * 70 + "<redacted>"
    assert no_piece(writer.clip(SECRET + "y" * 190, 200, tail=True))
    assert writer.clip("short", 80) == "short" and writer.clip(12345, 3) == "123"
    assert writer.clip("x" * 10, 5, ellipsis="…") == "xxxx…"
    data = b"a" * 90 + SECRET.encode()
    assert writer.read_margin() >= len(SECRET)
    assert no_piece(writer.clip_bytes(data, 100).decode())


def test_a_score_reason_tool_argument_cut_at_80(registered):
    assert no_piece(short("x" * 60 + SECRET, 80))


def test_the_judge_refusal_and_http_error_body_cut_at_200(registered, tmp_path):
    body = {"choices": [{"message": {"role": "assistant", "content": None, "refusal": "r" * 180 + SECRET}}]}
    _, _, _, err = read_reply("openai", body)
    assert err.startswith("the model refused") and no_piece(err)
    with FakeApp(lambda req: Reply(401, "u" * 180 + SECRET)) as judge:
        rt = JudgeRuntime(config={"provider": "openai", "base_url": judge.url + "/v1", "api_key": SECRET,
                                  "model": "m", "timeout_s": 5, "max_concurrency": 1}, recorded={}, rubrics={},
                          state=tmp_path, execution={"max_attempts": 1, "backoff_s": []}, sidecar=None,
                          sidecar_why=None)
        call, parsed, error, infra = rt._call("system", "user", {})
    assert infra and "HTTP 401" in error and no_piece(error) and no_piece(call["error"])


def test_a_command_judges_stderr_tail_cut_at_300(registered, tmp_path):
    code = f"import sys; sys.stderr.write({SECRET!r} + 'y' * 290); sys.exit(1)"
    out = run_command([sys.executable, "-c", code], "prompt", 10, tmp_path, {})
    assert out.kind == "exception" and "exited 1" in out.error and no_piece(out.error)


def test_a_command_judges_stdout_at_the_body_bound(registered, tmp_path, monkeypatch):
    monkeypatch.setattr("assay.judge.transport.MAX_BODY_BYTES", 100)
    code = f"import sys; sys.stdout.write('o' * 90 + {SECRET!r})"
    out = run_command([sys.executable, "-c", code], "prompt", 10, tmp_path, {})
    assert out.kind == "response" and no_piece(out.body_text)


def test_the_cli_output_cap_and_stderr_tail(registered, tmp_path):
    s = procgroup.Stream(cap=100, margin=writer.read_margin())
    s.add(b"a" * 90)
    s.add(SECRET.encode() + b"rest")
    assert s.truncated and s.total == 90 + len(SECRET) + 4 and no_piece(s.kept().decode()) and len(s.kept()) == 100
    app = tmp_path / "app"
    app.mkdir()
    inv = CliInvoker({"mode": "cli", "command": [sys.executable, "-c",
                                                 "import os, sys; sys.stderr.write(os.environ['K'] + 'y' * 190); "
                                                 "sys.exit(3)"], "env_allowlist": ["K"]},
                     {}, environ={"K": SECRET}, timeout_s=10, app_root=app, area=tmp_path / "scratch" / "r",
                     state_dir=app / ".assay")
    try:
        out = inv.send(inv.prepare({"id": "c-1", "input": {"messages": [{"role": "user", "content": "hi"}]},
                                    "expect": {}}, "u-1")[0])
    finally:
        inv.close()
    assert out.kind == "exit" and "stderr:" in out.error and no_piece(out.error)


def test_the_cli_stdout_cap_end_to_end(registered, tmp_path):
    cap = procgroup.OUTPUT_CAP_BYTES
    app = tmp_path / "app"
    app.mkdir()
    inv = CliInvoker({"mode": "cli", "command": [sys.executable, "-c",
                                                 f"import os, sys; sys.stdout.write('o' * {cap - 10} + os.environ['K'])"],
                      "env_allowlist": ["K"]}, {}, environ={"K": SECRET}, timeout_s=10, app_root=app,
                     area=tmp_path / "scratch" / "r", state_dir=app / ".assay")
    try:
        out = inv.send(inv.prepare({"id": "c-1", "input": {"messages": [{"role": "user", "content": "hi"}]},
                                    "expect": {}}, "u-1")[0])
    finally:
        inv.close()
    assert out.cli["stdout_truncated"] and out.answer_withheld
    assert len(out.body_text) == cap and no_piece(out.body_text[-100:])


def test_a_response_field_trace_id_cut_at_80(registered):
    tid, why = trace_id_from_response({"trace": "z" * 70 + SECRET}, "trace")
    assert tid is None and "not a 32-hex trace id" in why and no_piece(why)


def test_an_http_body_at_the_size_bound(registered, monkeypatch):
    monkeypatch.setattr(http_mod, "MAX_BODY_BYTES", 1000)
    with FakeApp(lambda req: Reply(200, "b" * 990 + SECRET + "tail" * 10)) as app:
        inv = http_mod.HttpInvoker({"mode": "http", "base_url": app.url, "endpoint": "POST /chat",
                                    "request_body": '{"message": "<user turn>"}'}, {}, timeout_s=5,
                                   insecure_tls=False)
        try:
            out = inv.send(inv.prepare({"id": "c-1", "input": {"messages": [{"role": "user", "content": "hi"}]},
                                        "expect": {}}, "u-1")[0])
        finally:
            inv.close()
    assert out.kind == "response" and len(out.body_text) <= 1000 and no_piece(out.body_text)
    assert any("exceeded" in n for n in out.notes)
