"""`view.py --bundle OUT_DIR`: the same pages as static files that open from disk (file://).

The page's data are data scripts (`data/<key>.js`, each calling `ASSAY_PUT(key, doc)`), because a
browser will not fetch() a JSON file from file://. A run's case index is written as a head
(counts, facets) and chunks of CHUNK rows: the first page loads one chunk; a filter or sort loads
them all once and filters in the browser (verdict, layer, unit, tag, split, conversation, case id;
free text over the input and the answer needs the server). Each run is compared with the next
older run in the bundle. A run dir the pages cannot show (no readable results.json with a
summary) is named in the command's output (`unreadable`, with why), never dropped without a word.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..core.errors import AssayError
from .api import compare_doc, history_doc, run_doc
from .case import case_doc
from .cases import index, page
from .paths import NotFound, read_json
from .runs import list_runs
from .server import STATIC

CHUNK = 1000  # case rows per data file of a run's index


def _key(path: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9._-]", "__", path[len("/api/"):])


def _put(data: Path, path: str, doc) -> None:
    key = _key(path)
    text = json.dumps(doc, default=str).replace("</", "<\\/")
    (data / f"{key}.js").write_text(f"ASSAY_PUT({json.dumps(key)}, {text});\n", encoding="utf-8")


def _put_index(data: Path, reports: Path, rid: str, chunk: int) -> list[dict]:
    """The run's case index as a head (counts, facets, how many chunks) and chunks of `chunk` rows,
    so a 10,000-case run's first page loads one small file, not the whole index."""
    head = page(reports, rid, {"size": ["1"]}, wait_meta=True)
    rows = index(reports, rid)["rows"]
    n = max(1, -(-len(rows) // chunk))
    _put(data, f"/api/run/{rid}/cases", {k: v for k, v in head.items() if k not in ("cases", "matched", "page", "size")}
         | {"chunks": n, "chunk_size": chunk})
    for i in range(n):
        _put(data, f"/api/run/{rid}/cases/{i}", {"rows": rows[i * chunk:(i + 1) * chunk]})
    return rows


def write_bundle(reports: Path, out: Path, run_ids: list[str] | None = None, chunk: int = CHUNK) -> dict:
    out = Path(out)
    if out.resolve() == reports.resolve() or reports.resolve() in out.resolve().parents:
        raise AssayError(f"{out}: the bundle must not be written inside the state's reports/ (the viewer never "
                         "writes there); pick another --bundle directory", 2)
    if out.exists() and not out.is_dir():
        raise AssayError(f"--bundle {out}: a file; the bundle is a directory of pages (index.html, data/): pass a "
                         "new directory, e.g. --bundle assay-bundle", 2)
    if out.is_dir() and not (out / "bundle.js").is_file() and any(out.iterdir()):
        raise AssayError(f"--bundle {out}: a directory that holds other files and no earlier bundle; writing "
                         "index.html, app.js, app.css and data/ there could replace files of yours: pass a new "
                         "or empty directory, e.g. --bundle assay-bundle", 2)
    runs = list_runs(reports, wait=None)
    unreadable = [u for u in runs["unreadable"] if not run_ids or u["run_id"] in run_ids]
    if run_ids:
        missing = sorted(set(run_ids) - {r["run_id"] for r in runs["runs"]} - {u["run_id"] for u in unreadable})
        if missing:
            raise AssayError(f"--run {missing[0]}: no such run under {reports}; pick one of the run dirs", 2)
        kept = [r for r in runs["runs"] if r["run_id"] in run_ids]
        runs = {"runs": kept, "count": len(kept), "checking": 0, "unreadable": unreadable,
                "not_started": runs["not_started"]}
    out.mkdir(parents=True, exist_ok=True)   # after the checks: a refused --run leaves nothing behind
    data = out / "data"
    data.mkdir(exist_ok=True)
    _put(data, "/api/runs", runs)
    _put(data, "/api/history", history_doc(reports))
    cases = 0
    ids = [r["run_id"] for r in runs["runs"]]
    for rid in ids:
        _put(data, f"/api/run/{rid}", run_doc(reports, rid, wait=None))
        rows = _put_index(data, reports, rid, chunk)
        for r in rows:
            try:
                _put(data, f"/api/case/{rid}/{r['case_id']}", case_doc(reports, rid, r["case_id"]))
                cases += 1
            except NotFound:
                continue
    for newer, older in zip(ids, ids[1:]):
        _put(data, f"/api/compare/{older}/{newer}", compare_doc(reports, older, newer, wait=None))
    for name in ("app.js", "app.css"):
        shutil.copyfile(STATIC / name, out / name)
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    html = html.replace('<script src="app.js"></script>',
                        '<script src="bundle.js"></script>\n<script src="app.js"></script>')
    (out / "bundle.js").write_text("window.ASSAY_BUNDLE = true;\n", encoding="utf-8")
    (out / "index.html").write_text(html, encoding="utf-8")
    return {"bundle": str(out), "index": str(out / "index.html"), "runs": len(ids), "cases": cases,
            "unreadable": unreadable, "not_started": runs["not_started"]}
