"""The completeness check on two processes (assay.rundir.parallel), as a user meets it.

At this size a check runs in one process; `ASSAY_CHECK_FORK_ABOVE=0` forces the forked path (and, in
a third way, `ASSAY_FAST_JSON_ABOVE=0` the faster decoder of big reads, core.jsonio.bulk), so each
command here runs each way and must answer the same: `run_cases.py --verify`, `gate.py`, and
`compare_runs.py` (a base that fails --verify is refused in the same words, nothing compared).
tests/test_readers_streamed.py holds the problem strings of a run broken 13 ways on both paths.
"""

from __future__ import annotations

import json
import shutil

from fakeapp import app, case, make_plan, run_runner, state, write_plan  # noqa: F401 (fixtures)
from rundir_util import later_copy
from helpers import run_script

FORKED = {"ASSAY_CHECK_FORK_ABOVE": "0"}
ONE = {"ASSAY_CHECK_FORK_ABOVE": str(1 << 40)}
FAST = {"ASSAY_CHECK_FORK_ABOVE": "0", "ASSAY_FAST_JSON_ABOVE": "0"}


def _run(state, app):
    plan = make_plan(state, [case(f"c-{i:03d}", f"msg {i}", expect={"answer": {"must_contain": [f"msg {i}"]}})
                             for i in range(5)] +
                     [case("c-bad", "msg x", expect={"answer": {"must_contain": ["never said"]}})], app_url=app.url)
    out = state / "reports" / plan["run_id"]
    r = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert r.rc == 0, r.stdout   # complete (one case fails: the gate closes)
    return out


def test_each_reader_answers_the_same_on_two_processes(app, state, tmp_path):
    out = _run(state, app)
    cand = later_copy(out, tmp_path / "cand" / out.name)   # a later run of the same answers
    for argv in (("run_cases", "--verify", out), ("gate", out, "--json")):
        one, two, fast = (run_script(*argv, env=env) for env in (ONE, FORKED, FAST))
        assert (two.rc, two.stdout) == (one.rc, one.stdout) == (fast.rc, fast.stdout), argv
    assert run_script("gate", out, "--json", env=FORKED).rc == 1   # the failing case still closes it
    docs = []
    for env, name in ((ONE, "one.json"), (FORKED, "two.json"), (FAST, "fast.json")):
        r = run_script("compare_runs", out, cand, "-o", tmp_path / name, env=env)
        assert r.rc == 0, r.stderr
        docs.append((tmp_path / name).read_bytes())
    assert docs[0] == docs[1] == docs[2] and json.loads(docs[0])["counts"]["still_failing"] == 1


def test_a_base_that_fails_verify_is_refused_before_any_comparison(app, state, tmp_path):
    out = _run(state, app)
    base = tmp_path / "base" / out.name
    shutil.copytree(out, base)
    (base / "verdicts.jsonl").unlink()
    answers = []
    for env in (ONE, FORKED):
        r = run_script("compare_runs", base, out, "-o", tmp_path / "c.json", env=env)
        answers.append((r.rc, r.stdout))
        assert r.rc == 2 and "fails run_cases.py --verify (verdicts.jsonl (missing))" in json.loads(r.stdout)["error"], \
            r.stdout
        assert not (tmp_path / "c.json").exists()
    assert answers[0] == answers[1]
    # a base whose record is broken: the forked check falls back to one process and says the same
    bad = tmp_path / "bad" / out.name
    shutil.copytree(out, bad)
    lines = (bad / "cases.jsonl").read_bytes().splitlines(keepends=True)
    doc = json.loads(lines[0])
    doc["files"]["answer.txt"] = "edited"
    lines[0] = (json.dumps(doc, ensure_ascii=False) + "\n").encode()
    (bad / "cases.jsonl").write_bytes(b"".join(lines))
    answers = [run_script("compare_runs", bad, out, env=env) for env in (ONE, FORKED)]
    assert [a.rc for a in answers] == [2, 2] and answers[0].stdout == answers[1].stdout
    assert "answer.txt (edited: its sha256 differs" in json.loads(answers[1].stdout)["error"]


def test_the_record_checks_chunks_go_each_to_one_process(tmp_path, monkeypatch):
    """rundir.parallel.Shares: the journal's committed lines (a case's first line; not a second line of
    the same case, nor a line that is no record) handed out in chunks, each to exactly one of two
    processes reading at once, as the bytes iter_lines reads at those offsets."""
    from assay.core import casestore
    from assay.rundir import parallel
    lines = [casestore.record_line(f"c-{i:03d}", {"case_id": f"c-{i:03d}", "verdict": "pass"},
                                   {"answer.txt": f"answer {i}".encode() * (i % 7)}) for i in range(40)]
    lines[5:5] = [b"not a record\n", lines[3]]   # a garbled line; c-003 recorded twice (its first line counts)
    (tmp_path / casestore.JOURNAL).write_bytes(b"".join(lines))
    store = casestore.scan(tmp_path)
    committed = {offset: line for offset, line in casestore.iter_lines(tmp_path / casestore.JOURNAL)
                 if casestore.head_of(line)[0] is not None
                 and store.offset_of(casestore.head_of(line)[0]) == offset}
    assert len(committed) == 40
    monkeypatch.setattr(parallel.Shares, "MIN_LINES", 3)   # 14 chunks
    share = parallel.Shares(store)
    assert share.usable and len(share.chunks) == 14
    child = parallel.Child(lambda: [(offset, line) for offset, line in share.lines()])
    mine = list(share.lines())
    theirs = child.result()
    share.close()
    assert theirs is not None
    got = sorted(mine + theirs)
    assert [offset for offset, _ in got] == sorted(committed)   # every committed line once, by one process
    assert dict(got) == committed
