"""One run's case index: rows from verdicts.jsonl (plan order), filtered, sorted and paged.

Holdout cases are counted only: their rows never leave this module. Free text over the input and
the answer reads each case's request.json and answer.txt once, on the first text query, and keeps
them (clipped) in memory for the next.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from ..core import casestore
from ..core.case_read import case_verdicts
from ..report.sections import first_failure
from . import gates
from ..rundir.derived import verdict_row
from .paths import read_jsonl, run_dir
from .runs import run_extra
from .quiet import wait_quiet, waiting
from .source import datasets_ok, where

TEXT_CLIP = 4000
PAGE_MAX = 500
META_BATCH = 200
GATE_FIRST_S = 10.0   # the per-case pass waits at most this long for the run's gate decision
_INDEX: dict[tuple[str, float], dict] = {}
_LOCK = threading.Lock()


EMPTY_META = {"unit": None, "category": None, "multi_turn": False, "tags": [], "latency_ms": None, "split": None,
              "title": None, "input": None, "failure": None}
INPUT_CLIP = 200
META_KEYS = ("unit", "tag", "split", "conversation")
META_SORTS = ("unit", "latency", "title", "failure")


def first_line(text: object, clip: int = INPUT_CLIP) -> str | None:
    """The first non-blank line of a text, clipped (a row shows one line of the input)."""
    if not isinstance(text, str):
        return None
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return (line if len(line) <= clip else line[:clip - 1] + "…") or None


def meta_of(v: dict | None) -> dict:
    """unit, category, conversation, tags, latency, split, and what a person reads first: the title,
    the input's first line and the first failing layer's reason in words (report.sections), all
    from the case's verdict (the one read a row already costs)."""
    v = v if isinstance(v, dict) else {}
    tags = v.get("tags")
    title = v.get("title")
    return {"unit": v.get("unit"), "category": v.get("category"), "multi_turn": bool(v.get("multi_turn")),
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
            "latency_ms": v.get("latency_ms"), "split": v.get("split"),
            "title": title if isinstance(title, str) and title else None, "input": first_line(v.get("input_text")),
            "failure": first_failure(v)}


def _linked(d: Path) -> set[str] | None:
    """Names under an older run's cases/ that are symlinks (never read through); None when cases/ is
    a link; none in a run with a case journal (core.casestore: no case dirs)."""
    if casestore.has_journal(d):
        return set()
    cases = d / casestore.LEGACY_DIR
    if cases.is_symlink():
        return None
    try:
        with os.scandir(cases) as it:
            return {e.name for e in it if e.is_symlink()}
    except OSError:
        return set()


def _load_meta(doc: dict, rows: list[dict], from_start: bool = False) -> None:
    """Fill the rows' meta from each case's verdict (the run-dir reader `case_verdicts`), once each;
    `from_start`: the rows are the run's first (a journal's first lines are read for them)."""
    linked, done, cases = doc["linked"], doc["has_meta"], doc["dir"] / casestore.LEGACY_DIR
    journal = casestore.has_journal(doc["dir"])
    todo = []
    for row in rows:
        cid = row["case_id"]
        if cid in done:
            continue
        if journal:
            safe = True
        elif linked is None:  # before the pass has listed an older run's cases/: look at this one case dir
            safe = not cases.is_symlink() and not os.path.islink(cases / cid)
        else:
            safe = linked is not False and cid not in linked
        if safe:
            todo.append(row)
        else:
            done.add(cid)
    verdicts = case_verdicts(doc["dir"], [row["case_id"] for row in todo], from_start=from_start)
    for row in todo:
        row.update(meta_of(verdicts.get(row["case_id"])))
        done.add(row["case_id"])


def _fill_meta(doc: dict) -> None:
    """Every case's meta, off the request, once the run's gate decision is known (`gates.settled`:
    the page's "checking…" goes first) and only while no request is being answered (`quiet`):
    the first page reads only its own rows' verdicts."""
    try:
        rows = doc["rows"]
        gates.settled(doc["dir"], GATE_FIRST_S)
        wait_quiet()
        listed = _linked(doc["dir"])
        doc["linked"] = False if listed is None else listed
        for i in range(0, len(rows), META_BATCH):
            wait_quiet()
            _load_meta(doc, rows[i:i + META_BATCH])
        doc["facets"] = facets_of(rows)
    finally:
        doc["meta"].set()


def facets_of(rows: list[dict]) -> dict:
    """The filter choices: units and tags (known once every case's verdict was read) and layers."""
    return {"units": sorted({str(r["unit"]) for r in rows if r.get("unit")}),
            "tags": sorted({t for r in rows for t in r.get("tags", [])}),
            "layers": sorted(set().union(*(r["layers"] for r in rows)))}


def _unfinished(d: Path, reports: Path) -> bool:
    """results.json still says running (a live runner, or one killed): its verdicts.jsonl is the
    runner's last batch (often absent), so the rows are the finished cases in its journal
    (cases.jsonl: a regular file, never a symlink, `casestore.has_journal`)."""
    extra = run_extra(reports, d.name)   # the row's summary, read once per results.json version
    return bool(extra) and extra["summary"].get("status") == "running" and casestore.has_journal(d)


def _finished_rows(d: Path) -> list[dict]:
    """verdicts.jsonl's rows for every case that finished (the cases the gate recounts for an
    interrupted run), in the order they finished."""
    return [verdict_row(dict(rec, case_id=cid)) for cid, rec in casestore.open_store(d).verdicts()
            if isinstance(rec, dict) and rec.get("case_id") == cid and "verdict" in rec]


def index(reports: Path, run_id: str) -> dict:
    d = run_dir(reports, run_id)
    gates.ask(d)   # the run page's gate: its decision starts with the page's first request
    unfinished = _unfinished(d, reports)
    path = d / (casestore.JOURNAL if unfinished else "verdicts.jsonl")
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = 0.0
    key = (str(d), mtime, unfinished)
    with _LOCK:
        if key in _INDEX:
            return _INDEX[key]
    rows, holdout = [], {"n": 0, "pass": 0, "fail": 0, "other": 0}
    for r in (_finished_rows(d) if unfinished else read_jsonl(path, reports)):
        cid = r.get("case_id")
        if not isinstance(cid, str):
            continue
        if r.get("holdout") or cid.startswith("<holdout"):
            holdout["n"] += 1
            holdout[r.get("verdict") if r.get("verdict") in ("pass", "fail") else "other"] += 1
            continue
        layers = r.get("layers")
        rows.append({"case_id": cid, "verdict": r.get("verdict"), "canary": bool(r.get("canary")),
                     "gating": r.get("gating", True) is not False, "layers": layers if isinstance(layers, dict) else {},
                     **EMPTY_META})
    counts: dict[str, int] = {}
    for r in rows:
        counts[str(r["verdict"])] = counts.get(str(r["verdict"]), 0) + 1
    facets = {"units": [], "tags": [], "layers": sorted(set().union(*(r["layers"] for r in rows)))}
    doc = {"rows": rows, "holdout": holdout, "texts": None, "dir": d, "meta": threading.Event(),
           "linked": None, "has_meta": set(), "counts": counts, "facets": facets}
    threading.Thread(target=_fill_meta, args=(doc,), daemon=True).start()
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
         "latency": lambda r: (r.get("latency_ms") if isinstance(r.get("latency_ms"), (int, float)) else -1),
         "title": lambda r: (r.get("title") is None, str(r.get("title") or ""), r["case_id"]),
         "failure": lambda r: (r.get("failure") is None, str((r.get("failure") or {}).get("layer")),
                               str((r.get("failure") or {}).get("sentence")), r["case_id"])}


SOURCE_WAIT_S = 1.0  # a page waits at most this long in all for the index of oddly named case files


def _where(reports: Path, row: dict, deadline: float, checked: bool) -> dict | None:
    """A shown failing row's case file and the line of its failing expectation (view.source)."""
    if not checked:
        return None
    return where(reports.parent, row["case_id"], row.get("failure"), max(0.0, deadline - time.monotonic()), checked)


MAX_SOURCES = 500


def sources(reports: Path, run_id: str, q: dict[str, Any]) -> dict:
    """/api/run/<id>/sources?ids=a,b,…: the case file and failing line of each named failing row,
    asked by the page after it painted its rows (the rows' own request reads no case file). Once
    per case while the run's index lives; a passing, holdout or unknown id gets nothing."""
    doc = index(reports, run_id)
    wanted = set((_one(q, "ids") or "").split(",")[:MAX_SOURCES])
    rows = [r for r in doc["rows"] if r["case_id"] in wanted]
    _load_meta(doc, rows)
    deadline, known = time.monotonic() + SOURCE_WAIT_S, doc.setdefault("sources", {})
    missing = [r for r in rows if r.get("failure") and known.get(r["case_id"]) is None]
    checked = bool(missing) and datasets_ok(reports.parent)
    for r in missing:
        known[r["case_id"]] = _where(reports, r, deadline, checked)
    return {"run_id": run_id, "sources": {r["case_id"]: known[r["case_id"]] for r in rows if known.get(r["case_id"])}}


def page(reports: Path, run_id: str, q: dict[str, Any], wait_meta: bool = False) -> dict:
    doc = index(reports, run_id)
    if wait_meta or any(_one(q, k) for k in META_KEYS) or _one(q, "sort") in META_SORTS:
        with waiting():
            doc["meta"].wait()  # these filters need every case's verdict
    elif _one(q, "wait"):  # the page asks again for the facets (units, tags) once the pass is done
        try:
            with waiting():
                doc["meta"].wait(min(30.0, max(0.0, float(_one(q, "wait")))))
        except ValueError:
            pass
    filtered = any(_one(q, k) for k in ("verdict", "layer", *META_KEYS))
    rows = [r for r in doc["rows"] if matches(r, q)] if filtered else doc["rows"]
    text = _one(q, "q")
    if text:
        texts, needle = _texts(doc, reports), text.casefold()
        rows = [r for r in rows if needle in texts.get(r["case_id"], "") or needle in r["case_id"].casefold()
                or needle in str(r.get("title") or "").casefold()
                or needle in str((r.get("failure") or {}).get("sentence") or "").casefold()]
    sort = _one(q, "sort") or "plan"
    if sort in SORTS:
        rows = sorted(rows, key=SORTS[sort], reverse=_one(q, "desc") == "1")
    try:
        size = max(1, min(PAGE_MAX, int(_one(q, "size") or 100)))
        number = max(0, int(_one(q, "page") or 0))
    except ValueError:
        size, number = 100, 0
    shown = rows[number * size:(number + 1) * size]
    # the rows shown carry their unit and conversation even before the pass is done
    _load_meta(doc, shown, from_start=rows is doc["rows"] and sort == "plan" and number == 0)
    return {"run_id": run_id, "total": len(doc["rows"]), "matched": len(rows), "page": number, "size": size,
            "cases": shown, "counts": doc["counts"], "holdout": doc["holdout"], "facets": doc["facets"],
            "meta_ready": doc["meta"].is_set(),
            # the run's completeness check as its gate decided it (never waited for: "checking" until
            # known): "failed" means these rows come from files the check rejects, the gate closed
            "check": gates.check_state(gates.current(doc["dir"]))}
