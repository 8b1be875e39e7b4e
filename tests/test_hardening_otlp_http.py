"""The OTLP/HTTP receiver's memory is bounded and it never prints a traceback (docs/runner-contract.md,
"Security", "Hostile input"): the 64 MiB limit holds for the decompressed body (a gzip bomb is
refused while it is being decompressed), a negative or malformed Content-Length is a 400 without
reading the body, and a client that disconnects before the reply leaves nothing on stderr.

Each probe runs the receiver in a fresh subprocess that measures its own peak memory with
tracemalloc (every bytes object the receiver allocates is counted) and reports it as JSON.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"

PROBE = r"""
import json, socket, struct, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
from assay.traces.otlp_http import OtlpHttpSource
scenario = sys.argv[2]
bomb = open(sys.argv[3], "rb").read() if len(sys.argv) > 3 else b""
src = OtlpHttpSource("127.0.0.1:0", quiescence_ms=10, max_wait_s=1)
host, port = src.address.rsplit(":", 1)
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]

def send(head, body=b"", rst=False):
    s = socket.create_connection((host, int(port)), timeout=20)
    s.sendall(head + body)
    if rst:   # disconnect before the reply: an RST, as a killed exporter does
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        time.sleep(0.3)
        return None
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(65536)
        if not got:
            break
        data += got
    s.close()
    return int(data.split(b" ", 2)[1]) if data else None

def head(length, extra=""):
    return (f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {length}\r\n\r\n").encode()

out = {}
if scenario == "bomb":
    out["status"] = send(head(len(bomb), "Content-Encoding: gzip\r\n"), bomb)
elif scenario == "lengths":
    out["negative"] = send(head(-1), b"{}")
    out["malformed"] = send(head("12abc"), b"{}")
    out["plus"] = send(head("+2"), b"{}")
    out["huge"] = send(head(1 << 40), b"{}")
    out["disconnect"] = send(head(100), b'{"resourceSpans": [', rst=True)
    out["after"] = send(head(20), b'{"resourceSpans":[]}')    # the listener still serves
out["peak_bytes"] = tracemalloc.get_traced_memory()[1] - base
src.close()
print(json.dumps(out))
"""


def _probe(*argv) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, str(SCRIPTS), *map(str, argv)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_a_gzip_bomb_is_refused_while_decompressing(tmp_path):
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"\0" * (256 << 20), compresslevel=9))   # ~256 KiB that inflate to 256 MiB
    assert bomb.stat().st_size < 1 << 20
    out, err = _probe("bomb", bomb)
    assert out["status"] == 413, out
    # the bound is 64 MiB of inflated body; assembling it may hold about twice that
    assert out["peak_bytes"] < 160 << 20, f"peak {out['peak_bytes'] / 2**20:.0f} MiB for a {bomb.stat().st_size}-byte bomb"
    assert "Traceback" not in err, err[-2000:]


def test_bad_lengths_are_400_and_disconnects_are_quiet():
    out, err = _probe("lengths")
    assert out["negative"] == 400 and out["malformed"] == 400 and out["plus"] == 400, out
    assert out["huge"] == 413 and out["after"] == 200, out
    assert out["peak_bytes"] < 16 << 20, out
    assert "Traceback" not in err and err.strip() == "", err[-2000:]


def test_bounded_gunzip_units():
    import pytest
    from assay.traces.otlp_http import TooLarge, content_length, gunzip_bounded
    two = gzip.compress(b'{"resourceSpans": ') + gzip.compress(b"[]}")
    assert gunzip_bounded(two, 1 << 20) == b'{"resourceSpans": []}'
    with pytest.raises(TooLarge):
        gunzip_bounded(gzip.compress(b"x" * 5000), 4999)
    assert gunzip_bounded(gzip.compress(b"x" * 5000), 5000) == b"x" * 5000
    for bad in (b"not gzip", gzip.compress(b"x" * 100)[:-12]):
        with pytest.raises(ValueError):
            gunzip_bounded(bad, 1 << 20)
    assert [content_length(v) for v in (None, "12", " 7 ", "-1", "1e3", "+2", "١٢", "")] == [0, 12, 7, None, None,
                                                                                            None, None, None]
