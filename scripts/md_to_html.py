#!/usr/bin/env python3
"""md_to_html.py: render report.md as one self-contained, inert HTML file (inline CSS, light/dark,
print; no JavaScript, no external assets; raw HTML shown as text; only http/https/mailto/relative links).
"""

import os
import sys
from pathlib import Path

from assay.core.cli import make_parser, run_command
from assay.core.errors import AssayError


def build_parser():
    p = make_parser(
        "md_to_html.py",
        "Render a Markdown report as one self-contained HTML page. Without an output path the page goes "
        "to stdout. Exit 0 written, 2 unreadable input or unwritable output, an output over a run's own file "
        "or in another run's dir, or a PASS report of a run whose files changed since (re-draft it).",
        "python3 scripts/md_to_html.py .assay/reports/smoke-20261129T101500Z/report.md .assay/reports/smoke-20261129T101500Z/report.html",
    )
    p.add_argument("input", help="the Markdown file (UTF-8)")
    p.add_argument("output", nargs="?", help="the HTML file to write (default: stdout)")
    return p


def run(args):
    from assay.core.jsonio import atomic_write_text
    from assay.report.draft import PLACEHOLDER_MARK
    from assay.report.target import not_a_report, refuse_run_target, refuse_stale_pass, report_run_id
    from assay.report.html import render

    src = Path(args.input)
    if src.is_dir():
        raise AssayError(not_a_report(src), 2, path=str(src))
    try:
        text = src.read_bytes().decode("utf-8-sig")   # a byte-order mark (Notepad's UTF-8) is no text
    except FileNotFoundError:
        raise AssayError(f"{src}: file not found", 2, path=str(src)) from None
    except UnicodeDecodeError as exc:
        raise AssayError(f"{src}: not UTF-8 ({exc}); save the report as UTF-8", 2, path=str(src)) from None
    except OSError as exc:
        raise AssayError(f"{src}: cannot read ({exc})", 2, path=str(src)) from None
    if PLACEHOLDER_MARK in text:
        line = text[: text.index(PLACEHOLDER_MARK)].count("\n") + 1
        raise AssayError(f"{src}:{line}: still holds a {PLACEHOLDER_MARK} placeholder, which must never reach "
                         "report.html; re-draft it (draft_report.py --force fills the clusters from "
                         "cluster_failures.py) or write that paragraph, then render again", 2, path=str(src), line=line)
    refuse_stale_pass(text, src.resolve().parent, src)
    if args.output:
        refuse_stale_pass(text, Path(args.output).resolve().parent, src)
    page = render(text, fallback_title=src.stem)
    if not args.output:
        sys.stdout.write(page)
        return 0, None
    out = Path(args.output)
    if out.is_dir():
        raise AssayError(f"{out}: a directory; pass the HTML file to write, e.g. {out / (src.stem + '.html')}", 2,
                         path=str(out))
    if out.exists() and os.path.samefile(out, src):
        raise AssayError(f"{out}: that is the input Markdown; writing the page there would replace it: pass "
                         f"the HTML file as the output, e.g. {src.with_suffix('.html')}", 2, path=str(out))
    refuse_run_target(out, report_run_id(text), f"the HTML file as the output, e.g. {src.with_suffix('.html')}")
    if not out.parent.is_dir():
        raise AssayError(f"{out}: directory {out.parent} does not exist", 2, path=str(out))
    try:
        atomic_write_text(out, page)
    except OSError as exc:
        raise AssayError(f"{out}: cannot write ({exc})", 2, path=str(out)) from None
    return 0, {"html": str(out), "bytes": len(page.encode("utf-8"))}


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("markdown",), script=__file__))
