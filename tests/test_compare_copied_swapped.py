"""Two after-the-run mistakes that read green (wave 4 newcomer sweep), on two real runs of a small travel
app on a loopback port: the app quotes 120 (the baseline), then 999 (a regression on all three cases).

- A run dir compared with a copy of itself (`cp -a` of the baseline, then the copy given as the other run):
  before, compare_runs.py said "no verdict changed" and stats.py "within noise" — every case paired
  with itself, by construction.
- stats.py given the two runs the other way round (the newer, broken run first): before, "IMPROVED ...
  keep = True" for the regression, with nothing to say why (compare_runs.py says it in its notes).
"""

from __future__ import annotations

import shutil

import pytest

from fakeapp import FakeApp, Reply
from helpers import run_script, write_yaml
from test_no_silent_green import ADAPTER, PROFILE, case_yaml

BASE, CAND = "smoke-20261201T000000Z", "smoke-20261202T000000Z"


def quoting(price: int):
    def reply(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(200, {"answer": f"A flight to Oslo costs {price} EUR.", "route": "quotes",
                           "quote": {"price": price}})
    return reply


def run_once(state, run_id: str, price: int):
    work = state / "work"
    plan = work / f"{run_id}.json"
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", plan,
                   "--run-id", run_id)
    assert r.rc == 0, r.stdout + r.stderr
    out = state / "reports" / run_id
    with FakeApp(quoting(price)) as app:
        r = run_script("run_cases", "--plan", plan, "--out", out, env={"TRAVEL_BASE_URL": app.url})
    assert r.rc == 0, r.stdout + r.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("travel")
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.replace("RESULT_PATH", "quote.price"))
    write_yaml(state / "profile.yaml", PROFILE)
    for i in range(1, 4):
        write_yaml(state / "datasets" / f"c-0000000{i}.yaml", case_yaml(f"c-0000000{i}"))
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work")
    assert r.rc == 0, r.stdout + r.stderr
    base, cand = run_once(state, BASE, 120), run_once(state, CAND, 999)
    copy = root / "kept-baseline"
    shutil.copytree(base, copy)
    return {"base": base, "cand": cand, "copy": copy}


def test_a_run_compared_with_a_copy_of_itself_is_refused(runs):
    for argv in (("compare_runs", runs["copy"], runs["base"]), ("gate", runs["base"], "--baseline", runs["copy"])):
        r = run_script(*argv)
        assert r.rc == 2, (argv, r.stdout, r.stderr)
        assert "headline" not in r.stdout and ": PASS" not in r.stdout and "Traceback" not in r.stderr
        err = r.json["error"]
        assert f"hold the same run ({BASE}, started " in err and "one is a copy of the other" in err
    ok = run_script("compare_runs", runs["base"], runs["cand"])   # two runs are still compared
    assert ok.rc == 0 and ok.json["counts"]["newly_failing"] == 3


def test_stats_refuses_the_verdicts_of_one_run_copied(runs):
    r = run_script("stats", runs["copy"] / "verdicts_for_stats.jsonl", runs["base"] / "verdicts_for_stats.jsonl")
    assert r.rc == 2, r.stdout + r.stderr
    assert "WITHIN NOISE" not in r.stdout.upper() and "Traceback" not in r.stderr
    assert f"are the verdicts of the same run ({BASE}, started " in r.json["error"]


def test_stats_says_when_the_baseline_is_the_newer_run(runs):
    backwards = (runs["cand"] / "verdicts_for_stats.jsonl", runs["base"] / "verdicts_for_stats.jsonl")
    doc = run_script("stats", *backwards).json
    assert doc["keep"] is True and doc["fixed_by_candidate"] == 3   # the regression, read backwards
    assert doc["notes"][0].startswith(f"the baseline run {CAND} started after the candidate {BASE} (")
    assert "keep read the other way round" in doc["notes"][0]
    text = run_script("stats", *backwards, "--text")
    assert text.rc == 0 and text.stdout.splitlines()[0].startswith(f"note: the baseline run {CAND} started after")
    right = run_script("stats", *reversed(backwards)).json   # the right order: no note
    assert "notes" not in right and right["broken_by_candidate"] == 3


def test_gate_against_a_baseline_draws_no_comparison_from_hand_edited_verdicts(runs, tmp_path):
    # Before: gate.py --baseline read each side's verdicts.jsonl as it was (compare_runs.py refuses it): a
    # baseline edited to fail c-00000001 hid its regression ("still failing", no NEWLY FAILING), and a
    # candidate edited to pass printed "compared with ...: no verdict changed" and newly_failing_gating [].
    state = tmp_path / ".assay"
    shutil.copytree(runs["base"].parent.parent, state, ignore=shutil.ignore_patterns("work"))
    base, cand = state / "reports" / BASE, state / "reports" / CAND
    edits = ((base, '"verdict": "pass"', '"verdict": "fail"', "base"),
             (cand, '"verdict": "fail"', '"verdict": "pass"', "candidate"))
    for run_dir, old, new, role in edits:
        for name in ("verdicts.jsonl", "verdicts_for_stats.jsonl"):
            path = run_dir / name
            path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
        r = run_script("gate", cand, "--baseline", base, "--json")
        assert r.rc == 2, (role, r.stdout, r.stderr)
        assert r.json["error"].startswith(f"{role} {run_dir}: fails run_cases.py --verify ("), r.json["error"]
        assert "c-00000001 disagrees with its verdict.json" in r.json["error"]
        for name in ("verdicts.jsonl", "verdicts_for_stats.jsonl"):   # restored: one side edited at a time
            shutil.copy2(runs["base" if role == "base" else "cand"] / name, run_dir / name)
