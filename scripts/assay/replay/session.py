"""The one replay object of a run: how the app, the judge and a simulated user go through the
cache (docs/runner-contract.md, "Record and replay").

    app    None | "record" | "replay"     (--record / --replay SOURCE)
    calls  None | "record" | "cache"      (judge / simulator calls: --record writes every call;
                                           --judge-cache and --replay read first and write a miss)

A request the cache cannot answer during --replay is a `ReplayMiss` (the case worker makes the
case infra_error, reason `replay miss: ...`); a judge call it cannot answer is made live."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..core.ids import utc_now_iso
from .key import Binding, address_named, app_address, app_location, base_key, call_key
from .miss import REPLAY_MISS, ReplayMiss  # noqa: F401 (ReplayMiss: the name callers import)
from .shim import ReplayInvoker
from .store import Cache

# Model calls a replay never makes live: a simulated user's turn must be the recorded one, or
# the conversation is no longer the recorded conversation.
STRICT_KINDS = frozenset({"simulator"})


@dataclass
class ReplaySession:
    cache: Cache
    app: str | None = None              # "record" | "replay" | None
    calls: str | None = None            # "record" | "cache" | None
    source: dict[str, Any] | None = None   # the manifest's `replayed_from` (app == "replay")
    # make_plan.py --changed-since: these cases are sent to the app (and recorded) during a replay
    live_cases: frozenset = frozenset()
    run_id: str | None = None           # this run: what it records (--record, a live case) carries it
    # --replay RUN_DIR (or a --changed-since plan): only that run's own recordings answer; an entry
    # another run wrote over it since (the cache is keyed by request, shared by every run) is a miss
    source_run: str | None = None
    # the plan's app (adapter.yaml app.name): every recorded exchange names it, and a replayed answer
    # recorded from another app is a miss (the key holds no app: another app's alike request would hit)
    app_name: str | None = None
    counts: Counter = field(default_factory=Counter)
    _ordinals: Counter = field(default_factory=Counter, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def calls_app(self) -> bool:
        """Whether this run sends anything to the app (a replay with live cases does)."""
        return self.app != "replay" or bool(self.live_cases)

    def invoker(self, inner: Any, invocation: Mapping[str, Any] | None = None,
                env: Mapping[str, str] | None = None, app_root: Any = None) -> Any:
        """The invoker the case worker uses: `inner` itself unless the app is recorded or replayed.
        `invocation` and `env` (the run's resolved variables) bind the values of the `${NAME}`s a
        request names into its key (assay.replay.key.Binding). `app_root`: the app repo
        (invoke.approot), where a function, cli or agent app with no name is."""
        if self.app is None:
            return inner
        inv = invocation or {}
        # an app with no app.name is known by where it is called: an http app by its base URL (None:
        # not told, its URL unset), any other by its app repo as seen from the cache
        address, repo = None, None
        if self.app_name is None and inv.get("mode", "http") != "http" and app_root is not None:
            address, repo = app_location(app_root, self.cache.root), str(app_root)
        elif self.app_name is None and env is not None:
            address = app_address(inv, env)
        return ReplayInvoker(inner, self, Binding.of(inv, env) if env is not None else None,
                             address=address, address_named=address_named(inv), app_repo=repo)

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] += n

    def manifest(self) -> dict[str, Any]:
        """The manifest's `replay` block (written at pre-flight)."""
        return {"app": self.app, "calls": self.calls, "cache": str(self.cache.root), "replayed_from": self.source}

    # ------------------------------------------------------------ model calls
    def through(self, kind: str, request: Mapping[str, Any], produce: Callable[[], dict], *,
                case_id: str | None = None, what: str = "",
                cacheable: Callable[[dict], bool] | None = None) -> tuple[dict, dict | None]:
        """(value, cache mark or None) for one model call. `request` is JSON data that fully
        determines the answer; identical requests are told apart by their order (ordinal 0, 1, …),
        so N asks of one node stay N recorded answers. A hit's mark is {hit, key, recorded_at}.
        `cacheable(value)`: whether a value is kept; a cached value it refuses is not reused (a miss)."""
        if self.calls is None:
            return produce(), None
        base = base_key(kind, request)
        with self._lock:
            ordinal = self._ordinals[base]
            self._ordinals[base] += 1
        key = call_key(kind, request, ordinal)
        path = self.cache.call_path(kind, key)
        if self.calls == "cache":
            doc = self.cache.read(path)
            if doc is not None and "value" in doc and (cacheable is None or cacheable(doc["value"])):
                self.count(f"{kind}_hits")
                return doc["value"], {"hit": True, "key": key, "recorded_at": doc.get("recorded_at")}
            self.count(f"{kind}_misses")
            if self.app == "replay" and kind in STRICT_KINDS:
                raise ReplayMiss(f"{REPLAY_MISS}: case {case_id}: {kind} call {what} is not in the cache "
                                 f"{self.cache.root} (key {key[:12]})".replace("  ", " "))
        value = produce()
        if cacheable is None or cacheable(value):
            self.cache.write(path, {"key": key, "kind": kind, "ordinal": ordinal, "request": dict(request),
                                    "value": value, "case_id": case_id, "recorded_at": utc_now_iso()})
            self.count(f"{kind}_recorded")
        return value, None
