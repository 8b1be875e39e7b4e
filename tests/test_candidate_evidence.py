"""candidate.py keep only on runs that measured this candidate (the optimize newcomer trial).

A keep read comparison.json alone, so any run with a winning comparison was evidence: a candidate
that fixed nothing was kept and pinned on the runs of an earlier candidate the user had reverted;
a case edited between the champion's run and the candidate's (same dataset_version) counted as
fixed by the candidate; the holdout could be looked at before training or twice, and a holdout
baseline could be a rejected candidate's run. Here a real app on its own port routes by a config
file in a real git checkout (the candidate's surface), and every step is the scripts as a user runs
them (run_cases.py in its own process; the setup steps and candidate.py's command, the same scripts with
the same arguments, in this one).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from fakeapp import FakeApp, Reply
from fixtures_authoring import run_inproc
from helpers import run_script, write_yaml
from test_rescore_changed_requests import ADAPTER, PROFILE, case_yaml

pytestmark = pytest.mark.slow   # several runs each, in sequence (conftest: slow files first)

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
TRAIN = [("r-refund-1", "I want a refund", "billing"), ("r-refund-2", "refund my order", "billing"),
         ("r-refund-3", "where is my refund", "billing"), ("r-refund-4", "refund it please", "billing"),
         ("r-refund-5", "a refund for May", "billing"), ("b-invoice", "my invoice", "billing"),
         ("t-crash", "the app crashes", "tech"), ("t-vpn", "vpn is down", "tech")]
HOLD = [("h-sealed-money-1", "my money back", "billing"), ("h-sealed-money-2", "money back now", "billing"),
        ("h-sealed-screen", "black screen", "tech")]


def router(app_dir):
    """Routes by the words in app_dir/words.txt (read on every request): a line `billing: w1 w2`."""
    def handle(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = req.json["message"].lower()
        route = "tech"
        for line in (app_dir / "words.txt").read_text().splitlines():
            name, _, words = line.partition(":")
            if any(w in msg for w in words.split()):
                route = name.strip()
                break
        return Reply(200, {"answer": f"sent to {route}", "route": route})
    return handle


def git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env={**GIT_ENV, "HOME": str(root)})


def make_app(tmp_path):
    app = tmp_path / "app"
    state = app / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, text, route in TRAIN:
        write_yaml(state / "datasets" / f"{cid}.yaml", case_yaml(cid, text, route, f"sent to {route}", "[full]"))
    for cid, text, route in HOLD:
        write_yaml(state / "datasets" / f"{cid}.yaml", case_yaml(cid, text, route, f"sent to {route}", "[holdout]"))
    (app / "words.txt").write_text("billing: invoice\n")
    (app / "other.txt").write_text("nothing\n")
    (app / ".gitignore").write_text(".assay/\n")
    git(app, "init", "-q")
    git(app, "add", "-A")
    git(app, "commit", "-qm", "init")
    return app, state


def measure(state, url, run_id, baseline=None):
    """convert, plan (k=1) and run one training or holdout run, as the skill's step 5 / 7."""
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    env = dict(os.environ, TINY_URL=url)
    mode = run_id.split("-")[0]
    p = run_inproc("make_plan", work / "converted.json", "--mode", mode, "--k", "1", "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", run_id)   # setup steps in this process; the run is not
    assert p.rc == 0, p.stdout + p.stderr
    extra = ["--baseline-verdicts", state / "reports" / baseline / "verdicts_for_stats.jsonl"] if baseline else []
    r = run_script("run_cases", "--plan", work / "plan.json", "--out", state / "reports" / run_id,
                   "--progress", "never", *extra, env=env)
    assert r.rc == 0, r.stdout + r.stderr
    return state / "reports" / run_id


def champion(state, url):
    measure(state, url, "regression-20261201T000000Z")
    measure(state, url, "holdout-20261201T000000Z")
    (state / "reports" / "baseline.json").write_text(json.dumps(
        {"run_id": "regression-20261201T000000Z", "dataset_version": 1, "harness_version": "0.1.0"}))


@pytest.fixture(scope="module")
def championed(tmp_path_factory):
    """make_app's app with champion()'s two runs (regression and holdout, against router()), made once for
    the module; each test takes its own copy (copy_championed): the runs are the same in every test."""
    root = tmp_path_factory.mktemp("champion")
    app, state = make_app(root)
    with FakeApp(router(app)) as fake:
        champion(state, fake.url)
    return app


def copy_championed(championed, tmp_path):
    """A copy of the module's championed app (its git checkout, state dir and runs) for one test to change."""
    app = shutil.copytree(championed, tmp_path / "app", symlinks=True)
    return app, app / ".assay"


def candidate(state, *args):
    """candidate.py ACTION STATE ARGS..., its parser and command run in this process (fixtures_authoring.
    run_inproc: the same argv, JSON and exit code; ~70 calls across the candidate files, a fresh interpreter
    each was ~0.16 CPU s); test_candidate.py drives new, keep and revert as subprocesses."""
    return run_inproc("candidate", args[0], state, *args[1:])


def next_second():
    """Sleep into the next whole second (and 50 ms on): created_at has whole seconds, so what came before
    is in an earlier second and what follows in a later one (as a flat 1.1 s sleep made sure, 0.55 s sooner
    on average)."""
    time.sleep(1.05 - time.time() % 1)


def new(state, cid, surface="words.txt"):
    next_second()       # created_at has whole seconds: what came before is before it
    r = candidate(state, "new", "--id", cid, "--surface", surface)
    assert r.rc == 0, r.stdout
    next_second()       # created_at has whole seconds: what follows is after it


def trained(state, app, url, cid, words, run_id):
    """A new candidate `cid` whose edit writes `words`, measured on training against the champion: it
    won there (keep exit 3: a holdout look next); its training run dir."""
    new(state, cid)
    (app / "words.txt").write_text(words)
    train = measure(state, url, run_id, "regression-20261201T000000Z")
    assert candidate(state, "keep", "--id", cid, "--training", train).rc == 3
    return train


def sealed_out(r):
    for cid, text, _ in HOLD:
        assert cid not in r.stdout + r.stderr and text not in r.stdout + r.stderr


def test_runs_of_another_candidate_or_from_before_the_candidate_are_not_its_evidence(championed, tmp_path):
    app, state = copy_championed(championed, tmp_path)
    with FakeApp(router(app)) as fake:
        new(state, "other-file", "other.txt")   # made first; its edit (another file) comes later, measured by nobody
        new(state, "refund-words")
        (app / "words.txt").write_text("billing: invoice refund money\n")
        train = measure(state, fake.url, "regression-20261201T010000Z", "regression-20261201T000000Z")
        hold_base = "holdout-20261201T000000Z"
        r = candidate(state, "keep", "--id", "refund-words", "--training", train)
        assert r.rc == 3 and r.json["decision"] == "needs_holdout", r.stdout
        hold = measure(state, fake.url, "holdout-20261201T020000Z", hold_base)
        # the user reverts the winner instead of keeping it ...
        assert candidate(state, "revert", "--id", "refund-words").rc == 0
        # ... and a candidate that fixes nothing offers its runs: refused, nothing pinned
        new(state, "no-fix")
        (app / "words.txt").write_text("billing: invoice\ntech: printer\n")
        r = candidate(state, "keep", "--id", "no-fix", "--training", train, "--holdout", hold)
        assert r.rc == 2, r.stdout
        assert ("--training " + str(train) + ": started ") in r.json["error"], r.json
        assert "before candidate no-fix was made" in r.json["error"] and "measure the edit with a new run" in r.json["error"]
        # a candidate made before the run (so the time does not tell): the log names whose run it is
        assert candidate(state, "revert", "--id", "no-fix").rc == 0
        (app / "other.txt").write_text("edited\n")
        r = candidate(state, "keep", "--id", "other-file", "--training", train)
        assert r.rc == 2 and ("run regression-20261201T010000Z is already the evidence of candidate refund-words "
                              "(needs_holdout)") in r.json["error"], r.stdout
        pin = json.loads((state / "reports" / "baseline.json").read_text())
        assert pin["run_id"] == "regression-20261201T000000Z"
        sealed_out(r)


def test_the_holdout_is_looked_at_once_after_training_against_the_champion(championed, tmp_path):
    app, state = copy_championed(championed, tmp_path)
    with FakeApp(router(app)) as fake:
        new(state, "peek-first")
        (app / "words.txt").write_text("billing: invoice refund money\n")
        early = measure(state, fake.url, "holdout-20261201T010000Z", "holdout-20261201T000000Z")
        train = measure(state, fake.url, "regression-20261201T020000Z", "regression-20261201T000000Z")
        assert candidate(state, "keep", "--id", "peek-first", "--training", train).rc == 3
        r = candidate(state, "keep", "--id", "peek-first", "--training", train, "--holdout", early)
        assert r.rc == 2 and "before the training run regression-20261201T020000Z finished" in r.json["error"], r.stdout
        assert "revert it (candidate.py revert --id peek-first)" in r.json["error"]
        # a second look for the same candidate, hoping for a better draw: the ledger says 2 looks
        again = measure(state, fake.url, "holdout-20261201T030000Z", "holdout-20261201T000000Z")
        r = candidate(state, "keep", "--id", "peek-first", "--training", train, "--holdout", again)
        assert r.rc == 2 and ("the holdout was looked at 2 times since candidate peek-first was made (run "
                              "holdout-20261201T010000Z besides holdout-20261201T030000Z") in r.json["error"], r.stdout
        sealed_out(r)
        assert candidate(state, "revert", "--id", "peek-first").rc == 0
        # a candidate that breaks the holdout is rejected, and its holdout run is no baseline for the next one
        # (its training breaks no gating case: "screen" is a holdout word only)
        train = trained(state, app, fake.url, "all-billing", "billing: invoice refund money screen\n",
                        "regression-20261201T040000Z")
        bad = measure(state, fake.url, "holdout-20261201T050000Z", "holdout-20261201T000000Z")
        r = candidate(state, "keep", "--id", "all-billing", "--training", train, "--holdout", bad)
        assert r.rc == 1 and r.json["decision"] == "rejected", r.stdout
        assert candidate(state, "revert", "--id", "all-billing").rc == 0
        train = trained(state, app, fake.url, "vs-loser", "billing: invoice refund\n", "regression-20261201T060000Z")
        hold = measure(state, fake.url, "holdout-20261201T070000Z", "holdout-20261201T050000Z")
        r = candidate(state, "keep", "--id", "vs-loser", "--training", train, "--holdout", hold)
        assert r.rc == 2 and ("compared against holdout-20261201T050000Z, the run of candidate all-billing "
                              "(rejected), not the champion") in r.json["error"], r.stdout
        sealed_out(r)


def test_a_case_edited_since_the_champion_run_is_not_the_candidates_fix(championed, tmp_path):
    app, state = copy_championed(championed, tmp_path)
    with FakeApp(router(app)) as fake:
        new(state, "one-word")
        (app / "words.txt").write_text("billing: invoice where\n")     # fixes r-refund-3 only
        originals = {}
        for cid in ("r-refund-1", "r-refund-2", "h-sealed-money-1"):    # the user "fixes" cases by rewriting them
            path = state / "datasets" / f"{cid}.yaml"
            originals[path] = path.read_text()
            path.write_text(originals[path].replace("billing", "tech"))
        train = measure(state, fake.url, "regression-20261201T010000Z", "regression-20261201T000000Z")
        comparison = json.loads((train / "comparison.json").read_text())
        assert comparison["keep"] is True and comparison["fixed_by_candidate"] == 3    # what keep used to trust
        r = candidate(state, "keep", "--id", "one-word", "--training", train)
        assert r.rc == 2, r.stdout
        assert ("2 case(s) changed since the baseline run regression-20261201T000000Z (r-refund-1, r-refund-2): "
                "their flips are the case edits', not the candidate's") in r.json["error"], r.json
        assert "bump datasets/dataset.yaml dataset_version" in r.json["error"]
        for path, text in originals.items():
            if "h-sealed" not in path.name:
                path.write_text(text)
        (app / "words.txt").write_text("billing: invoice refund now\n")   # a real training win
        train = measure(state, fake.url, "regression-20261201T020000Z", "regression-20261201T000000Z")
        assert candidate(state, "keep", "--id", "one-word", "--training", train).rc == 3
        hold = measure(state, fake.url, "holdout-20261201T030000Z", "holdout-20261201T000000Z")
        assert json.loads((hold / "comparison.json").read_text())["keep"] is True   # the edited case "fixed"
        r = candidate(state, "keep", "--id", "one-word", "--training", train, "--holdout", hold)
        assert r.rc == 2 and ("1 case(s) changed since the baseline run holdout-20261201T000000Z (1 holdout case(s) "
                              "(ids sealed))") in r.json["error"], r.stdout
        sealed_out(r)
        assert not (state / "reports" / "baseline.json").read_text().count("holdout-20261201T030000Z")


def app_with_sealed_money(tmp_path):
    """make_app's app and state dir, with two more sealed holdout billing cases (money words)."""
    from helpers import write_yaml
    from test_rescore_changed_requests import case_yaml
    app, state = make_app(tmp_path)
    for cid, text in (("h-sealed-money-3", "cash money"), ("h-sealed-money-4", "money owed")):
        write_yaml(state / "datasets" / f"{cid}.yaml", case_yaml(cid, text, "billing", "sent to billing", "[holdout]"))
    return app, state
