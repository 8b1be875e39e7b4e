"""How the app held up under the run's concurrency, read from run.log's `throughput` events
(timing stays out of results.json: runner contract §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.jsonio import loads
from ..core.writer import read_bytes


def throughput_events(run_dir: Path) -> list[dict]:
    """The run's `throughput` events from run.log: the last one of each shard (a merged run
    holds each shard's, tagged `shard`), or the last one (a resumed run logs one per process).
    [] for an older run, a run still going, or one killed before its end."""
    try:
        lines = read_bytes(Path(run_dir) / "run.log").decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    last: dict[Any, dict] = {}
    for line in lines:
        if '"throughput"' not in line:
            continue
        try:
            event = loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "throughput":
            last[event.get("shard")] = event
    return [last[k] for k in sorted(last, key=lambda k: (k is not None, k if isinstance(k, int) else -1))]


def _throttle_text(ev: dict) -> str | None:
    if not (ev.get("decreases") or ev.get("pauses") or ev.get("rate_limited_answers")):
        return None
    fl = ev.get("in_flight") if isinstance(ev.get("in_flight"), dict) else {}

    def num(v: Any) -> str:
        return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else "n/a"
    text = (f"{num(ev.get('rate_limited_answers'))} rate-limited answer(s); in flight "
            f"{num(fl.get('min'))}-{num(fl.get('max'))} (median {num(fl.get('median'))}) of max_concurrency "
            f"{num(ev.get('max_concurrency'))}")
    if ev.get("adaptive"):
        text += (f"; the limit went down {num(ev.get('decreases'))} time(s), lowest {num(ev.get('limit_min'))}, "
                 f"ended at {num(ev.get('limit_end'))}")
    if ev.get("pauses"):
        text += f"; {num(ev.get('pauses'))} Retry-After pause(s), {num(ev.get('paused_s'))} s without sending"
    return text


def throughput_line(run_dir: Path) -> str | None:
    """One sentence on how the app held up under the run's concurrency, when the app throttled it
    (a rate-limited answer, a 429/503 that lowered the in-flight limit, a Retry-After pause),
    else None; per shard for a merged run. Read from run.log's `throughput` events: timing
    stays out of results.json (runner contract §5)."""
    parts = []
    for ev in throughput_events(run_dir):
        text = _throttle_text(ev)
        if text:
            parts.append(f"shard {ev['shard']}: {text}" if isinstance(ev.get("shard"), int) else text)
    return "throttled by the app: " + "; ".join(parts) if parts else None
