"""bench/measure.timed_child: a child's peak RSS is its own, not the size of the bench process that
started it (Linux counts the address space a child replaces at exec in its ru_maxrss)."""

from __future__ import annotations

import sys

from helpers import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from measure import timed_child  # noqa: E402

TOUCH = "x = bytearray({mb} * 1024 * 1024)\nfor i in range(0, len(x), 4096): x[i] = 1\nprint('done')"


def test_peak_rss_is_the_childs_own_however_big_the_bench_process_is(tmp_path):
    ballast = bytearray(150 * 1024 * 1024)      # this process: ~150 MB more resident
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    run = timed_child([sys.executable, "-c", TOUCH.format(mb=20)], log_dir=tmp_path / "a")
    assert run.rc == 0 and run.stdout.strip() == "done"
    assert 20 < run.maxrss_mb < 80, run.maxrss_mb                  # 20 MB touched + an interpreter
    assert run.cpu_s > 0 and 0 < run.wall_s < 30
    # what a child started straight from this process reports (why the launcher exists)
    direct = timed_child([sys.executable, "-c", TOUCH.format(mb=20)], on_start=lambda proc: None)
    assert direct.maxrss_mb > 150
    del ballast


def test_exit_codes_and_the_timeout_come_through():
    assert timed_child([sys.executable, "-c", "import sys; sys.exit(3)"]).rc == 3
    assert timed_child([str(ROOT / "no-such-command")]).rc == 127
    slow = timed_child([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=1)
    assert slow.rc != 0 and slow.wall_s < 15
