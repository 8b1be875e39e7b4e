"""The green-path hunt (wave 4 §1): every planted regression, walked through every path to a decision.

A newcomer's map: PLANTED is the catalogue (one row per regression class the product claims to
catch: where it is planted, which case shows it, the words its reason must carry, the words that
case's own line must carry, the walk it belongs to); ALL are the surfaces that show a decision
(how each is read: hunt_paths.py). For each app (APPS) the test plants its rows into one copy of the
app's state dir (hunt_plants.py), records one broken run, derives the other runs from it (replay,
shards merged, rescore, a live pytest session), asks each path for its decision, and requires of
every path: the gate is closed, and every row that applies to the path closes it — its case among
the cases that close the gate, in its own words when the row names them, and its words among the
reasons. A new surface is one entry in ALL; a new regression class one row.

How each row is planted:
- the example app's own --break switch (examples/helpdesk/desk.py): a misrouted billing question,
  a refund on the wrong invoice, a tool the user may not have called, a cross-tenant invoice lookup,
  a knowledge-base search loop, a conversation forgotten after its first turn, a refund reply that
  no longer says when the money arrives: seen by the uncalibrated refund-eta-v1 (named, not gating)
  and, on a refund case the copy adds, by refund-arrival-v1, a rubric whose agreement with a person
  was measured before the broken run (a one-case run of the broken app, label.py's page over it and
  the baseline, a scripted person's labels, score_agreement.py --write at floors below the defaults,
  which the gate says): its fail closes every path;
- the budgets in the copy's profile.yaml, lowered below what the app spends (cost, p95);
- a case edited after the baseline so that it now fails (it closes gate --baseline too);
- a case whose input changed after the recording (the replay cannot answer it: a replay miss);
- a case the broken app crashes on (an export request the copy adds: the same HTTP 500 on every
  attempt, infra by its kind and under the infra bar, closing as the app's own error);
- an answer that became an object (an invoice asked for as JSON, a case the copy adds: the broken app
  sends the JSON as an object in the answer field): its schema holds and its must_contain is not
  scored, so the case passes and the run closes on the text check that never ran (§5.1);
- a refusal case added after the baseline whose tenant is typo'd: the app answers its "unknown
  tenant" 403, the case's declared status, so it passes on a refusal by status alone, for an identity
  no case of the run got a 2xx for;
- a hollow case: its expectations replaced by an HTTP 200. The contract's rule (runner-contract
  §16): its verdict "is `unscored`, never `pass`"; "The linter reports such cases as
  `no_graded_layer` before the run" (make_plan.py refuses the suite), and a plan made with
  `--allow-invalid` "never makes a green gate". So every run of the broken suite is planned with
  --allow-invalid, as a user must to run it, and every path closes naming the case and the code;
  the pytest session plans the suite itself and is refused at collection (its own path, "pytest,
  the hollow suite"; the other rows' session runs the case as shipped); the case is never a pass;
- a failed canary: its expectation given a phrase the app never says. A failed canary stops the
  run (exit 4), so it has its own walk in the same state dir ("helpdesk canary"), before the other
  plants: a live run (canaries go first, alone: nothing else is sent), the pytest session, the
  viewer and api.gate over the live run, and the helpdesk's broken run replayed and rescored against
  the suite whose canary fails (not its shards: hunt_plants.canary_live says why);
- an agent app (agent mode, tests/agent_state.py: a scripted coding agent through the adapter's
  `command:` override, no CLI and no model) walked through the same paths in its own state dir:
  its SCRIPTED_AGENT_BROKEN switch makes it skip the skill a case must trigger, edit add()
  wrongly (the files layer and the repo's own check catch it) and, on a lookup case the walk adds,
  get "MCP error -32000: Connection closed" from the MCP server under test while it answers all the
  same (the http layer fails: the server crashed).
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager

import pytest

import hunt_plants as hp
from agent_state import CASES as AGENT_CASES, EDIT_CASE, MCP_CASE, MCP_LOOKUP, SKILL_CASE, agent_env, build_agent_state
from fakeapp import run_runner
from helpdesk_util import copy_state, helpdesk
from helpers import run_script
from hunt_paths import (api_gate, error_layers, gate, gate_kept, history_page, merged_from_store, plan,
                        pytest_session, report, store_server, viewer)

pytestmark = pytest.mark.slow

ALL = ("gate", "gate --baseline auto", "replayed", "shards merged", "shards merged from the store", "rescored",
       "viewer", "pytest", "api.gate", "gate, its check kept", "viewer, its check kept", "report",
       "report --baseline auto")
HOLLOW_PATHS = tuple(p for p in ALL if p != "pytest") + ("pytest, the hollow suite",)
APPS = ("helpdesk", "helpdesk canary", "agent")


@dataclass(frozen=True)
class Row:
    regression: str
    case: str | None           # the case that must close the gate (None: a run-level reason)
    words: str                 # words the path's reasons must carry
    paths: tuple[str, ...] = ALL
    app: str = "helpdesk"      # whose walk it is planted in
    why: str | None = None     # words the case's own line must carry on each path (its JUnit failure, ...)


PLANTED = [
    Row("misroute", "c-0f1bfb2c", "c-0f1bfb2c (routing"),
    Row("wrong tool argument", "c-5e1f4a02", "gating failure"),            # issue_refund's invoice_id, amount
    Row("forbidden tool", "c-5e1f4a03", "gating failure"),                 # tools.forbidden: issue_refund
    Row("cross-tenant record", "c-6f3f04e8", "gating failure"),            # authz: INV-2001 of another tenant
    Row("tool loop", "c-2a7cf0bc", "c-2a7cf0bc (loops"),
    Row("forgotten turn", "c-5c6b6e28", "gating failure"),
    Row("a regression only a calibrated rubric sees", hp.CALIBRATED, "gating failure", why="judged"),
    Row("cost over budget", None, "is over the budget"),
    Row("p95 over budget", None, "p95 latency"),
    Row("edited case that now fails", hp.EDITED, "gating failure"),
    Row("replay miss", None, "the replay could not answer them", ("replayed",)),
    # infra by its kind, under --max-infra-rate's bar; the same 500 on every attempt is the app's own error
    Row("a case the app crashes on", None, f"same 5xx status and body on every attempt: the app's own error on "
        f"those inputs, not a transient outage: {hp.CRASHED} (500 x"),
    # passes as a case (its 403 is the declared status); the run shows no 2xx for its identity
    Row("a refusal by status for an identity the app does not know", None,
        f"refusal case(s) passed on an HTTP 4xx alone for 1 identity(ies) the app answered no 2xx to in this run "
        f"(first: {hp.STRANGER})"),
    # passes as a case (its schema holds; its text check was not scored: the answer became an object)
    Row("an answer that became an object", None, "1 gating case(s) asserted must_contain / must_not_contain on an "
        "answer that is not text, so those checks were not scored: the adapter's response_body <answer> path (answer) "
        f"read an object (keys: amount, due, invoice_id, status) (first: {hp.OBJECT_REPLY}; e.g. "),
    # named with its code on every path; it closes no path as a case (JUnit keeps it skipped, §16)
    Row("hollow case", None, f"{hp.HOLLOW} [no_graded_layer]", HOLLOW_PATHS),
    # its own walk (a failed canary stops the run; hunt_plants.canary_live says why not the shards)
    Row("failed canary", hp.CANARY, f"canary {hp.CANARY} failed on answer",
        tuple(p for p in ALL if not p.startswith("shards")), app="helpdesk canary", why="canary"),
    Row("agent: a skill not triggered", SKILL_CASE, f"{SKILL_CASE} (skills", app="agent"),
    Row("agent: a wrong edit", EDIT_CASE, f"{EDIT_CASE} (files, check", app="agent"),
    Row("agent: its MCP server crashes mid-call", MCP_CASE, f"{MCP_CASE} (http", app="agent"),
]


@dataclass
class App:
    """One app walked through every path: its state dir, how it runs (clean or broken: yields the
    environment its adapter reads), and the plants the app itself does not make."""
    name: str
    state: Path
    running: Callable[[bool], ContextManager[dict]]
    judge: bool = True                                   # plan with --judge (the helpdesk's rubrics)
    edits_suite: bool = True                             # its plants edit datasets/: convert again
    plan_extra: tuple[str, ...] = ()                     # every plan and rescore after plant()
    plant: Callable[[], None] = lambda: None             # after the baseline, before the broken run
    before_replay: Callable[[], None] = lambda: None     # after the recording, before its replay
    # with the broken app up, before plant(): {walk: {path: run dir | decision}} of its own walks
    before_plant: Callable[[Path, dict, Path], dict] = lambda base, env, tmp: {}
    for_pytest: Callable[[], ContextManager] = nullcontext
    after_pytest: Callable[[dict, Path], dict] = lambda env, tmp: {}          # more paths of its own walk
    after_rescore: Callable[[Path, dict], dict] = lambda broken, env: {}       # {walk: {path: run dir}}


def _helpdesk(tmp: Path) -> App:
    state = copy_state(tmp)
    hp.add_calibrated_case(state)

    def before_plant(base: Path, env: dict, tmp: Path) -> dict:
        hp.calibrate(state, base, env)
        return {"helpdesk canary": hp.canary_live(state, env, tmp)}

    def after_pytest(env: dict, tmp: Path) -> dict:   # the session over the suite with its hollow case
        return {"pytest, the hollow suite": pytest_session(state, tmp, env)}
    return App("helpdesk", state, lambda broken: helpdesk(state, broken=broken, app_dir="broken" if broken else "clean"),
               plan_extra=("--allow-invalid",), plant=lambda: hp.plant(state), before_replay=lambda: hp.resend(state),
               before_plant=before_plant, for_pytest=lambda: hp.hollow_aside(state), after_pytest=after_pytest,
               after_rescore=lambda broken, env: {"helpdesk canary": hp.canary_derived(state, broken, env,
                                                                                       ("--allow-invalid",))})


def _agent(tmp: Path) -> App:
    state = build_agent_state(tmp / "agent-app", {**AGENT_CASES, MCP_CASE: MCP_LOOKUP})
    scratch = tmp / "agent-scratch"   # outside the app repo, as the runner requires

    @contextmanager
    def running(broken: bool):
        yield dict(agent_env(dict(os.environ), broken=broken), ASSAY_SCRATCH_DIR=str(scratch))
    return App("agent", state, running, judge=False, edits_suite=False)


def _walk(app: App, tmp: Path, server) -> dict:
    """{walk: {path: decision}}: every path's decision on the app's broken run (and the runs derived
    from it), and on the runs of the app's own walks."""
    state, reports, extra = app.state, app.state / "reports", app.plan_extra
    out: dict[str, dict] = {}
    # the baseline: the healthy app, the profile as shipped (its gate is open), pinned for --baseline auto
    with app.running(False) as env:
        planned = plan(state, "--run-id", "smoke-20261204T000000Z", judge=app.judge)
        assert run_runner("--plan", state / "work" / "plan.json", "--out", planned["out"], "--progress", "never",
                          env=env).rc == 0
    base = Path(planned["out"])
    assert run_script("gate", base).rc == 0, f"the {app.name} baseline must be green"
    (reports / "baseline.json").write_text(json.dumps({"run_id": base.name}), encoding="utf-8")
    with app.running(True) as env:
        walks = app.before_plant(base, env, tmp)
        app.plant()
        planned = plan(state, "--run-id", "smoke-20261204T000100Z", *extra, judge=app.judge, convert=app.edits_suite)
        broken = Path(planned["out"])
        r = run_runner("--plan", state / "work" / "plan.json", "--out", broken, "--record", "--progress", "never",
                       env=env)
        assert r.rc == 0, (r.stdout, r.stderr)
        # shards of the same plan, run live and merged
        sharded = plan(state, "--run-id", "smoke-20261204T000200Z", "--shards", "2", *extra, judge=app.judge,
                       convert=False)["run_id"]
        shard_dirs = []
        for i in (1, 2):
            shard_dirs.append(reports / f"{sharded}.shard-{i}")
            r = run_runner("--plan", state / "work" / "plan.json", "--shard", i, "--out", shard_dirs[-1],
                           "--progress", "never", env=env)
            assert r.rc == 0, (r.stdout, r.stderr)
        store_merged = merged_from_store(state, shard_dirs, sharded, env, tmp, server, f"hunt-{app.name}")
        r = run_script("merge_runs", "--plan", state / "work" / "plan.json", "--out", reports / sharded, *shard_dirs)
        assert r.rc == 0, r.stdout
        with app.for_pytest():   # the pytest session, live, as a user runs it
            out["pytest"] = pytest_session(state, tmp, env)
        out.update(app.after_pytest(env, tmp))
    runs = {"gate": broken, "gate --baseline auto": broken, "shards merged": reports / sharded,
            "viewer": broken, "api.gate": broken, "report": broken, "report --baseline auto": broken}
    if store_merged is not None:
        runs["shards merged from the store"] = store_merged
    # replayed: the recording answers (the helpdesk's: except the case whose input changed since)
    runs["gate, its check kept"] = broken   # after "gate" (walked in this order), which kept its check
    app.before_replay()
    planned = plan(state, "--run-id", "smoke-20261204T000300Z", *extra, judge=app.judge, convert=app.edits_suite)
    r = run_runner("--plan", state / "work" / "plan.json", "--out", planned["out"], "--replay", broken,
                   "--progress", "never", env=env)   # the app is stopped: nothing may call it
    assert r.rc == 0, (r.stdout, r.stderr)
    runs["replayed"] = Path(planned["out"])
    runs["rescored"] = reports / "smoke-20261204T000400Z"
    # rescored under the environment the app ran under: a value it was given (the scripted agent's
    # allowlisted SCRIPTED_AGENT_BROKEN) bound into its requests must be the same, or every case is a miss
    r = run_script("rescore", broken, "--out", runs["rescored"], *extra, env=env)
    assert r.rc == 0, (r.stdout, error_layers(runs["rescored"]))
    for name, more in app.after_rescore(broken, env).items():
        walks[name].update(more)
    walks = {app.name: {**runs, **out}, **walks}
    seen = viewer(state, sorted({w["viewer"].name for w in walks.values()}))
    # the history page colours each run's point and names its gate: the same decision as its run page
    listed = {rid: d["history_gate"] for rid, d in seen.items() if d["history_gate"] is not None}
    assert listed, "the history page listed none of the hunt's runs: its gate went unchecked"
    assert all((g == "closed") == seen[rid]["closed"] for rid, g in listed.items()), (listed, seen)
    # run_history.py's history.html names each run's gate in its row: the same decision again
    rows = history_page(state, tmp)
    shown = {rid: rows[rid] for rid in seen if rid in rows}
    assert shown, ("history.html listed none of the hunt's runs: its gate column went unchecked", rows)
    assert all(cell.startswith("closed") == seen[rid]["closed"] for rid, cell in shown.items()), (shown, seen)
    if server is not None:   # the same page over the runs a team's CI published (run_history.py --store)
        from s3server import BUCKET
        store, store_env = f"s3://{BUCKET}/hunt-history-{app.name}", {**env, **server.env}
        assert run_script("publish_run", broken, store, env=store_env).rc == 0
        stored = history_page(state, tmp, store_env, "--store", store)
        assert stored.get(broken.name, "").startswith("closed") == seen[broken.name]["closed"], (stored, broken.name)
    decided = {}
    for name, walk in walks.items():
        decided[name] = {"_dirs": {p: d for p, d in walk.items() if isinstance(d, Path)}}
        for path, d in walk.items():
            decided[name][path] = (d if not isinstance(d, Path) else seen[d.name] if path == "viewer"
                                   else api_gate(d, tmp) if path == "api.gate"
                                   else gate(d, tmp, "--baseline", "auto") if path == "gate --baseline auto"
                                   else gate_kept(d, tmp) if path == "gate, its check kept"
                                   else report(d, tmp) if path == "report"
                                   else report(d, tmp, "--baseline", "auto") if path == "report --baseline auto"
                                   else gate(d, tmp))
    # the viewer again, once the gates above kept their checks (assay.rundir.checked): it shows the kept
    # answer (verified) and must close with the same reasons
    kept = viewer(state, sorted({w["viewer"].name for w in walks.values()}), env={"ASSAY_CHECK_KEEP_ABOVE": "0"})
    for name, walk in walks.items():
        seen_kept = kept[walk["viewer"].name]
        assert seen_kept["verified"] is True, (name, seen_kept)
        decided[name]["viewer, its check kept"] = seen_kept
    decided[app.name]["_dirs"]["base"] = base
    return decided


def _walk_all(tmp: Path) -> dict:
    server = store_server()
    try:
        return {**_walk(_helpdesk(tmp), tmp, server), **_walk(_agent(tmp), tmp, server)}
    finally:
        if server is not None:
            server.stop()


def _to_json(value):
    if isinstance(value, Path):
        return {"__path__": str(value)}
    raise TypeError(type(value))


def _from_json(doc: dict):
    return Path(doc["__path__"]) if "__path__" in doc else doc


@pytest.fixture(scope="module")
def decisions(tmp_path_factory):
    """{walk: {path: {closed, reasons, closing}}} for the helpdesk, its canary and the agent app. Walked
    once per session: under pytest-xdist's default distribution this module's tests land on several
    workers, and each would otherwise walk every path again (the first builds under a lock, the rest
    read it)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _walk_all(tmp_path_factory.mktemp("hunt"))
    import fcntl
    shared = tmp_path_factory.getbasetemp().parent
    with open(shared / "green-path-hunt.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "green-path-hunt.json"
        if done.is_file():
            return json.loads(done.read_text(encoding="utf-8"), object_hook=_from_json)
        out = _walk_all(tmp_path_factory.mktemp("hunt"))
        done.write_text(json.dumps(out, default=_to_json), encoding="utf-8")
        return out


def test_a_regression_only_an_uncalibrated_rubric_sees_is_named(decisions):
    """The refund reply that no longer says when the money arrives: only the rubric sees it, and it is
    not calibrated, so it never gates; the gate and compare still name the case (wave 4 §1, B6)."""
    dirs = decisions["helpdesk"]["_dirs"]
    text = run_script("gate", dirs["gate"], "--no-verify").stdout
    line = next((x for x in text.splitlines() if x.startswith("  judged (provisional) would have failed:")), None)
    assert line and "c-bd5404f8 (refund-eta-v1, provisional, not gating)" in line, text
    r = run_script("compare_runs", dirs["base"], dirs["gate"])
    assert r.rc == 0, r.stdout
    said = [n for n in r.json["notes"] if n.startswith("judge_only: would have failed: ")]
    assert said and "c-bd5404f8 (refund-eta-v1" in said[0], r.json["notes"]


def test_the_calibrated_rubric_gates_below_the_default_floors_and_says_so(decisions):
    """refund-arrival-v1 gates because people's labels were measured, at floors the gate names."""
    text = run_script("gate", decisions["helpdesk"]["_dirs"]["gate"], "--no-verify").stdout
    assert f"judge: {hp.ARRIVAL} calibrated over 2 pairs" in text and "judged (calibrated, gating): 1 case(s): 1 fail" \
        in text, text


def test_the_hollow_case_is_never_a_pass(decisions):
    """§16: a hollow case "is `unscored`, never `pass`" (`unscored_reason: "nothing asserted beyond
    liveness"`), and a hollow unscored case stays a JUnit skip: every run of the walk, and every JUnit."""
    walk = decisions["helpdesk"]
    for path, run_dir in walk["_dirs"].items():
        if path == "base":
            continue
        rows = [json.loads(x) for x in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
        doc = next(r["verdict"] for r in rows if r["case_id"] == hp.HOLLOW)
        assert (doc["verdict"], doc["unscored_reason"]) == ("unscored", "nothing asserted beyond liveness"), path
        if "skipped" in walk[path]:
            assert "nothing asserted beyond liveness" in walk[path]["skipped"].get(hp.HOLLOW, ""), (path, walk[path])


@pytest.mark.parametrize("path", ALL)
@pytest.mark.parametrize("app", APPS)
def test_every_path_closes(decisions, app, path):
    if path not in decisions[app]:
        pytest.skip("the failed canary's walk leaves the shards out (hunt_plants.canary_live says why)"
                    if app == "helpdesk canary" else f"{path}: moto (the local S3-compatible server) is not installed")
    d = decisions[app][path]
    assert d["closed"], (app, path, d)


def test_replayed_and_rescored_agent_cases_keep_the_live_verdicts(decisions):
    """The agent's broken run, its replay and its rescore: every case and layer decided alike (from
    the recorded transcript and workdir, the agent not run again)."""
    def layers(run_dir: Path) -> dict:
        out = {}
        for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            out[doc["case_id"]] = (doc["verdict"]["verdict"], {k: v["verdict"] for k, v in doc["verdict"]["layers"].items()})
        return out
    dirs = decisions["agent"]["_dirs"]
    live = layers(dirs["gate"])
    assert live[SKILL_CASE][1]["skills"] == "fail" and live[EDIT_CASE][1]["check"] == "fail"
    assert layers(dirs["replayed"]) == live and layers(dirs["rescored"]) == live


@pytest.mark.parametrize("row", PLANTED, ids=[r.regression for r in PLANTED])
def test_every_planted_regression_closes_every_path(decisions, row):
    missed = []
    for path in row.paths:
        if path not in decisions[row.app]:
            continue   # a path this machine cannot take (its own test says why)
        d = decisions[row.app][path]
        said = " | ".join(d["reasons"])
        if not d["closed"]:
            missed.append(f"{path}: the gate is open")
        if row.words not in said:
            missed.append(f"{path}: reasons lack {row.words!r}: {said[:600]}")
        if row.case is not None and row.case not in d["closing"]:
            missed.append(f"{path}: {row.case} is not among the cases that close the gate: {sorted(d['closing'])}")
        elif row.why is not None and row.case is not None and row.why not in d["closing"][row.case]:
            missed.append(f"{path}: {row.case}'s own line lacks {row.why!r}: {d['closing'][row.case][:300]}")
    print(f"hunt row {row.regression!r}: {len(row.paths)} path(s) checked, {len(missed)} open")
    assert not missed, "\n".join(missed)
