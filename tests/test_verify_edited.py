"""A finished run dir damaged after the run the way a user or a careless script would (run.log emptied or
cut, a run-level field of manifest.yaml or results.json edited, a red run's exit code set to 0) fails
`run_cases.py --verify` naming the file, and `gate.py` closes on it: never a complete record, never an
open gate. Driven as subprocesses over a real run of a loopback app (runner-contract §12)."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script

pytestmark = pytest.mark.slow

RUN_ID = "regression-20261205T140000Z"


def a_run(tmp_path, cases, *, resume=False, k=1):
    """A finished regression run of `cases` against an app that echoes the message (`resume`: then
    --resume of the finished run, with the app still up): (its run dir, the last runner's Result)."""
    state = make_state(tmp_path)

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(200, {"message": f"re: {req.json['message']}"})
    with FakeApp(handler) as app:
        plan = make_plan(state, cases, adapter_doc=adapter(app.url), run_id=RUN_ID, mode="regression",
                         selecting_split="full", k=k, execution={"max_attempts": 1, "backoff_s": []})
        argv = ["--plan", write_plan(state, plan), "--out", state / "reports" / RUN_ID, "--progress", "never"]
        r = run_runner(*argv)
        if resume:
            assert r.rc == 0, r.stdout
            r = run_runner(*argv, "--resume")
    return state / "reports" / RUN_ID, r


def edit_json(path, **keys):
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update(keys)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def verify_and_gate(out):
    return run_script("run_cases", "--verify", out), run_script("gate", out, "--json")


def assert_named(out, words):
    """--verify exit 6 with one problem holding `words`; the gate closed on that problem."""
    verified, gated = verify_and_gate(out)
    assert verified.rc == 6, verified.stdout
    named = [p for p in verified.json["missing_artifacts"] if words in p]
    assert len(named) == 1, verified.json["missing_artifacts"]
    assert gated.rc == 1 and gated.json["gate"] == "closed", gated.stdout
    assert any(named[0] in reason for reason in gated.json["reasons"]), gated.json["reasons"]


@pytest.fixture(scope="module")
def green(tmp_path_factory):
    """One honest green run for the module (checked clean and open once); each test damages its own copy."""
    out, r = a_run(tmp_path_factory.mktemp("green"), [case(f"c-{i}", f"msg {i}", split=["full"]) for i in range(3)])
    assert r.rc == 0, r.stdout
    verified, gated = verify_and_gate(out)
    assert verified.rc == 0 and verified.json["missing_artifacts"] == [], verified.stdout
    assert gated.rc == 0 and gated.json["gate"] == "open", gated.stdout
    return out


@pytest.fixture
def green_run(green, tmp_path):
    """A byte copy of the module's green run, under a reports/ dir of its own."""
    import shutil
    out = tmp_path / "state" / "reports" / green.name
    shutil.copytree(green, out)
    return out


@pytest.mark.parametrize("how", ["emptied", "blank lines", "first lines cut"])
def test_a_run_log_emptied_or_cut_after_the_run_is_named(green_run, how):
    out = green_run
    log = out / "run.log"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    assert json.loads(lines[0])["event"] == "preflight"
    log.write_text({"emptied": "", "blank lines": "\n\n", "first lines cut": "".join(lines[2:])}[how], encoding="utf-8")
    assert_named(out, "run.log (empty" if how != "first lines cut" else "run.log (its first event is not preflight")


def test_a_resumed_run_verifies_and_its_log_holds_a_preflight_per_invocation(tmp_path):
    """The rules hold for an honest run the runner wrote twice: --resume appends its own preflight."""
    out, r = a_run(tmp_path, [case(f"c-{i}", f"msg {i}", split=["full"]) for i in range(3)], resume=True)
    assert r.rc == 0, r.stdout + r.stderr
    events = [json.loads(line)["event"] for line in (out / "run.log").read_text(encoding="utf-8").splitlines()]
    assert events[0] == "preflight" and events.count("preflight") == 2, events
    verified, gated = verify_and_gate(out)
    assert verified.rc == 0 and gated.rc == 0, verified.stdout + gated.stdout


@pytest.mark.parametrize("rel, key, value", [
    ("manifest.yaml", "mode", "smoke"), ("manifest.yaml", "gate", "soft"),
    ("manifest.yaml", "selecting_split", "smoke"), ("manifest.yaml", "started_at", "2026-01-01T00:00:00.000000Z"),
    ("results.json", "mode", "smoke"), ("results.json", "k", 3), ("results.json", "dataset_version", 7),
    ("results.json", "harness_version", "9.9.9"),
])
def test_a_run_level_field_edited_in_one_of_manifest_and_results_is_named(green_run, rel, key, value):
    out = green_run
    edit_json(out / rel, **{key: value})
    assert_named(out, f"results.json ({key} differs from manifest.yaml")


def test_a_red_runs_exit_code_set_to_0_is_named(tmp_path):
    """A scorer error in a non-gating case closes the gate by the runner's exit 7 alone: set to 0 (or null)
    in results.json, the recount of scorer errors names it."""
    bad = case("c-bad", "hello", split=["full"], expect={"answer": {"must_contain": "hello"}}, gating=False)
    out, r = a_run(tmp_path, [bad, case("c-ok", "hello", split=["full"])])
    assert r.rc == 7, r.stdout
    gated = run_script("gate", out, "--json")
    assert gated.rc == 1 and gated.json["reasons"] == ["runner exit code 7 (not 0)"], gated.stdout
    for code in (0, None):
        edit_json(out / "results.json", exit_code=code)
        assert_named(out, f"results.json (exit_code {'null' if code is None else code} over 1 scorer error(s)")


def test_results_json_of_another_run_is_named(green_run):
    """results.json's run_id edited (another run's results dropped in): named, the gate closed (mutation hunt, round 3)."""
    edit_json(green_run / "results.json", run_id="regression-20261205T150000Z")
    assert_named(green_run, "results.json (run_id differs from manifest.yaml)")


@pytest.mark.parametrize("rel", ["verdicts_for_stats.jsonl", "run.log"])
def test_a_required_file_that_is_a_directory_is_missing(green_run, rel):
    """A required run-level file replaced by a directory of that name is no file: named missing, never
    taken as there (mutation hunt, round 3)."""
    (green_run / rel).unlink()
    (green_run / rel).mkdir()
    assert_named(green_run, f"{rel} (missing)")


def test_a_stopped_early_block_added_to_a_whole_run_is_named(green_run):
    """`stopped_early` goes with status stopped_fail_fast only: one planted in a whole run's results.json is
    named (mutation hunt, round 3)."""
    edit_json(green_run / "results.json", stopped_early={"fail_fast": 1, "gating_failures": 1, "not_run": 0})
    assert_named(green_run, "results.json (status stopped_fail_fast and `stopped_early` go together)")


def test_an_unreadable_run_report_is_named(tmp_path):
    """reliability.json (a k = 2 run's) cut to half its bytes: named unreadable, the gate closed (mutation
    hunt, round 3)."""
    out, r = a_run(tmp_path, [case(f"c-{i}", f"msg {i}", split=["full"]) for i in range(2)], k=2)
    assert r.rc == 0, r.stdout
    path = out / "reliability.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    assert_named(out, "reliability.json (unreadable)")
    path.write_text(text, encoding="utf-8")
    # a repeat's verdict.json edited with its sha256 to match: it no longer says what the case's repeats list says
    import hashlib

    def repeat_fails(doc):
        repeat = json.loads(doc["files"]["repeats/1/verdict.json"])
        repeat["verdict"] = "fail"
        text = json.dumps(repeat)
        doc["files"]["repeats/1/verdict.json"] = text
        doc["verdict"]["artifact_sha256"]["repeats/1/verdict.json"] = hashlib.sha256(text.encode()).hexdigest()
    _edit_record(out, "c-0", repeat_fails)
    assert_named(out, "cases/c-0/repeats/1/verdict.json (disagrees with the case's repeats list)")


def test_a_results_json_that_is_not_an_object_is_named(green_run):
    """results.json replaced by a JSON array: --verify names it (it is there, so never "missing"), and the
    gate does not open (mutation hunt, round 3)."""
    (green_run / "results.json").write_text("[]\n", encoding="utf-8")
    verified, gated = verify_and_gate(green_run)
    assert verified.rc == 6 and "results.json (not a JSON object)" in verified.json["missing_artifacts"], \
        verified.stdout
    assert gated.rc != 0, gated.stdout


def test_a_record_whose_verdict_names_another_case_is_named(green_run):
    """A journal line for c-0 whose verdict record says case_id c-1 (a record pasted under another id):
    named by its own problem, the gate closed (mutation hunt, round 3)."""
    path = green_run / "cases.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    doc = json.loads(lines[0])
    assert doc["case_id"] == "c-0"
    doc["verdict"]["case_id"] = "c-1"
    lines[0] = (json.dumps(doc) + "\n").encode()
    path.write_bytes(b"".join(lines))
    verified, gated = verify_and_gate(green_run)
    assert verified.rc == 6 and "cases/c-0/verdict.json (case_id differs from its directory)" in \
        verified.json["missing_artifacts"], verified.stdout
    assert gated.rc == 1 and gated.json["gate"] == "closed", gated.stdout


def test_every_artifact_of_a_record_is_held_to_its_sha256_and_an_extra_one_is_named(green_run):
    """Each file of a case record edited in turn (response.json, answer.txt, request.json, ...) is named by
    its sha256; a file added to a record is named as no part of the contract (mutation hunt, round 3)."""
    path = green_run / "cases.jsonl"
    original = path.read_bytes()
    lines = original.splitlines(keepends=True)
    doc = json.loads(lines[0])
    names = sorted(n for n in doc["files"] if n != "verdict.json" and n in doc["verdict"]["artifact_sha256"])
    assert "response.json" in names and "answer.txt" in names, names

    def verify_edit(files):
        lines[0] = (json.dumps(dict(doc, files=files)) + "\n").encode()
        path.write_bytes(b"".join(lines))
        return run_script("run_cases", "--verify", green_run)
    for name in names:
        verified = verify_edit(dict(doc["files"], **{name: doc["files"][name] + " "}))
        assert verified.rc == 6 and verified.json["missing_artifacts"] == [
            f"cases/c-0/{name} (edited: its sha256 differs from the one verdict.json recorded)"], verified.stdout
    verified = verify_edit(dict(doc["files"], **{"notes.txt": "mine"}))
    assert verified.rc == 6 and verified.json["missing_artifacts"] == [
        "cases/c-0/notes.txt (not part of the run-dir contract)"], verified.stdout
    path.write_bytes(original)
    assert run_script("run_cases", "--verify", green_run).rc == 0


def _edit_record(out, cid, edit):
    """The journal line of `cid` rewritten with `edit(doc)` applied."""
    path = out / "cases.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    for i, line in enumerate(lines):
        doc = json.loads(line)
        if doc["case_id"] == cid:
            edit(doc)
            lines[i] = (json.dumps(doc) + "\n").encode()
    path.write_bytes(b"".join(lines))


def test_a_failed_case_edited_to_pass_is_named_by_its_rollup(tmp_path):
    """A failing case's record edited to say pass (the derived files left as they were) is named as no
    roll-up of its layers: the one problem that says which record lies (mutation hunt, round 3)."""
    bad = case("c-bad", "hello", split=["full"], expect={"answer": {"must_contain": ["not in the echo"]}})
    out, r = a_run(tmp_path, [bad, case("c-ok", "hello", split=["full"])])
    assert r.rc == 0, r.stdout
    # verdicts_for_stats.jsonl: a row for every pass and every fail, in plan order
    assert [json.loads(line) for line in (out / "verdicts_for_stats.jsonl").read_text().splitlines()] == [
        {"case_id": "c-bad", "verdict": "fail"}, {"case_id": "c-ok", "verdict": "pass"}]

    def to_pass(doc):
        assert doc["verdict"]["verdict"] == "fail"
        doc["verdict"]["verdict"] = "pass"
    _edit_record(out, "c-bad", to_pass)
    verified, gated = verify_and_gate(out)
    assert verified.rc == 6 and ("cases/c-bad/verdict.json (edited: verdict 'pass' is not the rollup 'fail' of "
                                 "its layers/repeats)") in verified.json["missing_artifacts"], verified.stdout
    assert gated.rc == 1 and gated.json["gate"] == "closed", gated.stdout


@pytest.mark.parametrize("how", ["twice", "stranger"])
def test_a_journal_line_added_after_the_run_is_named(green_run, how):
    """A copy of a record appended to cases.jsonl, as it is or under an id the plan does not hold: named,
    the gate closed (mutation hunt, round 3)."""
    path = green_run / "cases.jsonl"
    first = path.read_bytes().splitlines(keepends=True)[0]
    doc = json.loads(first)
    if how == "stranger":
        doc["case_id"] = doc["verdict"]["case_id"] = "c-stranger"
    with path.open("ab") as f:
        f.write((json.dumps(doc) + "\n").encode())
    assert_named(green_run, "cases/c-0 (recorded twice in cases.jsonl)" if how == "twice"
                 else "cases/c-stranger (not a case of this run's plan)")


def test_a_row_appended_to_verdicts_jsonl_without_its_newline_is_named(green_run):
    """A last line with no newline is still a row: verdicts.jsonl with one appended that way is named
    (mutation hunt, round 3)."""
    with (green_run / "verdicts.jsonl").open("ab") as f:
        f.write(b'{"canary": false, "case_id": "c-9", "gating": true, "holdout": false, "layers": {}, "verdict": "pass"}')
    assert_named(green_run, "verdicts.jsonl (")


def test_a_row_of_verdicts_jsonl_blanked_is_named(green_run):
    """A row replaced by a blank line is a row missing, never a row matched (mutation hunt, round 3)."""
    path = green_run / "verdicts.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + b"\n")
    assert_named(green_run, "verdicts.jsonl (")
