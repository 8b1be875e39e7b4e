#!/usr/bin/env python3
"""run_history.py: is it getting better or worse, which cases flip, and which runs do not count?

Reads every finished run under STATE_DIR/reports/ (ordered by the run id's UTC stamp,
never mtime), re-checks each with the runner's --verify, groups comparable runs into
series (same mode, dataset version, harness version, k), and writes history.json:
per run the pass rate with its Wilson interval, gating failures and infra rate; per
case the verdict sequence with flaky cases ranked; a drift flag per series (Fisher's
exact test, last run against the earlier ones); `excluded_runs` with reasons. Holdout
runs are aggregate only. `--html` also renders a self-contained page with a trend chart.
Exit 0 when written, 2 on bad input.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "run_history.py",
        "Trends, flaky cases and drift over a state dir's finished runs; writes history.json "
        "(and history.html with --html). Exit 0 when written, 2 on bad input.",
        "python3 scripts/run_history.py examples/helpdesk/.assay -o examples/helpdesk/.assay/reports/history.json "
        "--html examples/helpdesk/.assay/reports/history.html",
    )
    p.add_argument("state_dir", help="the app's state dir (holds reports/)")
    p.add_argument("-o", "--output", help="where to write history.json (default: STATE_DIR/reports/history.json)")
    p.add_argument("--html", help="also write the history page here (self-contained, no JavaScript)")
    p.add_argument("--store", metavar="s3://BUCKET/PREFIX",
                   help="read the runs published there instead of STATE_DIR/reports/ (default $ASSAY_STORE): only "
                        "results.json, manifest.yaml, the verdict files and (k > 1) reliability.json of each run "
                        "publish_run.py published and checked; a run put there by hand (aws s3 sync) is downloaded "
                        "whole and checked (pip install 'assay[s3]')")
    p.add_argument("--no-verify", action="store_true",
                   help="skip re-checking each run with the runner's --verify (faster): a run whose check's answer a reader "
                        "kept (gate.py) is still taken, a failed one excluded; a run never checked then counts, "
                        "marked 'not verified' on the page")
    return p


def run(args):
    from pathlib import Path

    from assay.core import jsonio
    from assay.core.errors import AssayError
    from assay.history.page import render
    from assay.history.runs import history
    from assay.report.html_style import CSS

    state = Path(args.state_dir)
    if not state.is_dir():
        from assay.core.statedir import not_a_state_dir
        raise AssayError(not_a_state_dir(state), 2)
    from assay.store.url import configured
    from assay.verdict import GateOptions, decision_dict
    store = configured(args.store)
    if store is not None:
        from assay.history.store import history_from_store
        # a run whose publish record matches it passed --verify when it was published; any other (put there
        # by hand) is checked here in full
        doc = history_from_store(store, state, decide=lambda run_dir, verify: decision_dict(
            run_dir, GateOptions(verify=verify)))
    else:
        from assay.report.gate import KNOWN
        # --no-verify skips the check, never its answer a reader kept for these bytes (assay.verdict decides with
        # it, as for the viewer): a failed one excludes the run as on the default path
        options = GateOptions(verify=KNOWN if args.no_verify else True)
        doc = history(state, verify=not args.no_verify, decide=lambda run_dir: decision_dict(run_dir, options))
    out = Path(args.output) if args.output else state / "reports" / "history.json"
    try:
        if not args.output:   # a state dir whose runs are all in the store may have no reports/ yet
            out.parent.mkdir(exist_ok=True)
        jsonio.atomic_write_json(out, doc)
        if args.html:
            jsonio.atomic_write_text(Path(args.html), render(doc, css=CSS))
    except OSError as exc:
        raise AssayError(f"cannot write {exc.filename}: {exc.strerror}; check -o / --html", 2) from None
    return 0, {"history": str(out), "html": args.html, "runs_used": doc["runs_used"],
               "excluded_runs": len(doc["excluded_runs"]), "replayed_runs": len(doc["replayed_runs"]),
               "rescored_runs": len(doc["rescored_runs"]), "series": [s["name"] for s in doc["series"]],
               "drift_flagged": doc["drift_flagged"], "flaky_cases": len(doc["flaky_cases"])}


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("jsonschema",), script=__file__))
