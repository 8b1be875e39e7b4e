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
        "Last line per (rubric, node, case) wins; judge `unknown` is counted apart. "
        "Exit 0 calibrated or not; 2 on bad input.",
        "python3 scripts/score_agreement.py .assay/annotations/2026-11-30-dana.jsonl "
        "--write .assay/judge/calibration.json",
    )
    p.add_argument("annotations", nargs="+", help="annotation JSONL files, or a directory (its *.jsonl in name order); later lines and files win")
    p.add_argument("--write", metavar="SIDECAR",
                   help="write the calibration sidecar here (<state>/judge/calibration.json; must end in .json)")
    p.add_argument("--state-dir", metavar="STATE_DIR",
                   help="the state dir whose judge/judge.yaml and rubrics/ the sidecar is bound to "
                        "(default: the one --write's judge/calibration.json is in)")
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
    from assay.calibrate.agreement import Floors, score
    from assay.calibrate.annotations import read_annotations
    from assay.calibrate.sidecar import write_bound

    floors = Floors(args.min_pairs, args.min_per_class, args.min_tpr, args.min_tnr, args.min_kappa)
    rows = read_annotations(args.annotations)
    out = score(rows, floors, args.confidence)
    # --write refuses a batch whose runs another judge than the configured one judged (labelled_judge)
    out["written"] = str(write_bound(out, args.write, args.state_dir, [r.batch for r in rows])) if args.write else None
    return 0, out


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, script=__file__))
