"""One case's documents for the Case page: verdict, request, answer, turns, trajectory, judge
calls, repeats, and the names of its raw files. A holdout case is NotFound (its id never shown)."""

from __future__ import annotations

import os
from pathlib import Path

from .paths import NotFound, case_dir, read_json, read_text

MAX_TURNS = 200
MAX_REPEATS = 20


def _files(d: Path, base: Path) -> list[str]:
    out = []
    for root, dirs, files in os.walk(d, followlinks=False):
        dirs[:] = sorted(x for x in dirs if not os.path.islink(os.path.join(root, x)))
        for f in sorted(files):
            p = Path(root) / f
            if not p.is_symlink():
                out.append(str(p.relative_to(base)))
        if len(out) > 500:
            break
    return out


def _part(d: Path, reports: Path) -> dict:
    return {"request": read_json(d / "request.json", reports), "response": read_json(d / "response.json", reports),
            "answer": read_text(d / "answer.txt", reports), "verdict": read_json(d / "verdict.json", reports),
            "expect": read_json(d / "expect.json", reports), "trajectory": read_json(d / "trajectory.json", reports)}


def _numbered(d: Path) -> list[Path]:
    if not d.is_dir() or d.is_symlink():
        return []
    return sorted((p for p in d.iterdir() if p.name.isdigit() and not p.is_symlink()), key=lambda p: int(p.name))


def case_doc(reports: Path, run_id: str, case_id: str) -> dict:
    d = case_dir(reports, run_id, case_id)
    doc = _part(d, reports)
    v = doc["verdict"]
    if not isinstance(v, dict) or v.get("holdout"):
        raise NotFound("no such case")
    doc.update({"run_id": run_id, "case_id": case_id, "judge": read_json(d / "judge.json", reports),
                "actual": read_json(d / "actual.json", reports)})
    doc["turns"] = [dict(_part(t, reports), turn=int(t.name)) for t in _numbered(d / "turns")[:MAX_TURNS]]
    doc["repeats"] = [dict(_part(r, reports), n=int(r.name)) for r in _numbered(d / "repeats")[:MAX_REPEATS]]
    doc["files"] = _files(d, reports)
    return doc
