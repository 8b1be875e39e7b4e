"""The second run of a comparison benchmark: a copy of a run dir that is a later run of it.

compare_runs.py compares two runs, and refuses a run dir and a byte copy of it (the same run id and
start time: every case paired with itself). A benchmark needs two runs of one size without running
the suite twice, so the copy is made a later run: its `started_at` (in manifest.yaml and results.json,
the only files that hold it) one second on, every case record and every other byte as they were. It
passes `run_cases.py --verify` as the original does, and the comparison reads every pair as it would
between two runs that answered alike.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

_STARTED = re.compile(rb'"started_at": ("[^"]*")')


def later_twin(run_dir: Path, twin: Path) -> Path:
    """`twin`, made once: a copy of `run_dir` whose start time is one second later."""
    if twin.exists():
        return twin
    shutil.copytree(run_dir, twin)
    for name in ("manifest.yaml", "results.json"):
        path = twin / name
        data = path.read_bytes()
        m = _STARTED.search(data)
        if m is None:
            continue
        was = json.loads(m.group(1))
        when = datetime.fromisoformat(was.replace("Z", "+00:00")) + timedelta(seconds=1)
        now = when.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z" if "." in was else when.strftime("%Y-%m-%dT%H:%M:%SZ")
        path.write_bytes(data[:m.start(1)] + json.dumps(now).encode() + data[m.end(1):])
    return twin
