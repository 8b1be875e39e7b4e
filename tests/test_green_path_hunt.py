"""The green-path hunt (wave 4 §1): every planted regression, walked through every path to a decision.

A newcomer's map: PLANTED is the catalogue (one row per regression class the product claims to
catch: where it is planted, which case shows it, the words its reason must carry); PATHS are the
surfaces that show a decision. The test plants every row into one copy of the example app's state
dir, records one broken run, derives the other runs from it (replay, shards merged, rescore, a live
pytest session), asks each path for its decision, and requires of every path: the gate is closed,
and every row that applies to the path closes it — its case among the cases that close the gate and
its words among the reasons. A new surface is one entry in PATHS; a new regression class one row.

How each row is planted:
- the example app's own --break switch (examples/helpdesk/desk.py): a misrouted billing question,
  a refund on the wrong invoice, a tool the user may not have called, a cross-tenant invoice lookup,
  a knowledge-base search loop, a conversation forgotten after its first turn, a refund reply that
  no longer says when the money arrives (only the uncalibrated rubric sees it: named, not gating);
- the budgets in the copy's profile.yaml, lowered below what the app spends (cost, p95);
- a case edited after the baseline so that it now fails (it closes gate --baseline too);
- a case whose input changed after the recording (the replay cannot answer it: a replay miss).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakeapp import run_runner
from helpdesk_util import copy_state, helpdesk
from helpers import ROOT, run_script

pytestmark = pytest.mark.slow

EDITED = "c-34a94041"        # passes on the broken app; edited after the baseline so that it fails
RESENT = "c-cd37392f"        # its input edited after the recording: the replay cannot answer it
ALL = ("gate", "gate --baseline auto", "replayed", "shards merged", "shards merged from the store", "rescored",
       "viewer", "pytest", "api.gate")


@dataclass(frozen=True)
class Row:
    regression: str
    case: str | None           # the case that must close the gate (None: a run-level reason)
    words: str                 # words the path's reasons must carry
    paths: tuple[str, ...] = ALL


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
]


def _junit_failures(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return set(re.findall(r'<testcase[^>]*\sname="([^"]+)"[^>]*>(?:(?!</testcase>).)*?<failure', text, re.S))


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


def _plan(state: Path, *extra: str) -> dict:
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    # --judge: the example's refund rubric judges the refund reply (as make demo does)
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json", "--judge", *extra)
    assert r.rc == 0, r.stdout
    return r.json


def _merged_from_store(state: Path, shard_dirs: list[Path], run_id: str, env: dict, tmp: Path) -> Path | None:
    """The shards published to a local S3-compatible server (as pods that share no disk do) and
    merged back from it (into reports/, the plan's place), then moved to a second copy of the state
    dir (the local merge takes the run id's place next); None when moto is not installed."""
    import shutil
    from s3server import BUCKET, S3Server, have_moto
    if not have_moto():
        return None
    other = tmp / "store-side" / ".assay"
    shutil.copytree(state, other, ignore=shutil.ignore_patterns("reports", "cache", "work"))
    server = S3Server().start()
    try:
        server.client().create_bucket(Bucket=BUCKET)
        store_env = {**env, **server.env}
        for d in shard_dirs:
            r = run_script("publish_run", d, f"s3://{BUCKET}/hunt", env=store_env)
            assert r.rc == 0, r.stdout
        out = state / "reports" / run_id
        r = run_script("merge_runs", "--plan", state / "work" / "plan.json", "--out", out,
                       f"s3://{BUCKET}/hunt/{run_id}/", env=store_env)
        assert r.rc == 0, r.stdout
    finally:
        server.stop()
    (other / "reports").mkdir(parents=True)
    return Path(shutil.move(str(out), str(other / "reports" / run_id)))


def _next_id(previous: str) -> str:
    """A run id one second after `previous` (run ids have one-second resolution)."""
    import datetime as dt
    mode, stamp = previous.split("-", 1)
    t = dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ") + dt.timedelta(seconds=1)
    return f"{mode}-{t.strftime('%Y%m%dT%H%M%SZ')}"


@pytest.fixture(scope="module")
def decisions(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hunt")
    state = copy_state(tmp)
    reports = state / "reports"
    out: dict[str, dict] = {}
    # the baseline: the healthy app, the profile as shipped (its gate is open), pinned for --baseline auto
    with helpdesk(state, app_dir="clean") as env:
        plan = _plan(state, "--run-id", "smoke-20261204T000000Z")
        assert run_runner("--plan", state / "work" / "plan.json", "--out", plan["out"], "--progress", "never",
                          env=env).rc == 0
    base = Path(plan["out"])
    assert run_script("gate", base).rc == 0, "the baseline must be green"
    (reports / "baseline.json").write_text(json.dumps({"run_id": base.name}), encoding="utf-8")
    # the plants the app does not make: budgets below what it spends, a case edited to fail now
    _edit(state / "profile.yaml", "max_cost_per_case: 0.0005", "max_cost_per_case: 0.0000001")
    _edit(state / "profile.yaml", "max_p95_latency_s: 8", "max_p95_latency_s: 0.000001")
    edited = state / "datasets" / f"{EDITED}.yaml"
    text = edited.read_text(encoding="utf-8")
    assert "must_contain:" in text, text
    edited.write_text(text.replace("must_contain: [", "must_contain: [zz-never-said-by-the-app, ", 1)
                      if "must_contain: [" in text else
                      re.sub(r"must_contain:\n(\s+)- ", r"must_contain:\n\1- zz-never-said-by-the-app\n\1- ", text, 1),
                      encoding="utf-8")
    with helpdesk(state, broken=True, app_dir="broken") as env:
        plan = _plan(state, "--run-id", "smoke-20261204T000100Z")
        broken = Path(plan["out"])
        r = run_runner("--plan", state / "work" / "plan.json", "--out", broken, "--record", "--progress", "never",
                       env=env)
        assert r.rc == 0, (r.stdout, r.stderr)
        # shards of the same plan, run live and merged
        sharded = _plan(state, "--run-id", "smoke-20261204T000200Z", "--shards", "2")
        shard_dirs = []
        for i in (1, 2):
            d = reports / f"{sharded['run_id']}.shard-{i}"
            r = run_runner("--plan", state / "work" / "plan.json", "--shard", i, "--out", d,
                           "--progress", "never", env=env)
            assert r.rc == 0, (r.stdout, r.stderr)
            shard_dirs.append(d)
        out["_store_merged"] = _merged_from_store(state, shard_dirs, sharded["run_id"], env, tmp)
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
    # replayed: the recording answers, except the case whose input changed since
    resent = state / "datasets" / f"{RESENT}.yaml"
    resent.write_text(resent.read_text(encoding="utf-8").replace("content: ", "content: (edited) ", 1),
                      encoding="utf-8")
    plan = _plan(state, "--run-id", "smoke-20261204T000300Z")
    r = run_runner("--plan", state / "work" / "plan.json", "--out", plan["out"], "--replay", broken,
                   "--progress", "never", env=env)   # the app is stopped: nothing may call it
    assert r.rc == 0, (r.stdout, r.stderr)
    out["replayed"] = _gate(Path(plan["out"]), tmp)
    rescored = reports / "smoke-20261204T000400Z"
    r = run_script("rescore", broken, "--out", rescored)
    assert r.rc == 0, (r.stdout, _error_layers(rescored))
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
    junit = tmp / "api-junit.xml"
    doc = api.gate(broken, junit=junit)
    out["api.gate"] = {"closed": doc["gate"] == "closed", "reasons": doc["reasons"], "closing": _junit_failures(junit)}
    failed = set(re.findall(r"^FAILED \S+::(\S+?)(?: - |$)", session.stdout, re.M))
    gate_lines = [line.strip()[len("gate closed: "):] for line in session.stdout.splitlines()
                  if line.strip().startswith("gate closed: ")]
    out["pytest"] = {"closed": session.returncode != 0 and "assay gate: CLOSED" in session.stdout,
                     "reasons": gate_lines, "closing": failed, "stdout": session.stdout[-3000:]}
    return out


def test_a_regression_only_an_uncalibrated_rubric_sees_is_named(decisions):
    """The refund reply that no longer says when the money arrives: only the rubric sees it, and it is
    not calibrated, so it never gates; the gate and compare still name the case (wave 4 §1, B6)."""
    dirs = decisions["_dirs"]
    text = run_script("gate", dirs["broken"], "--no-verify").stdout
    line = next((x for x in text.splitlines() if x.startswith("  judged (provisional) would have failed:")), None)
    assert line and "c-bd5404f8 (refund-eta-v1, provisional, not gating)" in line, text
    r = run_script("compare_runs", dirs["base"], dirs["broken"])
    assert r.rc == 0, r.stdout
    said = [n for n in r.json["notes"] if n.startswith("judge_only: would have failed: ")]
    assert said and "c-bd5404f8 (refund-eta-v1" in said[0], r.json["notes"]


@pytest.mark.parametrize("path", ALL)
def test_every_path_closes(decisions, path):
    if path not in decisions:
        pytest.skip(f"{path}: moto (the local S3-compatible server) is not installed")
    d = decisions[path]
    assert d["closed"], (path, d)


@pytest.mark.parametrize("row", PLANTED, ids=[r.regression for r in PLANTED])
def test_every_planted_regression_closes_every_path(decisions, row):
    missed = []
    for path in row.paths:
        if path not in decisions:
            continue   # a path this machine cannot take (its own test says why)
        d = decisions[path]
        said = " | ".join(d["reasons"])
        if row.words not in said:
            missed.append(f"{path}: reasons lack {row.words!r}: {said[:600]}")
        if row.case is not None and row.case not in d["closing"]:
            missed.append(f"{path}: {row.case} is not among the cases that close the gate: {sorted(d['closing'])}")
    print(f"hunt row {row.regression!r}: {len(row.paths)} path(s) checked, {len(missed)} open")
    assert not missed, "\n".join(missed)
