"""A holdout case that was not measured closes the holdout gate, and its id appears nowhere (the
replay trial).

results.json leaves the holdout rows out (the seal), and every per-case close reason (a check that
never ran, a replay miss, an adapter gap, an unstable judge) walked only results.json's rows: a
holdout run whose sealed case asserted a route the app no longer returned read PASS
("holdout (aggregate only): 3/3 pass" of 4 cases), while the same case in a smoke run closed the
gate. The gate now asks the same question of the holdout rows verdicts.jsonl keeps and counts them
without naming them; a rescored holdout run with a case its split gained closes the same way.
"""

from __future__ import annotations

import json
import os

from fakeapp import FakeApp, Reply
from helpers import run_script, write_yaml
from test_rescore_changed_requests import ADAPTER, PROFILE, case_yaml

SEALED = ("h-sealed-tokyo", "h-sealed-lima", "h-sealed-added")


def router(req):
    """Routes weather questions, but lost the route field on questions about Tokyo (the regression)."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    body = {"answer": f"It is sunny in {msg.rstrip('?').split(' in ')[-1]}", "route": "weather"}
    if "Tokyo" in msg:
        body.pop("route")
    return Reply(200, body)


def make_state(tmp_path):
    state = tmp_path / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "w-paris.yaml",
               case_yaml("w-paris", "What is the weather in Paris?", "weather", "sunny in Paris"))
    for cid, city in (("h-sealed-tokyo", "Tokyo"), ("h-sealed-lima", "Lima"), ("h-open-rome", "Rome"),
                      ("h-open-oslo", "Oslo")):
        write_yaml(state / "datasets" / f"{cid}.yaml",
                   case_yaml(cid, f"What is the weather in {city}?", "weather", f"sunny in {city}", split="[holdout]"))
    return state


def holdout_run(state, run_id, url, *extra):
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    env = dict(os.environ, TINY_URL=url)
    p = run_script("make_plan", work / "converted.json", "--mode", "holdout", "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", run_id, env=env)
    assert p.rc == 0, p.stdout + p.stderr
    r = run_script("run_cases", "--plan", work / "plan.json", "--out", state / "reports" / run_id,
                   "--progress", "never", *extra, env=env)
    assert r.rc == 0, r.stdout + r.stderr
    return state / "reports" / run_id


def surfaces(state, run, tmp_path) -> str:
    """Every text a user or CI sees of the run: gate (text, --json, JUnit), report, viewer bundle,
    history; all of it must close and none of it may name a sealed case."""
    junit = tmp_path / f"{run.name}.xml"
    g = run_script("gate", run, "--junit", junit)
    j = run_script("gate", run, "--json")
    assert g.rc == 1 and j.rc == 1 and j.json["gate"] == "closed", g.stdout
    assert run_script("draft_report", run).rc == 0
    assert run_script("md_to_html", run / "report.md", run / "report.html").rc == 0
    bundle = tmp_path / f"bundle-{run.name}"
    assert run_script("view", state, "--bundle", bundle).rc == 0
    hist = run_script("run_history", state, "--html", tmp_path / "history.html")
    texts = [g.stdout, g.stderr, j.stdout, junit.read_text(), (run / "report.md").read_text(),
             (run / "report.html").read_text(), hist.stdout, (tmp_path / "history.html").read_text(),
             (run / "results.json").read_text()]
    texts += [f.read_text(errors="replace") for f in bundle.rglob("*") if f.is_file()]
    return g.stdout, "\n".join(texts)


def test_a_holdout_case_whose_check_never_ran_closes_the_holdout_gate_unnamed(tmp_path):
    state = make_state(tmp_path)
    with FakeApp(router) as app:
        run = holdout_run(state, "holdout-20261205T000000Z", app.url)
    out, seen = surfaces(state, run, tmp_path)
    assert out.splitlines()[0].startswith("holdout-20261205T000000Z: FAIL"), out
    assert ("gate closed: 1 gating case(s) asserted a check that never ran (unscored, not a pass; fix the adapter key, "
            "the case or the judge it names) (1 of them holdout, aggregate only: ids sealed)") in out, out
    assert "  holdout (aggregate only): 3/3 pass (1 of 4 not scored: unscored, skipped or infra)" in out, out
    for cid in SEALED:
        assert cid not in seen, cid


def test_a_rescored_holdout_run_closes_on_a_case_its_split_gained_unnamed(tmp_path):
    state = make_state(tmp_path)
    with FakeApp(lambda req: Reply(200, {"ok": True}) if req.method == "GET" else Reply(
            200, {"answer": f"It is sunny in {req.json['message'].rstrip('?').split(' in ')[-1]}",
                  "route": "weather"})) as app:
        run = holdout_run(state, "holdout-20261205T000000Z", app.url)
    assert run_script("gate", run).rc == 0
    write_yaml(state / "datasets" / "h-sealed-added.yaml",
               case_yaml("h-sealed-added", "weather in Quito", "weather", "sunny in Quito", split="[holdout]"))
    again = state / "reports" / "holdout-20261205T000100Z"
    r = run_script("rescore", run, "--out", again)
    assert r.rc == 0, r.stdout + r.stderr
    out, seen = surfaces(state, again, tmp_path)
    assert ("gate closed: 1 gating case(s) were not measured: the replay could not answer them") in out, out
    assert "(1 of them holdout, aggregate only: ids sealed)" in out, out
    for cid in SEALED:
        assert cid not in seen, cid
    looks = (state / "datasets" / "holdout-looks.jsonl").read_text().splitlines()
    assert [json.loads(line)["run_id"] for line in looks] == [run.name, again.name]
