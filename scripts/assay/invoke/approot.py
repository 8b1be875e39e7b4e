"""Where the app's code lives: the root a `function` entrypoint is imported from and lint checks paths against.

Its own module so that the linters (validate_cases.py, make_plan.py) can ask without importing the
invokers, whose HTTP stack (http.client, email, ssl) they never use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping


def app_root(adapter: Mapping[str, Any], state_dir: Path) -> Path:
    """adapter.app.repo (relative to the state dir) when declared, else the state dir's parent."""
    repo = ((adapter.get("app") or {}).get("repo"))
    if isinstance(repo, str) and repo:
        p = Path(repo)
        return (p if p.is_absolute() else (state_dir / p)).resolve()
    return state_dir.resolve().parent
