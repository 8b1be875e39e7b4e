"""Shared test helpers: drive scripts as a user does (subprocess, argv in, JSON + exit code out)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(SCRIPTS))


def in_ci() -> bool:
    """True when the suite runs in CI (`CI=1|true|yes`): a tool .ci/run installs that is missing there
    fails its tests, never skips them."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        """stdout parsed as one JSON document (the first line if several)."""
        text = self.stdout.strip()
        try:
            return json.loads(text)
        except ValueError:
            return json.loads(text.splitlines()[0])


def run_script(name: str, *args: Any, env: dict[str, str] | None = None, input: str | None = None,
               cwd: str | os.PathLike[str] | None = None, timeout: float = 600) -> Result:
    """Run scripts/<name>.py with the test interpreter; `env` entries are added to os.environ."""
    full_env = dict(os.environ)
    full_env.pop("PYTHONPATH", None)
    if env:
        full_env.update(env)
    script = name if name.endswith(".py") else f"{name}.py"
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / script), *map(str, args)],
        capture_output=True, text=True, encoding="utf-8", errors="replace",
        env=full_env, input=input, cwd=cwd, timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def write_yaml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def user_case(cid: str, content: str, expect: str, *, extra: str = "") -> str:
    """A newcomer's one-turn case YAML (split full and smoke, happy, MFT) asking `content`, with `expect`'s
    lines (indented two spaces) under `expect:`; `extra`: more top-level lines (e.g. "identity: {user: bob}\n")."""
    return (f"id: {cid}\nsplit: [full, smoke]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n{extra}"
            f"input:\n  messages:\n    - {{role: user, content: {content}}}\nexpect:\n{expect}")


@contextlib.contextmanager
def view_server(state: Path | str, env: dict[str, str] | None = None):
    """view.py serving `state` as a person starts it (its own process, a free port): yields its URL, and
    ends it on exit (`--serve-seconds 900` only bounds an orphan: 120 s once ran out on a loaded worker)."""
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        yield json.loads(proc.stdout.readline())["url"]
    finally:
        proc.terminate()
        proc.wait(10)


def listen_port() -> int:
    """A free loopback port for a listener a later process binds (the runner's OTLP/HTTP receiver that an
    app is told to export to before the run starts). Drawn below the kernel's ephemeral range, which
    bind(0) and outgoing connections take from: a port picked by bind(0) and released could be taken by
    another worker's connection before the runner binds it (a test failed that way on 6 workers)."""
    import random
    import socket
    low = 20000
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as fh:
            low = min(low, int(fh.read().split()[0]) - 1)
    except (OSError, ValueError, IndexError):
        pass
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:   # nothing free below the range: any free port
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
