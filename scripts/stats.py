#!/usr/bin/env python3
"""stats.py: is the candidate run better than the baseline, or is the difference noise?

Pairs two `verdicts_for_stats.jsonl` files by case id and prints comparison.json: the
exact Beta posterior P(candidate better) that decides `keep`, the exact sign test and
McNemar, the minimum detectable improvement and worsening in words from the exact power of
the one-sided sign test given the baseline and the run's pairing ("n=52 cannot detect an
improvement below 13.4pp or a worsening below 15.9pp"; "no improvement can be shown with 4
failing cases"), attrition, `verdict_words` (improved | worsened | within noise) and
`verdict_label`, which adds ", not proven" when the sign test does not prove it (--text
prints the label).
Exit 0 whenever it completes (the decision is in the JSON); 2 on bad input.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "stats.py",
        "Compare a candidate run's pass/fail verdicts with a baseline's, case by case (paired). "
        "Prints comparison JSON; exit 0 when done, 2 on bad input.",
        "python3 scripts/stats.py .assay/reports/regression-20261128T090000Z/verdicts_for_stats.jsonl "
        ".assay/reports/regression-20261129T090000Z/verdicts_for_stats.jsonl --alpha 0.05",
    )
    p.add_argument("baseline", help="the baseline run's verdicts_for_stats.jsonl")
    p.add_argument("candidate", help="the candidate run's verdicts_for_stats.jsonl")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level for the reported tests and the MDE, strictly between 0 and 1 "
                        "(never changes keep; default 0.05)")
    p.add_argument("--text", action="store_true",
                   help="print a few lines for a person instead of the JSON (same numbers, same exit code)")
    p.add_argument("--bayes-threshold", type=float, default=0.8,
                   help="keep when P(candidate better) reaches this, strictly between 0 and 1 (default 0.8; "
                        "about 0.95 for a hard gate)")
    return p


def run(args):
    from assay.core.errors import AssayError
    from assay.stats.paired import compare
    from assay.stats.verdict_file import holdout_beside, read_verdicts_jsonl

    if not 0 < args.alpha < 1:
        raise AssayError(f"--alpha {args.alpha:g} is out of range: use a value strictly between 0 and 1, e.g. 0.05", 2)
    if not 0 < args.bayes_threshold < 1:
        raise AssayError(f"--bayes-threshold {args.bayes_threshold:g} is out of range: use a value strictly "
                         "between 0 and 1, e.g. 0.8", 2)
    import os
    from pathlib import Path
    from assay.report.interrupted import refuse_unfinished
    for side, path in (("baseline", args.baseline), ("candidate", args.candidate)):
        if not os.path.isdir(path):   # a killed run's file is its last batch, never the run's result
            refuse_unfinished(Path(os.path.abspath(path)).parent, f"the {side}", path, file=str(path), key=side)
    baseline = read_verdicts_jsonl(args.baseline)
    candidate = read_verdicts_jsonl(args.candidate)
    for side, path, rows in (("baseline", args.baseline, baseline), ("candidate", args.candidate, candidate)):
        if not rows:   # no pair is possible: say so, not "no shared case ids ... check dataset_version"
            raise AssayError(f"the {side} file {path} is empty (no verdict rows): its run scored no case pass or "
                             "fail (every case infra_error, skipped or unscored, or the run did not finish). Run "
                             f"gate.py on that run's directory to see why, fix it and run again, or pass another "
                             f"run's verdicts_for_stats.jsonl as the {side}", 2, file=str(path), key=side)
    if os.path.samefile(args.baseline, args.candidate):
        # one file on both sides pairs every case with itself: "within noise" by construction, never a measurement
        raise AssayError(f"baseline and candidate are the same file ({args.candidate}): every case would be paired "
                         "with itself; pass the baseline run's verdicts_for_stats.jsonl first and the candidate "
                         "run's second (or compare two run directories with compare_runs.py)", 2,
                         file=str(args.candidate), key="candidate")
    copied = _one_run_copied(args.baseline, args.candidate)
    if copied:   # a run dir and its copy: every case paired with itself, "within noise" by construction
        raise AssayError(f"baseline {args.baseline} and candidate {args.candidate} are the verdicts of the same run "
                         f"({copied}): one run dir is a copy of the other, so every case would be paired with "
                         "itself; pass the baseline run's verdicts_for_stats.jsonl first and a later run's second",
                         2, file=str(args.candidate), key="candidate")
    # a holdout run's ids are sealed here as in the runner's comparison.json (holdout cases are counted, never named)
    sealed, base_holdout = holdout_beside(args.candidate), holdout_beside(args.baseline)
    if sealed or base_holdout:
        from assay.rundir.routing_files import seal_pairs, sealed_ids
        baseline, candidate = seal_pairs(baseline, candidate, sealed_ids({"case_id": c, "holdout": True} for c in sealed),
                                         base_holdout)
    # a canary of either run is no pair: the population of comparison.json and compare_runs.py
    canaries = set(holdout_beside(args.candidate, "canary")) | set(holdout_beside(args.baseline, "canary"))
    if canaries:
        from assay.stats.paired import paired_population
        baseline, candidate = paired_population(baseline, canaries), paired_population(candidate, canaries)
    try:
        doc = compare(baseline, candidate, alpha=args.alpha, bayes_threshold=args.bayes_threshold)
    except AssayError as err:
        raise AssayError(f"{err.message} (baseline: {args.baseline}; candidate: {args.candidate})",
                         err.code, **err.fields) from None
    swapped = _swapped_runs(args.baseline, args.candidate)
    if swapped:   # a regression given backwards reads "improved", keep = True: said, never silent
        doc["notes"] = [swapped]
    if args.text:
        from assay.stats.paired import text_summary
        sys.stdout.write("\n".join([f"note: {n}" for n in doc.get("notes", [])] + text_summary(doc)) + "\n")
        return 0, None
    return 0, doc


def _runs_of(baseline, candidate):
    """Each file's run ({run_id, started_at}, from the results.json beside it), or None outside a run dir."""
    import os
    from pathlib import Path
    from assay.report.run_files import try_json_head
    heads = [try_json_head(Path(os.path.dirname(os.path.abspath(f))) / "results.json") for f in (baseline, candidate)]
    return [{"run_id": h.get("run_id"), "started_at": h.get("started_at")} if isinstance(h, dict) else None
            for h in heads]


def _one_run_copied(baseline, candidate):
    """"<run id>, started <when>" when both files sit in run dirs whose results.json name the same run
    (a copied run dir: the same run id and start time), else None."""
    from assay.compare.document import one_run
    b, c = _runs_of(baseline, candidate)
    if b is None or c is None or not one_run(b, c):
        return None
    return f"{b['run_id']}, started {b['started_at']}"


def _swapped_runs(baseline, candidate):
    """The note when the baseline's run started after the candidate's (compare_runs.py's rule), else None."""
    from assay.compare.document import base_started_after
    b, c = _runs_of(baseline, candidate)
    if b is None or c is None or not base_started_after(b, c):
        return None
    return (f"the baseline run {b['run_id']} started after the candidate {c['run_id']} ({b['started_at']} > "
            f"{c['started_at']}): the baseline is normally the older run (stats.py BASELINE CANDIDATE); if the two "
            "are swapped, fixed and broken, improved and worsened, and keep read the other way round")


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, script=__file__))
