"""holdout.py looks|unseal|reseal as a user runs it, on a copy of the example state dir."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from fixtures_authoring import run_inproc
from helpers import ROOT, run_script

EXAMPLE = ROOT / "examples" / "helpdesk" / ".assay"


def state_copy(tmp_path: Path, name: str = "state") -> Path:
    target = tmp_path / name
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("work", "reports", "annotations"))
    return target


def splits(state: Path) -> dict[str, list[str]]:
    out = {}
    for path in (state / "datasets").glob("c-*.yaml"):
        doc = yaml.safe_load(path.read_text())
        out[doc["id"]] = doc["split"]
    return out


def validate_clean(state: Path, tmp_path: Path) -> dict:
    work = tmp_path / f"work-{state.name}"
    work.mkdir()
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                   "--adapter", work / "adapter.json", "--manifest", work / "manifest.json")
    assert r.rc == 0, r.stdout
    return r.json


def test_looks_unseal_reseal_end_to_end(tmp_path):
    state = state_copy(tmp_path)
    before = splits(state)
    holdout_before = sorted(c for c, s in before.items() if s == ["holdout"])
    r = run_inproc("holdout", "looks", state)
    assert r.rc == 0 and r.json["looks"] == 0 and r.json["remaining"] == 5 and not r.json["reseal_due"]

    r = run_script("holdout", "unseal", state, "--reason", "budget spent; read the misses", "--case", holdout_before[0])
    assert r.rc == 0 and r.json["looks"] == 1
    assert r.json["unsealed"] == [{"case_id": holdout_before[0], "file": f"datasets/{holdout_before[0]}.yaml"}]
    ledger = (state / "datasets" / "holdout-looks.jsonl").read_text().splitlines()
    assert len(ledger) == 1 and json.loads(ledger[0])["reason"] == "budget spent; read the misses"

    # a holdout run whose manifest saw two more holdout cases, as the runner records it
    run_id = "holdout-20261130T010000Z-abcd"
    (state / "reports" / run_id).mkdir(parents=True)
    (state / "reports" / run_id / "manifest.yaml").write_text(json.dumps(
        {"run_id": run_id, "cases": [{"id": c, "set": "holdout"} for c in holdout_before[1:3]]}))
    with open(state / "datasets" / "holdout-looks.jsonl", "a") as fh:
        fh.write(json.dumps({"run_id": run_id, "date": "2026-11-30T01:00:00Z", "mode": "holdout", "reason": "run"}) + "\n")
    assert run_inproc("holdout", "looks", state).json["looks"] == 2

    twin = state_copy(tmp_path, "twin")
    shutil.copytree(state / "reports", twin / "reports")
    shutil.copy(state / "datasets" / "holdout-looks.jsonl", twin / "datasets" / "holdout-looks.jsonl")
    dry = run_inproc("holdout", "reseal", state, "--seed", "7", "--dry-run")
    assert dry.rc == 0 and splits(state) == before
    r = run_script("holdout", "reseal", state, "--seed", "7")
    assert r.rc == 0, r.stdout
    out = r.json
    assert out["moved_to_full"] == holdout_before[:3] and len(out["drawn_into_holdout"]) == 3
    assert out["drawn_into_holdout"] == dry.json["drawn_into_holdout"]
    assert out["dataset_version"] == {"from": 1, "to": 2} and out["validation"]["errors"] == 0
    after = splits(state)
    for cid in holdout_before[:3]:
        assert after[cid] == ["full"]
    for cid in out["drawn_into_holdout"]:
        assert before[cid] == ["full"] and after[cid] == ["holdout"]
        doc = yaml.safe_load((state / "datasets" / f"{cid}.yaml").read_text())
        assert doc["review"]["status"] == "accepted" and doc.get("gating", True) is not False
    assert sum(s == ["holdout"] for s in after.values()) == len(holdout_before)
    manifest = yaml.safe_load((state / "datasets" / "dataset.yaml").read_text())
    assert manifest["dataset_version"] == 2
    assert (state / "datasets" / "dataset.yaml").read_text().startswith("# The dataset manifest")
    assert (state / "datasets" / "holdout-looks.v1.jsonl").is_file()
    assert run_inproc("holdout", "looks", state).json["looks"] == 0
    lint = validate_clean(state, tmp_path)
    assert lint["error_count"] == 0 and lint["summary"]["by_split"]["holdout"] == len(holdout_before)
    # deterministic with --seed
    assert run_inproc("holdout", "reseal", twin, "--seed", "7").json["drawn_into_holdout"] == out["drawn_into_holdout"]


def test_bad_input(tmp_path):
    state = state_copy(tmp_path)
    r = run_inproc("holdout", "unseal", state)
    assert r.rc == 2 and "--reason is required" in r.json["error"]
    r = run_inproc("holdout", "unseal", state, "--reason", "x", "--case", "c-nope")
    assert r.rc == 2 and "c-nope" in r.json["error"]
    r = run_inproc("holdout", "reseal", state)
    assert r.rc == 2 and "nothing to reseal" in r.json["error"]
    r = run_inproc("holdout", "looks", state, "--seed", "3")
    assert r.rc == 2 and "--seed" in r.json["error"]
    r = run_inproc("holdout", "looks", tmp_path / "nope")
    assert r.rc == 2 and "not a state dir" in r.json["error"]
    r = run_inproc("holdout", "peek", state)
    assert r.rc == 2 and "invalid choice" in r.json["error"]
    (state / "datasets" / "holdout-looks.jsonl").write_text('{"run_id": "a"}\nnot json\n')
    r = run_inproc("holdout", "looks", state)
    assert r.rc == 2 and "holdout-looks.jsonl:2" in r.json["error"]


def test_reseal_without_dataset_yaml(tmp_path):
    """dataset.yaml is optional (case-format.md): a reseal of a suite without one creates it, at
    dataset_version 2, instead of refusing its own placeholder text."""
    state = state_copy(tmp_path)
    (state / "datasets" / "dataset.yaml").unlink()
    holdout = sorted(c for c, s in splits(state).items() if s == ["holdout"])
    assert run_inproc("holdout", "unseal", state, "--reason", "read the misses", "--case", holdout[0]).rc == 0
    r = run_inproc("holdout", "reseal", state, "--seed", "3")
    assert r.rc == 0, r.json
    assert r.json["dataset_version"] == {"from": 1, "to": 2} and r.json["moved_to_full"] == [holdout[0]]
    text = (state / "datasets" / "dataset.yaml").read_text()
    assert text.startswith("# The dataset manifest") and yaml.safe_load(text) == {"dataset_version": 2}


def test_the_run_order_and_changed_since_read_the_one_holdout_split_rule(monkeypatch):
    """One definition of which case is sealed (assay.suite.holdout.is_holdout): --order history keeps
    holdout cases unranked and --changed-since runs them live by asking it, never by a copy of it."""
    from assay.run.order import history_order
    from assay.suite import changed_since, holdout
    cases = [{"id": "a", "split": ["smoke"]}, {"id": "b", "split": ["holdout"]}, {"id": "c", "split": ["full"]}]
    assert holdout.holdout_case_ids(cases) == ["b"]
    seqs = {"a": ["pass"], "b": ["fail"], "c": ["fail"]}
    assert history_order(cases, [0, 1, 2], seqs)[0] == [2, 0, 1]   # b sealed: last, unranked
    assert changed_since._holdout({"cases": cases}, "b") and not changed_since._holdout({"cases": cases}, "a")
    monkeypatch.setattr(holdout, "is_holdout", lambda case: case["id"] == "a")   # another rule: both follow it
    ordered, counts = history_order(cases, [0, 1, 2], seqs)
    assert ordered == [1, 2, 0] and counts["holdout (plan order, not ranked)"] == 1
    assert changed_since._holdout({"cases": cases}, "a") and not changed_since._holdout({"cases": cases}, "b")
