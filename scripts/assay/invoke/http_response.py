"""The http invoker's response class: http.client's own, with the header block read without the
`email` package when it is plain `Name: value` lines (what apps send).

`http.client.parse_headers` hands every response's header block to `email.parser`, a general MIME
parser (a feed parser, a policy object per header, a content-type probe for multipart bodies):
~35 us of CPU a response, on the runner's one busy process. A block of plain lines (a token name,
a colon, a value on one line ending in CRLF or LF, no folded continuation, no bare CR, no
multipart/message content type) is turned into the same `HTTPMessage` directly: for such a block
`email` stores exactly `(name, value.lstrip(" \\t").rstrip("\\r\\n"))` per line, in order, with an
empty payload and no defect. Any other block goes through the `email` parser as before, so the
headers the runner records are the same either way (tests/test_http_response.py compares both).
"""

from __future__ import annotations

import email.parser
import http.client
import re

# A header line email's feed parser reads as `name: value`: a non-empty name of printable ASCII
# without ':' (its headerRE, less the empty name it reports as a defect), then the colon.
_PLAIN = re.compile(rb"[\x21-\x39\x3b-\x7e]+:[^\r\n]*\r?\n\Z")
_READ_HEADERS = getattr(http.client, "_read_headers", None)


def plain_message(lines: list[bytes]) -> http.client.HTTPMessage | None:
    """The HTTPMessage of a header block (its lines, the blank last one included) when every line is
    plain, else None (the caller parses it with email)."""
    if not lines or lines[-1] not in (b"\r\n", b"\n"):
        return None
    msg = http.client.HTTPMessage()
    for line in lines[:-1]:
        if _PLAIN.match(line) is None:
            return None
        text = line.decode("iso-8859-1")
        i = text.index(":")
        name = text[:i]
        value = text[i + 1:].lstrip(" \t").rstrip("\r\n")
        if name.lower() == "content-type" and value.lstrip(" \t").lower().startswith(("multipart/", "message/")):
            return None   # email parses such a body as parts (with defects): leave it to email
        msg.set_raw(name, value)
    msg.set_payload("")
    return msg


def parse_headers(fp) -> http.client.HTTPMessage:
    """http.client.parse_headers, same result, the plain case without email."""
    if _READ_HEADERS is None:   # not this interpreter's http.client: its own parser
        return http.client.parse_headers(fp)
    lines = _READ_HEADERS(fp)
    msg = plain_message(lines)
    if msg is None:
        msg = email.parser.Parser(_class=http.client.HTTPMessage).parsestr(b"".join(lines).decode("iso-8859-1"))
    return msg


class _Response(http.client.HTTPResponse):
    """http.client.HTTPResponse whose `begin` reads the header block with `parse_headers` above."""

    def begin(self):  # http.client.HTTPResponse.begin (3.11-3.13), its one parse_headers call swapped
        if self.headers is not None:
            return
        while True:   # read until a non-100 response
            version, status, reason = self._read_status()
            if status != http.client.CONTINUE:
                break
            _READ_HEADERS(self.fp)   # the 100 response's header block, skipped
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10   # some servers still answer "0.9": read as 1.0
        elif version.startswith("HTTP/1."):
            self.version = 11   # HTTP/1.x, x >= 1
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = parse_headers(self.fp)
        tr_enc = self.headers.get("transfer-encoding")
        if tr_enc and tr_enc.lower() == "chunked":
            self.chunked = True
            self.chunk_left = None
        else:
            self.chunked = False
        self.will_close = self._check_close()
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:   # RFC 2616 4.4: a chunked body ignores Content-Length
            try:
                self.length = int(length)
            except ValueError:
                self.length = None
            else:
                if self.length < 0:   # a negative length is nonsense: ignored
                    self.length = None
        if (status == http.client.NO_CONTENT or status == http.client.NOT_MODIFIED or 100 <= status < 200
                or self._method == "HEAD"):
            self.length = 0
        # a response that neither closes nor says its length or chunks: read to EOF, then close
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True


def read_body(resp: http.client.HTTPResponse, amt: int) -> bytes:
    """`resp.read(amt)`, except that a body the connection closed on before its Content-Length arrived
    raises `http.client.IncompleteRead` (a dropped connection). http.client's `read(amt)` returns such
    a short body as if it were whole, so half an answer was scored as the app's answer: a
    `must_not_contain` over the lost half passed. Used by every HTTP reader (the app's, the judge's)."""
    raw = resp.read(amt)
    left = resp.length   # bytes the Content-Length still promises (None: chunked or read to EOF)
    if left and len(raw) < amt:
        raise http.client.IncompleteRead(raw, left)
    return raw


# The invoker's connections answer with this class (http.client's own where it has no _read_headers).
RESPONSE_CLASS = _Response if _READ_HEADERS is not None else http.client.HTTPResponse
