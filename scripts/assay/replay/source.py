"""`--replay SOURCE`: a cache directory, or a run directory (the cache that run recorded into,
named by its manifest's `replay.cache`). Pre-flight errors are exit 2 naming the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..core.errors import AssayError
from ..core.jsonio import read_json
from ..core.runapp import app_name
from .store import LAYOUT, Cache, cache_dir


def replayed_words(manifest: Any) -> str | None:
    """`REPLAYED from ...: the app was not called` for a run_cases.py --replay run (its manifest's
    `replayed_from`), with how many cases a --changed-since replay sent live; None for a live run. The one
    definition: the gate's first line and the history (a replayed run is no point of the app's trend) say it."""
    src = manifest.get("replayed_from") if isinstance(manifest, Mapping) else None
    if not isinstance(src, Mapping):
        return None
    where = f"run {src.get('run_id')}" if src.get("source") == "run" else f"the cache {src.get('cache')}"
    live = src.get("live_cases")
    if isinstance(live, int) and not isinstance(live, bool) and live:
        return f"REPLAYED from {where}, except {live} case(s) changed since it, sent live"
    return f"REPLAYED from {where}: the app was not called"


def resolve(source: str, state: Any, app: str | None = None) -> tuple[Cache, dict[str, Any]]:
    """(the cache to answer from, the manifest's `replayed_from`). SOURCE `cache` (or empty) is
    `<state>/cache`. `app` (this plan's app): a run of another app is refused (its recording would
    answer for this one wherever the requests look alike)."""
    if source in ("", "cache"):
        path = cache_dir(Path(state))
        return _app_cache(_cache_at(path, source or "cache"), source or "cache", app), {"source": "cache",
                                                                                     "cache": str(path)}
    path = Path(source)
    if (path / "manifest.yaml").is_file():
        try:
            manifest = read_json(path / "manifest.yaml")
        except (OSError, ValueError) as exc:
            raise AssayError(f"--replay {source}: its manifest.yaml is unreadable ({exc})", 2, key="--replay") from None
        rec = manifest.get("replay") if isinstance(manifest, dict) else None
        if isinstance(rec, dict) and rec.get("app") == "replay":
            was = manifest.get("replayed_from") if isinstance(manifest.get("replayed_from"), dict) else {}
            origin = (f"run {was['run_id']} ({was.get('run_dir')})" if was.get("source") == "run" and was.get("run_id")
                      else f"the cache {was.get('cache') or rec.get('cache')}")
            raise AssayError(f"--replay {source}: run {manifest.get('run_id')} was itself a replay of {origin}, not a "
                             "recording; replay that source instead (a --changed-since run's live cases are in the "
                             "cache: --replay <state>/cache), or record a run with run_cases.py --record", 2,
                             key="--replay")
        if not isinstance(rec, dict) or rec.get("app") != "record" or not rec.get("cache"):
            raise AssayError(f"--replay {source}: run {manifest.get('run_id')} was not recorded (its manifest has no "
                             "replay.app: record); record a run with run_cases.py --record, then replay that run "
                             "or the cache", 2, key="--replay")
        recorded = app_name(manifest)
        if app and recorded and recorded != app:
            raise AssayError(f"--replay {source}: run {manifest.get('run_id')} recorded app {recorded!r}, and this plan "
                             f"is of app {app!r} (adapter.yaml app.name): a recording answers only for the app it "
                             "recorded; replay a run of this app, or run live", 2, key="--replay")
        cache = _cache_at(Path(rec["cache"]), source)
        return cache, {"source": "run", "run_id": manifest.get("run_id"), "run_dir": str(path),
                       "cache": str(cache.root)}
    return _app_cache(_cache_at(path, source), source, app), {"source": "cache", "cache": str(path)}


def _app_cache(cache: Cache, named: str, app: str | None) -> Cache:
    """A bare cache SOURCE holds recordings of the apps its `apps/` names (every --record names its
    app there): one that holds none of this plan's app is refused, naming both. A cache written before
    recordings named their app passes here; each of its answers is then a replay miss (shim)."""
    recorded = cache.apps()
    if recorded is None or app in recorded:
        return cache
    shown = ", ".join(repr(a) if a is not None else "an app with no app.name" for a in recorded)
    mine = repr(app) if app is not None else "an app with no app.name"
    raise AssayError(f"--replay {named}: the cache {cache.root} holds recordings of app {shown} (adapter.yaml "
                     f"app.name), and this plan is of {'app ' if app is not None else ''}{mine}: a recording answers "
                     "only for the app it recorded (another app's answers would be scored wherever the requests look "
                     "alike); replay this app's own cache (<its state dir>/cache, the default of --replay) after "
                     "run_cases.py --record, or run live", 2, key="--replay")


def _cache_at(path: Path, named: str) -> Cache:
    if not (path / LAYOUT).is_dir():
        raise AssayError(f"--replay {named}: {path} holds no recorded cache ({LAYOUT}/ is missing); record a run "
                         "with run_cases.py --record first (it writes <state>/cache/)", 2, key="--replay")
    return Cache(path)
