"""The merged run's manifest (merge_runs.py, runner contract §19): the keys the shards of one run must
share agree, and the keys each shard holds for itself (its slice, its clock, its health check) are
made the whole run's."""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import AssayError
from ..run.preflight import BASELINE_CASE_KEYS, case_set

# Manifest keys that may differ between the shards of one plan (each machine's own clock,
# health check and slice); every other key must agree or the shards are not one run.
PER_SHARD_KEYS = ("cases", "shard", "started_at", "health_check", "baseline_verdicts", "suite_sha256",
                  "suite_parts_sha256",  # a shard hashes its own slice; the merge hashes the plan
                  "simulator",           # present only in the shards that hold a simulated case (_simulator_of)
                  "order")               # the case order each machine chose from its own reports/ (a retried
                                         # shard read more earlier runs): how it was sent, never what it measured
PER_SHARD_INVOCATION_KEYS = ("scratch_area",)


def _shared(manifest: dict) -> dict:
    """The manifest keys the shards of one run must agree on (a cli run's scratch area is each
    machine's own temp dir, named after its run dir)."""
    out = {k: v for k, v in manifest.items() if k not in PER_SHARD_KEYS}
    if isinstance(out.get("invocation"), dict):
        out["invocation"] = {k: v for k, v in out["invocation"].items() if k not in PER_SHARD_INVOCATION_KEYS}
    return out


def _simulator_of(shards: list) -> dict | None:
    from ..simulate.build import merged_simulator_block
    return merged_simulator_block([(s.path.name, s.manifest["simulator"]) for s in sorted(shards, key=lambda s: s.index)
                                   if isinstance(s.manifest.get("simulator"), dict)])


def _first_difference(a: Any, b: Any, where: str) -> tuple[str, Any, Any]:
    """The dotted path of the first place two manifest values differ, and the two values there."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if a.get(k) != b.get(k):
                return _first_difference(a.get(k), b.get(k), f"{where}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return where, a, b


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def merged_manifest(plan: dict, shards: list, baseline: dict | None) -> dict:
    """The merged run's manifest: every key the shards must share agrees (else AssayError 2 naming the
    first differing path and both values), the per-shard keys made the whole run's."""
    first = min(shards, key=lambda s: s.index)
    mine = _shared(first.manifest)
    for s in shards:
        theirs = _shared(s.manifest)
        for key in sorted(set(mine) | set(theirs)):
            if mine.get(key) != theirs.get(key):
                where, a, b = _first_difference(theirs.get(key), mine.get(key), key)
                raise AssayError(f"{s.path.name} and {first.path.name} ran with different {key!r} in their "
                                 f"manifests ({where}: {_short(a)} vs {_short(b)}): the shards of one run must "
                                 "share the plan and its environment (e.g. the trace source, the state dir's "
                                 "judge/calibration.json); re-run the odd shard", 2, key=key, where=where)
    manifest = {k: v for k, v in first.manifest.items() if k not in ("shard", "simulator")}
    simulator = _simulator_of(shards)
    if simulator is not None:
        manifest["simulator"] = simulator
    from ..suite.version import manifest_cases, suite_version
    inv = (plan.get("adapter") or {}).get("invocation") or {}
    # an agent case's hash reads its fixture's files: taken by the shard that ran it (the merging
    # machine may hold another checkout, or none)
    known = ({row["id"]: row["case_sha256"] for s in shards for row in s.manifest.get("cases") or []
              if isinstance(row, dict) and isinstance(row.get("id"), str) and isinstance(row.get("case_sha256"), str)}
             if inv.get("mode") == "agent" else None)
    version = suite_version(plan, known)
    manifest["cases"] = manifest_cases(plan, case_set, version)
    manifest["suite_sha256"], manifest["suite_parts_sha256"] = version["suite_sha256"], version["suite_parts_sha256"]
    manifest["started_at"] = min(str(s.manifest.get("started_at")) for s in shards)
    manifest["baseline_verdicts"] = ({k: v for k, v in baseline.items() if k not in BASELINE_CASE_KEYS}
                                     if baseline else None)
    return manifest
