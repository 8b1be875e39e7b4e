"""The decision's flags, one definition for every script that shows the gate's decision (gate.py,
draft_report.py): a report drafted with the flags the CI gate was given says what that gate says,
and names the flags it reflects.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..core.errors import AssayError
from .decide import GateOptions


def add_decision_flags(p: argparse.ArgumentParser) -> None:
    """The flags that change the decision (never --baseline: each script words its own)."""
    p.add_argument("--max-infra-rate", type=float, default=0.05, help="close above this infra rate (0-1, default 0.05)")
    p.add_argument("--require-canaries", action="store_true", help="close unless every canary passed (and there is one)")
    p.add_argument("--no-verify", action="store_true", help="skip `run_cases.py --verify` (the completeness re-check)")
    p.add_argument("--max-cost-per-case", type=float, metavar="X",
                   help="close when the mean cost per case (score_cost.py; at k > 1 one answer's, the app's and "
                        "the judge's alike, so X means the same at any k) is above X in the prices file's "
                        "currency, or cannot be computed (no traces, no prices file, an unpriced model); "
                        "overrides profile.yaml's budgets.max_cost_per_case")
    p.add_argument("--max-p95-latency-s", type=float, metavar="Y",
                   help="close when the p95 end-to-end case latency is above Y seconds; overrides "
                        "profile.yaml's budgets.max_p95_latency_s")
    p.add_argument("--prices", help="prices file for the cost budget (default: <state>/prices.yaml)")
    p.add_argument("--no-judge-cost", action="store_true",
                   help="leave the judge's tokens out of --max-cost-per-case (by default the budget is the app's "
                        "cost per case plus the judge's, each priced with the prices file)")
    p.add_argument("--state-dir", metavar="DIR",
                   help="the app's state dir, for profile.yaml's budgets and prices.yaml (default: the one "
                        "holding the run dir, <state>/reports/<run-id>)")


def decision_options(args: argparse.Namespace, baseline: str | None = None) -> GateOptions:
    """GateOptions from the flags, each checked (exit 2 naming the flag)."""
    if not 0 <= args.max_infra_rate <= 1:
        raise AssayError(f"--max-infra-rate {args.max_infra_rate:g} is out of range: use 0-1 (0.05 = 5%)", 2,
                         key="--max-infra-rate")
    for flag, value in (("--max-cost-per-case", args.max_cost_per_case), ("--max-p95-latency-s", args.max_p95_latency_s)):
        if value is not None and not (value >= 0 and value < float("inf")):
            raise AssayError(f"{flag} {value:g} is out of range: use a number >= 0", 2, key=flag)
    if args.state_dir and not (Path(args.state_dir) / "profile.yaml").is_file():
        from ..core.statedir import run_or_reports_dir
        instead = Path(args.state_dir).is_dir() and run_or_reports_dir(Path(args.state_dir))
        raise AssayError(f"--state-dir {instead}" if instead else
                         f"--state-dir {args.state_dir}: no profile.yaml there; pass the app's state dir "
                         "(the directory holding adapter.yaml and profile.yaml, e.g. .assay)", 2, key="--state-dir")
    return GateOptions(
        max_infra_rate=args.max_infra_rate, require_canaries=args.require_canaries, verify=not args.no_verify,
        max_cost_per_case=args.max_cost_per_case, max_p95_latency_s=args.max_p95_latency_s, prices=args.prices,
        state_dir=args.state_dir, include_judge=not args.no_judge_cost, baseline=baseline)


def decision_flags_said(options: GateOptions) -> str:
    """The gate.py flags this decision was taken with, as typed (`` for gate.py's defaults), e.g.
    `--max-infra-rate 0.2 --baseline auto`: what a report says it reflects."""
    default, out = GateOptions(), []
    if options.max_infra_rate != default.max_infra_rate:
        out += ["--max-infra-rate", f"{options.max_infra_rate:g}"]
    if options.require_canaries:
        out.append("--require-canaries")
    if not options.verify:
        out.append("--no-verify")
    for flag, value in (("--max-cost-per-case", options.max_cost_per_case),
                        ("--max-p95-latency-s", options.max_p95_latency_s)):
        if value is not None:
            out += [flag, f"{value:g}"]
    for flag, value in (("--prices", options.prices), ("--state-dir", options.state_dir), ("--baseline", options.baseline)):
        if value:
            out += [flag, str(value)]
    if not options.include_judge:
        out.append("--no-judge-cost")
    return shlex.join(out)
