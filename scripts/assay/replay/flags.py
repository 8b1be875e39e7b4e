"""run_cases.py's --record / --replay / --judge-cache flags: the run's replay session, or None when no
cache is involved (the common run, which then never imports the session, its cache or its shim)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from .session import ReplaySession


def from_args(plan: Mapping[str, Any], state: Any, *, record: bool, replay: str | None,
              judge_cache: bool) -> ReplaySession | None:
    """The run's session from run_cases.py's flags (and a --changed-since plan's `replay` block),
    or None (no cache involved)."""
    from .changed import live_cases
    live = live_cases(plan, replaying=replay is not None)
    if replay is not None and record:
        from ..core.errors import AssayError
        raise AssayError("--record and --replay do not go together: a replayed run records nothing new about "
                         "the app (its judge misses are written to the cache either way)", 2, key="--replay")
    if replay is None and not record and not judge_cache:
        return None
    from .session import ReplaySession
    from ..core.runapp import app_name
    from .store import Cache, cache_dir
    app = app_name(plan)
    if replay is not None:
        from .source import resolve
        if replay == "cache" and live is not None:   # bare --replay on a --changed-since plan: its run
            replay = str(plan["replay"]["source"])
        cache, source = resolve(replay, state, app)
        if live is not None:
            source = dict(source, live_cases=len(live))
        return ReplaySession(cache, app="replay", calls="cache", source=source, live_cases=frozenset(live or ()),
                             run_id=plan.get("run_id"), app_name=app,
                             source_run=str(source["run_id"]) if source.get("source") == "run" else None)
    if record:
        return ReplaySession(Cache(cache_dir(state)), app="record", calls="cache" if judge_cache else "record",
                             run_id=plan.get("run_id"), app_name=app)
    return ReplaySession(Cache(cache_dir(state)), app=None, calls="cache")


def _flag(app: str | None, calls: str | None) -> str:
    return {"record": "--record", "replay": "--replay"}.get(app or "", "--judge-cache" if calls == "cache" else "no "
                                                             "--record/--replay/--judge-cache")


def resume_mismatch(started: Any, session: ReplaySession | None) -> str | None:
    """--resume: why this invocation's --record / --replay / --judge-cache differ from the ones the run
    was started with (its manifest's `replay` block), or None. A run started under --replay and
    resumed live would send its remaining cases to the app under a manifest (and a gate line) that
    says the app was not called; one started with --record and resumed without it is not a whole
    recording. Pure."""
    was = (started.get("app"), started.get("calls")) if isinstance(started, Mapping) else (None, None)
    now = (session.app, session.calls) if session is not None else (None, None)
    if was == now:
        return None
    return (f"it was started with {_flag(*was)} and this is {_flag(*now)}: resume with the flags it was started "
            f"with (a resumed run is one run: its manifest's `replay` block says how every case was answered)")
