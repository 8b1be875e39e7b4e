#!/usr/bin/env python3
"""view.py: a local, read-only web viewer over <state>/reports/ (runs, a run, a case, compare,
history), or with --bundle the same pages as static files that open from disk.

Binds 127.0.0.1 unless --allow-remote; never writes into the state dir. Exit 0, 2 on bad input.
"""

import sys
from pathlib import Path

from assay.core.cli import make_parser, run_command


def build_parser():
    p = make_parser(
        "view.py",
        "Browse the runs of a state dir in a local web viewer (read-only), or write it as a static "
        "bundle with --bundle. Exit 0, 2 on bad input.",
        "python3 scripts/view.py .assay --open",
    )
    p.add_argument("state_dir", nargs="?", help="the state dir (its reports/ holds the runs); not with --store")
    p.add_argument("--store", metavar="s3://BUCKET/PREFIX",
                   help="view runs published there instead (default $ASSAY_STORE): the --run ones, else the --last "
                        "newest, downloaded whole into a temporary dir removed at exit (pip install 'assay[s3]')")
    p.add_argument("--last", type=int, help="with --store and no --run: how many newest runs (default 10)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: a free one, printed)")
    p.add_argument("--bind", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--allow-remote", action="store_true", help="allow a --bind other than loopback (prints a warning)")
    p.add_argument("--host-name", action="append", metavar="NAME",
                   help="with --allow-remote: a host name the browser will use (repeatable); requests whose Host "
                        "header names anything but the bound address, loopback or these are refused (421)")
    p.add_argument("--open", action="store_true", help="open the URL in the default browser")
    p.add_argument("--bundle", metavar="OUT_DIR", help="write the pages as static files here instead of serving")
    p.add_argument("--run", action="append", metavar="RUN_ID",
                   help="with --bundle or --store: only these runs (repeatable)")
    p.add_argument("--serve-seconds", type=float, help="stop after this many seconds (demos, tests)")
    p.add_argument("--until-request", action="store_true", help="stop once a request was answered (demos, tests)")
    return p


def run(args):
    import json

    from assay.core.errors import AssayError

    from assay.store.url import configured
    store = configured(args.store) if args.store or not args.state_dir else None
    if args.last is not None and (store is None or args.last < 1):
        raise AssayError(f"--last {args.last}: " + ("how many newest runs to fetch: 1 or more" if store is not None else
                         "only with --store (it picks the runs to download); a state dir's runs are all shown"), 2)
    if args.run and store is None and not args.bundle:
        raise AssayError("--run: only with --bundle or --store; the served viewer shows every run of the state dir "
                         "(write a bundle of these runs with --bundle OUT_DIR --run ...)", 2)
    if store is not None:
        import shutil
        import tempfile

        from assay.store.runs import mirror_whole
        tmp = Path(tempfile.mkdtemp(prefix="assay-view-"))
        try:
            mirror_whole(store, tmp / "reports", args.run, args.last or 10)
            args.state_dir, args.store, args.run, args.last = str(tmp), None, None, None   # what was fetched is the selection
            return run(args)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if not args.state_dir:
        raise AssayError("view.py needs the state dir (or --store s3://bucket/prefix, or $ASSAY_STORE)", 2)
    state = Path(args.state_dir)
    reports = state / "reports"
    if reports.is_symlink():
        raise AssayError(f"{reports}: a symlink; the viewer reads no run through one: pass the state dir that holds runs", 2)
    if not reports.is_dir():
        from assay.core.statedir import not_a_state_dir
        raise AssayError(not_a_state_dir(state), 2)
    if args.bundle:
        from assay.view.bundle import write_bundle
        return 0, write_bundle(reports, Path(args.bundle), args.run)
    from assay.view import gate_process
    gate_process.start()   # the gate decisions' own process: its imports side by side with the server's
    from assay.view.server import LOOPBACK_NAMES as LOOPBACK, make_server, serve
    if args.host_name and not args.allow_remote:
        raise AssayError("--host-name: serving other host names is serving to other machines; add --allow-remote", 2)
    if args.bind not in LOOPBACK and not args.allow_remote:
        raise AssayError(f"--bind {args.bind}: the viewer binds loopback only; add --allow-remote to serve "
                         "run data (answers, requests) to other machines", 2)
    try:
        srv = make_server(reports, args.bind, args.port, args.host_name)
    except OSError as exc:
        raise AssayError(f"cannot listen on {args.bind}:{args.port}: {exc.strerror}; pick another --port", 2) from None
    host, port = srv.server_address[:2]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    if args.bind not in LOOPBACK:
        print(f"WARNING: serving {reports} to the network on {url} (every answer and request is readable); "
              "a browser must name this address, loopback or a --host-name in its Host header (others get 421)",
              file=sys.stderr)
    print(json.dumps({"url": url, "state_dir": str(state)}), flush=True)
    if args.open:
        import webbrowser
        webbrowser.open(url)
    try:
        serve(srv, seconds=args.serve_seconds, until_request=args.until_request)
    except KeyboardInterrupt:
        pass
    return 0, None


if __name__ == "__main__":
    sys.exit(run_command(build_parser, run, script=__file__))
