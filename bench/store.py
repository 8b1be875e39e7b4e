#!/usr/bin/env python3
"""Runs in object storage: publish and merge through a local S3 server, and the client choice.

- **Sharded run through the store.** A 10,000-case smoke suite against the bench app at 0 ms,
  planned with `--shards 16`; the 16 shards run at once (`run_cases.py --shard I`), then are
  published at once (16 `publish_run.py` processes, as 16 pods would: `publish_s` from the
  first start to the last exit), and merged from the store (`merge_runs.py s3://...`), timed
  beside the same merge from the local shard dirs. The merged run is checked (exit 0, every
  case `pass`) before its times count.
- **Memory.** Peak RSS of `publish_run.py` on one shard (625 cases) and on the whole merged
  10,000-case run, and of the merge from the store against the local merge: flat means the
  store adds no per-case memory (files stream to and from disk).
- **Client choice.** The merged 10,000-case run dir uploaded by boto3 (the `s3` extra) and by
  obstore, each with 16 threads over the same files (no verify, upload only), `--reps` times
  each, to fresh prefixes; and each client's installed weight (the files of its distribution
  and its dependencies', from their RECORDs).

The server is moto's server mode (tests/s3server.py), a Python process on this machine: the
absolute times are the server's as much as the clients'; the ratios are what compare.
Usage: `bench/store.py [--quick] [--cases 10000] [--shards 16] [--reps 3] [--json OUT]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from measure import summarize, timed_child  # noqa: E402

PUBLISH = ROOT / "scripts" / "publish_run.py"
MERGE = ROOT / "scripts" / "merge_runs.py"
CLIENTS = {"boto3": ["boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"],
           "obstore": ["obstore", "typing_extensions"]}
WORKERS = 16


def log(msg: str) -> None:
    print(f"[store] {msg}", file=sys.stderr, flush=True)


def upload_child(client: str, run_dir: str, bucket: str, prefix: str) -> int:
    """Child mode: every file of run_dir to s3://bucket/prefix/ with `client`, WORKERS threads."""
    from concurrent.futures import ThreadPoolExecutor
    files = [(p, p.relative_to(run_dir).as_posix()) for p in sorted(Path(run_dir).rglob("*")) if p.is_file()]
    if client == "boto3":
        import boto3
        from botocore.config import Config
        c = boto3.session.Session().client("s3", config=Config(max_pool_connections=WORKERS))
        put = lambda job: c.upload_file(str(job[0]), bucket, f"{prefix}/{job[1]}")  # noqa: E731
    else:
        import obstore
        from obstore.store import S3Store
        st = S3Store(bucket, prefix=prefix, client_options={"allow_http": True})
        put = lambda job: obstore.put(st, job[1], job[0])  # noqa: E731
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(put, files))
    print(json.dumps({"files": len(files), "bytes": sum(p.stat().st_size for p, _ in files)}))
    return 0


def weight(client: str) -> dict:
    from importlib import metadata
    total, found = 0, []
    for name in CLIENTS[client]:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        found.append(f"{name}=={dist.version}")
        for f in dist.files or []:
            try:
                total += os.path.getsize(dist.locate_file(f))
            except OSError:
                pass
    return {"packages": found, "installed_mb": round(total / 1e6, 1)}


def parallel_children(argvs: list[list[str]], env: dict) -> dict:
    """Start every argv at once; wall from the first start to the last exit, each child's rc and peak RSS."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(["/usr/bin/time", "-f", "%M", *a], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for a in argvs]
    outs = [(p.wait(), *p.communicate()) for p in procs]
    wall = time.perf_counter() - t0
    rss = [int(err.strip().splitlines()[-1]) / 1024 for _, _, err in outs if err.strip()]
    return {"wall_s": round(wall, 3), "rcs": [rc for rc, _, _ in outs], "max_rss_mb": round(max(rss or [0]), 1),
            "errors": [out.strip()[:200] for rc, out, _ in outs if rc]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/store.py", description=__doc__.split("\n\n")[0],
                                 epilog="example: python3 bench/store.py --json bench/out/store.json")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repetition: a smoke test")
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--upload-child", nargs=4, metavar=("CLIENT", "RUN_DIR", "BUCKET", "PREFIX"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.upload_child:
        return upload_child(*args.upload_child)
    if args.quick:
        args.cases, args.shards, args.reps = 200, 4, 1
    from app import BenchApp
    from s3server import BUCKET, S3Server
    from shards import check_merged, env_for, run_shards
    from suite import make_plan, write_plan

    from assay.shard.assign import add_shards
    doc: dict = {"started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpu_count": os.cpu_count(),
                 "load_avg_at_start": os.getloadavg(), "cases": args.cases, "shards": args.shards}
    server, app = S3Server().start(), BenchApp(0.0)
    app.start()
    problems: list[str] = []
    try:
        server.client().create_bucket(Bucket=BUCKET)
        with tempfile.TemporaryDirectory(prefix="assay-bench-store-") as tmp:
            state = Path(tmp) / ".assay"
            (state / "reports").mkdir(parents=True)
            run_id = "smoke-20261204T000000Z"
            plan = add_shards(make_plan(args.cases, state_dir=str(state), max_concurrency=args.concurrency,
                                        run_id=run_id), args.shards)
            plan_path = write_plan(state / "work" / "plan.json", plan)
            env = dict(env_for(app.base_url), **server.env)
            shards_s, results = run_shards(plan_path, run_id, state, args.shards, env)
            problems += [f"shard {i} exit {rc}" for i, (rc, _) in enumerate(results, 1) if rc]
            doc["shards_run_s"] = round(shards_s, 3)
            log(f"{args.shards} shards of {args.cases} cases ran in {shards_s:.1f}s")
            dirs = [state / "reports" / f"{run_id}.shard-{i}" for i in range(1, args.shards + 1)]
            target = f"s3://{BUCKET}/bench"
            pub = parallel_children([[sys.executable, str(PUBLISH), str(d), target] for d in dirs], env)
            problems += [f"publish: {e}" for e in pub["errors"]]
            doc["publish_shards"] = pub
            log(f"publish of {args.shards} shards at once: {pub['wall_s']:.1f}s, peak RSS {pub['max_rss_mb']} MB")
            out = state / "reports" / run_id
            merges = {}
            for name, sources in (("local", [str(d) for d in dirs]), ("store", [f"{target}/{run_id}/"])):
                run = timed_child([sys.executable, str(MERGE), "--plan", str(plan_path), "--out", str(out), *sources],
                                  env=env, log_dir=Path(tmp) / "logs" / f"merge-{name}")
                bad = [f"merge {name} exit {run.rc}: {run.stdout.strip()[:200]}"] if run.rc else \
                    check_merged(out, args.cases, None)
                problems += bad
                merges[name] = {"wall_s": round(run.wall_s, 3), "cpu_s": round(run.cpu_s, 3),
                                "maxrss_mb": round(run.maxrss_mb, 1), "valid": not bad}
                log(f"merge from {name}: {run.wall_s:.1f}s wall, {run.maxrss_mb:.0f} MB")
            doc["merge"] = merges
            whole = timed_child([sys.executable, str(PUBLISH), str(out), target], env=env,
                                log_dir=Path(tmp) / "logs" / "publish-whole")
            one = timed_child([sys.executable, str(PUBLISH), str(dirs[0]), f"{target}-one"], env=env,
                              log_dir=Path(tmp) / "logs" / "publish-one")
            problems += [f"publish exit {r.rc}: {r.stdout.strip()[:200]}" for r in (whole, one) if r.rc]
            doc["publish_memory"] = {
                "one_shard": {"cases": args.cases // args.shards, "wall_s": round(one.wall_s, 3),
                              "maxrss_mb": round(one.maxrss_mb, 1)},
                "whole_run": {"cases": args.cases, "wall_s": round(whole.wall_s, 3),
                              "maxrss_mb": round(whole.maxrss_mb, 1),
                              "files": json.loads(whole.stdout)["files"] if not whole.rc else None,
                              "bytes": json.loads(whole.stdout)["bytes"] if not whole.rc else None}}
            clients = {}
            for client in CLIENTS:
                walls = []
                for rep in range(args.reps):
                    run = timed_child([sys.executable, str(Path(__file__)), "--upload-child", client, str(out), BUCKET,
                                       f"cmp-{client}-{rep}"], env=env,
                                      log_dir=Path(tmp) / "logs" / f"upload-{client}-{rep}")
                    if run.rc:
                        problems.append(f"{client} upload exit {run.rc}: {run.stderr.strip()[-200:]}")
                        break
                    walls.append((run.wall_s, run.maxrss_mb))
                clients[client] = {"upload_s": summarize([w for w, _ in walls]) if walls else None,
                                   "maxrss_mb": max((m for _, m in walls), default=None), **weight(client)}
                log(f"{client}: upload {clients[client]['upload_s']}, {clients[client]['installed_mb']} MB installed")
            doc["clients"] = clients
    finally:
        app.stop()
        server.stop()
    doc["load_avg_at_end"] = os.getloadavg()
    doc["valid"], doc["problems"] = not problems, problems
    print(json.dumps(doc, indent=2, sort_keys=True))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2, sort_keys=True), encoding="utf-8")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
