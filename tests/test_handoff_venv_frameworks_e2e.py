"""CrewAI's hierarchical crew and Google ADK's sub_agents in the handoff matrix, end to end.

The rows of tests/test_handoff_frameworks_e2e.py whose apps run on an interpreter of their own
(`make frameworks`, tests/framework_venvs.py: skipped on a developer's machine without it, a
failure under CI), in a file of their own: each app costs ~10 CPU-s to start (importing CrewAI;
LiteLLM on ADK's first model call), so they run LIVE_CASES only (a correct route and the planted
misroute) beside the other rows; every matrix case of their spans is held to the same verdicts on
recordings in tests/test_trace_frameworks.py.
"""

from __future__ import annotations

import pytest

from test_handoff_frameworks_e2e import VENV_ROWS, apps, check_row  # noqa: F401  (apps: the fixture)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("row", list(VENV_ROWS))
def test_routing_is_the_agent_that_handled_the_request(tmp_path, apps, row):  # noqa: F811
    check_row(tmp_path, apps, row)
