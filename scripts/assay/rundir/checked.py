"""The completeness check's answer kept beside the run dir, by the digest of what it read.

A full check (`check_run_dir(run_dir)`: what `--verify` runs) is a function of the run dir's bytes
and of this code alone: it reads nothing else. So once a reader has checked a run, its answer is
the answer for those same bytes under this same code, and a later reader that finds both unchanged
may take it instead of reading 100,000 records again. The gate, `--baseline auto`'s candidates,
compare's check of its base and the history do (`check`); the viewer shows a kept answer when one
is there and runs the check itself only on a run dir too small to keep one (`known_or_small`). `run_cases.py --verify` never takes one:
it is the independent re-read, and writes nothing.

The digest: BLAKE2b over every entry's name, size and bytes (sorted by name; the bytes as digests of
16 MiB pieces, hashed on two threads: SHA-256 where the CPU has SHA instructions, `PIECE_HASH`, about
twice BLAKE2b's speed there and half of it elsewhere), this package's source (`code_digest`: every .py, .json and
.yaml under `assay/`) and the Python version. A run
dir that is a link, or holds anything but regular files (an older run's case dirs, a link), is
not kept: it is checked in full each time. The answer is recorded only when no entry of the run
dir changed (inode, size, modification and change times) from before the check to after its digest
was taken (a run still being written is never kept), in
`<reports>/.<run-id>.checked.json` (hidden, like the run's lock; written by the one writer), and
never when that cannot be written (a read-only reports dir: nothing is lost but time). An edited
byte, a file added or removed, a changed line of the check: a different digest, a full check.
Compare's check of its base (`check(apart=True)`) takes the digest of the base, and of the candidate
looked up next, in this process while the check runs in its forked child (the candidate's held for
its next lookup only, and only while its entries have not changed: `held_digest`).
A run dir under KEEP_ABOVE bytes (~250 plain cases) is neither kept nor taken: its check costs less
than the digest of assay's source; `ASSAY_CHECK_KEEP_ABOVE` (bytes) moves that (0: always; tests).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

SUFFIX = ".checked.json"
VERSION = 3   # 3: the pieces' hash named in the digest's header (PIECE_HASH)
PIECE = 16 << 20
KEEP_ABOVE = 1 << 20
_CODE: list[str] = []


def _piece_hash(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The hash of a digest's pieces on this machine: SHA-256 when the CPU computes it in hardware (the
    `sha_ni` flag of x86, `sha2` of Arm, in /proc/cpuinfo), else BLAKE2b (faster in software). Named in
    the digest's header, so a kept answer recorded on another kind of machine is not taken here
    (checked again, and kept with this one)."""
    try:
        with open(cpuinfo, "rb") as f:
            flags = set(f.read(1 << 16).replace(b"\t", b" ").split())
    except OSError:
        return "blake2b"
    return "sha256" if flags & {b"sha_ni", b"sha2"} else "blake2b"


PIECE_HASH = _piece_hash()


def _keep_above() -> int:
    from .parallel import bytes_setting
    return bytes_setting("ASSAY_CHECK_KEEP_ABOVE", KEEP_ABOVE)


def _kept_size(stats: list[tuple] | None) -> bool:
    return stats is not None and sum(entry[2] for entry in stats) >= _keep_above()


def memo_path(run_dir: Path) -> Path:
    return Path(run_dir).parent / f".{Path(run_dir).name}{SUFFIX}"


def code_digest() -> str:
    """BLAKE2b of the assay package's source (every .py, .json and .yaml, by relative path), once a process."""
    if not _CODE:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.blake2b(digest_size=32)
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".json", ".yaml") and p.is_file()
                           and "__pycache__" not in p.parts):
            data = path.read_bytes()
            h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
            h.update(data)
        _CODE.append(h.hexdigest())
    return _CODE[0]


def digest(run_dir: Path) -> str | None:
    """The digest of the run dir's bytes with this code's, or None when it is not kept (see above).
    Each entry is read in PIECE-byte pieces, each hashed on its own on two threads (the hash and the
    read leave the interpreter free: a 100,000-case run's ~500 MB in half the time); the digest is
    over the header, then each entry's name, size and its pieces' digests, in name order."""
    from concurrent.futures import ThreadPoolExecutor
    run_dir = Path(run_dir)
    fds: list[int] = []
    try:
        if run_dir.is_symlink() or not run_dir.is_dir():
            return None
        entries, pieces = [], []
        for name in sorted(os.listdir(run_dir)):
            fd = os.open(run_dir / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            fds.append(fd)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            entries.append((name, st.st_size, fd, len(pieces)))
            pieces.extend((fd, at, min(PIECE, st.st_size - at)) for at in range(0, st.st_size, PIECE))
        with ThreadPoolExecutor(max_workers=2) as pool:
            sums = list(pool.map(_piece, pieces))
        if None in sums:   # written to while read
            return None
        h = hashlib.blake2b(digest_size=32)
        h.update(f"assay-check {VERSION} {PIECE_HASH} {code_digest()} {sys.version}\0".encode())
        for i, (name, size, fd, first) in enumerate(entries):
            if os.fstat(fd).st_size != size:
                return None
            h.update(f"{name}\0{size}\0".encode("utf-8", "surrogateescape"))
            last = entries[i + 1][3] if i + 1 < len(entries) else len(pieces)
            for piece_sum in sums[first:last]:
                h.update(piece_sum)
        return h.hexdigest()
    except OSError:   # a link (O_NOFOLLOW), a dir, a file gone: checked in full
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _piece(piece: tuple[int, int, int]) -> bytes | None:
    """PIECE_HASH of `length` bytes of the open file `fd` from `at`, or None when fewer are there."""
    fd, at, length = piece
    h = hashlib.sha256() if PIECE_HASH == "sha256" else hashlib.blake2b(digest_size=32)
    end = at + length
    while at < end:
        chunk = os.pread(fd, min(1 << 20, end - at), at)
        if not chunk:
            return None
        h.update(chunk)
        at += len(chunk)
    return h.digest()


def known(run_dir: Path) -> list[str] | None:
    """The kept answer (the problems; [] for a clean run) when the run dir and the code are those it
    was recorded for, else None."""
    from ..core.jsonio import read_json
    if not _kept_size(entry_stats(run_dir)):
        return None
    try:
        doc = read_json(memo_path(run_dir))
    except (OSError, ValueError):
        return None
    if not (isinstance(doc, dict) and doc.get("version") == VERSION and isinstance(doc.get("digest"), str)
            and isinstance(doc.get("problems"), list) and all(isinstance(p, str) for p in doc["problems"])):
        return None
    return list(doc["problems"]) if held_digest(run_dir) == doc["digest"] else None


_HELD: dict[tuple, tuple[list, str]] = {}   # (run dir, code) -> (its entry_stats, its digest): `hold`


def hold_digest(run_dir: Path) -> None:
    """Take the run dir's digest now, for its next lookup in this process (`held_digest`): compare's
    candidate, hashed while the base is checked (`_apart`'s `also`)."""
    before = entry_stats(run_dir)
    value = digest(run_dir) if _kept_size(before) else None
    if value is not None and entry_stats(run_dir) == before:
        _HELD[(str(run_dir), code_digest())] = (before, value)


def held_digest(run_dir: Path) -> str | None:
    """digest(run_dir), or the one `hold_digest` took for it when no entry changed since (the same
    entry_stats by which a kept answer is recorded: `check`); a held digest is used once, so it
    stands for the bytes only across the work it was taken beside."""
    held = _HELD.pop((str(run_dir), code_digest()), None)
    if held is not None and held[0] == entry_stats(run_dir):
        return held[1]
    return digest(run_dir)


def known_or_small(run_dir: Path) -> list[str] | None:
    """The viewer's answer: `known`, or for a run dir under the keep size (never kept) the check
    itself, which costs less there than the digest a kept answer needs. A small run's page so shows
    what gate.py says, never "open" beside a gate that closes on a missing record. Raises what
    check_run_dir raises."""
    from .completeness import check_run_dir
    run_dir = Path(run_dir)
    stats = entry_stats(run_dir) if not run_dir.is_symlink() else None
    if stats is not None and not _kept_size(stats):
        return list(check_run_dir(run_dir)[0])
    return known(run_dir)


def check(run_dir: Path, *, apart: bool = False, also: tuple[Path, ...] = ()) -> list[str]:
    """`check_run_dir(run_dir)[0]`, taken from the kept answer when it holds, else computed and kept.
    Raises what check_run_dir raises (RunDirError for something that is not a run dir). `apart`
    (compare's check of its base): a full check of a kept-size run runs in a forked child when it
    can (core.forked), so what it allocated is not left in this process's heap for the work after
    it (at 100,000 cases the comparison then stays under the 250 MB bar); a child that fails is
    made up here, the same answer. `also`: run dirs whose digest this process takes meanwhile (compare's
    candidate, whose kept answer is looked up next: `hold_digest`)."""
    from .completeness import check_run_dir
    run_dir = Path(run_dir)
    before = entry_stats(run_dir) if not run_dir.is_symlink() else None
    if not _kept_size(before):
        return list(check_run_dir(run_dir)[0])
    kept = known(run_dir)
    if kept is not None:
        return kept
    problems, value = _apart(run_dir, also) if apart else (None, None)
    if problems is None:
        problems = list(check_run_dir(run_dir)[0])
        value = held_digest(run_dir)
    if value is not None and entry_stats(run_dir) == before:
        _record(run_dir, value, problems)
    return problems


def _apart(run_dir: Path, also: tuple[Path, ...] = ()) -> tuple[list[str] | None, str | None]:
    """(check_run_dir's problems computed in a forked child, or None: no fork here, or the child
    failed; the run dir's digest, taken by this process while the child checks: the cores the check
    leaves idle at its ends hash the bytes, and `check` keeps the answer only when no entry changed
    from before the fork to after both)."""
    from ..core.forked import Child, fork_safe
    from .completeness import check_run_dir
    if not fork_safe():
        return None, None
    child = Child(lambda: list(check_run_dir(run_dir)[0]))   # forked before this process starts a thread
    value = held_digest(run_dir)   # (a digest held for this run dir is used, once, here or by its lookup)
    for other in also:
        hold_digest(other)
    answer = child.result()
    if isinstance(answer, list) and all(isinstance(p, str) for p in answer):
        return answer, value
    return None, None


def entry_stats(run_dir: Path) -> list[tuple] | None:
    """Each entry's (name, inode, size, mtime_ns, ctime_ns): a file written during the check changes it
    (the viewer keys its gate decisions by it too: an edited run dir is decided again)."""
    try:
        out = []
        for entry in os.scandir(run_dir):
            st = entry.stat(follow_symlinks=False)
            out.append((entry.name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        return sorted(out)
    except OSError:
        return None


def _record(run_dir: Path, value: str, problems: list[str]) -> None:
    from ..core import writer
    try:
        writer.write_json(memo_path(run_dir), {"version": VERSION, "digest": value, "problems": problems,
                                               "run_id": run_dir.name})
    except Exception:   # noqa: BLE001 -- a read-only reports dir, a full disk: the answer stands, unkept
        pass
