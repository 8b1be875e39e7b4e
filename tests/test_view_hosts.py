"""The viewer's server refuses a forged Host (DNS rebinding), answers HEAD and OPTIONS (and every
refusal) with the CSP headers, and the bundle names the run dirs it could not show."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys

import pytest

from helpers import SCRIPTS
from rundir_util import make_run

pytestmark = pytest.mark.slow   # real runs and subprocesses: over ~7 s on a loaded machine

RUN = "smoke-20261130T101500Z"
NEVER = "smoke-20261202T101500Z"


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    root = tmp_path_factory.mktemp("hosts")
    make_run(root / "reports", [{"id": "c-001", "answer": "the refund window is 30 days"}], run_id=RUN)
    half = root / "reports" / "smoke-20261201T101500Z"  # a run killed before results.json
    (half / "cases").mkdir(parents=True)
    # the newest smoke run stopped at pre-flight: no run dir, only run_cases.py's never-started file
    (root / "reports" / f".{NEVER}.not-started.json").write_text(json.dumps(
        {"run_id": NEVER, "mode": "smoke", "exit_code": 3, "error": "pre-flight: health check failed",
         "at": "2026-12-02T10:15:01Z"}), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def port(state):
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = json.loads(proc.stdout.readline())["url"]
    yield int(url.rsplit(":", 1)[1].strip("/"))
    proc.terminate()
    proc.wait(30)


def ask(port: int, method: str, path: str, host: str | None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.putrequest(method, path, skip_host=True)
    if host is not None:
        conn.putheader("Host", host)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}",
                                  "127.0.0.1:1", "localhost:{port}@evil.example", None, ""])
def test_a_forged_host_reads_nothing_and_gets_the_csp(port, host):
    status, headers, body = ask(port, "GET", f"/api/run/{RUN}/cases", None if host is None else host.format(port=port))
    assert status == 421, body
    assert "default-src 'self'" in headers["content-security-policy"]
    assert b"refund" not in body and b"c-001" not in body
    assert "--host-name" in json.loads(body)["error"]


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "[::1]:{port}"])
def test_the_bound_names_with_their_port_are_served(port, host):
    status, headers, body = ask(port, "GET", f"/api/run/{RUN}/cases", host.format(port=port))
    assert status == 200 and b"c-001" in body
    assert "default-src 'self'" in headers["content-security-policy"]


@pytest.mark.parametrize("method,code", [("HEAD", 200), ("OPTIONS", 204), ("TRACE", 501), ("POST", 405)])
def test_every_method_answers_with_the_csp(port, method, code):
    status, headers, body = ask(port, method, "/", f"127.0.0.1:{port}")
    assert status == code
    assert "default-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    if method == "HEAD":
        assert body == b"" and int(headers["content-length"]) > 0


def test_host_name_needs_allow_remote(state):
    r = subprocess.run([sys.executable, str(SCRIPTS / "view.py"), str(state), "--host-name", "box.lan"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--allow-remote" in json.loads(r.stdout)["error"]


def test_host_rules():
    from assay.view.server import allowed_hosts, parse_host
    assert parse_host("[::1]:8080") == ("::1", 8080) and parse_host("LocalHost.") == ("localhost", 80)
    assert parse_host("a:b") is None and parse_host("x y:1") is None
    assert allowed_hosts("0.0.0.0", 9, ["box.lan"]) >= {("localhost", 9), ("box.lan", 9)}
    assert ("localhost", 9) not in allowed_hosts("10.0.0.5", 9) and ("10.0.0.5", 9) in allowed_hosts("10.0.0.5", 9)


def test_the_bundle_names_an_unreadable_run(state, tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPTS / "view.py"), str(state), "--bundle", str(tmp_path / "b")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["runs"] == 1
    assert [u["run_id"] for u in doc["unreadable"]] == ["smoke-20261201T101500Z"]
    assert "results.json" in doc["unreadable"][0]["reason"]
    assert [n["run_id"] for n in doc["not_started"]] == [NEVER]


NEVER_WORDS = ("the newest smoke run, smoke-20261202T101500Z, never started (run_cases.py exit 3: pre-flight: "
               "health check failed): the runs listed are older, none of them is its result")


def test_the_served_runs_list_names_an_unreadable_run(port):
    status, _, body = ask(port, "GET", "/api/runs", f"127.0.0.1:{port}")
    assert status == 200
    doc = json.loads(body)
    assert [r["run_id"] for r in doc["runs"]] == [RUN]
    assert [u["run_id"] for u in doc["unreadable"]] == ["smoke-20261201T101500Z"]
    assert "resume" in doc["unreadable"][0]["reason"]


def test_the_runs_list_says_the_newest_run_never_started_above_the_older_green_one(port):
    """Today's smoke run stopped at pre-flight (no run dir); the runs page's top row was
    yesterday's run, green, as if it were today's result (gate.py --latest refuses: §10.4a)."""
    status, _, body = ask(port, "GET", "/api/runs", f"127.0.0.1:{port}")
    doc = json.loads(body)
    assert [(n["run_id"], n["mode"], n["message"]) for n in doc["not_started"]] == [(NEVER, "smoke", NEVER_WORDS)]
