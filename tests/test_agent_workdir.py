"""The agent's workdir (assay.invoke.workdir), in process: the fresh copy of a fixture (modes, mtimes,
symlinks as links, a FIFO refused by name), the diff against the fixture (a file left alone is not
read; a change that keeps the size and the mtime is still found: its ctime moved), and the unified
diff the case page shows (modified, added, deleted; binary noted; clipped and said so)."""

from __future__ import annotations

import os
import stat

import pytest

from assay.invoke import workdir as wd


@pytest.fixture
def fixture(tmp_path):
    src = tmp_path / "fixture"
    (src / "pkg").mkdir(parents=True)
    (src / "a.txt").write_text("one\ntwo\nthree\n")
    (src / "b.txt").write_text("uno\ndos\ntres\n")          # the same size as a.txt
    (src / "pkg" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (src / "pkg" / "run.sh").chmod(0o751)
    (src / "blob.bin").write_bytes(b"\x00\x01\x02")
    (src / "link").symlink_to("a.txt")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    old = 1_600_000_000_000_000_000
    for p in (src / "a.txt", src / "b.txt"):
        os.utime(p, ns=(old, old))
    return src


def test_the_copy_keeps_modes_mtimes_and_links(fixture, tmp_path):
    work = tmp_path / "attempt" / "work"
    work.parent.mkdir()
    copied = wd.copy_fixture(fixture, work)
    assert isinstance(copied, int) and copied > 0
    assert (work / "a.txt").read_text() == "one\ntwo\nthree\n" and (work / ".git" / "HEAD").is_file()
    assert stat.S_IMODE((work / "pkg" / "run.sh").stat().st_mode) == 0o751
    assert (work / "a.txt").stat().st_mtime_ns == (fixture / "a.txt").stat().st_mtime_ns
    assert (work / "link").is_symlink() and os.readlink(work / "link") == "a.txt"
    assert sorted(os.listdir(work.parent)) == ["work"]   # the stamp is gone
    assert wd.diff(fixture, work, copied) == {"added": [], "removed": [], "modified": []}


def test_a_fifo_in_the_fixture_is_refused_by_name(fixture, tmp_path):
    os.mkfifo(fixture / "pipe")
    with pytest.raises(OSError, match="pipe: not a regular file"):
        wd.copy_fixture(fixture, tmp_path / "work")


def test_a_file_left_alone_is_not_read_and_a_sly_change_is_still_found(fixture, tmp_path, monkeypatch):
    work = tmp_path / "work"
    copied = wd.copy_fixture(fixture, work)
    # the agent rewrites a.txt with text of the same size and puts its mtime back
    before = (work / "a.txt").stat()
    (work / "a.txt").write_text("ONE\nTWO\nTHREE\n")
    os.utime(work / "a.txt", ns=(before.st_atime_ns, before.st_mtime_ns))
    opened: list[str] = []
    real_open = open
    monkeypatch.setattr(wd, "open", lambda path, *a, **k: opened.append(os.path.basename(path)) or real_open(path, *a, **k),
                        raising=False)
    got = wd.diff(fixture, work, copied)
    assert got == {"added": [], "removed": [], "modified": ["a.txt"]}
    assert sorted(set(opened)) == ["a.txt"]    # only the touched file was read (both sides)
    opened.clear()
    assert wd.diff(fixture, work) == got       # without the stamp: every common file is read, same answer
    assert {"b.txt", "run.sh", "blob.bin"} <= set(opened)


def test_a_same_size_same_mtime_file_moved_over_another_is_found(fixture, tmp_path):
    work = tmp_path / "work"
    copied = wd.copy_fixture(fixture, work)
    os.replace(work / "a.txt", work / "b.txt")     # b.txt now holds a.txt's bytes (same size, same mtime)
    assert wd.diff(fixture, work, copied) == {"added": [], "removed": ["a.txt"], "modified": ["b.txt"]}


def test_the_patch_shows_each_changed_file_as_a_unified_diff(fixture, tmp_path, monkeypatch):
    work = tmp_path / "work"
    copied = wd.copy_fixture(fixture, work)
    (work / "a.txt").write_text("one\n2\nthree\n")
    (work / "new.md").write_text("hello\n<script>x</script>\n")
    (work / "b.txt").unlink()
    (work / "blob.bin").write_bytes(b"\x00\x09")
    changes = wd.diff(fixture, work, copied)
    got = wd.patch(fixture, work, changes)
    rows = {r["path"]: r for r in got["files"]}
    assert [r["status"] for r in got["files"]] == ["modified", "modified", "added", "deleted"]
    assert rows["a.txt"]["diff"].splitlines() == ["@@ -1,3 +1,3 @@", " one", "-two", "+2", " three"]
    assert (rows["a.txt"]["added"], rows["a.txt"]["removed"]) == (1, 1)
    assert rows["new.md"]["diff"].splitlines()[1:] == ["+hello", "+<script>x</script>"]
    assert rows["b.txt"]["diff"].splitlines()[1:] == ["-uno", "-dos", "-tres"]
    assert rows["blob.bin"]["diff"] is None and rows["blob.bin"]["note"] == "binary"
    assert got["clipped"] is False
    monkeypatch.setattr(wd, "PATCH_FILE_LINES", 2)
    clipped = wd.patch(fixture, work, changes)
    row = next(r for r in clipped["files"] if r["path"] == "b.txt")
    assert clipped["clipped"] and len(row["diff"].splitlines()) == 2 and row["note"] == "2 more diff line(s) not kept"
