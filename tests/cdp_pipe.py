"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (fd 3 in, fd 4 out,
NUL-delimited JSON): enough to open a page, send real key events and read the DOM, with the
standard library only."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe"]


class Browser:
    def __init__(self, chromium: str, profile_dir: Path):
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()
        # move the child's ends well above 4 so the dup2 onto 3 and 4 cannot clobber them
        hi_r, hi_w = fcntl.fcntl(to_child_r, fcntl.F_DUPFD_CLOEXEC, 100), fcntl.fcntl(from_child_w, fcntl.F_DUPFD_CLOEXEC, 100)
        os.close(to_child_r)
        os.close(from_child_w)

        # close_fds would run after preexec_fn and close 3 and 4 again; every other descriptor
        # Python opened is close-on-exec already, so only 3 and 4 reach chromium
        def wire():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
                                     close_fds=False, preexec_fn=wire,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(hi_r)
        os.close(hi_w)
        self._buf = b""
        self._id = 0
        self.session: str | None = None

    def send(self, method: str, params: dict | None = None, *, session: bool = True, timeout: float = 30) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_child_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" not in self._buf:
                chunk = os.read(self._from_child_r, 65536)
                if not chunk:
                    raise RuntimeError("chromium closed the debugging pipe")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
        raise TimeoutError(method)

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", {"url": url}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]

    def eval(self, expression: str):
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return res.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(expression)

    def key(self, key: str) -> None:
        """One real key press (keyDown with text, then keyUp), as a keyboard sends it."""
        if len(key) == 1:
            params = {"key": key, "text": key, "code": f"Key{key.upper()}", "windowsVirtualKeyCode": ord(key.upper())}
        else:
            params = {"key": key, "code": key, "windowsVirtualKeyCode": {"Escape": 27, "ArrowRight": 39}[key]}
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", **params})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **{k: v for k, v in params.items() if k != "text"}})

    def type_text(self, text: str) -> None:
        self.send("Input.insertText", {"text": text})

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False, timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child_w)
        os.close(self._from_child_r)
