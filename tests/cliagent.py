#!/usr/bin/env python3
"""A scriptable fake command-line agent for the cli-mode tests (run as a real child process).

    cliagent.py [--case ID] [--tag TAG] MESSAGE

It answers one JSON line {"answer": ..., "route": ...} on stdout, decided by MESSAGE:
  "hello..."        -> "you said hello..." (route "greet")
  "exit N"          -> {"answer": "refused"} on stdout, "bad input" on stderr, exit N
  "big"             -> 1.5 MB on stdout (past the 1 MiB cap)
  "binary"          -> bytes that are not UTF-8
  "env"             -> the names in its environment, and the value of CLI_SECRET_TOKEN (also on stderr)
  "stdin..."        -> "stdin=<what it read on stdin>"
  "scratch..."      -> writes note.txt in its working directory; answers "cwd=<dir>"
  "segv"            -> kills itself with SIGSEGV
  "hang MARKER"     -> when the file named by $CLI_HANG_FLAG (or --hang-flag) exists: starts a
                       grandchild that ignores SIGTERM and carries MARKER in its argv, then sleeps;
                       otherwise answers "no hang"
  "argv"            -> its argv after the program name
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def environment_names() -> list[str]:
    # The environment the agent was started with (the interpreter itself may add LC_CTYPE).
    try:
        raw = open("/proc/self/environ", "rb").read()
        return sorted({item.split(b"=", 1)[0].decode() for item in raw.split(b"\0") if item})
    except OSError:
        return sorted(os.environ)


def main(argv: list[str]) -> int:
    args = list(argv)
    opts = {}
    while args and args[0].startswith("--"):
        opts[args[0][2:]] = args[1]
        args = args[2:]
    msg = " ".join(args)
    out = sys.stdout
    if msg.startswith("hello"):
        out.write(json.dumps({"answer": f"you said {msg}", "route": "greet"}) + "\n")
    elif msg.startswith("exit "):
        out.write(json.dumps({"answer": "refused"}) + "\n")
        sys.stderr.write("bad input\n")
        return int(msg.split()[1])
    elif msg == "big":
        out.write("x" * 1_500_000)
    elif msg == "binary":
        sys.stdout.buffer.write(b'\xff\xfe{"answer": "bin"}\n')
    elif msg == "env":
        secret = os.environ.get("CLI_SECRET_TOKEN")
        sys.stderr.write(f"token is {secret}\n")
        out.write(json.dumps({"answer": "env ok", "env": environment_names(), "secret": secret}) + "\n")
    elif msg.startswith("stdin"):
        out.write(json.dumps({"answer": "stdin=" + sys.stdin.read()}) + "\n")
    elif msg.startswith("scratch"):
        with open("note.txt", "w") as fh:
            fh.write("left by the agent\n")
        out.write(json.dumps({"answer": "cwd=" + os.getcwd()}) + "\n")
    elif msg == "segv":
        out.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    elif msg.startswith("hang "):
        flag = opts.get("hang-flag") or os.environ.get("CLI_HANG_FLAG") or ""
        if flag and os.path.exists(flag):
            marker = msg.split()[1]
            code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"
            subprocess.Popen([sys.executable, "-c", code, marker])
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(120)
        out.write(json.dumps({"answer": "no hang"}) + "\n")
    elif msg == "argv":
        out.write(json.dumps({"answer": "argv", "argv": argv}) + "\n")
    else:
        out.write(json.dumps({"answer": f"unknown: {msg}"}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
