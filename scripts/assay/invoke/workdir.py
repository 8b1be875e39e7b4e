"""An agent case's workdir: the fresh copy of the fixture it runs in, and what is measured there
after the agent (`expect.files`, `expect.check`, the diff against the fixture).

Measurement only: the facts go on the attempt's outcome and `assay.score.agent` decides the
verdicts from them. Nothing here follows a symlink out of the workdir: a path is read only when
it resolves inside it.
"""

from __future__ import annotations

import errno
import fnmatch
import re
import os
import shlex
import shutil
import stat
import time
from pathlib import Path
from typing import Any, Mapping

from ..core import writer

DIFF_CAP = 2000                 # changed paths listed at most
PATCH_LINES = 3000              # unified-diff lines kept over all changed files (the viewer shows them)
PATCH_FILE_LINES = 800          # ... and per file
PATCH_READ_CAP = 512 * 1024     # a larger file is listed, not diffed
PATCH_STATUS = (("modified", "modified"), ("added", "added"), ("removed", "deleted"))   # the patch's order
CHECK_OUTPUT_CAP = 8000         # characters of the check's output kept (its tail)
CHECK_TIMEOUT_S = 300.0
SKIP_DIRS = (".git",)


def copy_fixture(source: Path, dest: Path) -> int | None:
    """A fresh copy of the fixture: directories, regular files with their mode and mtime, symlinks
    copied as links (never followed out of it); anything else (a FIFO, a device) is an OSError
    naming it. Returns a ctime after every copied file's and before any later change's (_after_now):
    a copied file whose ctime is still before it was not touched since (see diff).

    File by file on descriptors (open, sendfile, futimens): about a third of shutil.copytree's
    time, which stats, copies permission bits, times and extended attributes path by path
    (bench/agent_overhead.py); extended attributes are not copied."""
    src_root, dst_root = str(source), str(dest)
    os.mkdir(dst_root)
    dirs = [(src_root, dst_root)]
    made = []
    while dirs:
        src, dst = dirs.pop()
        made.append((src, dst))
        with os.scandir(src) as it:
            entries = list(it)
        for e in entries:
            target = f"{dst}/{e.name}"
            if e.is_symlink():
                os.symlink(os.readlink(e.path), target)
            elif e.is_dir(follow_symlinks=False):
                os.mkdir(target)
                dirs.append((e.path, target))
            elif e.is_file(follow_symlinks=False):
                _copy_file(e.path, target)
            else:
                raise OSError(f"{e.path}: not a regular file, directory or symlink (the fixture cannot hold it)")
    for src, dst in reversed(made):   # a directory's own mode and times last (it may be read-only)
        st = os.stat(src)
        os.chmod(dst, stat.S_IMODE(st.st_mode))
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
    return _after_now(dest.parent / f".{dest.name}.copied")


def _after_now(stamp: Path) -> int | None:
    """A ctime strictly after every ctime the kernel gave so far: a file made and then touched until
    its ctime moves (at once where timestamps are fine-grained or multigrain; else the next clock
    tick, a few ms). None if it never moves within a second (no shortcut: every file is read)."""
    fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        first = os.fstat(fd).st_ctime_ns
        deadline = time.monotonic() + 1.0
        while True:
            os.utime(fd)
            now = os.fstat(fd).st_ctime_ns
            if now > first:
                return now
            if time.monotonic() > deadline:
                return None
            time.sleep(0.0005)
    finally:
        os.close(fd)
        os.unlink(stamp)


def _copy_file(src: str, dst: str) -> None:
    fi = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        st = os.fstat(fi)
        fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            left = st.st_size
            try:
                while left > 0:
                    n = os.sendfile(fo, fi, None, min(left, 1 << 30))
                    if n == 0:
                        break
                    left -= n
            except OSError as exc:   # a filesystem pair sendfile cannot serve: read and write
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise
                os.lseek(fi, 0, os.SEEK_SET)
                os.lseek(fo, 0, os.SEEK_SET)
                os.ftruncate(fo, 0)
                while chunk := os.read(fi, 1 << 20):
                    os.write(fo, chunk)
            os.fchmod(fo, stat.S_IMODE(st.st_mode))   # exactly the fixture's bits (the umask not applied)
            os.utime(fo, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(fo)
    finally:
        os.close(fi)


def tree(root: Path) -> dict[str, os.stat_result]:
    """Every entry that is not a directory (files, symlinks), by its path relative to `root`
    (`/`-separated, `.git` left out), with its lstat: one scandir a directory, one lstat a file."""
    out: dict[str, os.stat_result] = {}
    stack = [("", str(root))]
    while stack:
        rel, path = stack.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for e in entries:
            name = f"{rel}/{e.name}" if rel else e.name
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.name not in SKIP_DIRS:
                        stack.append((name, e.path))
                else:
                    out[name] = e.stat(follow_symlinks=False)
            except OSError:
                continue
    return out


def _same(a: str, b: str, sa: os.stat_result, sb: os.stat_result, copied_ns: int | None) -> bool:
    """Whether work file `b` still holds fixture file `a`. Without reading it when the stat says so:
    the same size and mtime (the copy kept the fixture's) and a ctime before the copy was done (any
    write, rename, chmod or utime since moves a file's ctime to the kernel's clock, which no process
    can set back, short of setting the system clock back in between); else byte by byte."""
    try:
        if stat.S_ISLNK(sa.st_mode) or stat.S_ISLNK(sb.st_mode):
            return stat.S_ISLNK(sa.st_mode) and stat.S_ISLNK(sb.st_mode) and os.readlink(a) == os.readlink(b)
        if sa.st_size != sb.st_size:
            return False
        if copied_ns is not None and sb.st_ctime_ns < copied_ns and sa.st_mtime_ns == sb.st_mtime_ns:
            return True
        with open(a, "rb") as fa, open(b, "rb") as fb:
            while True:
                ca, cb = fa.read(1 << 16), fb.read(1 << 16)
                if ca != cb:
                    return False
                if not ca:
                    return True
    except OSError:
        return False


def stamp(fixture: Path) -> dict[str, tuple]:
    """The fixture's files as their (mode, size, mtime, ctime), `.git` left out: taken before its
    first copy in a run, compared with `changed_since` after every attempt."""
    return _stamp_of(tree(fixture))


def _stamp_of(listing: Mapping[str, os.stat_result]) -> dict[str, tuple]:
    return {p: (s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for p, s in listing.items()}


def changed_since(before: Mapping[str, tuple], listing: Mapping[str, os.stat_result]) -> list[str]:
    """The fixture's paths added, removed or written since `before` (its stamp): a write anywhere
    moves a file's ctime, which no process can set back. The workdir's diff is taken against the
    fixture as it is now, so a fixture changed during the run makes that diff no evidence."""
    now = _stamp_of(listing)
    return sorted(p for p in before.keys() | now.keys() if before.get(p) != now.get(p))


def diff(fixture: Path, work: Path, copied_ns: int | None = None,
         fixture_tree: Mapping[str, os.stat_result] | None = None) -> dict[str, list[str]]:
    """{added, removed, modified}: paths relative to the workdir (`.git` left out), sorted, capped.
    `copied_ns`: what copy_fixture returned for this workdir (None: every common file is read);
    `fixture_tree`: the fixture's `tree`, when the caller has just listed it."""
    return _capped(_changes(fixture, work, copied_ns, fixture_tree))


def _changes(fixture: Path, work: Path, copied_ns: int | None,
             fixture_tree: Mapping[str, os.stat_result] | None) -> dict[str, list[str]]:
    """{added, removed, modified}, every path (not capped: what `expect.files.unchanged` is judged on)."""
    before, after = (fixture_tree if fixture_tree is not None else tree(fixture)), tree(work)
    fx, wk = str(fixture), str(work)
    return {"added": sorted(after.keys() - before.keys()), "removed": sorted(before.keys() - after.keys()),
            "modified": sorted(p for p in before.keys() & after.keys()
                               if not _same(f"{fx}/{p}", f"{wk}/{p}", before[p], after[p], copied_ns))}


def _capped(full: Mapping[str, list[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {key: list(full[key][:DIFF_CAP]) for key in ("added", "removed", "modified")}
    if max(len(full[key]) for key in ("added", "removed", "modified")) > DIFF_CAP:
        out["truncated"] = True
    return out


def measure(fixture: Path, work: Path, files: Mapping[str, Any] | None, check: Mapping[str, Any] | None,
            env: Mapping[str, str], registry: Any = None, copied_ns: int | None = None,
            fixture_tree: Mapping[str, os.stat_result] | None = None) -> dict:
    """Everything measured in a workdir after its agent (the facts of workdir.json): the changed
    paths, their unified diff, what `expect.files` asks, and `expect.check` run there."""
    full = _changes(fixture, work, copied_ns, fixture_tree)
    changes = _capped(full)
    out: dict[str, Any] = {"diff": changes, "patch": patch(fixture, work, changes)}
    if files:   # judged on every change: a protected file past the listing's cap is still a change
        out["files"] = measure_files(files, fixture, work, full)
    if check:
        out["check"] = run_check(check, work, env, registry)
    return out


def _text(path: Path) -> tuple[list[str] | None, str | None]:
    """(the file's lines, None) or (None, why it is not diffed: a symlink, binary, too large)."""
    try:
        if path.is_symlink():
            return None, f"a symlink to {os.readlink(path)}"
        if path.stat().st_size > PATCH_READ_CAP:
            return None, f"larger than {PATCH_READ_CAP // 1024} KB: not diffed"
        data = path.read_bytes()
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    if b"\0" in data:
        return None, "binary"
    try:
        return data.decode("utf-8").splitlines(), None
    except UnicodeDecodeError:
        return None, "binary (not UTF-8)"


def patch(fixture: Path, work: Path, changes: Mapping[str, Any]) -> dict:
    """The workdir's changes as a unified diff, file by file (modified, added, then deleted files,
    each in path order: what was edited first, where the budget goes): {files: [{path, status
    (added|modified|deleted), added, removed, diff (the hunks, without the ---/+++ header) or None,
    note}], clipped}. Lines beyond PATCH_FILE_LINES per file or PATCH_LINES in all are cut (`note`
    and `clipped` say so); a binary, symlinked or large file is listed with its note, not diffed."""
    import difflib
    rows = [(rel, status) for key, status in PATCH_STATUS for rel in sorted(changes.get(key) or [])]
    budget, files, clipped = PATCH_LINES, [], bool(changes.get("truncated"))
    for rel, status in rows:
        row: dict[str, Any] = {"path": rel, "status": status, "added": 0, "removed": 0, "diff": None, "note": None}
        files.append(row)
        before, why_a = ([], None) if status == "added" else _text(fixture / rel)
        after, why_b = ([], None) if status == "deleted" else _text(work / rel)
        if before is None or after is None:
            row["note"] = why_b or why_a
            continue
        lines = list(difflib.unified_diff(before, after, lineterm="", n=3))[2:]
        row["added"] = sum(1 for x in lines if x.startswith("+"))
        row["removed"] = sum(1 for x in lines if x.startswith("-"))
        keep = max(0, min(PATCH_FILE_LINES, budget))
        if len(lines) > keep:
            row["note"] = f"{len(lines) - keep} more diff line(s) not kept"
            lines, clipped = lines[:keep], True
        budget -= len(lines)
        row["diff"] = "\n".join(lines)
    return {"files": files, "clipped": clipped}


def _inside(work: Path, rel: str) -> Path | None:
    target = (work / rel)
    try:
        target.resolve().relative_to(work.resolve())
    except (ValueError, OSError):
        return None
    return target


def measure_files(spec: Mapping[str, Any], fixture: Path, work: Path, changes: Mapping[str, list[str]]) -> dict:
    """What `expect.files` asks about, measured: each path's presence, each text's presence, the
    changed paths under each `unchanged` glob."""
    out: dict[str, Any] = {}
    for key in ("exists", "absent"):
        paths = spec.get(key)
        if isinstance(paths, list):
            out[key] = {p: bool((t := _inside(work, p)) is not None and (t.exists() or t.is_symlink()))
                        for p in paths if isinstance(p, str)}
    contains = spec.get("contains")
    if isinstance(contains, Mapping):
        got: dict[str, Any] = {}
        for rel, texts in contains.items():
            target = _inside(work, str(rel))
            wanted = texts if isinstance(texts, list) else [texts]
            if target is None or not target.is_file():
                got[rel] = {"file": False, "missing": [t for t in wanted if isinstance(t, str)]}
                continue
            body = target.read_bytes().decode("utf-8", errors="replace")
            texts = [t for t in wanted if isinstance(t, str)]
            got[rel] = {"file": True, "missing": [t for t in texts if t not in body],
                        "found": [t for t in texts if t in body]}
        out["contains"] = got
    globs = spec.get("unchanged")
    if isinstance(globs, list):
        touched = list(changes.get("added", [])) + list(changes.get("removed", [])) + list(changes.get("modified", []))
        out["unchanged"] = {g: sorted(p for p in touched if covers(g, p))[:DIFF_CAP] for g in globs
                            if isinstance(g, str)}
    return out


def covers(glob: str, path: str) -> bool:
    """Whether the `expect.files.unchanged` entry `glob` covers the workdir file `path`: the glob
    matches it, or it names a directory the file is under (`docs`, `docs/`, `src/*/`: every path below
    it), written from the workdir's root or with `./` before it; `.` (or `./`) is the whole workdir. A
    directory, a trailing slash, a leading `./` or `.` matched no file, so the entry passed whatever the
    agent changed."""
    glob = re.sub(r"/{2,}", "/", glob)   # docs//x: the path docs/x, as a shell reads it
    while glob.startswith("./"):
        glob = glob[2:]
    if glob in ("", "."):
        return True
    stem = glob.rstrip("/")
    return fnmatch.fnmatchcase(path, glob) or (bool(stem) and (fnmatch.fnmatchcase(path, stem) or
                                                               fnmatch.fnmatchcase(path, f"{stem}/*")))


def unmeasured(spec: Any, facts: Any) -> str | None:
    """What `expect.files` asks that the recorded facts do not answer (a replay or rescore under an
    edited expectation), in words; None when every item was measured. A live run measures exactly
    what the case asks, so this is None there."""
    if not isinstance(spec, Mapping) or not isinstance(facts, Mapping):
        return "the workdir's files were not measured"
    for key in ("exists", "absent"):
        known = facts.get(key) if isinstance(facts.get(key), Mapping) else {}
        for path in spec.get(key) or [] if isinstance(spec.get(key), list) else []:
            if isinstance(path, str) and path not in known:
                return f"expect.files.{key} {path!r}"
    contains = spec.get("contains") if isinstance(spec.get("contains"), Mapping) else {}
    known = facts.get("contains") if isinstance(facts.get("contains"), Mapping) else {}
    for rel, texts in contains.items():
        got = known.get(rel)
        if not isinstance(got, Mapping):
            return f"expect.files.contains {rel!r}"
        seen = set(got.get("found") or []) | set(got.get("missing") or [])
        for t in texts if isinstance(texts, list) else [texts]:
            if isinstance(t, str) and got.get("file") and t not in seen:
                return f"expect.files.contains {rel!r}: {t!r}"
    known = facts.get("unchanged") if isinstance(facts.get("unchanged"), Mapping) else {}
    for glob in spec.get("unchanged") or [] if isinstance(spec.get("unchanged"), list) else []:
        if isinstance(glob, str) and glob not in known:
            return f"expect.files.unchanged {glob!r}"
    return None


def check_argv(spec: Mapping[str, Any]) -> list[str]:
    """`expect.check.command` as argv: a list as given, a string split like a shell would (no shell runs)."""
    cmd = spec.get("command")
    if isinstance(cmd, str):
        return shlex.split(cmd)
    return [str(a) for a in cmd] if isinstance(cmd, list) else []


def check_timeout(spec: Mapping[str, Any]) -> float:
    """`expect.check.timeout_s` in seconds (CHECK_TIMEOUT_S when it gives none)."""
    given = spec.get("timeout_s")
    return float(given) if isinstance(given, (int, float)) and not isinstance(given, bool) else CHECK_TIMEOUT_S


def resolve_program(prog: str, work: Path, path_env: str | None) -> str | None:
    """The check's program: a path with a slash is relative to the workdir; else looked up on PATH."""
    if "/" in prog:
        p = Path(prog) if os.path.isabs(prog) else work / prog
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    return shutil.which(prog, path=path_env if path_env is not None else os.defpath)


def run_check(spec: Mapping[str, Any], work: Path, env: Mapping[str, str], registry: Any = None) -> dict:
    """Run `expect.check` in the workdir (its own process group, a deadline): exit code and output tail."""
    from .procgroup import run_in_session
    argv = check_argv(spec)
    timeout = check_timeout(spec)
    if not work.is_dir():   # else the spawn's FileNotFoundError reads as the program missing
        return {"ran": False, "command": argv, "error": f"the workdir {work} is gone after the agent (it removed "
                "it): the check had nowhere to run"}
    found = resolve_program(argv[0], work, env.get("PATH")) if argv else None
    if found is None:
        return {"ran": False, "command": argv, "error": f"the check's program {argv[:1]} is not found (on the "
                "child's PATH, or relative to the workdir)"}
    r = run_in_session([found] + argv[1:], env=dict(env), cwd=str(work), stdin_bytes=None,
                       timeout_s=float(timeout), registry=registry)
    text = (r.stdout + (b"\n" if r.stdout and r.stderr else b"") + r.stderr).decode("utf-8", errors="replace")
    out = {"ran": r.spawn_error is None, "command": argv, "exit_code": r.returncode, "timed_out": r.timed_out,
           "duration_ms": r.latency_ms, "timeout_s": timeout, "output": writer.clip(text, CHECK_OUTPUT_CAP, tail=True)}
    if r.spawn_error:
        out["error"] = f"the check could not start: {r.spawn_error}"
    elif r.timed_out:
        out["error"] = f"the check did not finish within {float(timeout):g} s (its process group was killed)"
    return out
