#!/usr/bin/env python3
"""score_cost.py: what did a run cost, and how slow was it?

Reads a finished run directory: tokens per case from trajectory.json's model calls (the
GenAI usage attributes of the collected trace), prices from a prices file (default
<state>/prices.yaml), latency end to end and in model calls. Prints run totals with
p50/p95, each non-holdout case, and the models the prices file does not name (such a
case has no cost: never 0). With --baseline, the change split by verdict change
(unchanged / fixed / broken). It informs; the gate's budgets (gate.py
--max-cost-per-case, --max-p95-latency-s, or `budgets:` in <state>/profile.yaml) decide.
The runner writes the same totals into the finished run's results.json (`cost_latency`).

prices.yaml:
  currency: USD
  per: 1000000                   # prices are per this many tokens
  models:
    gpt-4.1-mini: {input: 0.40, output: 1.60}

Exit 0 when done, 2 on bad input.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "score_cost.py",
        "Cost and latency of a run from its stored traces. Exit 0 when done, 2 on bad input.",
        "python3 scripts/score_cost.py examples/helpdesk/.assay/reports/smoke-20261129T103918Z "
        "--prices examples/helpdesk/.assay/prices.yaml",
    )
    p.add_argument("run_dir", help="a run directory (<state>/reports/<run-id>)")
    p.add_argument("--prices", help="prices file (default: <state>/prices.yaml when it exists)")
    p.add_argument("--baseline", help="another run directory to compare with, case by case")
    p.add_argument("-o", "--output", help="also write the JSON here")
    return p


def run(args):
    from pathlib import Path

    from assay.core import jsonio
    from assay.core.errors import AssayError
    from assay.stats.cost import compare_to_baseline, default_prices_path, load_prices, run_cost

    run_dir = Path(args.run_dir)
    if args.prices:
        prices, note = load_prices(Path(args.prices)), None
    elif default_prices_path(run_dir).is_file():
        prices, note = load_prices(default_prices_path(run_dir)), None
    else:
        prices, note = None, f"no --prices and no {default_prices_path(run_dir)}: tokens and latency only"
    out = run_cost(run_dir, prices, prices_note=note)
    if args.baseline:
        out["baseline"] = compare_to_baseline(out, run_cost(Path(args.baseline), prices))
    if args.output:
        try:
            jsonio.atomic_write_json(Path(args.output), out)
        except OSError as exc:
            raise AssayError(f"cannot write {args.output}: {exc.strerror}", 2) from None
    return 0, out


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("yaml",), script=__file__))
