"""A run dir's finished cases, whichever layout wrote them (runner contract §5.7, §5.8).

**The case journal** (this build): `<run>/cases.jsonl`, one line per finished case, appended
whole by the runner (one `write` under a lock), in the order cases finished:

    {"case_id": "<id>", "verdict": {...the verdict record...}, "files": {"<rel path>": "<text>", ...}}\\n

`files` holds the case's other artifacts (the names of the required-artifact table, relative
to the case: `request.json`, `turns/2/answer.txt`, `repeats/1/verdict.json`, ...), each as the
exact text of that artifact, so `artifact_sha256` is over `files[name].encode("utf-8")`. The
line is the commit: a case is finished when its line ends in a newline. Bytes after the last
newline are a torn write (a kill mid-append) and are never read as a case; --resume cuts them.
The key order is fixed (case_id, verdict, files) so a reader takes the id and the verdict of a
line without parsing its payloads.

**Older run dirs** (`cases/<id>/<file>` with `verdict.json` written last) are read the same way
through this module: `CaseStore.layout` is "journal", "dirs" or "none".

Readers go through `open_store(run_dir)`; nothing else knows either layout.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from . import jsonio, writer
from .lines import iter_lines

JOURNAL = "cases.jsonl"
LEGACY_DIR = "cases"
VERDICT = "verdict.json"
_HEAD = b'{"case_id": '
_VERDICT_KEY = ', "verdict": '
_FILES_KEY = ', "files": '
_HEAD_BYTES = 512                 # head_of: the bytes decoded to read a line's case id
LEN_BITS = _LEN_BITS = 40         # an index entry: offset << 40 | line length (a line < 1 TiB; rundir.parallel)
_LEN_MASK = (1 << _LEN_BITS) - 1
_decoder = json.JSONDecoder()


# ------------------------------------------------------------------------- writing
def record_line(case_id: str, verdict: Mapping[str, Any], files: Mapping[str, bytes]) -> bytes:
    """One journal line: the case's verdict and every other artifact, redacted (core.writer).
    `files` are the artifacts' bytes, already redacted (their sha256 is in the verdict)."""
    texts = {name: data.decode("utf-8", "backslashreplace") for name, data in files.items()}
    text = (_HEAD.decode() + writer.dumps(case_id, indent=None) + _VERDICT_KEY + writer.dumps(verdict, indent=None)
            + _FILES_KEY + writer.dumps(texts, indent=None) + "}\n")
    return writer.redact_bytes(writer.encode(text))


class Journal:
    """The runner's append handle on cases.jsonl: one whole line per `append`, from any thread."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / JOURNAL
        self._fd = writer.open_append(self.path)
        self._lock = threading.Lock()
        self.appended = 0

    def append(self, line: bytes) -> None:
        with self._lock:
            writer.append_all(self._fd, line, self.path)
            self.appended += 1

    def sync(self) -> None:
        """fsync: called at each batched refresh of the derived files and at the end of the run."""
        with self._lock:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1


# ------------------------------------------------------------------------- reading
@dataclass
class CaseRecord:
    """One finished case: its verdict record and its other artifacts (name -> bytes)."""
    case_id: str
    verdict: dict
    files: dict[str, bytes]

    def names(self) -> set[str]:
        return set(self.files) | {VERDICT}

    def read(self, name: str) -> bytes | None:
        if name == VERDICT:
            return writer.encode(writer.dumps(self.verdict, indent=None) + "\n")
        return self.files.get(name)


def _line_doc(line: bytes) -> dict | None:
    """A committed journal line's document (case_id, verdict, files as text), or None."""
    try:
        doc = jsonio.plain_loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("case_id"), str) or not isinstance(doc.get("verdict"), dict) \
            or not isinstance(doc.get("files"), dict) or not all(isinstance(v, str) for v in doc["files"].values()):
        return None
    return doc


def parse_line(line: bytes) -> CaseRecord | None:
    """A committed journal line as a CaseRecord, or None when it is not one."""
    doc = _line_doc(line)
    return None if doc is None else CaseRecord(doc["case_id"], doc["verdict"],
                                                {k: writer.encode(v) for k, v in doc["files"].items()})


class _TextRecord(CaseRecord):
    """A CaseRecord whose files stay the text the journal holds until one is read (a reader that
    wants a case's answer or trajectory, not the bytes of every artifact)."""

    def read(self, name: str) -> bytes | None:
        if name == VERDICT:
            return super().read(name)
        text = self.files.get(name)
        return writer.encode(text) if text is not None else None


def parse_text_line(line: bytes) -> CaseRecord | None:
    """`parse_line`, each artifact encoded only when read (`_TextRecord`)."""
    doc = _line_doc(line)
    return None if doc is None else _TextRecord(doc["case_id"], doc["verdict"], doc["files"])


def head_of(line: bytes, *, verdict: bool = False) -> tuple[str | None, dict | None]:
    """(case id, verdict record when asked) of a journal line, without parsing its files."""
    if not line.startswith(_HEAD):
        return None, None
    # the id alone: from the line's head (an id closed within it decodes exactly as in the whole
    # line: UTF-8 cut after the closing quote leaves every character before it whole)
    cut = len(line) > _HEAD_BYTES
    text = (line[:_HEAD_BYTES] if cut else line).decode("utf-8", "replace")
    try:
        cid, end = _decoder.raw_decode(text, len(_HEAD))
    except (ValueError, RecursionError):
        if not cut:
            return None, None
        cut, text = False, line.decode("utf-8", "replace")   # an id longer than the head: the whole line
        try:
            cid, end = _decoder.raw_decode(text, len(_HEAD))
        except (ValueError, RecursionError):
            return None, None
    if not isinstance(cid, str) or not verdict:
        return (cid, None) if isinstance(cid, str) else (None, None)
    start = end + len(_VERDICT_KEY)
    # the faster decoder (jsonio.bulk) on the verdict's bytes, `start` (ASCII before it: a byte offset) to the
    # last `, "files": {`: when that is one whole object, raw_decode from `start` ends there: the same value
    at = line.rfind(_FILES_AT)
    rec = jsonio.fast_decode(line[start:at]) if (
        start < at and text[:start].isascii() and line.startswith(b"{", start)
        and line.startswith(_VERDICT_KEY_B, end)) else jsonio.MISSING
    if rec is jsonio.MISSING:
        if cut:
            text = line.decode("utf-8", "replace")
        if not text.startswith(_VERDICT_KEY, end):
            return cid, None
        try:
            rec, _ = _decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            return cid, None
    return cid, rec if isinstance(rec, dict) else None


_FILES_AT, _VERDICT_KEY_B = _FILES_KEY.encode() + b"{", _VERDICT_KEY.encode()


@dataclass
class CaseStore:
    """The finished cases of one run dir (see the module docstring)."""
    run_dir: Path
    layout: str = "none"
    # journal: case id -> its first committed line, packed `offset << 40 | length` (one int a
    # case, not a tuple of two: the index of a 100,000-case journal stays ~9 MB)
    index: dict[str, int] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)   # ids with a second committed line
    garbled: list[int] = field(default_factory=list)       # 1-based line numbers that are no case record
    torn: int = 0                                          # bytes after the last newline
    size: int = 0                                          # bytes up to the last newline

    def ids(self) -> list[str]:
        """Finished case ids: journal order, or sorted case dir names (those holding verdict.json)."""
        if self.layout == "journal":
            return list(self.index)
        if self.layout == "dirs":
            base = self.run_dir / LEGACY_DIR
            return sorted(e.name for e in os.scandir(base)
                          if e.is_dir(follow_symlinks=False) and os.path.isfile(os.path.join(e.path, VERDICT))
                          and not os.path.islink(os.path.join(e.path, VERDICT)))
        return []

    def has(self, case_id: str) -> bool:
        if self.layout == "journal":
            return case_id in self.index
        return self.layout == "dirs" and _safe(case_id) and (self.run_dir / LEGACY_DIR / case_id / VERDICT).is_file()

    def offset_of(self, case_id: str | None) -> int | None:
        """The journal offset of the case's first committed line (the one that counts), or None."""
        at = self.index.get(case_id) if case_id is not None else None
        return None if at is None else at >> _LEN_BITS

    def line(self, case_id: str, fd: int | None = None) -> bytes | None:
        """The case's committed journal line; `fd`: the journal already open (a reader of many cases)."""
        at = self.index.get(case_id)
        if at is None:
            return None
        if fd is not None:
            return os.pread(fd, at & _LEN_MASK, at >> _LEN_BITS)
        fd = writer.open_file(self.run_dir / JOURNAL, os.O_RDONLY)
        try:
            return os.pread(fd, at & _LEN_MASK, at >> _LEN_BITS)
        finally:
            os.close(fd)

    def load(self, case_id: str) -> CaseRecord | None:
        """The whole case (journal), or its verdict with files read lazily (case dirs)."""
        if self.layout == "journal":
            raw = self.line(case_id)
            rec = parse_line(raw) if raw is not None else None
            return rec if rec is not None and rec.case_id == case_id else None
        if self.layout == "dirs" and _safe(case_id):
            doc = _json(self.run_dir / LEGACY_DIR / case_id / VERDICT)
            return _DirRecord(case_id, doc, {}, self.run_dir / LEGACY_DIR / case_id) if isinstance(doc, dict) else None
        return None

    def verdict(self, case_id: str) -> dict | None:
        if self.layout == "journal":
            raw = self.line(case_id)
            cid, rec = head_of(raw, verdict=True) if raw is not None else (None, None)
            return rec if cid == case_id else None
        rec = self.load(case_id)
        return rec.verdict if rec is not None else None

    def read(self, case_id: str, name: str) -> bytes | None:
        """One artifact's bytes (`verdict.json`, `request.json`, `turns/1/answer.txt`...), or None."""
        if self.layout == "dirs":
            return _read_under(self.run_dir / LEGACY_DIR / case_id, name) if _safe(case_id) else None
        rec = self.load(case_id)
        return rec.read(name) if rec is not None else None

    def verdicts(self) -> Iterator[tuple[str, dict]]:
        """(case id, verdict record) of every finished case, streamed (payloads never parsed)."""
        if self.layout == "journal":
            for offset, line in iter_lines(self.run_dir / JOURNAL):
                cid, rec = head_of(line, verdict=True)
                if cid is not None and rec is not None and self.offset_of(cid) == offset:
                    yield cid, rec
        else:
            for cid in self.ids():
                rec = self.verdict(cid)
                if rec is not None:
                    yield cid, rec

    def records(self) -> Iterator[CaseRecord]:
        """Every finished case, streamed (journal: one line in memory at a time)."""
        if self.layout == "journal":
            for offset, line in iter_lines(self.run_dir / JOURNAL):
                rec = parse_line(line)
                if rec is not None and self.offset_of(rec.case_id) == offset:
                    yield rec
        else:
            for cid in self.ids():
                rec = self.load(cid)
                if rec is not None:
                    yield rec

    def where(self, case_id: str, name: str = VERDICT) -> str:
        """Where one artifact of a case lives, for a message naming it (either layout)."""
        if self.layout == "dirs":
            return str(self.run_dir / LEGACY_DIR / case_id / name)
        return f"{self.run_dir / JOURNAL} (case {case_id}: {name})"

    def holds(self, case_id: str, name: str) -> bool:
        """Whether a finished case has this artifact (an older run's case dir is only listed)."""
        rec = self.load(case_id)
        return rec is not None and name in rec.names()

    def file_count(self) -> int:
        """Files in the run dir (the bench and `--verify` report it): top level plus any case dirs."""
        total = 0
        for _root, _dirs, files in os.walk(self.run_dir):
            total += len(files)
        return total


class _DirRecord(CaseRecord):
    """A case dir of an older run: files read on demand."""

    def __init__(self, case_id: str, verdict: dict, files: dict, cdir: Path) -> None:
        super().__init__(case_id, verdict, files)
        self.cdir = cdir

    def names(self) -> set[str]:
        out: set[str] = set()
        for root, _dirs, files in os.walk(self.cdir):   # never into a linked dir
            rel = os.path.relpath(root, self.cdir)
            out.update(f if rel == "." else f"{rel}/{f}" for f in files if not os.path.islink(os.path.join(root, f)))
        return out

    def read(self, name: str) -> bytes | None:
        return _read_under(self.cdir, name)


def dir_record(cdir: Path, verdict: dict | None = None) -> CaseRecord:
    """An older run's case dir as a CaseRecord (files read on demand)."""
    cdir = Path(cdir)
    if verdict is None:
        verdict = _json(cdir / VERDICT)
    return _DirRecord(cdir.name, verdict if isinstance(verdict, dict) else {}, {}, cdir)


def has_journal(run_dir: Any) -> bool:
    """Whether the run dir's cases are a journal (else case dirs or none), without reading it."""
    path = Path(run_dir) / JOURNAL
    return path.is_file() and not path.is_symlink()


def scan(run_dir: Path) -> CaseStore:
    run_dir = Path(run_dir)
    path = run_dir / JOURNAL
    if not has_journal(run_dir):
        legacy = run_dir / LEGACY_DIR
        return CaseStore(run_dir, "dirs" if legacy.is_dir() and not legacy.is_symlink() else "none")
    store = CaseStore(run_dir, "journal")
    end = 0
    for n, (offset, line) in enumerate(iter_lines(path), start=1):
        cid, _ = head_of(line)
        end = offset + len(line)
        if cid is None:
            store.garbled.append(n)
        elif cid in store.index:
            store.duplicates.append(cid)
        else:
            store.index[cid] = offset << _LEN_BITS | len(line)
    store.size = end
    jsonio.bulk(end)   # a big journal: its records decoded by the faster decoder when installed
    try:
        store.torn = max(0, os.stat(path).st_size - end)
    except OSError:
        store.torn = 0
    return store


_cache: dict[str, tuple[tuple, CaseStore]] = {}
_cache_lock = threading.Lock()


def open_store(run_dir: Any) -> CaseStore:
    """The run dir's case store, its journal index cached while the journal is unchanged (the
    viewer and the report read many cases of one run)."""
    run_dir = Path(run_dir)
    path = run_dir / JOURNAL
    try:
        st = os.stat(path, follow_symlinks=False)
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        return scan(run_dir)
    name = os.path.abspath(run_dir)
    with _cache_lock:
        hit = _cache.get(name)
        if hit is not None and hit[0] == key:
            return hit[1]
    store = scan(run_dir)
    with _cache_lock:
        if len(_cache) > 32:
            _cache.clear()
        _cache[name] = (key, store)
    return store


def _read_under(cdir: Path, name: str) -> bytes | None:
    """An older run's case file, never through a symlink (at it or any dir between)."""
    if not all(_safe(p) for p in name.split("/")):
        return None
    path = cdir / name
    try:
        writer.refuse_symlinks_between(path, cdir.parent)
        return writer.read_bytes(path)
    except (OSError, writer.SymlinkError):
        return None


def _safe(part: str) -> bool:
    return bool(part) and part not in (".", "..") and "/" not in part and "\\" not in part and "\x00" not in part


def _json(path: Path) -> Any:
    try:
        return json.loads(writer.read_bytes(path))
    except (OSError, ValueError, UnicodeDecodeError, writer.SymlinkError, RecursionError):
        return None
