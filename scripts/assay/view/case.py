"""One case's documents for the Case page: verdict, request, answer, turns, trajectory, judge
calls (the case's and each turn's), a simulated user's notes (the case's and each turn's), an
agent's workdir after it ran (its diff: workdir.json), repeats, and the names of its raw files.
A holdout case is NotFound (its id never shown).

Read from the case's record (core.casestore: a cases.jsonl line, or an older run's case dir)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core import casestore
from ..core.ids import is_safe_case_id
from ..report.sections import first_failure
from .failure import failures
from .paths import MAX_TEXT, NotFound, read_json, run_dir, safe_run_id
from .source import source_doc

MAX_TURNS = 200
MAX_REPEATS = 20
MAX_FILES = 500


def case_record(reports: Path, run_id: str, case_id: str) -> casestore.CaseRecord:
    """The case's record; NotFound for a bad id, an absent case or a holdout case."""
    if not is_safe_case_id(case_id):
        raise NotFound("bad case id")
    d = run_dir(reports, run_id)
    rec = casestore.open_store(d).load(case_id)
    if rec is None or not isinstance(rec.verdict, dict) or rec.verdict.get("holdout"):
        raise NotFound("no such case")
    return rec


def _json(rec: casestore.CaseRecord, name: str) -> Any:
    data = rec.read(name)
    try:
        return json.loads(data) if data is not None else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _text(rec: casestore.CaseRecord, name: str) -> str | None:
    data = rec.read(name)
    if data is None:
        return None
    text = data[:MAX_TEXT].decode("utf-8", "replace")
    return text + ("\n… (clipped by the viewer)" if len(data) > MAX_TEXT else "")


def _part(rec: casestore.CaseRecord, prefix: str = "") -> dict:
    return {"request": _json(rec, prefix + "request.json"), "response": _json(rec, prefix + "response.json"),
            "answer": _text(rec, prefix + "answer.txt"), "verdict": _json(rec, prefix + "verdict.json"),
            "expect": _json(rec, prefix + "expect.json"), "trajectory": _json(rec, prefix + "trajectory.json"),
            "judge": _json(rec, prefix + "judge.json"), "simulator": _json(rec, prefix + "simulator.json"),
            "workdir": _json(rec, prefix + "workdir.json")}


def _numbered(names: set[str], prefix: str) -> list[int]:
    """n of every `<prefix><n>/...` artifact, ascending."""
    found = {int(p[len(prefix):].split("/", 1)[0]) for p in names
             if p.startswith(prefix) and p[len(prefix):].split("/", 1)[0].isdigit()}
    return sorted(found)


def run_baseline(reports: Path, run_id: str) -> str | None:
    """The run this run was compared with when it ran (comparison.json's baseline_run_id, from
    --baseline-verdicts), else the one its pairwise rubrics judged against; None without one."""
    d = run_dir(reports, run_id)
    doc = read_json(d / "comparison.json", reports)
    rid = doc.get("baseline_run_id") if isinstance(doc, dict) else None
    if not isinstance(rid, str):
        manifest = read_json(d / "manifest.yaml", reports)
        pb = ((manifest or {}).get("judge") or {}).get("pairwise_baseline") if isinstance(manifest, dict) else None
        rid = pb.get("run_id") if isinstance(pb, dict) else pb if isinstance(pb, str) else None
    return rid if isinstance(rid, str) and safe_run_id(rid) and rid != run_id else None


def baseline_doc(reports: Path, base_id: str, case_id: str) -> dict | None:
    """The same case in the baseline run: its verdict, answer and each turn's answer and verdict."""
    try:
        rec = case_record(reports, base_id, case_id)
    except NotFound:
        return None
    turns = {str(n): {"answer": _text(rec, f"turns/{n}/answer.txt"),
                      "verdict": (_json(rec, f"turns/{n}/verdict.json") or {}).get("verdict")}
             for n in _numbered(rec.names(), "turns/")[:MAX_TURNS]}
    return {"run_id": base_id, "verdict": (rec.verdict or {}).get("verdict"), "answer": _text(rec, "answer.txt"),
            "turns": turns}


def case_doc(reports: Path, run_id: str, case_id: str, baseline: str | None = None) -> dict:
    """The case's documents, its failures in words (view.failure), its YAML source (view.source) and,
    when the run has a baseline (or `baseline` names one), the baseline run's answers of it."""
    rec = case_record(reports, run_id, case_id)
    names = rec.names()
    doc = _part(rec)
    doc.update({"run_id": run_id, "case_id": case_id, "actual": _json(rec, "actual.json")})
    doc["turns"] = [dict(_part(rec, f"turns/{n}/"), turn=n) for n in _numbered(names, "turns/")[:MAX_TURNS]]
    doc["failures"] = failures(doc["verdict"], doc["expect"], doc["answer"], doc["trajectory"], doc["judge"])
    doc["source"] = source_doc(reports.parent, case_id, first_failure(doc["verdict"] or {}))
    base = baseline if baseline and safe_run_id(baseline) and baseline != run_id else run_baseline(reports, run_id)
    doc["baseline"] = baseline_doc(reports, base, case_id) if base else None
    doc["repeats"] = [dict(_part(rec, f"repeats/{n}/"), n=n) for n in _numbered(names, "repeats/")[:MAX_REPEATS]]
    # /raw/<run>/cases/<id>/<name> serves each one (server.raw_bytes)
    doc["files"] = [f"{run_id}/cases/{case_id}/{n}" for n in sorted(names)[:MAX_FILES]]
    return doc
