"""The derived run-level files, computed from verdict.json records (the case dirs are the truth).

Pure row builders (used by the runner AND by --verify) plus `DerivedFiles`, which
refreshes verdicts.jsonl, verdicts_for_stats.jsonl and results.json in batches: a
refresh happens when the finished count has grown by max(16, 50 %) since the last one,
or 5 s have passed, so the bookkeeping is O(1) amortized per case (never a rewrite of
every row after every case). Each row's JSON line is serialized once and cached.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.jsonio import atomic_write_json, atomic_write_jsonl, atomic_write_text, dumps
from ..core.vocab import FAIL, LAYER_ORDER, PASS
from ..score.rollup import failed_layers
from ..stats.counts import summarize
from .artifacts import routing_scorable

REFRESH_MIN_CASES = 16
REFRESH_GROWTH = 0.5
REFRESH_MAX_S = 5.0
ROUTING_KEYS = ("expected", "observed", "acceptable", "clarify_ok", "clarified", "observed_from")


def _line(row: Any) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n"


def layer_strings(record: Mapping[str, Any]) -> dict[str, str]:
    layers = record.get("layers") or {}
    return {name: str((layers.get(name) or {}).get("verdict")) for name in LAYER_ORDER if name in layers}


def verdict_row(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"case_id": record["case_id"], "verdict": record["verdict"], "canary": bool(record.get("canary")),
            "holdout": bool(record.get("holdout")), "gating": record.get("gating", True) is not False,
            "layers": layer_strings(record)}


def stats_row(record: Mapping[str, Any]) -> dict[str, Any] | None:
    if record.get("verdict") in (PASS, FAIL):
        return {"case_id": record["case_id"], "verdict": record["verdict"]}
    return None


def sealed_ids(records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Run-level reports name a holdout case only as `<holdout #i>` (i = its order among the
    run's holdout cases), so the seal holds in routing and reliability reports too."""
    out: dict[str, str] = {}
    for r in records:
        if r.get("holdout"):
            out[r["case_id"]] = f"<holdout #{len(out) + 1}>"
    return out


def routing_rows(records: list[dict]) -> list[dict[str, Any]]:
    """routing_results.jsonl: non-canary routing-scorable cases, plan order, holdout ids sealed."""
    sealed = sealed_ids(records)
    rows = []
    for record in records:
        if record.get("canary") or not routing_scorable(record):
            continue
        layer = record["layers"]["routing"]
        row = {"case_id": sealed.get(record["case_id"], record["case_id"])}
        row.update({k: layer.get(k) for k in ROUTING_KEYS})
        rows.append(row)
    return rows


def repeat_rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"case_id": record["case_id"], "n": r["n"], "verdict": r["verdict"]}
            for r in (record.get("repeats") or [])]


def results_row(record: Mapping[str, Any]) -> dict[str, Any]:
    row = {"case_id": record["case_id"], "verdict": record["verdict"], "canary": bool(record.get("canary")),
           "gating": record.get("gating", True) is not False, "failed_layers": failed_layers(layer_strings(record)),
           "layers": layer_strings(record)}
    if record.get("title"):
        row["title"] = record["title"]
    if record.get("multi_turn") and record.get("failed_turn"):
        row["failed_turn"] = record["failed_turn"]   # a conversation: the turn it failed at
    return row


def results_rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """results.json `cases`: every finished case except holdout ones (the seal)."""
    return [results_row(r) for r in records if not r.get("holdout")]


def results_doc(manifest: Mapping[str, Any], records: list[dict], *, status: str, missing: list,
                exit_code: int | None, finished_at: str | None, with_cases: bool = True,
                cost_latency: Mapping[str, Any] | None = None,
                counted: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`counted`: a summary already computed from these same records (only its status and
    missing artifacts are replaced), instead of counting them again."""
    summary = (dict(counted, status=status, missing_artifacts=list(missing)) if counted is not None
               else summarize(records, status=status, missing_artifacts=missing))
    doc = {"run_id": manifest["run_id"], "mode": manifest["mode"], "gate": manifest["gate"],
           "selecting_split": manifest["selecting_split"], "k": manifest["k"],
           "harness_version": manifest["harness_version"], "dataset_version": manifest["dataset_version"],
           "exit_code": exit_code, "started_at": manifest["started_at"], "finished_at": finished_at,
           "summary": summary}
    if cost_latency is not None:
        doc["cost_latency"] = dict(cost_latency)
    if with_cases:
        doc["cases"] = results_rows(records)
    return doc


def results_text(doc_without_cases: Mapping[str, Any], case_lines: Iterable[str]) -> str:
    """results.json text: sorted keys, indented, with one compact line per case row (fast to
    write for 10,000 rows, easy to read and to diff). `case_lines` are canonical row JSON."""
    body = dumps(dict(doc_without_cases, cases=[]), indent=2)
    rows = [line.rstrip("\n") for line in case_lines]
    if rows:
        body = body.replace('"cases": []', '"cases": [\n    ' + ",\n    ".join(rows) + "\n  ]", 1)
    return body + "\n"


def reliability_doc(records: list[dict], k: int) -> dict[str, Any]:
    from ..stats.reliability import reliability
    sealed = sealed_ids(records)
    per_case = {sealed.get(r["case_id"], r["case_id"]): [x["verdict"] for x in (r.get("repeats") or [])]
                for r in records if not r.get("canary") and r.get("repeats")}
    return reliability(per_case, k)


def routing_report_doc(records: list[dict], oos_route: str | None) -> dict[str, Any]:
    from ..score.routing import routing_report
    doc = routing_report(routing_rows(records), oos_route)
    # conversations are one case each, not one routing decision per turn: left out, and said so
    left_out = sum(1 for r in records if r.get("multi_turn") and not r.get("canary")
                   and ((r.get("layers") or {}).get("routing") or {}).get("verdict") in ("pass", "fail"))
    doc["conversations_left_out"] = left_out
    doc["conversations_note"] = (f"{left_out} conversation(s) left out: a conversation's turns are not "
                                 "independent routing decisions, so this report covers single-turn cases only; "
                                 "their routing verdicts are in each case's verdict.json" if left_out else None)
    return doc


_SLIM_KEYS = ("case_id", "verdict", "canary", "holdout", "gating", "k", "crashed", "repeated_5xx",
              "scorer_errors", "repeats", "skip_reason", "sent", "trace_collected", "has_result_expect",
              "unscored_reason", "title", "multi_turn", "turns_sent", "turns_total", "failed_turn", "turns", "memory",
              "rate_limited_retries", "judged", "judge_usage", "judge_unstable", "latency_ms", "undeclared_tools",
              "simulated", "simulator")
_SLIM_LAYER_KEYS = ("verdict", "blocked_by", "reason", "provisional", "judge_unstable") + ROUTING_KEYS + ("rubrics", "provisional_verdict",
                                                                                       "undeclared_tools", "response_path")


def slim(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the counts and derived files read from a record (the scorers' detail stays on disk):
    keeps a 10,000-case run's memory flat. summarize()/rows over slim == over the full record."""
    out = {k: record.get(k) for k in _SLIM_KEYS}
    out["layers"] = {name: _shared({k: layer[k] for k in _SLIM_LAYER_KEYS if k in layer})
                     for name, layer in (record.get("layers") or {}).items() if isinstance(layer, dict)}
    return out


_SHARED: dict[str, dict] = {}
_SHARED_MAX, _SHARED_KEY_MAX = 4096, 256


def _shared(layer: dict) -> dict:
    """One object for every equal small slim layer (`{"verdict": "n/a"}`, a pass with no detail):
    most of a run's layers are a handful of distinct values, so 100,000 records hold a few
    thousand layer dicts, not a million. Slim records are read, never mutated."""
    try:
        key = json.dumps(layer, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return layer
    if len(key) > _SHARED_KEY_MAX:
        return layer
    got = _SHARED.get(key)
    if got is None:
        if len(_SHARED) >= _SHARED_MAX:
            return layer
        _SHARED[key] = got = layer
    return got


def write_run_reports(out: Path, records: list[dict], *, k: int, oos_route: str | None,
                      baseline: Mapping[str, Any] | None) -> None:
    """The run-level reports after the last case (contracts §11): routing_results.jsonl and
    routing_report.json, repeats.jsonl and reliability.json (k > 1), comparison.json (with a
    baseline). `records` in plan order. The runner's finalize and the shard merge both call this."""
    main = [r for r in records if not r.get("canary")]
    rows = routing_rows(records)
    if rows:
        atomic_write_jsonl(out / "routing_results.jsonl", rows)
        atomic_write_json(out / "routing_report.json", routing_report_doc(records, oos_route))
    if k > 1:
        atomic_write_jsonl(out / "repeats.jsonl", [row for r in records for row in repeat_rows(r)])
        atomic_write_json(out / "reliability.json", reliability_doc(main, k))
    if baseline is not None:
        from ..core.errors import AssayError
        from ..stats.paired import compare
        # holdout ids are sealed in comparison.json as in every run-level report
        sealed = sealed_ids(records)
        for cid in baseline.get("holdout_ids") or []:
            sealed.setdefault(cid, f"<baseline holdout #{len(sealed) + 1}>")

        def seal(rows: list) -> list:
            return [dict(row, case_id=sealed.get(row.get("case_id"), row.get("case_id")))
                    if isinstance(row, dict) else row for row in rows]
        cand = [row for row in (stats_row(r) for r in records) if row]
        try:
            doc = compare(seal(baseline["rows"]), seal(cand))
        except AssayError as exc:
            doc = {"error": exc.message, "comparable": False}
        doc = dict(doc, baseline_run_id=baseline.get("run_id"))
        atomic_write_json(out / "comparison.json", doc)


class DerivedFiles:
    """Finished records by plan index, and the batched refresh of the derived files."""

    def __init__(self, out: Path, manifest: Mapping[str, Any], n_cases: int, state_dir: Path | None = None) -> None:
        self.out = out
        self.manifest = manifest
        self.state_dir = state_dir   # where prices.yaml is, for the final results.json's cost_latency
        self.n_cases = n_cases
        self.records: dict[int, dict] = {}
        self._vline: dict[int, str] = {}
        self._sline: dict[int, str] = {}
        self._rline: dict[int, str] = {}
        self._last_count = 0
        self._last_time = time.monotonic()
        # run-dir relative path -> the bytes the last refresh wrote (the end-of-run check
        # compares the files with these instead of re-parsing them)
        self.written: dict[str, bytes] = {}
        self._summary: dict | None = None
        self.extra: dict[str, Any] = {}   # top-level results.json keys of the run itself (stopped_early)

    def add(self, index: int, record: dict) -> None:
        record = slim(record)
        self.records[index] = record
        self._vline[index] = _line(verdict_row(record))
        self._rline[index] = "" if record.get("holdout") else _line(results_row(record))
        srow = stats_row(record)
        self._sline[index] = _line(srow) if srow else ""

    def ordered(self) -> list[dict]:
        return [self.records[i] for i in sorted(self.records)]

    def due(self) -> bool:
        grown = len(self.records) - self._last_count
        if grown <= 0:
            return False
        return (grown >= max(REFRESH_MIN_CASES, REFRESH_GROWTH * self._last_count)
                or time.monotonic() - self._last_time >= REFRESH_MAX_S)

    def refresh(self, *, status: str = "running", missing: list | None = None, exit_code: int | None = None,
                finished_at: str | None = None, results_only: bool = False) -> None:
        """Rewrite the derived files from the finished records. `results_only`: the records did
        not change since the last refresh (the final one after the end-of-run check), so the two
        JSONL files stand and only results.json (status, exit code) is rewritten."""
        order = sorted(self.records)
        records = [self.records[i] for i in order]
        cost_latency = None
        if finished_at is not None:  # the final write only: it reads each traced case's trajectory once
            from ..stats.cost import results_summary
            cost_latency = results_summary(self.out, dict(self.manifest), records, self.state_dir)
        # the same records as the last refresh: the JSONL files stand and the counts are reused
        same = results_only and len(self.records) == self._last_count and self._summary is not None
        if not same:
            self.written["verdicts.jsonl"] = atomic_write_text(
                self.out / "verdicts.jsonl", "".join(self._vline[i] for i in order))
            self.written["verdicts_for_stats.jsonl"] = atomic_write_text(
                self.out / "verdicts_for_stats.jsonl", "".join(self._sline[i] for i in order))
        doc = results_doc(self.manifest, records, status=status, missing=missing or [], exit_code=exit_code,
                          finished_at=finished_at, with_cases=False, cost_latency=cost_latency,
                          counted=self._summary if same else None)
        self._summary = doc["summary"]
        doc.update(self.extra)
        self.written["results.json"] = atomic_write_text(
            self.out / "results.json", results_text(doc, (self._rline[i] for i in order if self._rline[i])))
        self._last_count = len(self.records)
        self._last_time = time.monotonic()
