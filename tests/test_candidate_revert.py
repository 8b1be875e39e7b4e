"""`candidate.py revert` never destroys work that is not the candidate's: it verifies every surface
before touching any, writes the recorded blob back (never a pathspec checkout), ignores GIT_*
variables, follows no symlink, and refuses a malformed candidate.json with exit 2 naming it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures_authoring import run_inproc
from helpers import run_script
from test_candidate import app_repo, git

ORIGINAL = "ROUTER = 'route billing questions to billing'\n"


def _new(state: Path, cid: str = "c1", surface: str = "prompts.py"):
    r = run_inproc("candidate", "new", state, "--id", cid, "--surface", surface)
    assert r.rc == 0, r.stdout
    return r.json


def _edit_candidate(state: Path, cid: str, **changes) -> None:
    path = state / "candidates" / cid / "candidate.json"
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def test_revert_writes_the_recorded_blob_and_keeps_what_it_replaced(tmp_path):
    app, state = app_repo(tmp_path)
    (app / "prompts.py").chmod(0o755)
    git(app, "commit", "-qam", "exec")
    _new(state)
    (app / "prompts.py").write_text("ROUTER = 'candidate edit'\n")
    (app / "other.py").write_text("x = 'the user is still working here'\n")   # not a surface
    r = run_script("candidate", "revert", state, "--id", "c1")
    assert r.rc == 0, r.stdout
    assert (app / "prompts.py").read_text() == ORIGINAL
    assert os.stat(app / "prompts.py").st_mode & 0o777 == 0o755
    assert (app / "other.py").read_text() == "x = 'the user is still working here'\n"
    replaced = r.json["surfaces"][0]["replaced_blob"]
    assert git(app, "cat-file", "-p", replaced) == "ROUTER = 'candidate edit'\n"   # recoverable
    log = [json.loads(x) for x in (state / "candidates" / "log.jsonl").read_text().splitlines()]
    assert log[-1]["action"] == "revert" and log[-1]["surfaces"][0]["replaced_blob"] == replaced


def test_a_deleted_surface_is_written_back(tmp_path):
    app, state = app_repo(tmp_path)
    _new(state)
    (app / "prompts.py").unlink()
    r = run_inproc("candidate", "revert", state, "--id", "c1")
    assert r.rc == 0 and r.json["surfaces"][0]["replaced_blob"] is None, r.stdout
    assert (app / "prompts.py").read_text() == ORIGINAL


def test_a_pathspec_surface_is_refused_and_nothing_is_touched(tmp_path):
    app, state = app_repo(tmp_path)
    _new(state)
    (app / "prompts.py").write_text("ROUTER = 'candidate edit'\n")
    (app / "other.py").write_text("x = 'uncommitted'\n")
    for i, magic in enumerate((":/", ":(glob)*.py", ".", "../app/other.py", "/etc/passwd", "sub/../other.py",
                               "sub/", ".git/config")):
        _edit_candidate(state, "c1", surfaces=[{"path": magic, "blob": "0" * 40}])
        r = (run_script if i == 0 else run_inproc)("candidate", "revert", state, "--id", "c1")
        assert r.rc == 2, (magic, r.stdout, r.stderr)
        assert "candidate.json" in r.json["error"] and "surfaces[0].path" in r.json["error"], r.json
        assert "Traceback" not in r.stderr
    assert (app / "other.py").read_text() == "x = 'uncommitted'\n"
    assert (app / "prompts.py").read_text() == "ROUTER = 'candidate edit'\n"


def test_a_glob_named_file_is_itself_not_a_pattern(tmp_path):
    """`*.py` is a legal file name: with literal pathspecs it names that one file, never every .py."""
    app, state = app_repo(tmp_path)
    (app / "[ab].py").write_text("literal = 1\n")
    (app / "a.py").write_text("a = 1\n")
    git(app, "add", "-A")
    git(app, "commit", "-qm", "odd name")
    _new(state, surface="[ab].py")
    (app / "[ab].py").write_text("literal = 2\n")
    (app / "a.py").write_text("a = 'uncommitted'\n")
    r = run_script("candidate", "revert", state, "--id", "c1")
    assert r.rc == 0, r.stdout
    assert (app / "[ab].py").read_text() == "literal = 1\n"
    assert (app / "a.py").read_text() == "a = 'uncommitted'\n"


def test_committed_then_edited_again_is_refused_before_touching(tmp_path):
    app, state = app_repo(tmp_path)
    _new(state)
    (app / "prompts.py").write_text("ROUTER = 'v2'\n")
    git(app, "commit", "-qam", "user committed the candidate")
    (app / "prompts.py").write_text("ROUTER = 'v3: the user kept editing'\n")
    r = run_script("candidate", "revert", state, "--id", "c1")
    assert r.rc == 1 and "prompts.py" in r.json["error"] and "nothing was touched" in r.json["error"], r.stdout
    assert (app / "prompts.py").read_text() == "ROUTER = 'v3: the user kept editing'\n"


def test_staged_changes_are_refused(tmp_path):
    app, state = app_repo(tmp_path)
    _new(state)
    (app / "prompts.py").write_text("ROUTER = 'staged'\n")
    git(app, "add", "prompts.py")
    r = run_inproc("candidate", "revert", state, "--id", "c1")
    assert r.rc == 1 and "staged changes" in r.json["error"]
    assert (app / "prompts.py").read_text() == "ROUTER = 'staged'\n"


def test_app_pointing_at_another_repository_is_refused(tmp_path):
    app, state = app_repo(tmp_path)
    other, _ = app_repo(tmp_path / "second")
    (other / "prompts.py").write_text("ROUTER = 'someone else is editing'\n")
    (other / "other.py").write_text("x = 'theirs'\n")
    _new(state)
    (app / "prompts.py").write_text("ROUTER = 'candidate edit'\n")
    blob = json.loads((state / "candidates" / "c1" / "candidate.json").read_text())["surfaces"][0]["blob"]
    _edit_candidate(state, "c1", app=str(other), surfaces=[{"path": ".", "blob": blob}])
    assert run_inproc("candidate", "revert", state, "--id", "c1").rc == 2
    (other / "prompts.py").write_text("ROUTER = 'someone else, new text'\n")
    git(other, "commit", "-qam", "their commit")
    (other / "prompts.py").write_text("ROUTER = 'someone else is editing'\n")
    _edit_candidate(state, "c1", surfaces=[{"path": "prompts.py", "blob": blob}])
    r = run_inproc("candidate", "revert", state, "--id", "c1")
    assert r.rc == 1 and "not the recorded" in r.json["error"]
    assert (other / "prompts.py").read_text() == "ROUTER = 'someone else is editing'\n"
    assert (other / "other.py").read_text() == "x = 'theirs'\n"


def test_git_environment_variables_do_not_redirect_the_revert(tmp_path):
    app, state = app_repo(tmp_path)
    other, _ = app_repo(tmp_path / "second")
    (other / "prompts.py").write_text("ROUTER = 'theirs, uncommitted'\n")
    _new(state)
    (app / "prompts.py").write_text("ROUTER = 'candidate edit'\n")
    env = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other), "GIT_INDEX_FILE": str(other / ".git" / "index")}
    r = run_script("candidate", "revert", state, "--id", "c1", env=env)
    assert r.rc == 0, r.stdout
    assert (app / "prompts.py").read_text() == ORIGINAL
    assert (other / "prompts.py").read_text() == "ROUTER = 'theirs, uncommitted'\n"


def test_symlinks_are_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "log.jsonl").write_text("precious\n")
    app, state = app_repo(tmp_path / "a")
    (state / "candidates").mkdir()
    (state / "candidates" / "log.jsonl").symlink_to(outside / "log.jsonl")
    r = run_inproc("candidate", "new", state, "--id", "c1", "--surface", "prompts.py")
    assert r.rc == 2 and "symbolic link" in r.json["error"]
    assert (outside / "log.jsonl").read_text() == "precious\n"

    app, state = app_repo(tmp_path / "b")
    (state / "candidates").symlink_to(outside, target_is_directory=True)
    r = run_inproc("candidate", "new", state, "--id", "c1", "--surface", "prompts.py")
    assert r.rc == 2 and "symbolic link" in r.json["error"]
    assert sorted(p.name for p in outside.iterdir()) == ["log.jsonl"]

    app, state = app_repo(tmp_path / "c")
    (app / "link.py").symlink_to(app / "other.py")
    git(app, "add", "link.py")
    git(app, "commit", "-qm", "a tracked symlink")
    r = run_inproc("candidate", "new", state, "--id", "c1", "--surface", "link.py")
    assert r.rc == 2 and "symbolic link" in r.json["error"]

    # the surface replaced by a link after `new`: revert refuses, the link's target is untouched
    _new(state, "c2")
    (app / "prompts.py").unlink()
    (app / "prompts.py").symlink_to(outside / "log.jsonl")
    r = run_inproc("candidate", "revert", state, "--id", "c2")
    assert r.rc == 2 and "symbolic link" in r.json["error"]
    assert (outside / "log.jsonl").read_text() == "precious\n"


MALFORMED = [
    b"", b"not json", b"[]", b"null", b'"x"', b"1e400", b"{", b"[" * 5000, b"\xff\xfe",
    json.dumps({"id": "c1"}).encode(),
    json.dumps({"id": "other", "app": "/tmp", "status": "open", "surfaces": [{"path": "a", "blob": "0" * 40}]}).encode(),
    json.dumps({"id": "c1", "app": 7, "status": "open", "surfaces": [{"path": "a", "blob": "0" * 40}]}).encode(),
    json.dumps({"id": "c1", "app": "relative/app", "status": "open",
                "surfaces": [{"path": "a", "blob": "0" * 40}]}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "weird", "surfaces": [{"path": "a", "blob": "0" * 40}]}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "open", "surfaces": []}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "open", "surfaces": {"path": "a"}}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "open", "surfaces": ["a"]}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "open", "surfaces": [{"path": 3, "blob": "0" * 40}]}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "open", "surfaces": [{"path": "a"}]}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "open", "surfaces": [{"path": "a", "blob": "HEAD"}]}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "open",
                "surfaces": [{"path": "a", "blob": "0" * 40}, {"path": "a", "blob": "0" * 40}]}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "open", "surfaces": [{"path": "a\u0000b", "blob": "0" * 40}]}).encode(),
    json.dumps({"id": "c1", "app": "/tmp", "status": "open", "decisions": {},
                "surfaces": [{"path": "a", "blob": "0" * 40}]}).encode(),
    b'{"id": "c1", "app": "/tmp", "status": "open", "surfaces": [{"path": "a", "blob": NaN}]}',
]


@pytest.mark.parametrize("action", ["revert", "keep"])
def test_malformed_candidate_json_is_exit_2_naming_the_file(tmp_path, action):
    app, state = app_repo(tmp_path)
    _new(state)
    path = state / "candidates" / "c1" / "candidate.json"
    extra = ["--training", str(tmp_path)] if action == "keep" else []
    for i, data in enumerate(MALFORMED):
        path.write_bytes(data)
        r = run_inproc("candidate", action, state, "--id", "c1", *extra)
        assert r.rc == 2, (i, data[:60], r.stdout)
        assert "candidate.json" in r.json["error"], (i, r.json)
    assert (app / "prompts.py").read_text() == ORIGINAL


def test_malformed_candidate_json_never_prints_a_traceback(tmp_path):
    """The same fuzz as subprocesses, for the stderr a person sees (a sample: each costs an interpreter)."""
    app, state = app_repo(tmp_path)
    _new(state)
    path = state / "candidates" / "c1" / "candidate.json"
    for data in (MALFORMED[1], MALFORMED[7], MALFORMED[12], MALFORMED[-1]):
        path.write_bytes(data)
        r = run_script("candidate", "revert", state, "--id", "c1")
        assert r.rc == 2 and "Traceback" not in r.stderr and "candidate.json" in r.json["error"], r.stderr


def test_a_surface_of_an_unreverted_candidate_is_no_second_candidates(tmp_path):
    """Two candidates on one file: B's revert wrote its recorded text over A's kept edit (and a keep of
    either credits it with the other's edit). `new` refuses the file while A is neither kept nor
    reverted, naming A; a rejected A whose edit was undone by hand holds it too, until its revert."""
    app, state = app_repo(tmp_path)
    _new(state, "A")
    r = run_script("candidate", "new", state, "--id", "B", "--surface", "other.py", "--surface", "prompts.py")
    assert r.rc == 2, r.stdout
    assert "surface prompts.py is already a surface of candidate A (open)" in r.json["error"], r.stdout
    assert "candidate.py revert --id A" in r.json["error"] and r.json["candidates"] == ["A"]
    assert not (state / "candidates" / "B").exists()
    assert run_script("candidate", "new", state, "--id", "C", "--surface", "other.py").rc == 0   # another file: fine
    _edit_candidate(state, "A", status="rejected")        # rejected; its edit undone by hand (the file is clean)
    r = run_script("candidate", "new", state, "--id", "B", "--surface", "prompts.py")
    assert r.rc == 2 and "candidate A (rejected)" in r.json["error"], r.stdout
    assert run_script("candidate", "revert", state, "--id", "A").rc == 0
    assert run_script("candidate", "new", state, "--id", "B", "--surface", "prompts.py").rc == 0
