#!/usr/bin/env python3
"""import_promptfoo.py CONFIG --state-dir S: a promptfoo config becomes an assay state dir.

The http provider becomes adapter.yaml, each test x prompt a case under
datasets/promptfoo/, each assertion an assay check (or a line in S/IMPORT.md saying, with
its file and line, why it was not converted). Prints the summary as JSON. Exit 0 when
imported; 2 on bad input (an unreadable config, a state dir holding files no import wrote).
"""

import sys

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "import_promptfoo.py",
        "Import a promptfoo config (YAML or JSON: prompts, providers, tests inline or from file:// CSV/YAML/JSON "
        "inside the config's folder, "
        "defaultTest, evaluateOptions) into an assay state dir. Every assertion is converted or listed, with its "
        "file and line, in the output and S/IMPORT.md. Exit 0 imported, 2 bad input.",
        "python3 scripts/import_promptfoo.py promptfooconfig.yaml --state-dir .assay --app-url-env APP_URL",
    )
    p.add_argument("config", help="the promptfoo config (promptfooconfig.yaml, or a .json config)")
    p.add_argument("--state-dir", required=True, help="the state dir to write (new, empty, or an earlier import)")
    p.add_argument("--app-url-env", metavar="VAR",
                   help="write base_url as ${VAR} instead of the config's literal address")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="the --repeat N the promptfoo command line used (recorded as each case's k)")
    return p


def run(args):
    import re

    from assay.core.errors import AssayError
    from assay.importers.pf_build import build_import
    from assay.importers.pf_write import write_import

    if args.app_url_env and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", args.app_url_env):
        raise AssayError(f"--app-url-env {args.app_url_env!r} is not an environment variable name "
                         "(letters, digits, _; e.g. APP_URL)", 2)
    if args.repeat is not None and args.repeat < 1:
        raise AssayError(f"--repeat {args.repeat} must be 1 or more", 2)
    built = build_import(args.config, app_url_env=args.app_url_env, repeat=args.repeat)
    if not built.cases:
        why = ("; ".join(f"{s.where}: {s.what}: {s.why}" for s in built.skipped[:5])
               or "the config's tests are empty (tests: []); add the tests and import again")
        raise AssayError(f"{built.cfg.label}: no test could be imported; {why}", 2,
                         not_converted=[s.as_dict() for s in built.skipped])
    return 0, write_import(built, args.state_dir)


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, needs=("yaml", "jsonschema"), script=__file__))
