"""The example helpdesk app for tests that drive assay from outside: a copy of its state dir in a
temp dir (runs never write into the repo), the app on a free port (examples/helpdesk/demo.py's
App), and a pass-through proxy that can hold the app's answers back (to stop a run midway)."""

from __future__ import annotations

import http.client
import urllib.parse
import importlib.util
import os
import shutil
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

from helpers import ROOT

HELPDESK = ROOT / "examples" / "helpdesk"


def copy_state(tmp_path: Path) -> Path:
    state = tmp_path / ".assay"
    shutil.copytree(HELPDESK / ".assay", state, ignore=shutil.ignore_patterns("work", "reports"))
    # judge.yaml runs `python3 ../judge_standin.py` from the state dir: keep it beside the copy
    shutil.copy2(HELPDESK / "judge_standin.py", tmp_path / "judge_standin.py")
    (state / "work").mkdir()
    return state


def _demo_module():
    spec = importlib.util.spec_from_file_location("helpdesk_demo", HELPDESK / "demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def helpdesk(state: Path, *, broken: bool = False, app_dir: str = "app") -> Iterator[dict[str, str]]:
    """The app running; yields the environment its adapter.yaml reads (HELPDESK_BASE_URL, ...)."""
    work = state.parent / app_dir
    work.mkdir(exist_ok=True)
    app = _demo_module().App(work, broken=broken, flaky=False)
    try:
        url = app.start()
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "BREAK", "FLAKY") and not k.startswith("PYTEST_")}
        env.update(HELPDESK_BASE_URL=url, HELPDESK_OTLP_FILE=str(app.otlp_file))
        yield env
    finally:
        app.stop()


class HoldingProxy:
    """Forwards to the app; after `pass_chats` POSTs it holds every further one until release()."""

    def __init__(self, target: str, pass_chats: int) -> None:
        self.target = urllib.parse.urlsplit(target)
        self.left = pass_chats
        self.held = 0
        self.released = threading.Event()
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._forward()

            def do_POST(self):
                with proxy.lock:
                    hold = proxy.left <= 0
                    proxy.left -= 1
                    proxy.held += 1 if hold else 0
                if hold:
                    proxy.released.wait(30)
                self._forward()

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                conn = http.client.HTTPConnection(proxy.target.hostname, proxy.target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                try:
                    self.send_response(resp.status)
                    for k, v in resp.getheaders():
                        if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the runner is gone (killed): nobody reads the answer
                finally:
                    conn.close()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()
