#!/usr/bin/env python3
"""Build the plugin's release layout: only what a user's plugin cache needs.

Claude Code copies a plugin's whole source directory into the user's plugin cache,
so a marketplace that serves this repository's root would ship the tests, the
benchmarks and the CI files too. The release layout is the plugin and nothing else:
the manifests (`.claude-plugin/` and the identical top-level `plugin.json`) and icon, the hook, the skills, the scripts (with their schemas), the
reference docs, the bundled example and the README, taken from the files git
tracks (never a local venv, a run directory or a cache). It is itself a
marketplace root (its `.claude-plugin/marketplace.json` lists the plugin at `./`),
so publishing it is pushing the directory as a repository or branch of its own.

    python3 tools/plugin_release.py --out dist/assay-plugin
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Top-level entries the plugin needs at run time, and nothing else.
SHIPPED = (".claude-plugin", "plugin.json", "hooks", "skills", "scripts", "references", "docs", "examples", "README.md")


def tracked_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p]


def shipped(path: str) -> bool:
    top = path.split("/", 1)[0]
    return top in SHIPPED and "__pycache__" not in path.split("/")


def build(out: Path, root: Path = ROOT) -> dict:
    files = [p for p in tracked_files(root) if shipped(p) and (root / p).is_file()]
    staging = out.with_name(out.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    total = 0
    for rel in files:
        dest = staging / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, dest)
        total += dest.stat().st_size
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging, out)
    left_out = sorted({p.split("/", 1)[0] for p in tracked_files(root)} - set(SHIPPED))
    return {"out": str(out), "files": len(files), "bytes": total, "left_out": left_out}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "dist" / "assay-plugin"), help="where to write the layout")
    args = p.parse_args(argv)
    try:
        result = build(Path(args.out).resolve())
    except (OSError, subprocess.CalledProcessError) as exc:
        print(json.dumps({"error": f"cannot build the release layout: {exc}; run from a git checkout"}))
        return 2
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
