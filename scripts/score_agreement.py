#!/usr/bin/env python3
"""score_agreement.py: does the judge agree with people well enough to gate on?

Reads annotation JSONL files (one human label per line, wave2 §6), and per rubric version
prints the 2x2 with `fail` as the positive class, TPR, TNR, Cohen's kappa, their
intervals, whether the floors are met, what blocks calibration and what would unlock it.
--write puts the calibration sidecar the runner reads. Exit 0 whether calibrated or not;
2 on bad input (a bad line names file:line) or when nothing is paired.
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    from assay.judge.floors import DEFAULT_FLOORS as F
    p = make_parser(
        "score_agreement.py",
        "Score human labels against the judge per rubric version (fail = positive class): TPR, TNR, "
        "Cohen's kappa with intervals, the calibration floors, blocking reasons and an unlock sentence. "
        "A reviewer's last line per (rubric, node, case, answer) wins; an item reviewers label differently is "
        "left out and named (people_disagree); a label given before the rest of a long answer was shown is not "
        "counted (without_whole_answer); judge `unknown` is counted apart. "
        "Exit 0 calibrated or not; 2 on bad input.",
        "python3 scripts/score_agreement.py .assay/annotations/2026-11-30-dana.jsonl "
        "--write .assay/judge/calibration.json",
    )
    p.add_argument("annotations", nargs="+", help="annotation JSONL files, or a directory (its *.jsonl in name order); later lines and files win")
    p.add_argument("--write", metavar="SIDECAR",
                   help="write the calibration sidecar here (<state>/judge/calibration.json; must end in .json)")
    p.add_argument("--state-dir", metavar="STATE_DIR",
                   help="the state dir whose judge/judge.yaml and rubrics/ the sidecar is bound to, and whose "
                        "datasets/ the labels' case ids must name (default: the one --write's "
                        "judge/calibration.json is in)")
    below = " (lower: gate and report say the rubric was calibrated below the default floors)"
    p.add_argument("--min-pairs", type=int, default=int(F["min_pairs"]),
                   help=f"labelled pairs needed per rubric version (default {F['min_pairs']:g}){below}")
    p.add_argument("--min-per-class", type=int, default=int(F["min_per_class"]),
                   help=f"human fail labels and human pass labels needed, each (default {F['min_per_class']:g})")
    p.add_argument("--min-tpr", type=float, default=F["min_tpr"],
                   help=f"TPR floor, fail = positive (default {F['min_tpr']:.2f})")
    p.add_argument("--min-tnr", type=float, default=F["min_tnr"], help=f"TNR floor (default {F['min_tnr']:.2f})")
    p.add_argument("--min-kappa", type=float, default=F["min_kappa"],
                   help=f"Cohen's kappa floor (default {F['min_kappa']:.2f})")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="interval level, reported only, never gated on (default 0.95)")
    return p


def run(args):
    from assay.calibrate.agreement import Floors, not_checked, score
    from assay.calibrate.annotations import read_annotations
    from assay.calibrate.sidecar import write_bound

    floors = Floors(args.min_pairs, args.min_per_class, args.min_tpr, args.min_tnr, args.min_kappa)
    rows = read_annotations(args.annotations)
    state = _state_dir(args)
    case_ids, holdout = _suite_case_ids(state), _suite_holdout_ids(state)
    nodes = _rubric_nodes(state)
    out = score(rows, floors, args.confidence, case_ids=case_ids, nodes_by_pin=nodes, holdout_ids=holdout)
    # --write refuses a batch whose runs another judge than the configured one judged (labelled_judge)
    out["written"] = str(write_bound(out, args.write, args.state_dir, [r.batch for r in rows], rows)) if args.write else None
    out["not_checked"] = not_checked(case_ids, nodes, holdout, bool(args.write))
    return 0, out


def _state_dir(args):
    """The state dir whose suite and rubrics the labels must be about: --state-dir, else the one --write's
    <state>/judge/calibration.json is in; None without either (nothing checked: not_in_suite/not_in_rubric null)."""
    from pathlib import Path
    if args.state_dir:
        return Path(args.state_dir)
    if args.write and Path(args.write).parent.name == "judge":
        return Path(args.write).parent.parent
    return None


def _suite_case_ids(state):
    """The suite's case ids; None (not checked) without a case in its datasets/ (a state dir with no case
    runs nothing that could gate)."""
    from assay.suite.convert import suite_case_ids
    if state is None or not (state / "datasets").is_dir():
        return None
    return suite_case_ids(state) or None


def _suite_holdout_ids(state):
    """The suite's holdout case ids (never counted: the holdout seal); None (not checked) as _suite_case_ids."""
    from assay.suite.holdout import suite_holdout_ids
    if state is None or not (state / "datasets").is_dir():
        return None
    return suite_holdout_ids(state)


def _rubric_nodes(state):
    """Each rubric pin's node ids, from the state dir's rubrics/; None without a state dir."""
    from assay.judge.rubrics import load_rubrics
    if state is None:
        return None
    return {r["pin"]: {n.get("id") for n in r.get("nodes") or []} for r in load_rubrics(state).values()}


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, script=__file__))
