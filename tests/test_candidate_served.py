"""candidate.py keep only on runs that served the edit (the optimize loop, a trial's item: the app is not
restarted).

A long-running http app reads its prompt at start; assay never starts it. After an edit to the prompt
file the app kept serving the old text, the candidate's run measured the champion's app again, and an
LLM-like drift between the two runs (refund questions routed right by chance) read as the edit's win:
keep exit 3, `improved`, proven, on a run that could not have seen the edit. Now the adapter may declare
`invocation.health_check.revision_from` (what the app says it serves, e.g. a hash of the prompts it
loaded), the runner records it in the manifest, keep refuses a run that reports the champion's revision,
and without one every keep says nothing shows the app served the edit (`served_note`). A `--resume`
against an app that now reports another revision is refused (one run, two apps). A real app on its own
port reads a config file in a real git checkout once, at start, as such an app does.
"""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from fakeapp import FakeApp, Reply, case, make_plan, make_state, run_runner, write_plan
from test_candidate_evidence import candidate, champion, make_app, measure, new

pytestmark = pytest.mark.slow   # several runs each, in sequence (conftest: slow files first)

CHAMP = "regression-20261201T000000Z"


def started_app(app_dir, drift_after):
    """An app that reads words.txt ONCE (a prompt loaded at start) and reports its hash on /health; like a
    model, it drifts: after `drift_after` chat calls its refund questions happen to route to billing."""
    words = (app_dir / "words.txt").read_text()
    calls = {"n": 0}

    def handle(req):
        if req.method == "GET":
            return Reply(200, {"ok": True, "prompt": {"sha": hashlib.sha256(words.encode()).hexdigest()[:12]}})
        calls["n"] += 1
        msg = req.json["message"].lower()
        route = "tech"
        for line in words.splitlines():
            name, _, ws = line.partition(":")
            if any(w in msg for w in ws.split()):
                route = name.strip()
                break
        if "refund" in msg and calls["n"] > drift_after:
            route = "billing"
        return Reply(200, {"answer": f"sent to {route}", "route": route})
    return handle


def declare_revision(state):
    path = state / "adapter.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["invocation"]["health_check"]["revision_from"] = "prompt.sha"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_a_run_of_an_app_not_restarted_after_the_edit_is_no_evidence(tmp_path):
    app, state = make_app(tmp_path)
    declare_revision(state)
    with FakeApp(started_app(app, drift_after=11)) as fake:   # 11: the champion's two runs (8 + 3 cases)
        champion(state, fake.url)
        manifest = json.loads((state / "reports" / CHAMP / "manifest.yaml").read_text())
        old = manifest["health_check"]["revision"]
        assert manifest["health_check"]["revision_from"] == "prompt.sha" and len(old) == 12
        new(state, "refunds")
        (app / "words.txt").write_text("billing: invoice refund\n")   # the edit; the app is not restarted
        stale = measure(state, fake.url, "regression-20261201T010000Z", CHAMP)
        comparison = json.loads((stale / "comparison.json").read_text())
        assert comparison["keep"] is True and comparison["fixed_by_candidate"] == 5   # the drift, read as a win
        r = candidate(state, "keep", "--id", "refunds", "--training", stale)
        assert r.rc == 2, r.stdout   # was exit 3: a training win for an edit the app never served
        assert (f"the app reported revision '{old}' (invocation.health_check.revision_from) in this run and in "
                f"its baseline run {CHAMP}: it served what the champion's run measured") in r.json["error"]
        assert "restart the app on the edited files, then measure the edit with a new run" in r.json["error"]
    with FakeApp(started_app(app, drift_after=10 ** 6)) as fake:   # restarted: it loads the edit
        fresh = measure(state, fake.url, "regression-20261201T020000Z", CHAMP)
        r = candidate(state, "keep", "--id", "refunds", "--training", fresh)
        assert r.rc == 3 and r.json["decision"] == "needs_holdout", r.stdout
        served = r.json["training"]["served"]
        assert served["known"] is True and served["baseline_revision"] == old and served["revision"] != old
        assert "served_note" not in r.json
    log = [json.loads(line) for line in (state / "candidates" / "log.jsonl").read_text().splitlines()]
    assert log[-1]["training"]["served"] == served


def test_without_a_revision_every_decision_says_it_cannot_know(tmp_path):
    app, state = make_app(tmp_path)
    with FakeApp(started_app(app, drift_after=11)) as fake:
        champion(state, fake.url)
        new(state, "refunds")
        (app / "words.txt").write_text("billing: invoice refund\n")
        stale = measure(state, fake.url, "regression-20261201T010000Z", CHAMP)
        r = candidate(state, "keep", "--id", "refunds", "--training", stale)
    assert r.rc == 3, r.stdout   # nothing tells it apart from a real win; it says so
    assert r.json["training"]["served"]["known"] is False
    assert r.json["served_note"].startswith("nothing shows the app served the edit: this run recorded no revision "
                                            "(invocation.health_check.revision_from)"), r.json
    assert "restart it after each edit" in r.json["served_note"]


def test_a_resume_against_an_app_serving_another_revision_is_refused(tmp_path):
    state = make_state(tmp_path)
    revision = {"sha": "aaa", "down": True}

    def handle(req):
        if req.method == "GET":
            return Reply(200, {"ok": True, "revision": revision["sha"]})
        if revision["down"]:
            return Reply(500, "down")   # every case infra: the run stops (exit 5), resumable
        return Reply(200, {"message": req.json["message"]})
    with FakeApp(handle) as fake:
        plan = make_plan(state, [case(f"c{i}", f"hello {i}") for i in range(12)], app_url=fake.url,
                         execution={"max_attempts": 1, "backoff_s": []})
        plan["adapter"]["invocation"]["health_check"]["revision_from"] = "revision"
        plan["adapter"]["invocation"]["max_concurrency"] = 1
        path, out = write_plan(state, plan), state / "reports" / plan["run_id"]
        first = run_runner("--plan", path, "--out", out, "--progress", "never")
        assert first.rc == 5, first.stdout + first.stderr
        assert json.loads((out / "manifest.yaml").read_text())["health_check"]["revision"] == "aaa"
        revision.update(sha="bbb", down=False)   # restarted on an edited prompt
        r = run_runner("--plan", path, "--out", out, "--resume", "--progress", "never")
        assert r.rc == 3, r.stdout + r.stderr
        assert (f"--resume: the app now reports revision 'bbb' (invocation.health_check.revision_from), but run "
                f"{plan['run_id']} started against 'aaa'") in r.json["error"]
        revision["sha"] = "aaa"   # the app the run started against, up again: the run finishes
        r = run_runner("--plan", path, "--out", out, "--resume", "--progress", "never")
        assert r.rc == 0 and r.json["status"] == "ok", r.stdout + r.stderr
        plan["adapter"]["invocation"]["health_check"]["revision_from"] = "nope"   # a path the answer lacks
        plan["run_id"] = "smoke-20260101T000001Z"
        r = run_runner("--plan", write_plan(state, plan), "--out", state / "reports" / plan["run_id"],
                       "--progress", "never")
    assert r.rc == 3 and "nothing at invocation.health_check.revision_from ('nope')" in r.json["error"], r.stdout
