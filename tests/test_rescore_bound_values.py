"""Rescore compares the values of the `${NAME}`s a request names, not only its text (the replay
key's `Binding`). A run whose adapter sends `"model": "${APP_MODEL}"` is made live against a real
loopback app, then rescored with the app gone. Before: a rescore under another APP_MODEL (or with
it unset) scored the stored answers as the answers to the new model's request and the gate read
PASS: a stale green. Now each is a replay miss naming the variable and what to do; the same value
still rescores to the live verdicts, and the run keeps only a digest (never the value)."""

from __future__ import annotations

import json
import os
import shutil

from helpers import run_script
from rundir_util import case_json, edit_case
from test_rescore_changed_requests import live_run, make_state

GOOD = "acme-model-good-7"
SOURCE = "smoke-20261205T000000Z"


def bound_state(tmp_path):
    state = make_state(tmp_path)
    adapter = state / "adapter.yaml"
    text = adapter.read_text().replace('"session_id": "<uuid>"}', '"session_id": "<uuid>", "model": "${APP_MODEL}"}')
    assert "${APP_MODEL}" in text
    adapter.write_text(text)
    return state


def rescore(state, source, run_id, monkeypatch, model):
    if model is None:
        monkeypatch.delenv("APP_MODEL", raising=False)
    else:
        monkeypatch.setenv("APP_MODEL", model)
    assert "TINY_URL" not in os.environ   # the app is gone (live_run gave it to its own processes only)
    r = run_script("rescore", source, "--out", state / "reports" / run_id)
    assert r.rc == 0, r.stdout + r.stderr
    return run_script("gate", state / "reports" / run_id), state / "reports" / run_id


def test_a_rescore_under_another_value_or_none_is_a_replay_miss_never_a_stale_green(tmp_path, monkeypatch):
    state = bound_state(tmp_path)
    monkeypatch.setenv("APP_MODEL", GOOD)
    source = live_run(tmp_path, state)
    kept = case_json(source, "w-rome", "request.json")
    assert kept["body"]["model"] == "${APP_MODEL}" and kept["values"]["vars"] == ["APP_MODEL"], kept
    assert len(kept["values"]["sha256"]) == 16
    assert not [p for p in source.rglob("*") if p.is_file() and GOOD.encode() in p.read_bytes()]

    g, again = rescore(state, source, "smoke-20261205T000100Z", monkeypatch, GOOD)
    assert g.rc == 0 and "3 pass, 0 fail" in g.stdout, g.stdout   # the same value: the same request
    assert case_json(again, "w-rome", "request.json")["values"] == kept["values"]
    assert run_script("run_cases", "--verify", again).rc == 0

    g, again = rescore(state, source, "smoke-20261205T000200Z", monkeypatch, "acme-model-bad-3")
    assert g.rc == 1, g.stdout
    assert ("w-rome (replay miss: case w-rome: request 1: the value of ${APP_MODEL} differs from the source run "
            f"{SOURCE}'s (compared by digest): its stored answer is to another request; rescore re-scores stored "
            "answers only: run the case live (run_cases.py))") in g.stdout, g.stdout
    assert run_script("run_cases", "--verify", again).rc == 0

    g, _ = rescore(state, source, "smoke-20261205T000300Z", monkeypatch, None)
    assert g.rc == 1, g.stdout
    assert (f"w-rome (replay miss: case w-rome: request 1 names ${{APP_MODEL}}, not set now: the source run {SOURCE} "
            "answered the value(s) it had then (its request.json keeps a digest, never a value); export the same "
            "value(s) and rescore again, or run the case live (run_cases.py))") in g.stdout, g.stdout


def test_a_source_run_that_kept_no_values_is_a_replay_miss(tmp_path, monkeypatch):
    """A run dir written before request.json kept the digest: whether the values are the same is
    unknown, so its answers are never rescored as if they were."""
    state = bound_state(tmp_path)
    monkeypatch.setenv("APP_MODEL", GOOD)
    source = live_run(tmp_path, state)
    older = state / "reports" / "smoke-20261204T000000Z"
    shutil.copytree(source, older)
    for cid in ("w-paris", "w-rome", "w-oslo"):
        doc = case_json(older, cid, "request.json")
        doc.pop("values")
        edit_case(older, cid, "request.json", (json.dumps(doc, sort_keys=True) + "\n").encode())
    g, _ = rescore(state, older, "smoke-20261205T000400Z", monkeypatch, GOOD)
    assert g.rc == 1, g.stdout
    assert ("w-rome (replay miss: case w-rome: request 1 names ${APP_MODEL}, but the source run "
            f"{SOURCE} kept no record of their values (a run dir written before request.json kept their "
            "digest), so its answer may be to other values; rescore re-scores stored answers only: run the case "
            "live (run_cases.py))") in g.stdout, g.stdout


def test_a_cli_request_not_rendered_by_rescore_still_compares_its_variables():
    """Whatever else a cli request is compared by (test_rescore_cli_request), the `${NAME}`s of the
    stored argv are compared with the digest it kept."""
    from assay.replay.key import Binding
    from assay.run.rescore_source import ReplayInvoker, ReplayTraceSource, Stored
    inv = {"mode": "cli", "command": ["./app", "--model", "${APP_MODEL}"]}
    recorded = {"mode": "cli", "argv": ["./app", "--model", "${APP_MODEL}", "hi"], "stdin": None, "env": ["APP_MODEL"]}
    kept = Binding.of(inv, {"APP_MODEL": GOOD}).kept(recorded)
    stored = {("c-1", 1): Stored(request=kept, response={"status": 0, "body": "ok"})}

    def miss(env):
        inv_r = ReplayInvoker("cli", stored, ReplayTraceSource(stored), invocation=inv, source_run=SOURCE,
                              binding=Binding.of(inv, env))
        return inv_r._miss({"id": "c-1"}, 1, stored[("c-1", 1)], "u", None)
    assert miss({"APP_MODEL": GOOD}) is None
    assert "the value of ${APP_MODEL} differs" in miss({"APP_MODEL": "acme-model-bad-3"})
    assert "names ${APP_MODEL}, not set now" in miss({})


def test_a_cli_apps_allowlisted_variable_is_compared_by_digest(tmp_path, monkeypatch):
    """A cli app given its model through `env_allowlist: [PATH, APP_MODEL]` (not a `${NAME}` of its
    argv): rescored under another APP_MODEL, or with it unset, the stored answers used to be scored as
    the new model's, PASS. Now its request.json keeps the value's digest and each is a miss naming the
    variable and where it comes from; the same value (PATH changed) still rescores to the live verdicts."""
    from test_rescore_cli_request import cli_state
    state = cli_state(tmp_path)
    adapter = state / "adapter.yaml"
    adapter.write_text(adapter.read_text().replace("env_allowlist: [PATH]", "env_allowlist: [PATH, HOME, APP_MODEL]"))
    monkeypatch.setenv("APP_MODEL", GOOD)
    source = live_run(tmp_path, state)
    kept = case_json(source, "w-rome", "request.json")
    assert kept["values"]["vars"] == ["APP_MODEL"], kept
    assert not [p for p in source.rglob("*") if p.is_file() and GOOD.encode() in p.read_bytes()]

    monkeypatch.setenv("PATH", "/usr/bin:/bin:" + os.environ["PATH"])   # another machine's PATH: no change
    g, _ = rescore(state, source, "smoke-20261205T000100Z", monkeypatch, GOOD)
    assert g.rc == 0 and "3 pass, 0 fail" in g.stdout, g.stdout

    miss = ("w-rome (replay miss: case w-rome: request 1: the value of APP_MODEL (invocation.env_allowlist) differs "
            f"from the source run {SOURCE}'s (compared by digest): its stored answer is to another request; rescore "
            "re-scores stored answers only: run the case live (run_cases.py))")
    for n, model in enumerate(("acme-model-bad-3", None)):
        g, again = rescore(state, source, f"smoke-20261205T00020{n}Z", monkeypatch, model)
        assert g.rc == 1, g.stdout
        assert miss in g.stdout, g.stdout
        assert run_script("run_cases", "--verify", again).rc == 0
