"""invoke.http_response: the header block read without `email` is the HTTPMessage `email` builds.

The runner records an answer's headers in response.json; reading plain header lines directly must
give exactly what http.client's own parser (email) gives, and every other block must still go to
email. Both are compared on hand-written blocks and on random ones.
"""

from __future__ import annotations

import email.parser
import http.client
import io
import random
import socket
import threading

import pytest

from assay.invoke import http_response
from assay.invoke.http import HttpInvoker


def email_message(block: bytes) -> http.client.HTTPMessage:
    lines = http.client._read_headers(io.BytesIO(block))
    return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(b"".join(lines).decode("iso-8859-1"))


def shape(msg: http.client.HTTPMessage) -> tuple:
    payload = msg.get_payload()
    if isinstance(payload, list):   # a message/* or multipart/* block: email's sub-messages
        payload = [shape(part) for part in payload]
    return (msg.items(), payload, [type(d) for d in msg.defects], msg.get_unixfrom(),
            msg.get_content_type(), msg.get("content-length"), msg.get_all("set-cookie"))


PLAIN = [
    b"Content-Type: application/json\r\nContent-Length: 12\r\n\r\n",
    b"Server: BaseHTTP/0.6 Python/3.11\r\nDate: Wed, 02 Dec 2026 06:35:00 GMT\r\n\r\n",
    b"X-Empty:\r\nX-Spaces:   \t padded value \t \r\n\r\n",
    b"set-cookie: a=1; Path=/\r\nSet-Cookie: b=2\r\nSET-COOKIE: c=3\r\n\r\n",
    b"X-Latin: caf\xe9 \xff\r\nX-Colons: a:b:c\r\n\n",
    b"Content-Type: multipart\r\n\r\n",            # no slash: email reads it as text/plain
    b"Content-Type: text/html; charset=utf-8\r\nRetry-After: 3\r\n\r\n",
    b"\r\n",                                        # no header at all
]

NOT_PLAIN = [
    b"X-Folded: first\r\n  continued\r\n\r\n",       # obs-fold continuation
    b"X-Tab: a\r\n\tb\r\n\r\n",
    b"X-CR: a\rb\r\n\r\n",                          # a bare CR email splits a line on
    b": no name\r\nX-A: 1\r\n\r\n",                  # an empty name (email: a defect)
    b"From nobody\r\nX-A: 1\r\n\r\n",                # a unix From line
    b"Not a header line\r\nX-A: 1\r\n\r\n",
    b"X A: space in name\r\n\r\n",
    b"Content-Type: multipart/mixed; boundary=x\r\n\r\n",
    b"Content-Type:  Message/rfc822\r\n\r\n",
    b"X-A: 1\r\n",                                   # ends without the blank line (EOF)
]


@pytest.mark.parametrize("block", PLAIN)
def test_plain_blocks_are_read_directly_and_equal_email(block):
    lines = http.client._read_headers(io.BytesIO(block))
    fast = http_response.plain_message(lines)
    assert fast is not None
    assert shape(fast) == shape(email_message(block))


@pytest.mark.parametrize("block", NOT_PLAIN)
def test_other_blocks_go_to_email_and_equal_it(block):
    lines = http.client._read_headers(io.BytesIO(block))
    assert http_response.plain_message(lines) is None
    assert shape(http_response.parse_headers(io.BytesIO(block))) == shape(email_message(block))


def test_parse_headers_leaves_the_body_unread():
    fp = io.BytesIO(b"Content-Length: 4\r\n\r\nbody")
    msg = http_response.parse_headers(fp)
    assert msg["content-length"] == "4" and fp.read() == b"body"


def test_random_blocks_equal_email():
    rng = random.Random(20261202)
    alphabet = [b"a", b"Z", b"-", b":", b" ", b"\t", b"\r", b"\xe9", b"(", b"9", b"From ", b"multipart/",
                b"Content-Type", b"message/", b";"]
    checked_fast = 0
    for _ in range(3000):
        lines = []
        for _ in range(rng.randint(0, 5)):
            body = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            lines.append(body.replace(b"\n", b"") + rng.choice([b"\r\n", b"\n"]))
        block = b"".join(lines) + rng.choice([b"\r\n", b"\n", b""])
        if b"\n" not in block.rstrip(b"\r\n") and not lines:
            block = b"\r\n"
        expect = shape(email_message(block))
        got = http_response.parse_headers(io.BytesIO(block))
        assert shape(got) == expect, block
        checked_fast += http_response.plain_message(http.client._read_headers(io.BytesIO(block))) is not None
    assert checked_fast > 300   # the direct path was really exercised, not only the fallback


def _serve_once(raw_response: bytes) -> tuple[int, threading.Thread]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def run():
        conn, _ = srv.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            conn.sendall(raw_response)
        srv.close()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return srv.getsockname()[1], t


@pytest.mark.parametrize("head", [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Note: one\r\nContent-Length: 13\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 13\r\nConnection: close\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\nX-Skip: 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n",
])
def test_the_invoker_reads_a_real_answer_with_it(head):
    port, t = _serve_once(head + b'{"answer": 1}')
    inv = HttpInvoker({"base_url": f"http://127.0.0.1:{port}", "endpoint": "POST /ask", "request_body": "{}"},
                      {}, timeout_s=5, insecure_tls=False)
    out = inv.send({"method": "POST", "url": f"http://127.0.0.1:{port}/ask", "headers": {}, "body": b"{}"})
    t.join(5)
    inv.close()
    assert out.kind == "response" and out.status == 200 and out.body_json == {"answer": 1}
    expected = email_message(head.split(b"\r\n", 1)[1] if not head.startswith(b"HTTP/1.1 100")
                             else head.split(b"\r\n\r\n", 1)[1].split(b"\r\n", 1)[1])
    assert out.headers == {k: v for k, v in expected.items()}

