"""A newcomer's mistakes around rescore.py (the trial of re-scoring and replaying), on the keyword
router of test_rescore_changed_requests run live on a real loopback port, then rescored with the app
gone:

- a rescore interrupted midway (Ctrl-C, a CI timeout) left a run dir whose gate, wait_run.py and
  draft_report.py said "finish it with: run_cases.py --plan <state>/work/plan.json --out <it>
  --resume" (or `--plan "rescore"`): the live plan, whose run id is not the rescore's, so the command
  failed (exit 2). A rescore has no --resume: they now name the rescore.py command that scores the
  source again into a new run dir, and that command works;
- compare_runs.py of a run and its own rescore said "no verdict changed" and "the app's own changes"
  with no word that the candidate's answers were the base's, scored again (a replayed side was
  named; a rescored one was not);
- a case renamed, or moved out of the source run's split, since the run: the refusal named the
  case but no fix, or told a rescore user to "rebuild the plan with make_plan.py";
- `cache.py stats --cache .assay` (the state dir, not its cache) said "0 entries" of a cache that
  holds the recording; now exit 2 naming the cache it meant.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from helpers import SCRIPTS, run_script, write_yaml
from test_rescore_changed_requests import case_yaml, live_run, make_state, rescore

SLOW_RESCORE = """\
import runpy, sys, time
sys.path.insert(0, {scripts!r})
import assay.run.rescore_source as rs
_prepare = rs.ReplayInvoker.prepare
def slow(self, *a, **k):   # each stored answer takes 0.3 s to replay: the test can stop it midway
    time.sleep(0.3)
    return _prepare(self, *a, **k)
rs.ReplayInvoker.prepare = slow
sys.argv = ["rescore.py"] + sys.argv[1:]
runpy.run_path({script!r}, run_name="__main__")
"""


def _interrupted_rescore(tmp_path, state, source, run_id, sig):
    for i in range(8):   # enough cases that the rescore is stopped with some done and some not
        write_yaml(state / "datasets" / f"w-x{i}.yaml",
                   case_yaml(f"w-x{i}", f"What is the weather in X{i}?", "weather", f"sunny in X{i}"))
    out = state / "reports" / run_id
    driver = tmp_path / "slow_rescore.py"
    driver.write_text(SLOW_RESCORE.format(scripts=str(SCRIPTS), script=str(SCRIPTS / "rescore.py")))
    env = {k: v for k, v in os.environ.items() if k != "TINY_URL"}
    proc = subprocess.Popen([sys.executable, str(driver), str(source), "--out", str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (out / "cases.jsonl").is_file() or not (out / "cases.jsonl").read_bytes():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out


def test_an_interrupted_rescore_names_the_rescore_command_that_finishes_it(tmp_path):
    state = make_state(tmp_path)
    source = live_run(tmp_path, state, run_id="smoke-20261205T000000Z")
    # the live run's suite had 3 smoke cases; the 8 added since are replay misses in the rescore
    out = _interrupted_rescore(tmp_path, state, source, "smoke-20261205T010000Z", signal.SIGKILL)
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout
    assert "run interrupted" in g.stdout, g.stdout
    assert "--resume" not in g.stdout.replace("has no --resume", ""), g.stdout
    line = next(x for x in g.stdout.splitlines() if "gate closed: run interrupted" in x)
    assert "rescore it again: python3 " in line and "rescore.py" in line and str(source) in line, line
    assert "a rescore has no --resume" in line and f"delete this interrupted one ({out})" in line, line

    w = run_script("wait_run", out, "--timeout-s", "0")
    assert w.rc == 4, w.stdout
    assert "rescore.py" in w.json["resume"] and "--resume" not in w.json["resume"], w.json
    assert "a rescore has no --resume" in w.json["resume_note"], w.json
    d = run_script("draft_report", out, "-o", tmp_path / "report.md")
    assert d.rc == 2 and "rescore.py" in d.json["resume"], d.stdout

    # the command it names works: a new, complete rescore of the same source
    cmd = w.json["resume"].split('"')
    new_out = cmd[5]
    assert cmd[1].endswith("rescore.py") and cmd[3] == str(source) and cmd[4].strip() == "--out", cmd
    r = run_script("rescore", cmd[3], "--out", new_out,
                   env={k: v for k, v in os.environ.items() if k != "TINY_URL"})
    assert r.rc == 0, r.stdout + r.stderr
    assert run_script("run_cases", "--verify", new_out).rc == 0
    # the source run is untouched: nothing of it is lost
    assert run_script("gate", source).rc == 0


def test_compare_with_a_rescore_says_its_answers_are_stored_ones(tmp_path):
    state = make_state(tmp_path)
    source = live_run(tmp_path, state, run_id="smoke-20261205T000000Z")
    r, again = rescore(state, source, "smoke-20261205T020000Z")
    assert r.rc == 0, r.stdout + r.stderr
    c = run_script("compare_runs", source, again, "-o", tmp_path / "compare.json")
    assert c.rc == 0, c.stdout + c.stderr
    # "no verdict changed" between a run and its own rescore is true by construction, never the app holding up
    assert c.json["headline"] == ("no verdict changed — the candidate is a rescore of the other run: the same "
                                  "answers, the app was not called (notes)"), c.json
    assert any(n.startswith("the candidate run is a rescore of the base run smoke-20261205T000000Z (rescore.py)")
               for n in c.json["notes"]), c.json["notes"]
    g = run_script("gate", again, "--baseline", source)
    assert g.rc == 0 and "note: the candidate run is a rescore of the base run" in g.stdout, g.stdout

    # a later live run compared with the rescore: the rescored side is named, never read as a live run
    later = live_run(tmp_path, state, run_id="smoke-20261205T030000Z")
    c = run_script("compare_runs", again, later, "-o", tmp_path / "compare2.json")
    assert c.rc == 0, c.stdout + c.stderr
    assert ("the base run was rescored from run smoke-20261205T000000Z (rescore.py): its answers are that run's "
            "stored ones scored again, not the app's today") in c.json["notes"], c.json["notes"]


def test_a_case_renamed_or_moved_out_of_the_split_is_refused_with_the_fix(tmp_path):
    state = make_state(tmp_path)
    source = live_run(tmp_path, state, run_id="smoke-20261205T000000Z")
    ds = state / "datasets"
    # moved out of the smoke split the source run selected: named with its file, split and the fix,
    # never "rebuild the plan with make_plan.py" (a rescore user made no plan)
    text = (ds / "w-rome.yaml").read_text()
    (ds / "w-rome.yaml").write_text(text.replace("split: [smoke, full]", "split: [full]"))
    r, again = rescore(state, source, "smoke-20261205T040000Z")
    assert r.rc == 2, r.stdout
    err = r.json
    assert err["error"] == ("rescore: 1 case(s) of the source run smoke-20261205T000000Z left its 'smoke' split "
                            "since: w-rome (datasets/w-rome.yaml: split ['full']); a rescore re-scores the cases the "
                            "source run ran: put 'smoke' back in their split, or measure the current suite live "
                            "(make_plan.py, then run_cases.py)"), err
    assert err["cases"] == ["w-rome"] and not again.exists()
    (ds / "w-rome.yaml").write_text(text)
    # renamed: the old id is gone, the new one has no stored answer; both named, and the fix
    (ds / "w-rome.yaml").unlink()
    write_yaml(ds / "w-roma.yaml", text.replace("id: w-rome", "id: w-roma"))
    r, again = rescore(state, source, "smoke-20261205T040000Z")
    assert r.rc == 2, r.stdout
    assert r.json["missing_cases"] == ["w-rome"], r.json
    assert ("(w-rome); the suite has case(s) the source run does not (w-roma): a renamed case has no stored "
            "answer under its new id; rescore needs every case it re-scores: restore them under "
            "<state>/datasets/") in r.json["error"], r.json
    assert "make_plan.py, then run_cases.py" in r.json["error"] and not again.exists()


def test_cache_py_given_the_state_dir_as_cache_names_the_cache_never_reads_empty(tmp_path):
    state = make_state(tmp_path)
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    from fakeapp import FakeApp
    from test_rescore_changed_requests import router
    with FakeApp(router) as app:
        env = dict(os.environ, TINY_URL=app.url)
        assert run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o",
                          work / "plan.json", "--run-id", "smoke-20261205T000000Z", env=env).rc == 0
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", state / "reports" / "smoke-20261205T000000Z",
                       "--record", "--progress", "never", env=env)
        assert r.rc == 0, r.stdout + r.stderr
    assert run_script("cache", "stats", "--state-dir", state).json["entries"] > 0
    for args in (("stats",), ("prune", "--older-than", "0s")):
        bad = run_script("cache", *args, "--cache", state)
        assert bad.rc == 2, bad.stdout
        assert bad.json["error"] == (f"{state}: not a record/replay cache (no v1/ in it); the cache of that state dir "
                                     f"is {state / 'cache'}: pass --state-dir {state} or --cache {state / 'cache'}; "
                                     "nothing was read or deleted"), bad.json
    assert run_script("cache", "stats", "--cache", state / "reports").rc == 2
    assert run_script("cache", "stats", "--state-dir", state).json["entries"] > 0   # nothing was deleted
