#!/usr/bin/env python3
"""The agent invoker's own cost per case, beyond the agent's time (wave 4 §4 "Speed"): copying a
50-file fixture (`workdir.copy_fixture`), reading a transcript of 40 tool calls (`read_stream`),
and what the invoker measures after the agent (`workdir.measure`: the diff, its unified diff,
`expect.files`, and a check command, `true`: the spawn, not the check's own work). Then the copy at
c=8 (eight threads copying at once), to see that the copy is never the bottleneck.

    .venv/bin/python bench/agent_overhead.py [--repeats 30] [--files 50]

Prints one JSON object: median and p90 milliseconds per step and per case, and the c=8 copy's
per-copy time. Numbers from this machine are in bench/RESULTS.md ("The agent invoker's overhead").
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from assay.invoke import workdir as wd  # noqa: E402
from assay.traces.claude_code import read_stream  # noqa: E402


def fixture(root: Path, files: int) -> Path:
    repo = root / "fixture"
    for i in range(files):
        p = repo / f"pkg{i % 5}" / f"mod{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"def f{i}(x):\n    return x + {i}\n" * 40)   # ~1 KB each
    return repo


def transcript(calls: int) -> bytes:
    lines = [{"type": "system", "subtype": "init", "session_id": "s", "model": "m", "tools": ["Bash", "Read"]}]
    for i in range(calls):
        lines.append({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": f"/w/mod{i}.py"}}]}})
        lines.append({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "x = 1\n" * 200}]}})
    lines.append({"type": "result", "subtype": "success", "is_error": False, "result": "done", "session_id": "s",
                  "num_turns": calls, "usage": {"input_tokens": 1000, "output_tokens": 100}, "permission_denials": []})
    return ("\n".join(json.dumps(e) for e in lines) + "\n").encode()


def ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000.0


def summary(values: list[float]) -> dict:
    values = sorted(values)
    return {"median_ms": round(statistics.median(values), 2), "p90_ms": round(values[int(0.9 * (len(values) - 1))], 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--files", type=int, default=50)
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="assay-agent-bench-"))
    try:
        src = fixture(root, args.files)
        data = transcript(40)
        steps: dict[str, list[float]] = {"copy": [], "transcript": [], "measure": [], "case": []}
        spec = {"contains": {"pkg0/mod0.py": ["return x"]}, "unchanged": ["pkg1/*"], "exists": ["pkg2/mod2.py"]}
        check = {"command": ["true"]}
        for n in range(args.repeats):
            work = root / f"w{n}"
            copied: list[int] = []
            a = ms(lambda: copied.append(wd.copy_fixture(src, work)))
            (work / "pkg0" / "mod0.py").write_text("changed\n")   # the agent's edit
            b = ms(lambda: read_stream(data))
            # what the invoker measures after the agent: the diff, its unified diff, expect.files, the check
            c = ms(lambda: wd.measure(src, work, spec, check, {"PATH": "/usr/bin:/bin"}, None, copied[0]))
            for k, v in zip(("copy", "transcript", "measure"), (a, b, c)):
                steps[k].append(v)
            steps["case"].append(a + b + c)
            shutil.rmtree(work)
        per_copy_c8: list[float] = []

        def copy_many(t: int) -> None:
            for n in range(args.repeats // 3 or 1):
                dest = root / f"c8-{t}-{n}"
                per_copy_c8.append(ms(lambda: wd.copy_fixture(src, dest)))

        threads = [threading.Thread(target=copy_many, args=(t,)) for t in range(8)]
        wall = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall_ms = (time.perf_counter() - wall) * 1000.0
        out = {"files": args.files, "repeats": args.repeats, "steps": {k: summary(v) for k, v in steps.items()},
               "copy_c8": {**summary(per_copy_c8), "copies": len(per_copy_c8),
                           "copies_per_s": round(len(per_copy_c8) / (wall_ms / 1000.0), 1)},
               "target": "per-case overhead < 50 ms; the copy never the bottleneck at c=8"}
        print(json.dumps(out, indent=2))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
