"""The agent frameworks whose pins collide with the `test` extra run from virtual environments of
their own: `make frameworks` builds `.venv/frameworks-<name>` from `requirements/frameworks-<name>.txt`
(CrewAI, Google ADK), and their apps (tests/handoffapp.py) run on that interpreter.

`framework_python(name)` is that interpreter, or, when it is not built (or older than its
requirements file), a skip saying so on a developer's machine and a failure under CI (`CI=true`:
.ci/run builds the environments before the suite, so a missing one is a broken CI, never a pass).
`environment(name, home)` is what the app process gets besides the OTel variables: a HOME of its own
(CrewAI writes its settings and task database under HOME) and the frameworks' own telemetry off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import ROOT, in_ci


def venv_dir(name: str) -> Path:
    return ROOT / ".venv" / f"frameworks-{name}"


def unavailable(name: str) -> str | None:
    """None when `.venv/frameworks-<name>` is built from the current requirements file, else why not."""
    stamp, req = venv_dir(name) / ".installed", ROOT / "requirements" / f"frameworks-{name}.txt"
    if not stamp.exists():
        return f".venv/frameworks-{name} is not built: run `make frameworks`"
    if stamp.stat().st_mtime < req.stat().st_mtime:
        return f".venv/frameworks-{name} is older than requirements/frameworks-{name}.txt: run `make frameworks`"
    return None


def framework_python(name: str) -> str:
    """The interpreter of `.venv/frameworks-<name>`; skips (a developer) or fails (CI) without it."""
    why = unavailable(name)
    if why:
        if in_ci():
            pytest.fail(f"CI is set but {why} (.ci/run runs it before `make test`)")
        pytest.skip(f"{why} (set CI=true to make this a failure)")
    return str(venv_dir(name) / "bin" / "python")


def environment(home: Path) -> dict[str, str]:
    """Variables for a framework app process: its own HOME, the frameworks' own telemetry and
    network fetches off (CrewAI's usage telemetry, LiteLLM's remote cost map)."""
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false",
            "CREWAI_STORAGE_DIR": str(home / "crewai"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
