#!/usr/bin/env python3
"""convert_suite.py: read a state dir's YAML into one converted-suite JSON (contracts §6).

Strict YAML (duplicate keys, NaN/inf, alias bombs, one id in two files are errors),
`${VAR}` left as written, cases sorted by id, `sources` recorded. It does not lint.
"""

import sys

from assay.core.cli import make_parser, run_command

EXAMPLE = ("python3 scripts/convert_suite.py examples/helpdesk/.assay "
           "-o examples/helpdesk/.assay/work/converted.json --split-dir examples/helpdesk/.assay/work")


def build_parser():
    p = make_parser("convert_suite.py", __doc__.split("\n\n")[0].split(": ", 1)[1], EXAMPLE)
    p.add_argument("state_dir", help="the app's state dir (holds adapter.yaml, profile.yaml, datasets/)")
    p.add_argument("-o", "--output", help="write converted.json here (default: stdout)")
    p.add_argument("--split-dir", help="also write suite.json, capabilities.json, adapter.json "
                   "[and manifest.json] into this directory")
    return p


def run(args):
    from pathlib import Path

    from assay.core import jsonio
    from assay.core.errors import AssayError
    from assay.suite.convert import convert_state_dir, source_overwritten, split_outputs

    converted = convert_state_dir(args.state_dir)
    outputs = [Path(args.output)] if args.output else []
    outputs += [Path(args.split_dir) / name for name in split_outputs(converted)] if args.split_dir else []
    hit = source_overwritten(Path(args.state_dir), outputs)
    if hit is not None:
        flag = "-o" if args.output and hit[0] == Path(args.output) else "--split-dir"
        raise AssayError(f"{flag} {hit[0]}: that is {hit[1]}, a file the suite is read from; writing there would "
                         f"replace it with the converted JSON: write to <state>/work/ instead "
                         f"(-o <state>/work/converted.json --split-dir <state>/work)", 2, key=flag, file=hit[1])
    written = []
    try:
        if args.split_dir:
            split = Path(args.split_dir)
            split.mkdir(parents=True, exist_ok=True)
            for name, doc in split_outputs(converted).items():
                jsonio.atomic_write_json(split / name, doc)
                written.append(str((split / name).resolve()))
        if args.output:
            out = Path(args.output)
            out.parent.mkdir(parents=True, exist_ok=True)
            jsonio.atomic_write_json(out, converted)
            written.insert(0, str(out.resolve()))
    except OSError as exc:
        raise AssayError(f"cannot write output: {exc}; check the -o / --split-dir path", 2) from None
    if not args.output:
        sys.stdout.write(jsonio.dumps(converted) + "\n")
        return 0, None
    print(f"converted {len(converted['cases'])} case(s)", file=sys.stderr)
    return 0, {"cases": len(converted["cases"]), "written": written}


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("yaml", "jsonschema"), script=__file__))
