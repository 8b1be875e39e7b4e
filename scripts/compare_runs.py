#!/usr/bin/env python3
"""compare_runs.py: what got better and what broke between two runs, case by case, and why.

Pairs the two runs' cases by id and puts each pair in exactly one bucket (newly_failing,
newly_passing, judge_flip, expectation_changed, changed_unscored, still_failing, still_passing,
still_unscored, only_in_base, only_in_candidate); per pair the layers that changed verdict, the
answer's word diff, the trajectory's first difference, the first differing turn of a
conversation, judge flips; the paired statistics once on top. Holdout cases: counts only.
Exit 0 when written (whatever changed), 2 on bad input, when the base run fails
`run_cases.py --verify` (a missing verdicts.jsonl would read as an empty run) or when
--baseline auto finds no run.
"""

import sys
from pathlib import Path

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "compare_runs.py",
        "Compare a candidate run with a base run: buckets, diffs, judge flips, edited cases, paired "
        "statistics. Writes compare.json (and compare.html with --html). Exit 0 written, 2 bad input.",
        "python3 scripts/compare_runs.py .assay/reports/smoke-20261129T090000Z .assay/reports/smoke-20261130T090000Z "
        "-o compare.json --html compare.html",
    )
    p.add_argument("base", help="the base run dir (reports/<run-id>), or `auto`: the newest complete run of the "
                                "candidate's series whose gate was open (reports/baseline.json pins one instead)")
    p.add_argument("candidate", help="the candidate run dir (reports/<run-id>)")
    p.add_argument("-o", "--output", help="write compare.json here (default: print it on stdout)")
    p.add_argument("--html", help="also write compare.html here (self-contained, no JavaScript)")
    p.add_argument("--store", metavar="s3://BUCKET/PREFIX",
                   help="with `auto`: choose the base among the runs published there (default $ASSAY_STORE); the "
                        "chosen run is downloaded into the candidate's reports/ (pip install 'assay[s3]')")
    return p


def run(args):
    from assay.compare.baseline import refuse_either_unverified, resolve_baseline
    from assay.compare.document import compare_runs
    from assay.verdict import gate_open
    from assay.verdict.baseline import red_baseline_words
    from assay.core import jsonio
    from assay.core.writer_stream import write_json_streamed
    from assay.core.errors import AssayError

    candidate = Path(args.candidate)
    said: list[str] = []   # runs of another app passed over; a base whose app could not be checked by name
    base = resolve_baseline(args.base, candidate, args.store, is_open=gate_open, said=said)
    # the base must pass run_cases.py --verify first (at scale the check runs on two processes; not
    # beside the comparison: the two at once held ~350 MB at 100,000 cases, over the 250 MB bar)
    refuse_either_unverified(base, candidate)
    doc = compare_runs(base, candidate)
    doc["notes"][:0] = said
    # a pinned baseline whose own gate is closed is said, first (assay.verdict's decision, gate.py's words)
    red = red_baseline_words(args.base, candidate, base, doc["base"]["run_id"], is_open=gate_open, named=False)
    if red:
        doc["notes"].insert(0, red)
    try:
        if args.output:   # the same bytes as one write, the pairs encoded as they are written
            write_json_streamed(Path(args.output), doc, "buckets")
        if args.html:
            from assay.compare.html import render
            jsonio.atomic_write_text(Path(args.html), render(doc))
    except OSError as exc:
        raise AssayError(f"cannot write {exc.filename}: {exc.strerror}; check -o / --html", 2) from None
    if not args.output:
        return 0, doc
    return 0, {"compare": args.output, "html": args.html, "base": doc["base"]["run_id"],
               "candidate": doc["candidate"]["run_id"], "headline": doc["headline"], "counts": doc["counts"],
               "judge_flips": doc["judge_flips"], "words": doc["words"], "notes": doc["notes"]}


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, script=__file__))
