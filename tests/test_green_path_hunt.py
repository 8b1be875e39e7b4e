"""The green-path hunt (wave 4 §1): every planted regression, walked through every path to a decision.

A newcomer's map: PLANTED is the catalogue (one row per regression class the product claims to
catch: where it is planted, which case shows it, the words its reason must carry, its app); ALL
are the surfaces that show a decision. For each app (APPS) the test plants its rows into one copy of
the app's state dir, records one broken run, derives the other runs from it (replay, shards merged,
rescore, a live pytest session), asks each path for its decision, and requires of every path: the
gate is closed, and every row that applies to the path closes it — its case among the cases that
close the gate and its words among the reasons. A new surface is one entry in ALL; a new
regression class one row.

How each row is planted:
- the example app's own --break switch (examples/helpdesk/desk.py): a misrouted billing question,
  a refund on the wrong invoice, a tool the user may not have called, a cross-tenant invoice lookup,
  a knowledge-base search loop, a conversation forgotten after its first turn, a refund reply that
  no longer says when the money arrives (only the uncalibrated rubric sees it: named, not gating);
- the budgets in the copy's profile.yaml, lowered below what the app spends (cost, p95);
- a case edited after the baseline so that it now fails (it closes gate --baseline too);
- a case whose input changed after the recording (the replay cannot answer it: a replay miss);
- an agent app (agent mode, tests/agent_state.py: a scripted coding agent through the adapter's
  `command:` override, no CLI and no model) walked through the same paths in its own state dir:
  its SCRIPTED_AGENT_BROKEN switch makes it skip the skill a case must trigger and edit add()
  wrongly (the files layer and the repo's own check catch it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager

import pytest

from agent_state import EDIT_CASE, SKILL_CASE, agent_env, build_agent_state
from fakeapp import run_runner
from helpdesk_util import copy_state, helpdesk
from helpers import ROOT, run_script

pytestmark = pytest.mark.slow

EDITED = "c-34a94041"        # passes on the broken app; edited after the baseline so that it fails
RESENT = "c-cd37392f"        # its input edited after the recording: the replay cannot answer it
ALL = ("gate", "gate --baseline auto", "replayed", "shards merged", "shards merged from the store", "rescored",
       "viewer", "pytest", "api.gate")


APPS = ("helpdesk", "agent")


@dataclass(frozen=True)
class Row:
    regression: str
    case: str | None           # the case that must close the gate (None: a run-level reason)
    words: str                 # words the path's reasons must carry
    paths: tuple[str, ...] = ALL
    app: str = "helpdesk"      # whose state dir it is planted in


PLANTED = [
    Row("misroute", "c-0f1bfb2c", "c-0f1bfb2c (routing"),
    Row("wrong tool argument", "c-5e1f4a02", "gating failure"),            # issue_refund's invoice_id, amount
    Row("forbidden tool", "c-5e1f4a03", "gating failure"),                 # tools.forbidden: issue_refund
    Row("cross-tenant record", "c-6f3f04e8", "gating failure"),            # authz: INV-2001 of another tenant
    Row("tool loop", "c-2a7cf0bc", "c-2a7cf0bc (loops"),
    Row("forgotten turn", "c-5c6b6e28", "gating failure"),
    Row("cost over budget", None, "is over the budget"),
    Row("p95 over budget", None, "p95 latency"),
    Row("edited case that now fails", EDITED, "gating failure"),
    Row("replay miss", None, "the replay could not answer them", ("replayed",)),
    Row("agent: a skill not triggered", SKILL_CASE, f"{SKILL_CASE} (skills", app="agent"),
    Row("agent: a wrong edit", EDIT_CASE, f"{EDIT_CASE} (files, check", app="agent"),
]


def _junit_failures(path: Path) -> set[str]:
    """The names of the JUnit testcases that failed (a passing one is `<testcase ... />`: a regex
    over the text took the next case's failure for its own)."""
    import xml.etree.ElementTree as ET
    return {tc.get("name") for tc in ET.parse(path).iter("testcase") if tc.find("failure") is not None}


def _gate(run_dir: Path, tmp: Path, *extra: str) -> dict:
    junit = tmp / f"junit-{len(list(tmp.glob('junit-*')))}.xml"
    r = run_script("gate", run_dir, "--json", "--junit", junit, *extra)
    assert r.rc in (0, 1), (r.stdout, r.stderr)
    return {"closed": r.rc == 1 and r.json["gate"] == "closed", "reasons": r.json["reasons"],
            "closing": _junit_failures(junit)}


def _error_layers(run_dir: Path) -> list[str]:
    """Every `error` layer of a run (what a scorer rejected), for an assertion's message."""
    out = []
    for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        for name, layer in ((doc.get("verdict") or {}).get("layers") or {}).items():
            if isinstance(layer, dict) and layer.get("verdict") == "error":
                out.append(f"{doc.get('case_id')} {name}: {json.dumps(layer)[:400]}")
    return out


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _plan(state: Path, *extra: str, judge: bool = True, convert: bool = True) -> dict:
    """make_plan.py (after convert_suite.py when the suite may have changed since the last plan)."""
    work = state / "work"
    if convert:
        assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    # --judge: the example's refund rubric judges the refund reply (as make demo does)
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json", *(("--judge",) if judge else ()), *extra)
    assert r.rc == 0, r.stdout
    return r.json


def _store_server():
    """One local S3-compatible server for every app's store path; None when moto is not installed."""
    from s3server import BUCKET, S3Server, have_moto
    if not have_moto():
        return None
    server = S3Server().start()
    server.client().create_bucket(Bucket=BUCKET)
    return server


def _merged_from_store(state: Path, shard_dirs: list[Path], run_id: str, env: dict, tmp: Path,
                       server, prefix: str) -> Path | None:
    """The shards published to a local S3-compatible server (as pods that share no disk do) and
    merged back from it (into reports/, the plan's place), then moved to a second copy of the state
    dir (the local merge takes the run id's place next); None without the server (no moto)."""
    import shutil
    from s3server import BUCKET
    if server is None:
        return None
    other = tmp / f"store-side-{prefix}" / ".assay"
    shutil.copytree(state, other, ignore=shutil.ignore_patterns("reports", "cache", "work"))
    store_env = {**env, **server.env}
    for d in shard_dirs:
        r = run_script("publish_run", d, f"s3://{BUCKET}/{prefix}", env=store_env)
        assert r.rc == 0, r.stdout
    out = state / "reports" / run_id
    r = run_script("merge_runs", "--plan", state / "work" / "plan.json", "--out", out,
                   f"s3://{BUCKET}/{prefix}/{run_id}/", env=store_env)
    assert r.rc == 0, r.stdout
    (other / "reports").mkdir(parents=True)
    return Path(shutil.move(str(out), str(other / "reports" / run_id)))


def _next_id(previous: str) -> str:
    """A run id one second after `previous` (run ids have one-second resolution)."""
    import datetime as dt
    mode, stamp = previous.split("-", 1)
    t = dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ") + dt.timedelta(seconds=1)
    return f"{mode}-{t.strftime('%Y%m%dT%H%M%SZ')}"


@dataclass
class App:
    """One app walked through every path: its state dir, how it runs (clean or broken: yields the
    environment its adapter reads), and the plants the app itself does not make."""
    name: str
    state: Path
    running: Callable[[bool], ContextManager[dict]]
    judge: bool = True                                   # plan with --judge (the helpdesk's rubric)
    edits_suite: bool = True                             # its plants edit datasets/: convert again
    plant: Callable[[], None] = lambda: None             # after the baseline, before the broken run
    before_replay: Callable[[], None] = lambda: None     # after the recording, before its replay


def _helpdesk(tmp: Path) -> App:
    state = copy_state(tmp)

    def plant() -> None:   # budgets below what the app spends, a case edited to fail now
        _edit(state / "profile.yaml", "max_cost_per_case: 0.0005", "max_cost_per_case: 0.0000001")
        _edit(state / "profile.yaml", "max_p95_latency_s: 8", "max_p95_latency_s: 0.000001")
        edited = state / "datasets" / f"{EDITED}.yaml"
        text = edited.read_text(encoding="utf-8")
        assert "must_contain:" in text, text
        edited.write_text(text.replace("must_contain: [", "must_contain: [zz-never-said-by-the-app, ", 1)
                          if "must_contain: [" in text else
                          re.sub(r"must_contain:\n(\s+)- ", r"must_contain:\n\1- zz-never-said-by-the-app\n\1- ",
                                 text, 1), encoding="utf-8")

    def before_replay() -> None:   # the replay cannot answer a case whose input changed since
        resent = state / "datasets" / f"{RESENT}.yaml"
        resent.write_text(resent.read_text(encoding="utf-8").replace("content: ", "content: (edited) ", 1),
                          encoding="utf-8")
    return App("helpdesk", state, lambda broken: helpdesk(state, broken=broken, app_dir="broken" if broken else "clean"),
               plant=plant, before_replay=before_replay)


def _agent(tmp: Path) -> App:
    state = build_agent_state(tmp / "agent-app")
    scratch = tmp / "agent-scratch"   # outside the app repo, as the runner requires

    @contextmanager
    def running(broken: bool):
        yield dict(agent_env(dict(os.environ), broken=broken), ASSAY_SCRATCH_DIR=str(scratch))
    return App("agent", state, running, judge=False, edits_suite=False)


def _walk(app: App, tmp: Path, server) -> dict:
    """Every path's decision on the app's broken run (and the runs derived from it)."""
    state, reports = app.state, app.state / "reports"
    out: dict[str, dict] = {}
    # the baseline: the healthy app, the profile as shipped (its gate is open), pinned for --baseline auto
    with app.running(False) as env:
        plan = _plan(state, "--run-id", "smoke-20261204T000000Z", judge=app.judge)
        assert run_runner("--plan", state / "work" / "plan.json", "--out", plan["out"], "--progress", "never",
                          env=env).rc == 0
    base = Path(plan["out"])
    assert run_script("gate", base).rc == 0, f"the {app.name} baseline must be green"
    (reports / "baseline.json").write_text(json.dumps({"run_id": base.name}), encoding="utf-8")
    app.plant()
    with app.running(True) as env:
        plan = _plan(state, "--run-id", "smoke-20261204T000100Z", judge=app.judge, convert=app.edits_suite)
        broken = Path(plan["out"])
        r = run_runner("--plan", state / "work" / "plan.json", "--out", broken, "--record", "--progress", "never",
                       env=env)
        assert r.rc == 0, (r.stdout, r.stderr)
        # shards of the same plan, run live and merged
        sharded = _plan(state, "--run-id", "smoke-20261204T000200Z", "--shards", "2", judge=app.judge,
                        convert=False)
        shard_dirs = []
        for i in (1, 2):
            d = reports / f"{sharded['run_id']}.shard-{i}"
            r = run_runner("--plan", state / "work" / "plan.json", "--shard", i, "--out", d,
                           "--progress", "never", env=env)
            assert r.rc == 0, (r.stdout, r.stderr)
            shard_dirs.append(d)
        out["_store_merged"] = _merged_from_store(state, shard_dirs, sharded["run_id"], env, tmp, server,
                                                  f"hunt-{app.name}")
        merged = reports / sharded["run_id"]
        r = run_script("merge_runs", "--plan", state / "work" / "plan.json", "--out", merged, *shard_dirs)
        assert r.rc == 0, r.stdout
        # the pytest session, live, as a user runs it
        session = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:langsmith_plugin", "--assay", str(state),
                                  "-q", "-rA"], cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    out["_dirs"] = {"base": base, "broken": broken}
    out["gate"] = _gate(broken, tmp)
    out["gate --baseline auto"] = _gate(broken, tmp, "--baseline", "auto")
    out["shards merged"] = _gate(merged, tmp)
    if out["_store_merged"] is not None:
        out["shards merged from the store"] = _gate(out["_store_merged"], tmp)
    # replayed: the recording answers (the helpdesk's: except the case whose input changed since)
    app.before_replay()
    plan = _plan(state, "--run-id", "smoke-20261204T000300Z", judge=app.judge, convert=app.edits_suite)
    r = run_runner("--plan", state / "work" / "plan.json", "--out", plan["out"], "--replay", broken,
                   "--progress", "never", env=env)   # the app is stopped: nothing may call it
    assert r.rc == 0, (r.stdout, r.stderr)
    out["_dirs"]["replayed"] = Path(plan["out"])
    out["replayed"] = _gate(Path(plan["out"]), tmp)
    rescored = reports / "smoke-20261204T000400Z"
    r = run_script("rescore", broken, "--out", rescored)
    assert r.rc == 0, (r.stdout, _error_layers(rescored))
    out["_dirs"]["rescored"] = rescored
    out["rescored"] = _gate(rescored, tmp)
    # the viewer's API, as its run page asks it
    view = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "view.py"), str(state), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = json.loads(view.stdout.readline())["url"]
        with urllib.request.urlopen(f"{url}api/run/{broken.name}/gate?wait=5", timeout=120) as resp:
            doc = json.loads(resp.read())
        while doc["gate"] == "checking":
            with urllib.request.urlopen(f"{url}api/run/{broken.name}/gate?wait=5", timeout=120) as resp:
                doc = json.loads(resp.read())
        with urllib.request.urlopen(f"{url}api/run/{broken.name}/cases?size=1000", timeout=120) as resp:
            rows = json.loads(resp.read())["cases"]
    finally:
        view.terminate()
        view.wait(30)
    out["viewer"] = {"closed": doc["gate"] == "closed", "reasons": doc["reasons"],
                     "closing": {r["case_id"] for r in rows if r.get("verdict") == "fail"}}
    from assay import api
    junit = tmp / f"api-junit-{app.name}.xml"
    doc = api.gate(broken, junit=junit)
    out["api.gate"] = {"closed": doc["gate"] == "closed", "reasons": doc["reasons"], "closing": _junit_failures(junit)}
    failed = set(re.findall(r"^FAILED \S+::(\S+?)(?: - |$)", session.stdout, re.M))
    gate_lines = [line.strip()[len("gate closed: "):] for line in session.stdout.splitlines()
                  if line.strip().startswith("gate closed: ")]
    out["pytest"] = {"closed": session.returncode != 0 and "assay gate: CLOSED" in session.stdout,
                     "reasons": gate_lines, "closing": failed, "stdout": session.stdout[-3000:]}
    return out


def _walk_all(tmp: Path) -> dict:
    server = _store_server()
    try:
        return {"helpdesk": _walk(_helpdesk(tmp), tmp, server), "agent": _walk(_agent(tmp), tmp, server)}
    finally:
        if server is not None:
            server.stop()


def _to_json(value):
    if isinstance(value, Path):
        return {"__path__": str(value)}
    if isinstance(value, set):
        return {"__set__": sorted(value)}
    raise TypeError(type(value))


def _from_json(doc: dict):
    return Path(doc["__path__"]) if "__path__" in doc else set(doc["__set__"]) if "__set__" in doc else doc


@pytest.fixture(scope="module")
def decisions(tmp_path_factory):
    """{app: {path: {closed, reasons, closing}}} for the helpdesk and the agent app. Walked once per
    session: under pytest-xdist's default distribution this module's tests land on several workers,
    and each would otherwise walk every path again (the first builds under a lock, the rest read it)."""
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
    text = run_script("gate", dirs["broken"], "--no-verify").stdout
    line = next((x for x in text.splitlines() if x.startswith("  judged (provisional) would have failed:")), None)
    assert line and "c-bd5404f8 (refund-eta-v1, provisional, not gating)" in line, text
    r = run_script("compare_runs", dirs["base"], dirs["broken"])
    assert r.rc == 0, r.stdout
    said = [n for n in r.json["notes"] if n.startswith("judge_only: would have failed: ")]
    assert said and "c-bd5404f8 (refund-eta-v1" in said[0], r.json["notes"]


@pytest.mark.parametrize("path", ALL)
@pytest.mark.parametrize("app", APPS)
def test_every_path_closes(decisions, app, path):
    if path not in decisions[app]:
        pytest.skip(f"{path}: moto (the local S3-compatible server) is not installed")
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
    live = layers(dirs["broken"])
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
        if row.words not in said:
            missed.append(f"{path}: reasons lack {row.words!r}: {said[:600]}")
        if row.case is not None and row.case not in d["closing"]:
            missed.append(f"{path}: {row.case} is not among the cases that close the gate: {sorted(d['closing'])}")
    print(f"hunt row {row.regression!r}: {len(row.paths)} path(s) checked, {len(missed)} open")
    assert not missed, "\n".join(missed)
