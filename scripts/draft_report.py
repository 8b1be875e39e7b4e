#!/usr/bin/env python3
"""draft_report.py: write every numeric section of a run's report.md from the run's own files,
with the failure clusters (cluster_failures.py) drafted in a marked slot at the top that an agent may rewrite.
"""

import sys
from pathlib import Path

from assay.core.cli import make_parser, run_command
from assay.core.errors import AssayError


def build_parser():
    from assay.verdict.flags import add_decision_flags

    p = make_parser(
        "draft_report.py",
        "Draft report.md for a finished run: counts, pass rate, per-layer table, routing, reliability, "
        "comparison, holdout aggregate, what was not measured, redaction. Its PASS/FAIL banner is gate.py's decision "
        "with the same flags: give it the flags your CI gate is given (the banner names them). "
        "Exit 0 written, 2 bad input.",
        "python3 scripts/draft_report.py .assay/reports/smoke-20261129T101500Z -o .assay/reports/smoke-20261129T101500Z/report.md",
    )
    p.add_argument("run_dir", help="the finished run directory, reports/<run-id>")
    p.add_argument("-o", "--output", help="where to write (default <run-dir>/report.md; '-' = stdout)")
    p.add_argument("--baseline", metavar="RUN|auto",
                   help="compare with this run (or `auto`: reports/baseline.json's pin, else the newest complete run "
                        "of the same series whose gate was open): the comparison section lists each bucket's cases, "
                        "and the banner is `gate.py --baseline`'s decision (newly failing gating cases named first)")
    p.add_argument("--force", action="store_true", help="overwrite an existing report (its clusters slot is lost)")
    add_decision_flags(p)   # gate.py's own flags: the banner decides as `gate.py RUN <the same flags>`
    return p


def run(args):
    import dataclasses

    from assay.core.jsonio import atomic_write_text
    from assay.report.draft import draft
    from assay.report.target import refuse_run_target, report_run_id
    from assay.verdict import decide, gate_open
    from assay.verdict.flags import decision_flags_said, decision_options

    run_dir = Path(args.run_dir)
    options = decision_options(args)
    lines = None
    if args.baseline:
        from assay.compare.baseline import resolve_baseline
        from assay.compare.document import compare_runs
        from assay.compare.report_section import comparison_lines
        from assay.verdict.baseline import red_baseline_words
        said: list[str] = []   # runs of another app passed over; a base whose app could not be checked by name
        base = resolve_baseline(args.baseline, run_dir, is_open=gate_open, said=said)
        doc = compare_runs(base, run_dir)
        doc["notes"][:0] = said
        # a baseline whose own gate is closed is said first, as gate.py --baseline says it (assay.verdict's)
        red = red_baseline_words(args.baseline, run_dir, base, doc["base"]["run_id"], is_open=gate_open)
        lines = comparison_lines(dict(doc, notes=[red] + doc["notes"]) if red else doc)
        options = dataclasses.replace(options, baseline=str(base))   # the same baseline the section compares with
    # the banner is the one decision, as `gate.py RUN_DIR` decides it with these same flags, and says which
    said = decision_flags_said(dataclasses.replace(options, baseline=args.baseline))
    result = draft(run_dir, comparison=lines, decision=decide(run_dir, options), gate_flags=said)
    if args.output == "-":
        sys.stdout.write(result.markdown)
        return 0, None
    target = Path(args.output) if args.output else Path(args.run_dir) / "report.md"
    refuse_run_target(target, report_run_id(result.markdown), f"-o {run_dir / 'report.md'}")
    if target.is_dir():   # --force cannot overwrite a directory with the report
        raise AssayError(f"-o {target} is a directory; give a file path for the report, e.g. "
                         f"-o {target / 'report.md'}", 2, path=str(target))
    if target.exists() and not args.force:
        raise AssayError(f"{target} exists; it may already hold the clusters you wrote. Pass --force to "
                         f"overwrite it, or -o another path", 2, path=str(target))
    if not target.parent.is_dir():
        raise AssayError(f"{target.parent}: directory does not exist", 2)
    atomic_write_text(target, result.markdown)
    return 0, {"report": str(target), "quotable": result.quotable, "may_contain_pii": result.may_contain_pii,
               "redactions": result.redactions, "excerpts": result.excerpts,
               "next": "review the drafted failure clusters between the assay:clusters markers (rewrite them if you can "
                       "name the cause better), then run md_to_html.py"}


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("jsonschema",), script=__file__))
