"""What a case worker imports lazily is imported first on the engine's thread (run/layers.warm_scorers):
an import that fails half-way on a worker (EMFILE) would leave the others a half-made module. A run of
single-turn cases does not load the conversation, simulator or judge code at all; a run that has them
loads each before its first worker starts."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import ROOT

PROBE = """
import json, sys
sys.path.insert(0, {scripts!r})
from assay.core.runplan import CaseTable
from assay.run import engine, command  # what run_cases.py imports
from assay.run.layers import warm_scorers
cases = CaseTable.of(json.loads({cases!r}))
warm_scorers(cases, judged={judged})
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("assay.judge", "assay.simulate",
                                                                  "assay.invoke.conversation",
                                                                  "assay.run.repeat_conversation",
                                                                  "assay.run.turn_judging", "assay.run.simulated")))))
"""
SINGLE = {"id": "c-1", "split": ["smoke"], "input": {"messages": [{"role": "user", "content": "turns: none"}]}}
CONVERSATION = {"id": "c-2", "split": ["smoke"], "input": {"turns": [{"user": "a"}, {"user": "b"}]}}


def loaded(cases, judged):
    code = PROBE.format(scripts=str(ROOT / "scripts"), cases=json.dumps(cases), judged=judged)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout))


def test_a_single_turn_run_loads_no_conversation_simulator_or_judge_module():
    assert loaded([SINGLE], judged=False) == set()


def test_a_run_with_conversations_and_a_judge_loads_their_modules_before_the_workers():
    got = loaded([SINGLE, CONVERSATION], judged=True)
    assert {"assay.invoke.conversation", "assay.run.repeat_conversation", "assay.run.turn_judging",
            "assay.judge.prompt", "assay.judge.rubrics", "assay.judge.turns", "assay.judge.fold"} <= got
    assert "assay.run.simulated" not in got
