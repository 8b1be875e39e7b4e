"""The one writer every artifact goes through (docs/runner-contract.md, section "Security").

Two guarantees hold for every byte assay puts on disk, whichever module produced it:

1. **No secret.** Every value registered with `register_secrets()` (the runner registers
   the adapter's resolved `${VAR}` values at pre-flight) is replaced with `<redacted>`
   before bytes reach a file, run.log or stdout. JSON values are redacted structurally
   (`redact_value`: strings, keys, and numbers whose text holds a secret), so a record
   kept in memory equals the file written from it; bytes are scanned once more on the way
   out (`write_bytes`), raw and JSON-escaped forms alike.
2. **No symlink.** `write_bytes` refuses a target that is a symlink (exit 2 naming it) and
   writes atomically (a temp file opened O_EXCL|O_NOFOLLOW, then rename); `read_bytes` and
   `open_append` open with O_NOFOLLOW; `remove_tree` unlinks a link, never its target;
   `find_symlinks` lists the links under a directory (the runner, --resume, --verify,
   gate.py and draft_report.py refuse or report them before touching the tree).

A new artifact file is written with `write_bytes` / `write_text` / `write_json` /
`write_jsonl` (or `core.jsonio`'s atomic writers, which call them): nothing else opens a
file for writing.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from typing import Any, Iterable

from .errors import AssayError
from .indent import indented

REDACTED = "<redacted>"
MIN_SECRET_LEN = 4   # shorter values would redact ordinary text ("1", "yes"); see the contract

_secrets: tuple[str, ...] = ()        # raw values, longest first
_needles: tuple[str, ...] = ()        # raw + JSON-escaped forms (ensure_ascii on and off)
_byte_needles: tuple[bytes, ...] = ()


# ------------------------------------------------------------------------- secrets
def register_secrets(values: Iterable[str]) -> None:
    """Make these values the process's secrets (replaces any earlier set; [] clears)."""
    global _secrets, _needles, _byte_needles
    raw = sorted({v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LEN}, key=len, reverse=True)
    needles: list[str] = []
    for v in raw:
        for form in (v, json.dumps(v, ensure_ascii=False)[1:-1], json.dumps(v)[1:-1]):
            if form not in needles:
                needles.append(form)
    needles.sort(key=len, reverse=True)
    _secrets = tuple(raw)
    _needles = tuple(needles)
    _byte_needles = tuple(n.encode("utf-8") for n in needles)


def has_secrets() -> bool:
    return bool(_secrets)


def contains_secret(text: str) -> bool:
    return any(n in text for n in _needles)


def redact_text(text: Any) -> Any:
    """`text` with every secret (raw or JSON-escaped) replaced by `<redacted>`; non-str unchanged."""
    if not _needles or not isinstance(text, str):
        return text
    for needle in _needles:
        if needle in text:
            text = text.replace(needle, REDACTED)
    return text


def redact_bytes(data: bytes) -> bytes:
    if not _byte_needles:
        return data
    for needle in _byte_needles:
        if needle in data:
            data = data.replace(needle, REDACTED.encode("utf-8"))
    return data


def clip(text: Any, limit: int, *, tail: bool = False, ellipsis: str = "", also: Iterable[Any] = ()) -> str:
    """Redact, THEN cut: `text` (str(text) for a non-str) with every secret gone, at most `limit`
    characters (the last ones with `tail`), `ellipsis` marking a cut. The one way assay shortens
    text that may hold a secret: cutting first would leave a secret's first characters behind,
    which no later redaction can recognise. `also`: values to redact besides the registered
    secrets (a provider config's key at pre-flight, before any is registered)."""
    text = redact_text(text if isinstance(text, str) else str(text))
    for value in sorted((v for v in also if isinstance(v, str) and len(v) >= MIN_SECRET_LEN), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(ellipsis))
    return (ellipsis + text[len(text) - keep:]) if tail else (text[:keep] + ellipsis)


def read_margin() -> int:
    """Bytes to read past a size bound so that a secret straddling it is whole when redacted
    (`clip_bytes`): the longest registered needle, 0 when none."""
    return max((len(n) for n in _byte_needles), default=0)


def clip_bytes(data: bytes, limit: int) -> bytes:
    """Bytes redacted, then cut to `limit` (read `limit + read_margin()` first)."""
    return redact_bytes(data)[:limit]


def redact_value(value: Any) -> Any:
    """A JSON-like value with every secret gone: strings and keys redacted, a number whose text
    holds a secret replaced by the string `<redacted>`. Returns `value` itself when clean."""
    if not _needles:
        return value
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is not None and not contains_secret(text):
        return value
    try:
        return _redact_walk(value)
    except RecursionError:  # deeper than the interpreter can walk: keep nothing of it
        return REDACTED


def _redact_walk(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return REDACTED if contains_secret(repr(value)) else value
    if isinstance(value, dict):
        return {redact_text(k) if isinstance(k, str) else k: _redact_walk(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_walk(v) for v in value]
    return value


# ------------------------------------------------------------------------- symlinks
class SymlinkError(AssayError):
    """A path inside a state or run directory is a symlink: refused, exit 2, naming it."""

    def __init__(self, path: Any, what: str = "") -> None:
        path = os.fspath(path)
        super().__init__(
            f"{path} is a symbolic link{(' (' + what + ')') if what else ''}: assay never reads, writes or "
            "deletes through a symlink inside a state or run directory. Remove the link (put the real "
            "file or directory there) and re-run.", 2, path=path, symlink=True)


def is_symlink(path: Any) -> bool:
    try:
        return os.path.islink(path)
    except (OSError, ValueError):
        return False


def refuse_symlink(path: Any, what: str = "") -> None:
    if is_symlink(path):
        raise SymlinkError(path, what)


def _open_nofollow(path: Any, flags: int, mode: int = 0o644) -> int:
    try:
        return os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SymlinkError(path) from None
        raise


def find_symlinks(root: Any, *, max_depth: int | None = None) -> list[str]:
    """Paths (relative to root, sorted) of every symlink under root, links never followed.
    max_depth 1 looks at root's entries only; None walks the whole tree."""
    root = os.fspath(root)
    found: list[str] = []
    stack: list[tuple[str, int]] = [(root, 1)]
    while stack:
        directory, depth = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                found.append(os.path.relpath(entry.path, root))
            elif entry.is_dir(follow_symlinks=False) and (max_depth is None or depth < max_depth):
                stack.append((entry.path, depth + 1))
    return sorted(found)


def refuse_symlinks_between(path: Any, root: Any, what: str = "") -> None:
    """SymlinkError when `path` or any directory between it and `root` (exclusive) is a symlink.
    `root` is compared resolved; the walk stops there (root itself may sit under a link)."""
    path_abs, root_abs = os.path.abspath(path), os.path.abspath(root)
    if path_abs.startswith(root_abs.rstrip(os.sep) + os.sep):
        # `path` under `root` as written: lstat each entry between them; when none is a link, the walk
        # below ends at `root` with nothing refused (no realpath per level: 30,000 case files read)
        current, clean = path_abs, True
        while current != root_abs:
            if is_symlink(current):
                clean = False
                break
            current = os.path.dirname(current)
        if clean:
            return
    root_real = os.path.realpath(root)
    current = os.path.abspath(path)
    while True:
        if os.path.realpath(current) == root_real:
            return
        if is_symlink(current):
            raise SymlinkError(current, what)
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


def open_file(path: Any, flags: int, mode: int = 0o644) -> int:
    """os.open that never follows a symlink at `path` (SymlinkError instead)."""
    return _open_nofollow(path, flags, mode)


def refuse_symlinks_in(root: Any, *, max_depth: int | None = None, what: str = "") -> None:
    """SymlinkError naming the first symlink at or under root."""
    refuse_symlink(root, what)
    links = find_symlinks(root, max_depth=max_depth)
    if links:
        raise SymlinkError(os.path.join(os.fspath(root), links[0]), what)


# ------------------------------------------------------------------------- reads
def read_bytes(path: Any) -> bytes:
    """The file's bytes; SymlinkError when it is a symlink; OSError as usual otherwise."""
    fd = _open_nofollow(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


# ------------------------------------------------------------------------- writes
def write_bytes(path: Any, data: bytes, *, fresh_dir: bool = False) -> bytes:
    """THE choke point: redact, refuse a symlink target, write atomically. Returns the bytes
    written (hash these, not the input).

    `fresh_dir`: the caller created `path`'s directory itself in this run (`os.mkdir`, which
    never follows a link), so nothing can be at `path` but what it wrote, and the lstat that
    refuses a planted link is skipped (one syscall of five per file; a case writes six). The
    write stays temp + rename, and a rename replaces a link at its target, never follows it."""
    data = redact_bytes(data)
    path = os.fspath(path)
    if not fresh_dir:
        refuse_symlink(path)
    _replace_with(path, (data,))
    return data


def _replace_with(path: str, chunks: Iterable[bytes]) -> None:
    """The chunks (already redacted) written to a temp file beside `path`, renamed over it; the
    temp file removed on any failure. The one temp + rename of this module."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = _open_nofollow(tmp, flags)
    except FileExistsError:  # a leftover of a killed writer (ours: same pid is impossible while alive)
        os.unlink(tmp)
        fd = _open_nofollow(tmp, flags)
    try:
        try:
            for chunk in chunks:
                write_all(fd, chunk, path)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_chunks(path: Any, chunks: Iterable[bytes]) -> str:
    """write_bytes for a file too big to hold: the chunks (each ending at a line boundary, so a
    secret never spans two) redacted one by one, written to the temp file, renamed over `path`.
    Returns the sha256 (hex) of the bytes that landed."""
    import hashlib
    path = os.fspath(path)
    refuse_symlink(path)
    digest = hashlib.sha256()

    def redacted():
        for chunk in chunks:
            chunk = redact_bytes(chunk)
            digest.update(chunk)
            yield chunk
    _replace_with(path, redacted())
    return digest.hexdigest()


def encode(text: str) -> bytes:
    """UTF-8 bytes of text assay writes. A lone surrogate (not text: an app's hostile value that
    slipped past `core.hostile`) is written as its visible escape `\\udXXX`, never a crash."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def write_text(path: Any, text: str) -> bytes:
    return write_bytes(path, encode(redact_text(text)))


# json.dumps(value, indent=i, sort_keys=True, ensure_ascii=False, allow_nan=False) is this encoder's
# encode(value): built once per indent, not on every call (a case writes ~15 JSON texts). An
# encoder keeps no state between calls, so threads share it.
_ENCODERS: dict[int | None, json.JSONEncoder] = {}


def _encoder(indent: int | None) -> json.JSONEncoder:
    enc = _ENCODERS.get(indent)
    if enc is None:
        enc = _ENCODERS[indent] = json.JSONEncoder(indent=indent, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return enc


def dumps(value: Any, *, indent: int | None = 2) -> str:
    """JSON text as assay writes it (sorted keys, UTF-8, no NaN), secrets redacted. Serialized
    once when no secret occurs in it (the common case); re-serialized from the redacted value
    when one does."""
    enc = _encoder(indent)
    text = indented(value, indent) if indent is not None else None   # the encoder's text, sooner (core.indent)
    try:
        text = text if text is not None else enc.encode(value)
    except ValueError:  # NaN or Infinity that slipped past core.hostile: written as text, never a crash
        from .hostile import clean
        value = clean(value)[0]
        text = enc.encode(value)
    if _needles and contains_secret(text):
        text = enc.encode(redact_value(value))
    return text


def write_json(path: Any, value: Any, *, indent: int | None = 2) -> bytes:
    return write_bytes(path, encode(dumps(value, indent=indent) + "\n"))


def write_jsonl(path: Any, rows: list[Any]) -> bytes:
    return write_bytes(path, encode("".join(dumps(r, indent=None) + "\n" for r in rows)))


def open_append(path: Any) -> int:
    """An O_APPEND descriptor that never follows a symlink (run.log, the holdout ledger)."""
    return _open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)


def append_all(fd: int, data: bytes, path: Any = None) -> None:
    """`data` redacted, appended whole to `path`'s O_APPEND `fd` (torn only by a death in this call)."""
    write_all(fd, redact_bytes(data), path)


def write_all(fd: int, data: bytes, path: Any = None) -> None:
    """Every byte to `fd`, a short write continued; an OSError names `path` (a descriptor names no file)."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        exc.filename = exc.filename if exc.filename is not None or path is None else os.fspath(path)
        raise


def truncate(path: Any, size: int) -> None:
    """Cut a file to `size` bytes (a torn journal tail), never through a symlink."""
    fd = _open_nofollow(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)


# ------------------------------------------------------------------------- deletes
def remove_tree(path: Any) -> None:
    """Delete a file or directory tree; a symlink is unlinked, its target never touched."""
    path = os.fspath(path)
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
    else:
        shutil.rmtree(path)
