#!/usr/bin/env python3
"""validate_cases.py: lint converted cases against the case format (contracts §7).

Owns what a valid case is (the runner does not re-lint). Every finding names the
YAML file it came from, so the fix goes into the YAML. Exit 0 no ERROR, 1 an ERROR,
2 bad input.
"""

import sys
from pathlib import Path

from assay.core.cli import make_parser, run_command

EXAMPLE = ("python3 scripts/validate_cases.py --cases examples/helpdesk/.assay/work/suite.json "
           "--capabilities examples/helpdesk/.assay/work/capabilities.json "
           "--adapter examples/helpdesk/.assay/work/adapter.json")


def build_parser():
    p = make_parser("validate_cases.py", "lint converted cases against the case format (contracts §7).", EXAMPLE)
    p.add_argument("--cases", required=True, help="suite.json / converted.json / a JSON list / JSONL / one case; - for stdin")
    caps = p.add_mutually_exclusive_group(required=True)
    caps.add_argument("--capabilities", help="capabilities.json (the profile's capability_matrix)")
    caps.add_argument("--no-capabilities", action="store_true", help="check without the matrix (WARN capabilities_unchecked)")
    p.add_argument("--adapter", help="adapter.json: warn about routes, clarifications, conversations and attacks the run cannot observe")
    p.add_argument("--manifest", help="manifest.json (datasets/dataset.yaml): ERROR manifest_mismatch on stale counts")
    p.add_argument("--strict", action="store_true", help="every WARN becomes an ERROR (for CI)")
    return p


def run(args):
    from assay.core.errors import AssayError
    from assay.lint.engine import lint_suite, read_json_file, read_suite
    from assay.schemas import validate

    suite = read_suite(args.cases)
    matrix = None
    if args.capabilities:
        doc = read_json_file(args.capabilities, "--capabilities")
        matrix = doc.get("capability_matrix", doc) if isinstance(doc, dict) else doc
        if not isinstance(matrix, dict):
            raise AssayError(f"--capabilities {args.capabilities}: expected the capability_matrix object", 2)
        validate({"capability_matrix": matrix}, "profile", source=args.capabilities, what="capability matrix")
    adapter = manifest = None
    if args.adapter:
        adapter = read_json_file(args.adapter, "--adapter")
        validate(adapter, "adapter", source=args.adapter, what="adapter")
    if args.manifest:
        if not Path(args.manifest).exists():
            raise AssayError(f"--manifest {args.manifest}: no such file; convert_suite.py writes manifest.json "
                             "only when the state dir has datasets/dataset.yaml (optional): add it, or drop "
                             "--manifest", 2, file=str(args.manifest))
        manifest = read_json_file(args.manifest, "--manifest")
        validate(manifest, "dataset", source=args.manifest, what="dataset manifest")
    root = None
    if adapter is not None:   # <state>/work/adapter.json: the app repo is found from the state dir
        from assay.invoke.approot import app_root
        here = Path(args.adapter).resolve().parent
        root = app_root(adapter, here.parent if here.name == "work" else here)
    out = lint_suite(suite, matrix=matrix, adapter=adapter, manifest=manifest, strict=args.strict, app_root=root)
    _add_lines(out["findings"], args.cases)
    print(f"{out['summary']['cases']} case(s): {out['error_count']} error(s), {out['warn_count']} warning(s)",
          file=sys.stderr)
    return (1 if out["error_count"] else 0), out


def _add_lines(findings, cases_arg) -> None:
    """Each finding's `line` in its case file, as make_plan names it: the file's `source` is relative to
    the state dir, found as the nearest dir above --cases that holds it (none on stdin: no line)."""
    from assay.plan.lint_gate import line_of
    if cases_arg == "-":
        return
    above = list(Path(cases_arg).resolve().parents)
    for row in findings:
        source = row.get("source")
        base = next((d for d in above if source and (d / source).is_file()), None) if source else None
        line = line_of(base, source, row.get("key")) if base is not None else None
        if line is not None:
            row["line"] = line


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("jsonschema",), script=__file__))
