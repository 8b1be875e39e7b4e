"""A new user's mistakes with the viewer and the history (a shop app of their own, five runs, the
README followed literally): each used to answer with a wrong word or a message that did not say
what to pass; each now says so. The scripts run as subprocesses, the viewer on a real port, the
killed run is a real runner killed by SIGKILL.
"""

from __future__ import annotations

import pytest

from helpers import run_script
from rundir_util import make_run

pytestmark = pytest.mark.slow   # real runs, a real viewer and subprocesses

RUN = "smoke-20261205T124710Z"


def test_view_and_history_on_a_wrong_path_name_the_state_dir_to_pass(tmp_path):
    """view.py on the reports dir, on a run dir or on the app's directory said
    "<path>/reports: no reports/ directory (or it is a symlink); pass a state dir that holds runs":
    true, but the user had given the very reports/ it asked for. Each now names the path that works."""
    app = tmp_path / "shop"
    state = app / ".assay"
    make_run(state / "reports", [{"id": "c-ord1", "answer": "Order A100 is shipped."}], run_id=RUN)
    (app / "app.py").write_text("print('the app')\n", encoding="utf-8")
    said = {
        tmp_path / "nope": f"{tmp_path / 'nope'}: not a directory (nothing is there); pass the app's state dir",
        app / "app.py": f"{app / 'app.py'}: not a directory (a file); pass the app's state dir",
        state / "reports": f"{state / 'reports'} is a reports dir (1 run(s)), not a state dir: pass its parent, {state}",
        state / "reports" / RUN: f"{state / 'reports' / RUN} is a run directory, not a state dir: pass its state dir, {state}",
        app: f"{app / 'reports'}: no reports directory; {state} holds one: pass that state dir, {state}",
        tmp_path: f"{tmp_path / 'reports'}: no reports directory; run a suite first",
    }
    for path, words in said.items():
        view = run_script("view", path, "--serve-seconds", "1", timeout=120)
        history = run_script("run_history", path, "--no-verify", timeout=120)
        for r in (view, history):
            assert r.rc == 2, (path, r.stdout, r.stderr)
            assert r.json["error"].startswith(words), (path, r.json)
    assert run_script("run_history", state, "--no-verify").rc == 0   # the state dir itself: read

