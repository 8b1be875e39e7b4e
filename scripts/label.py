#!/usr/bin/env python3
"""label.py RUN_DIR [RUN_DIR ...] -o PAGE.html: a self-contained page for labelling the judge's verdicts.

One item per (judged case, rubric, node, answer) of the runs' non-holdout cases (holdout cases
are never read; the same answer in two runs is one item, a changed answer is a new one): input, answer, tool results, the node's judge verdict, evidence and
reason. Keys agree / disagree / skip with an optional critique; the page exports the
annotation JSONL that score_agreement.py reads. Judge fails are oversampled; items
labelled before come back as canaries. Exit 0 written; 2 on bad input or nothing judged.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "label.py",
        "Write a self-contained labelling page for a run's judged, non-holdout cases (no network). "
        "Open it in a browser, label with the keys, export the JSONL into <state>/annotations/.",
        "python3 scripts/label.py .assay/reports/regression-20261130T101500Z-1a2b -o .assay/work/label.html "
        "--reviewer \"Dana Whitfield\"",
    )
    p.add_argument("run_dir", nargs="+",
                   help="finished run directories (<state>/reports/<run-id>); several runs give one page, "
                        "each distinct answer of a case once (labels pair with the answer they were given on)")
    p.add_argument("-o", "--out", required=True, metavar="PAGE.html", help="where to write the page")
    p.add_argument("--reviewer", default="", help="the labeller's name, prefilled on the page")
    p.add_argument("--annotations", action="append", metavar="FILE",
                   help="earlier annotation JSONL (repeatable; default <state>/annotations/*.jsonl): "
                        "those items are not asked again and feed the canaries")
    p.add_argument("--canaries", type=int, default=3,
                   help="earlier-labelled items mixed back in as canaries (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the stratified order (default 0)")
    p.add_argument("--limit", type=int, help="at most this many new items (a 15-minute sitting is ~30)")
    return p


def run(args):
    import datetime as dt
    import secrets
    from pathlib import Path

    from assay.calibrate.label_page import render_page
    from assay.calibrate.labelset import build_items
    from assay.core.errors import AssayError
    from assay.core.jsonio import atomic_write_text

    out = Path(args.out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise AssayError(f"-o {out}: the page is an .html file", 2)
    if not out.parent.is_dir():
        raise AssayError(f"-o {out}: directory {out.parent} does not exist", 2)
    if args.canaries < 0 or (args.limit is not None and args.limit < 1):
        raise AssayError("--canaries must be >= 0 and --limit >= 1", 2)
    run_dirs = [Path(r) for r in args.run_dir]
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise AssayError(f"{run_dir}: not a directory; pass a run directory (<state>/reports/<run-id>)", 2)
    run_dir = run_dirs[0]
    files = [Path(f) for f in args.annotations] if args.annotations else None
    labelset = build_items(run_dirs, annotation_files=files, canaries=args.canaries, seed=args.seed,
                           limit=args.limit)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    batch = f"{labelset['run_id']}-{stamp}-{secrets.token_hex(2)}"
    state = run_dir.resolve().parent.parent if run_dir.resolve().parent.name == "reports" else None
    save_to = str(state / "annotations" / f"{batch}.jsonl") if state else f"<state>/annotations/{batch}.jsonl"
    atomic_write_text(out, render_page(labelset, batch=batch, reviewer=args.reviewer, save_to=save_to))
    if state is not None:   # which judge these verdicts are of: --write checks it (calibrate.labelled_judge)
        from assay.calibrate.labelled_judge import record
        record(state, batch, run_dirs, labelset["items"])
    return 0, {"page": str(out), "batch": batch, "save_export_to": save_to, "run_id": labelset["run_id"],
               "run_ids": labelset["run_ids"],
               **labelset["stats"]}


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, script=__file__))
