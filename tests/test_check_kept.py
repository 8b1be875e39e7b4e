"""The completeness check's answer kept beside a run (assay.rundir.checked): taken only for the same
bytes under the same code, never by `--verify`, shown by the viewer; an edit after it was kept is
checked again and closes the gate (a stale kept answer would be a green gate that should be red)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from fakeapp import app, case, make_plan, run_runner, state, write_plan  # noqa: F401 (fixtures)
from helpers import run_script


@pytest.fixture(autouse=True)
def keep_small_runs(monkeypatch):
    """These 6-case runs are far under the size a check is kept at (checked.KEEP_ABOVE): keep them."""
    monkeypatch.setenv("ASSAY_CHECK_KEEP_ABOVE", "0")


@pytest.fixture
def run(app, state):
    plan = make_plan(state, [case(f"c-{i:03d}", f"msg {i}", expect={"answer": {"must_contain": [f"msg {i}"]}})
                             for i in range(6)], app_url=app.url)
    out = state / "reports" / plan["run_id"]
    r = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert r.rc == 0, r.stdout
    return out


def _edit_artifact(run_dir):
    """answer.txt of the first journal record changed: only the completeness check sees it (its sha256
    no longer matches the one the verdict recorded); the gate's own counts are unchanged."""
    path = run_dir / "cases.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    doc = json.loads(lines[0])
    doc["files"]["answer.txt"] = "something else entirely"
    lines[0] = (json.dumps(doc) + "\n").encode()
    path.write_bytes(b"".join(lines))
    return doc["case_id"]


def test_a_gate_keeps_its_check_and_an_edit_since_is_checked_again(run, monkeypatch):
    from assay.rundir import checked, completeness
    first = run_script("gate", run, "--json")
    assert first.rc == 0 and first.json["gate"] == "open", first.stdout
    memo = checked.memo_path(run)
    assert memo.name == f".{run.name}.checked.json" and memo.parent == run.parent
    assert checked.known(run) == []

    def no_check(*_a, **_k):
        raise AssertionError("the kept answer was not taken")
    with monkeypatch.context() as m:   # the same bytes, the same code: the kept answer, no re-read
        m.setattr(completeness, "check_run_dir", no_check)
        assert checked.check(run) == []
    again = run_script("gate", run, "--json")
    assert (again.rc, again.stdout) == (first.rc, first.stdout)

    cid = _edit_artifact(run)
    assert checked.known(run) is None
    closed = run_script("gate", run, "--json")
    assert closed.rc == 1 and closed.json["gate"] == "closed", closed.stdout
    assert any(f"cases/{cid}/answer.txt (edited" in r for r in closed.json["reasons"]), closed.json["reasons"]
    # the new answer is kept in turn, and read back with its problem
    assert any("answer.txt (edited" in p for p in checked.known(run))
    (run / "stray.txt").write_text("x")
    assert checked.known(run) is None
    assert any("stray.txt" in r for r in run_script("gate", run, "--json").json["reasons"])


def test_a_kept_answer_is_never_taken_for_other_bytes_or_other_code(run, monkeypatch):
    from assay.rundir import checked
    assert run_script("gate", run).rc == 0
    kept = json.loads(checked.memo_path(run).read_text())
    assert kept["problems"] == [] and checked.known(run) == []
    with monkeypatch.context() as m:   # (not monkeypatch.undo(): that also undoes keep_small_runs)
        m.setattr(checked, "_CODE", ["another version of the check"])
        assert checked.known(run) is None      # a changed line of the check: checked in full
    assert checked.known(run) == []
    for bad in ("{oops", "[]", json.dumps(dict(kept, version=99)), json.dumps(dict(kept, problems="none")), json.dumps(dict(kept, problems=[None])),
                json.dumps(dict(kept, digest="0" * 64))):
        checked.memo_path(run).write_text(bad)
        assert checked.known(run) is None, bad
    # a run dir holding anything but files (an older run's case dirs) is never kept
    (run / "cases").mkdir()
    assert checked.digest(run) is None and checked.check(run)   # the dir is a problem, found in full


def test_verify_never_takes_a_kept_answer_nor_writes_one(run):
    """A forged answer with the right digest: `run_cases.py --verify` is the independent re-read."""
    from assay.rundir import checked
    cid = _edit_artifact(run)
    checked.memo_path(run).write_text(json.dumps({"version": checked.VERSION, "digest": checked.digest(run),
                                                  "problems": [], "run_id": run.name}))
    r = run_script("run_cases.py", "--verify", str(run))
    assert r.rc == 6 and any(f"cases/{cid}/answer.txt" in p for p in r.json["missing_artifacts"]), r.stdout
    checked.memo_path(run).unlink()
    assert run_script("run_cases.py", "--verify", str(run)).rc == 6
    assert not checked.memo_path(run).exists()


def test_an_answer_that_cannot_be_kept_still_decides(run):
    from assay.rundir import checked
    checked.memo_path(run).mkdir()   # nothing can be written there
    _edit_artifact(run)
    r = run_script("gate", run, "--json")
    assert r.rc == 1 and any("answer.txt (edited" in x for x in r.json["reasons"]), r.stdout
    shutil.rmtree(checked.memo_path(run))


def test_the_viewer_shows_a_kept_answer_and_says_when_there_is_none(run):
    from assay.view import gates
    cid = _edit_artifact(run)
    before = gates.decide(run)   # nothing kept: the gate's own evaluation, said unverified
    assert before["gate"] == "open" and before["verified"] is False
    assert run_script("gate", run).rc == 1   # gate.py checks, closes, and keeps the answer
    after = gates.decide(run)
    assert after["gate"] == "closed" and after["verified"] is True and after["verify_clean"] is False
    assert any(f"cases/{cid}/answer.txt (edited" in r for r in after["reasons"]), after["reasons"]


def test_a_small_run_is_neither_kept_nor_taken(run, monkeypatch):
    """Under KEEP_ABOVE bytes the check costs less than the digest: nothing is written beside the run."""
    from assay.rundir import checked
    monkeypatch.delenv("ASSAY_CHECK_KEEP_ABOVE")
    assert sum(p.stat().st_size for p in run.iterdir()) < checked.KEEP_ABOVE
    assert run_script("gate", run).rc == 0 and not checked.memo_path(run).exists()
    monkeypatch.setenv("ASSAY_CHECK_KEEP_ABOVE", "0")
    assert run_script("gate", run).rc == 0 and checked.known(run) == []
    monkeypatch.delenv("ASSAY_CHECK_KEEP_ABOVE")
    assert checked.known(run) is None


APART = """
import json, os, sys
from assay.core import forked
from assay.rundir import checked
run = sys.argv[1]
answers = []
real_apart = checked._apart
checked._apart = lambda r, *a: answers.append(real_apart(r, *a)) or answers[-1]
out = {"apart": checked.check(run, apart=True), "kept": checked.known(run)}
# the child's answer, not this process's; the digest taken here while the child checked
out["forked"] = [a[0] for a in answers] == [out["apart"]] and answers[0][1] == checked.digest(run)
checked.memo_path(run).unlink()
real_child = forked.Child
class Killed(forked.Child):
    def __init__(self, work):
        super().__init__(lambda: os._exit(9))
forked.Child = Killed
out["killed"] = checked.check(run, apart=True)
checked.memo_path(run).unlink()
class EditedMeanwhile(real_child):   # the run dir written while the child checks (and this process hashes)
    def __init__(self, work):
        super().__init__(lambda: (os.utime(os.path.join(run, "run.log")), work())[1])
forked.Child = EditedMeanwhile
out["edited"] = checked.check(run, apart=True)
out["edited_kept"] = checked.memo_path(run).exists()
print(json.dumps(out))
"""


def test_a_check_run_apart_is_the_check_and_is_kept(run):
    """checked.check(apart=True) (compare's check of its base): the full check in a forked child, the
    same problems and the same kept answer; a child that fails is made up here; a base that fails
    it is refused by compare_runs.py naming the problem. (The check apart runs in a fresh
    interpreter: a pytest-xdist worker runs other threads, and nothing forks beside a thread.)"""
    import subprocess
    import sys
    from assay.rundir import checked
    cid = _edit_artifact(run)
    one = checked.check(run)
    assert any(f"cases/{cid}/answer.txt (edited" in p for p in one)
    checked.memo_path(run).unlink()
    r = subprocess.run([sys.executable, "-c", APART, str(run)], capture_output=True, text=True, timeout=600,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout) == {"apart": one, "kept": one, "forked": True, "killed": one, "edited": one,
                                    "edited_kept": False}
    twin = run.parent / "twin-run"
    shutil.copytree(run, twin)
    checked.memo_path(run).unlink(missing_ok=True)   # the last check above kept nothing
    r = run_script("compare_runs", run, twin)
    assert r.rc == 2 and f"cases/{cid}/answer.txt (edited" in r.json["error"], r.stdout
    assert checked.known(run) == one


MEANWHILE = """
import json, sys
from pathlib import Path
from assay.core import forked
from assay.compare.baseline import refuse_either_unverified
from assay.rundir import checked
base, cand = Path(sys.argv[1]), Path(sys.argv[2])
events = []
real_digest, real_result = checked.digest, forked.Child.result
checked.digest = lambda r: events.append(("digest", Path(r).parent.name)) or real_digest(r)
forked.Child.result = lambda self: events.append(("the base's check answered",)) or real_result(self)
refuse_either_unverified(base, cand)
print(json.dumps({"events": list(events), "kept": [checked.known(base), checked.known(cand)]}))
"""


def test_the_candidates_digest_is_taken_while_the_base_is_checked(run, tmp_path):
    """compare_runs.py checks its base, then looks up its candidate's kept answer: the candidate's digest
    is taken while the base's check runs in its child (compare/baseline.refuse_either_unverified), and
    taken once; each answer is the one kept for its own bytes."""
    import subprocess
    import sys
    cand = tmp_path / "cand" / run.name
    shutil.copytree(run, cand)
    assert run_script("gate", cand).rc == 0   # the candidate checked before (kept), the base never
    r = subprocess.run([sys.executable, "-c", MEANWHILE, str(run), str(cand)], capture_output=True, text=True,
                       timeout=600, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["events"] == [["digest", "reports"], ["digest", "cand"], ["the base's check answered"]], doc
    assert doc["kept"] == [[], []]


def test_a_held_digest_stands_for_the_bytes_once_and_only_while_they_held_still(run, monkeypatch):
    """checked.hold_digest (the candidate's digest taken while the base is checked): its next lookup
    takes it; the one after hashes again (a long-lived reader never trusts an old digest); an edit
    in between is hashed afresh, so a kept answer is never taken for other bytes."""
    from assay.rundir import checked
    calls = []
    real = checked.digest
    monkeypatch.setattr(checked, "digest", lambda r: calls.append(1) or real(r))
    checked.hold_digest(run)
    first = checked.held_digest(run)
    assert len(calls) == 1 and first == real(run)
    checked.held_digest(run)
    assert len(calls) == 2   # used once
    checked.hold_digest(run)
    _edit_artifact(run)
    assert checked.held_digest(run) == real(run) != first and len(calls) == 4
    # a run dir with no kept answer yet: its check takes the held digest, none is left for a later reader
    checked.memo_path(run).unlink(missing_ok=True)
    checked.hold_digest(run)
    checked.check(run)
    assert not checked._HELD and len(calls) == 5 and checked.known(run) is not None


def test_a_renamed_file_is_other_bytes(run):
    """The digest covers each entry's name: a file renamed (same bytes, same size) is checked again and
    the check names it (mutation hunt, round 2)."""
    from assay.rundir import checked
    assert run_script("gate", run).rc == 0 and checked.known(run) == []
    (run / "verdicts_for_stats.jsonl").rename(run / "verdicts_for_stats.jsonm")
    assert checked.known(run) is None
    r = run_script("gate", run, "--json")
    assert r.rc == 1 and any("verdicts_for_stats.jsonm" in x for x in r.json["reasons"]), r.stdout


def test_a_run_dir_written_during_its_check_is_not_kept(run, monkeypatch):
    """The answer is of the bytes the check read: when the run dir changed while it was checked (a run
    still being written), nothing is kept; a kept [] for bytes edited after the read would open a gate
    on a run the check never saw."""
    from assay.rundir import checked, completeness
    real = completeness.check_run_dir

    def check_then_edit(*a, **k):
        answer = real(*a, **k)
        _edit_artifact(run)
        return answer
    with monkeypatch.context() as m:
        m.setattr(completeness, "check_run_dir", check_then_edit)
        assert checked.check(run) == []
    assert not checked.memo_path(run).exists() and checked.known(run) is None
    assert checked.check(run)   # checked again in full: the edit is named


def test_a_piece_read_short_is_no_digest(run, monkeypatch):
    """A file cut while it was read (a piece came back short): no digest, so nothing is kept or taken."""
    from assay.rundir import checked
    assert checked.digest(run) is not None
    monkeypatch.setattr(checked, "_piece", lambda piece: None)
    assert checked.digest(run) is None


def test_the_pieces_hash_is_the_machines_and_a_kept_answer_of_the_other_is_not_taken(run, monkeypatch, tmp_path):
    """The pieces are hashed with SHA-256 where the CPU has SHA instructions, else BLAKE2b (checked.PIECE_HASH):
    either way every byte is covered, and a kept answer recorded under one hash (a run dir on shared storage,
    read on another kind of machine) is not taken under the other: it is checked again."""
    from assay.rundir import checked
    info = tmp_path / "cpuinfo"
    for flags, want in (("fpu sse2 avx2 sha_ni", "sha256"), ("fp asimd aes sha1 sha2 crc32", "sha256"),
                        ("fpu sse2 avx2 aes", "blake2b"), ("sha1 sha512", "blake2b")):
        info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        assert checked._piece_hash(str(info)) == want, flags
    assert checked._piece_hash(str(tmp_path / "none")) == "blake2b"
    digests = {}
    for name in ("sha256", "blake2b"):
        monkeypatch.setattr(checked, "PIECE_HASH", name)
        digests[name] = checked.digest(run)
        monkeypatch.setattr(checked, "PIECE", 64)   # every piece counts under either hash
        journal = run / "cases.jsonl"
        before = journal.read_bytes()
        _same_size_edit(journal, len(before) - 10)
        assert checked.digest(run) != digests[name]
        journal.write_bytes(before)
        monkeypatch.setattr(checked, "PIECE", 16 << 20)
        assert checked.digest(run) == digests[name]
    assert None not in digests.values() and digests["sha256"] != digests["blake2b"]
    monkeypatch.setattr(checked, "PIECE_HASH", "sha256")
    assert checked.check(run) == [] and checked.known(run) == []
    monkeypatch.setattr(checked, "PIECE_HASH", "blake2b")
    assert checked.known(run) is None   # recorded under the other hash: not taken


def test_verify_names_a_conditional_file_whose_condition_did_not_hold(run):
    """A comparison.json in a run made without --baseline-verdicts is not this run's own: --verify
    names it (a planted comparison would read as the run's keep decision)."""
    (run / "comparison.json").write_text(json.dumps({"keep": True}))
    r = run_script("run_cases.py", "--verify", str(run))
    assert r.rc == 6 and "comparison.json (present although its condition did not hold)" in \
        r.json["missing_artifacts"], r.stdout


def _same_size_edit(path, at):
    """One byte of `path` changed at `at` in place (same inode, same size): only its bytes differ."""
    with open(path, "r+b") as f:
        f.seek(at)
        old = f.read(1)
        f.seek(at)
        f.write(b"Y" if old != b"Y" else b"Z")


def test_a_byte_past_the_first_piece_is_other_bytes(run, monkeypatch):
    """The digest covers every piece of a file, not only its first (mutation hunt, round 3): a byte edited
    16 MiB into a big cases.jsonl (here: past a 64-byte piece) with the size unchanged is checked again."""
    from assay.rundir import checked
    monkeypatch.setattr(checked, "PIECE", 64)
    assert checked.check(run) == [] and checked.known(run) == []
    journal = run / "cases.jsonl"
    size = journal.stat().st_size
    assert size > 3 * 64
    _same_size_edit(journal, size - 10)
    assert journal.stat().st_size == size
    assert checked.known(run) is None
    assert checked.check(run)   # checked again in full: the garbled record is named


def test_an_edit_that_keeps_size_and_mtime_during_the_check_is_not_kept(run, monkeypatch):
    """The change time is part of what says the run dir held still (mutation hunt, round 3): a file edited
    in place while it was checked, its size the same and its mtime put back, still changes its ctime, so
    the answer of the bytes before is not kept for the bytes after (that would be a kept [] for an
    edited run, an open gate)."""
    import time
    from assay.rundir import checked, completeness
    real = completeness.check_run_dir
    journal = run / "cases.jsonl"

    def check_then_edit(*a, **k):
        answer = real(*a, **k)
        st = journal.stat()
        time.sleep(0.05)   # past the file system's clock tick
        _same_size_edit(journal, st.st_size - 10)
        os.utime(journal, ns=(st.st_atime_ns, st.st_mtime_ns))
        return answer
    with monkeypatch.context() as m:
        m.setattr(completeness, "check_run_dir", check_then_edit)
        assert checked.check(run) == []
    assert not checked.memo_path(run).exists() and checked.known(run) is None
    assert checked.check(run)


def test_a_run_dir_of_exactly_the_keep_size_is_kept(run, monkeypatch):
    """KEEP_ABOVE is the smallest run dir kept ("under KEEP_ABOVE bytes: neither kept nor taken")."""
    from assay.rundir import checked
    size = sum(p.stat().st_size for p in run.iterdir())
    monkeypatch.setenv("ASSAY_CHECK_KEEP_ABOVE", str(size))
    assert checked.check(run) == [] and checked.known(run) == []
    monkeypatch.setenv("ASSAY_CHECK_KEEP_ABOVE", str(size + 1))
    assert checked.known(run) is None
