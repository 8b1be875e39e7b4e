"""One run's case index: rows from verdicts.jsonl (plan order), filtered, sorted and paged.

Holdout cases are counted only: their rows never leave this module. Free text over the input and
the answer reads each case's request.json and answer.txt once, on the first text query, and keeps
them (clipped) in memory for the next.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..core import casestore
from .paths import read_jsonl, run_dir

TEXT_CLIP = 4000
PAGE_MAX = 500
_INDEX: dict[tuple[str, float], dict] = {}
_LOCK = threading.Lock()


def _meta(v: dict) -> dict:
    """unit, tags, split, conversation from the case's verdict record."""
    tags = v.get("tags")
    return {"unit": v.get("unit"), "category": v.get("category"), "multi_turn": bool(v.get("multi_turn")),
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
            "latency_ms": v.get("latency_ms"), "split": v.get("split")}


EMPTY_META = {"unit": None, "category": None, "multi_turn": False, "tags": [], "latency_ms": None, "split": None}
META_KEYS = ("unit", "tag", "split", "conversation")


def _fill_meta(doc: dict, reports: Path) -> None:
    """Each case's verdict read once (one pass over the case journal), off the first request: the
    first page never waits."""
    try:
        by_id = {row["case_id"]: row for row in doc["rows"]}
        for cid, v in casestore.open_store(doc["dir"]).verdicts():
            row = by_id.get(cid)
            if row is not None and not v.get("holdout"):
                row.update(_meta(v))
    finally:
        doc["meta"].set()


def index(reports: Path, run_id: str) -> dict:
    d = run_dir(reports, run_id)
    path = d / "verdicts.jsonl"
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = 0.0
    key = (str(d), mtime)
    with _LOCK:
        if key in _INDEX:
            return _INDEX[key]
    rows, holdout = [], {"n": 0, "pass": 0, "fail": 0, "other": 0}
    for r in read_jsonl(path, reports):
        cid = r.get("case_id")
        if not isinstance(cid, str):
            continue
        if r.get("holdout") or cid.startswith("<holdout"):
            holdout["n"] += 1
            holdout[r.get("verdict") if r.get("verdict") in ("pass", "fail") else "other"] += 1
            continue
        layers = r.get("layers") if isinstance(r.get("layers"), dict) else {}
        row = {"case_id": cid, "verdict": r.get("verdict"), "canary": bool(r.get("canary")),
               "gating": r.get("gating", True) is not False, "layers": {k: str(v) for k, v in layers.items()}}
        row.update(EMPTY_META)
        rows.append(row)
    doc = {"rows": rows, "holdout": holdout, "texts": None, "dir": d, "meta": threading.Event()}
    threading.Thread(target=_fill_meta, args=(doc, reports), daemon=True).start()
    with _LOCK:
        _INDEX[key] = doc
    return doc


def _texts(doc: dict, reports: Path) -> dict[str, str]:
    if doc["texts"] is None:
        texts = {}
        wanted = {row["case_id"] for row in doc["rows"]}   # never a holdout case
        for rec in casestore.open_store(doc["dir"]).records():
            if rec.case_id in wanted:
                req = (rec.read("request.json") or b"")[:TEXT_CLIP].decode("utf-8", "replace")
                ans = (rec.read("answer.txt") or b"")[:TEXT_CLIP].decode("utf-8", "replace")
                texts[rec.case_id] = (req + "\n" + ans).casefold()
        doc["texts"] = texts
    return doc["texts"]


def _one(q: dict, key: str) -> str | None:
    v = q.get(key)
    v = v[0] if isinstance(v, list) else v
    return v if v not in (None, "") else None


def matches(row: dict, q: dict) -> bool:
    verdict, unit, tag = _one(q, "verdict"), _one(q, "unit"), _one(q, "tag")
    if verdict and row["verdict"] != verdict:
        return False
    if unit and row.get("unit") != unit:
        return False
    if tag and tag not in row.get("tags", []):
        return False
    split = _one(q, "split")
    if split and str(row.get("split")) != split:
        return False
    conv = _one(q, "conversation")
    if conv in ("yes", "no") and row["multi_turn"] != (conv == "yes"):
        return False
    layer = _one(q, "layer")
    if layer and ":" in layer:
        name, status = layer.split(":", 1)
        if row["layers"].get(name) != status:
            return False
    return True


SORTS = {"id": lambda r: r["case_id"], "verdict": lambda r: (str(r["verdict"]), r["case_id"]),
         "unit": lambda r: (str(r.get("unit")), r["case_id"]),
         "latency": lambda r: (r.get("latency_ms") if isinstance(r.get("latency_ms"), (int, float)) else -1)}


def page(reports: Path, run_id: str, q: dict[str, Any]) -> dict:
    doc = index(reports, run_id)
    if any(_one(q, k) for k in META_KEYS) or _one(q, "sort") in ("unit", "latency"):
        doc["meta"].wait()  # these filters need every case's verdict.json
    rows = [r for r in doc["rows"] if matches(r, q)]
    text = _one(q, "q")
    if text:
        texts, needle = _texts(doc, reports), text.casefold()
        rows = [r for r in rows if needle in texts.get(r["case_id"], "") or needle in r["case_id"].casefold()]
    sort = _one(q, "sort") or "plan"
    if sort in SORTS:
        rows = sorted(rows, key=SORTS[sort], reverse=_one(q, "desc") == "1")
    try:
        size = max(1, min(PAGE_MAX, int(_one(q, "size") or 100)))
        number = max(0, int(_one(q, "page") or 0))
    except ValueError:
        size, number = 100, 0
    all_rows = doc["rows"]
    counts: dict[str, int] = {}
    for r in all_rows:
        counts[str(r["verdict"])] = counts.get(str(r["verdict"]), 0) + 1
    facets = {"units": sorted({str(r["unit"]) for r in all_rows if r.get("unit")}),
              "tags": sorted({t for r in all_rows for t in r.get("tags", [])}),
              "layers": sorted({k for r in all_rows for k in r["layers"]})}
    return {"run_id": run_id, "total": len(all_rows), "matched": len(rows), "page": number, "size": size,
            "cases": rows[number * size:(number + 1) * size], "counts": counts, "holdout": doc["holdout"],
            "facets": facets, "meta_ready": doc["meta"].is_set()}
