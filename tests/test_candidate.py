"""candidate.py new|revert|keep on a real git checkout, with run dirs shaped as the runner writes them
and comparison.json computed by the stats module itself."""

from __future__ import annotations

import datetime
import json
import subprocess
import time
from pathlib import Path

import pytest

from fixtures_authoring import run_inproc
from helpers import run_script

from assay.stats.paired import compare
from fakeapp import FakeApp
from test_candidate_evidence import champion, make_app, measure, router

pytestmark = pytest.mark.slow   # over ~7 s: started first (conftest)

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True,
                          env={**GIT_ENV, "HOME": str(root)}).stdout


def app_repo(tmp_path: Path) -> tuple[Path, Path]:
    app = tmp_path / "app"
    (app / ".assay" / "reports").mkdir(parents=True)
    (app / "prompts.py").write_text("ROUTER = 'route billing questions to billing'\n")
    (app / "other.py").write_text("x = 1\n")
    git(app, "init", "-q")
    git(app, "add", "-A")
    git(app, "commit", "-qm", "init")
    return app, app / ".assay"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _write_run(d: Path, run_id: str, mode: str, rows: list[dict], extra: dict) -> None:
    """A finished run dir as the runner leaves it: results.json, manifest.yaml (cases with their
    case_sha256), verdicts.jsonl; started and finished now."""
    d.mkdir(parents=True)
    split = "holdout" if mode == "holdout" else "full"
    cases = [{"id": r["case_id"], "case_sha256": f"sha-{r['case_id']}", "set": "holdout" if split == "holdout" else "main"}
             for r in rows]
    (d / "manifest.yaml").write_text(json.dumps({"run_id": run_id, "mode": mode, "selecting_split": split,
                                                 "dataset_version": 4, "harness_version": "0.1.0",
                                                 "started_at": _now(), "cases": cases, **extra}))
    (d / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "results.json").write_text(json.dumps({"run_id": run_id, "mode": mode, "started_at": _now(),
                                                "finished_at": _now(), "summary": {"status": "ok"}}))


def run_dir(state: Path, run_id: str, *, mode: str, fixed: int, broken: int, baseline: str) -> Path:
    d = state / "reports" / run_id
    base = [{"case_id": f"c{i}", "verdict": "fail" if i < fixed else "pass"} for i in range(30)]
    cand = [{"case_id": f"c{i}", "verdict": "pass" if i < fixed else ("fail" if i < fixed + broken else "pass")}
            for i in range(30)]
    base_dir = state / "reports" / baseline
    if not base_dir.exists():
        _write_run(base_dir, baseline, mode, base, {})
    _write_run(d, run_id, mode, cand, {"baseline_verdicts": {"path": str(base_dir / "verdicts_for_stats.jsonl"),
                                                             "run_id": baseline}})
    (d / "comparison.json").write_text(json.dumps({**compare(base, cand), "baseline_run_id": baseline}))
    if mode == "holdout":   # the runner records every holdout look in the ledger (keep checks the budget)
        ledger = state / "datasets" / "holdout-looks.jsonl"
        ledger.parent.mkdir(parents=True, exist_ok=True)
        with ledger.open("a") as fh:
            fh.write(json.dumps({"run_id": run_id, "date": _now(), "mode": "holdout", "reason": "test"}) + "\n")
    return d


def test_new_edit_keep_pins_baseline_after_training_then_holdout(tmp_path):
    """Real runs of a real app (keep verifies each run dir and recounts its comparison)."""
    app, state = make_app(tmp_path)
    with FakeApp(router(app)) as fake:
        champion(state, fake.url)
        time.sleep(1.1)
        r = run_script("candidate", "new", state, "--id", "router-1", "--surface", "words.txt",
                       "--cluster", "refunds routed to tech", "--reflection", "router words lack refunds")
        assert r.rc == 0, r.stdout
        assert r.json["surfaces"][0]["blob"] == git(app, "rev-parse", "HEAD:words.txt").strip()
        time.sleep(1.1)
        (app / "words.txt").write_text("billing: invoice refund money\n")
        train = measure(state, fake.url, "regression-20261201T010000Z", "regression-20261201T000000Z")
        r = run_script("candidate", "keep", state, "--id", "router-1", "--training", train)
        assert r.rc == 3 and r.json["decision"] == "needs_holdout" and r.json["training"]["keep"] is True
        hold = measure(state, fake.url, "holdout-20261201T010500Z", "holdout-20261201T000000Z")
        r = run_script("candidate", "keep", state, "--id", "router-1", "--training", train, "--holdout", hold)
    assert r.rc == 0 and r.json["decision"] == "kept", r.stdout
    pin = json.loads((state / "reports" / "baseline.json").read_text())
    assert pin == {"run_id": "regression-20261201T010000Z", "dataset_version": 1, "harness_version": "0.1.0"}
    log = [json.loads(x) for x in (state / "candidates" / "log.jsonl").read_text().splitlines()]
    assert [(x["action"], x.get("decision")) for x in log] == [("new", None), ("keep", "needs_holdout"),
                                                              ("keep", "kept")]
    r = run_script("candidate", "revert", state, "--id", "router-1")
    assert r.rc == 2 and "was kept" in r.json["error"]


def test_training_loss_rejects_without_reading_holdout_and_revert_verifies(tmp_path):
    app, state = make_app(tmp_path)
    with FakeApp(router(app)) as fake:
        champion(state, fake.url)
        time.sleep(1.1)
        assert run_script("candidate", "new", state, "--id", "c1", "--surface", "words.txt").rc == 0
        time.sleep(1.1)
        (app / "words.txt").write_text("billing: invoice vpn crash\n")   # two tech cases now misrouted
        train = measure(state, fake.url, "regression-20261201T010000Z", "regression-20261201T000000Z")
    r = run_script("candidate", "keep", state, "--id", "c1", "--training", train,
                   "--holdout", tmp_path / "never-read")        # a missing holdout dir: never opened on a loss
    assert r.rc == 1 and r.json["decision"] == "rejected" and "holdout" not in r.json, r.stdout
    r = run_script("candidate", "revert", state, "--id", "c1")
    assert r.rc == 0 and r.json["surfaces"][0]["verified"] is True
    assert (app / "words.txt").read_text() == "billing: invoice\n"


def test_refusals(tmp_path):
    app, state = app_repo(tmp_path)
    (app / "other.py").write_text("x = 2\n")
    r = run_inproc("candidate", "new", state, "--surface", "other.py")
    assert r.rc == 2 and "uncommitted changes" in r.json["error"]
    (app / "untracked.py").write_text("y = 1\n")
    r = run_inproc("candidate", "new", state, "--id", "u", "--surface", "untracked.py")
    assert r.rc == 2 and "uncommitted changes (?? untracked.py)" in r.json["error"]
    (app / "other.py").write_text("x = 1\n")   # undone: a keep refuses a tracked change outside the surfaces
    r = run_inproc("candidate", "new", state, "--id", "m", "--surface", "missing.py")
    assert r.rc == 2 and "no such file" in r.json["error"]
    assert run_inproc("candidate", "new", state, "--id", "ok", "--surface", "prompts.py").rc == 0
    r = run_inproc("candidate", "keep", state, "--id", "ok", "--training", tmp_path)
    assert r.rc == 2 and "did not measure it" in r.json["error"]       # nothing edited yet
    (app / "prompts.py").write_text("ROUTER = 'edited'\n")
    hold = run_dir(state, "holdout-20261130T020000Z-cccc", mode="holdout", fixed=5, broken=0, baseline="h")
    r = run_inproc("candidate", "keep", state, "--id", "ok", "--training", hold)
    assert r.rc == 2 and "pass a training run" in r.json["error"]
    (state / "reports" / "baseline.json").write_text(json.dumps({"run_id": "pinned", "dataset_version": 4,
                                                                 "harness_version": "0.1.0"}))
    train = run_dir(state, "regression-20261130T010000Z-bbbb", mode="regression", fixed=8, broken=0, baseline="other")
    r = run_inproc("candidate", "keep", state, "--id", "ok", "--training", train)
    assert r.rc == 2 and "the pinned baseline is pinned" in r.json["error"]
    r = run_inproc("candidate", "keep", state, "--id", "nope", "--training", hold)
    assert r.rc == 2 and "not found" in r.json["error"]
    r = run_inproc("candidate", "revert", state)
    assert r.rc == 2 and "--id is required" in r.json["error"]
    r = run_inproc("candidate", "revert", state, "--id", "ok", "--training", hold)
    assert r.rc == 2 and "do(es) not apply" in r.json["error"]
    r = run_inproc("candidate", "new", tmp_path / "elsewhere", "--surface", "x.py")
    assert r.rc == 2
