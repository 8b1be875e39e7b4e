"""The derived run-level files, computed from verdict.json records (the case dirs are the truth).

Pure row builders (used by the runner AND by --verify) plus `DerivedFiles`, which
refreshes verdicts.jsonl, verdicts_for_stats.jsonl and results.json in batches: a
refresh happens when the finished count has grown by max(16, 50 %) since the last one,
or 5 s have passed (never a rewrite of every row after every case). Each row's JSON line
is serialized once, when its case finishes, and kept on disk in plan order (rundir.spill);
the counts are folded per case (stats.tally): memory stays flat whatever the run's size.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..core import writer
from ..core.jsonio import atomic_write_json, dumps, plain_loads
from ..core.vocab import FAIL, LAYER_ORDER, PASS
from ..score.hollow import ABSENCE_LAYERS, absence_only
from ..score.rollup import failed_layers
from ..stats.counts import summarize
from ..stats.tally import Tally
from .routing_files import (ROUTING_KEYS, RoutingLines, RoutingPass, iter_routing_rows, report_doc, routing_report_doc,
                            seal_pairs, sealed_ids)
from .spill import PlanLines

REFRESH_MIN_CASES = 16
REFRESH_GROWTH = 0.5
REFRESH_MAX_S = 5.0


def _line(row: Any) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n"


def layer_strings(record: Mapping[str, Any], verdicts: Mapping[str, str] | None = None) -> dict[str, str]:
    """{layer: its verdict string} in LAYER_ORDER (`verdicts`: hollow.layer_verdicts of them, if the caller has it)."""
    layers = record.get("layers") or {}
    if verdicts is None:
        return {name: str((layers.get(name) or {}).get("verdict")) for name in LAYER_ORDER if name in layers}
    return {name: verdicts[name] if type(layers[name]) is dict else str((layers[name] or {}).get("verdict"))
            for name in LAYER_ORDER if name in layers}


def verdict_row(record: Mapping[str, Any], layers: dict[str, str] | None = None) -> dict[str, Any]:
    """`layers`: layer_strings(record) when the caller has it already (read-only: rows share it)."""
    return {"case_id": record["case_id"], "verdict": record["verdict"], "canary": bool(record.get("canary")),
            "holdout": bool(record.get("holdout")), "gating": record.get("gating", True) is not False,
            "layers": layer_strings(record) if layers is None else layers}


def stats_row(record: Mapping[str, Any]) -> dict[str, Any] | None:
    if record.get("verdict") in (PASS, FAIL):
        return {"case_id": record["case_id"], "verdict": record["verdict"]}
    return None


def _row_bytes(row: Any) -> bytes:
    """One JSONL line of a run-level file, exactly as `_lines` writes it."""
    return writer.encode(writer.dumps(row, indent=None) + "\n")


def _lines(rows: Iterable[Any], size: int = 1 << 20) -> Iterator[bytes]:
    """JSONL bytes of rows, in chunks of about `size` that end at a line."""
    buf: list[str] = []
    held = 0
    for row in rows:
        line = writer.dumps(row, indent=None) + "\n"
        buf.append(line)
        held += len(line)
        if held >= size:
            yield writer.encode("".join(buf))
            buf, held = [], 0
    if buf:
        yield writer.encode("".join(buf))


def repeat_rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"case_id": record["case_id"], "n": r["n"], "verdict": r["verdict"]}
            for r in (record.get("repeats") or [])]


def results_row(record: Mapping[str, Any], layers: dict[str, str] | None = None) -> dict[str, Any]:
    layers = layer_strings(record) if layers is None else layers
    row = {"case_id": record["case_id"], "verdict": record["verdict"], "canary": bool(record.get("canary")),
           "gating": record.get("gating", True) is not False, "failed_layers": failed_layers(layers),
           "layers": layers}
    if record.get("title"):
        row["title"] = record["title"]
    if record.get("multi_turn") and record.get("failed_turn"):
        row["failed_turn"] = record["failed_turn"]   # a conversation: the turn it failed at
    return row


def results_rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """results.json `cases`: every finished case except holdout ones (the seal)."""
    return [results_row(r) for r in records if not r.get("holdout")]


# results.json's run-level keys copied from manifest.yaml: the completeness check holds the two files to
# them (the gate and the report read them from results.json, its trust checks from the manifest).
FROM_MANIFEST = ("run_id", "mode", "gate", "selecting_split", "k", "harness_version", "dataset_version", "started_at")
# copied when the manifest has it: `app` (adapter.yaml app.name, or null), which runs record since
# `--baseline auto` tells two apps' runs apart by it (a run written before holds it in neither file)
FROM_MANIFEST_IF_THERE = ("app",)


def copies_differ(results_head: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[str]:
    """The completeness check's problem when results.json's copies of FROM_MANIFEST are not the manifest's
    (run_id has its own, older problem: "results.json (run_id differs from manifest.yaml)")."""
    keys = [key for key in FROM_MANIFEST + FROM_MANIFEST_IF_THERE
            if key != "run_id" and results_head.get(key) != manifest.get(key)]
    if not keys:
        return []
    return [f"results.json ({', '.join(keys)} {'differs' if len(keys) == 1 else 'differ'} from manifest.yaml, which "
            "the runner copies into it: one of the two files was edited after the run; restore it from a copy of the "
            "run, or run the cases again under a new run id)"]


def exit_code_differs(code: Any, status: Any, scorer_errors: Any) -> list[str]:
    """The completeness check's problem when a finished run's results.json records exit 0 (or none) over a
    scorer error the recount finds: the runner exits non-zero then (7, or 4/5/6 first: run.engine.exit_code_for),
    and the gate closes on that code alone when the case is not gating."""
    if status == "running" or code not in (0, None) or not scorer_errors:
        return []
    return [f"results.json (exit_code {'null' if code is None else code} over {scorer_errors} scorer error(s) the "
            "case records hold: the runner exits 7 then; restore it from a copy of the run, or run the cases again "
            "under a new run id)"]


def results_doc(manifest: Mapping[str, Any], records: list[dict], *, status: str, missing: list,
                exit_code: int | None, finished_at: str | None, with_cases: bool = True,
                cost_latency: Mapping[str, Any] | None = None,
                counted: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`counted`: a summary already computed from these same records (only its status and
    missing artifacts are replaced), instead of counting them again."""
    summary = (dict(counted, status=status, missing_artifacts=list(missing)) if counted is not None
               else summarize(records, status=status, missing_artifacts=missing))
    doc = {key: manifest[key] for key in FROM_MANIFEST}
    doc.update({key: manifest[key] for key in FROM_MANIFEST_IF_THERE if key in manifest})
    doc.update(exit_code=exit_code, finished_at=finished_at, summary=summary)
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


_SLIM_KEYS = ("case_id", "verdict", "canary", "holdout", "gating", "k", "crashed", "repeated_5xx",
              "scorer_errors", "repeats", "skip_reason", "sent", "trace_collected", "has_result_expect",
              "unscored_reason", "title", "multi_turn", "turns_sent", "turns_total", "failed_turn", "turns", "memory",
              "rate_limited_retries", "judged", "judge_usage", "judge_unstable", "latency_ms", "undeclared_tools",
              "simulated", "simulator", "identity")
_SLIM_LAYER_KEYS = ("verdict", "blocked_by", "reason", "provisional", "judge_unstable") + ROUTING_KEYS + ("rubrics", "provisional_verdict",
                                                                                       "undeclared_tools", "response_path", "trace_route",
                                                                                       "id_shape_seen", "first_source",
                                                                                       "served_models", "other_model",
                                                                                       "refused_status", "answer_absent",
                                                                                       "answer_not_text", "answer_echo")
_SLIM_LAYER_SET = frozenset(_SLIM_LAYER_KEYS)


def slim(record: Mapping[str, Any], *, share: bool = True) -> dict[str, Any]:
    """What the counts and derived files read from a record (the scorers' detail stays on disk):
    keeps a 10,000-case run's memory flat. summarize()/rows over slim == over the full record.
    `share=False`: a record folded and dropped at once (the completeness check) needs no shared layers."""
    out = dict(zip(_SLIM_KEYS, map(record.get, _SLIM_KEYS)))
    keep = _SLIM_LAYER_SET
    layers = {name: {k: v for k, v in layer.items() if k in keep}
              for name, layer in (record.get("layers") or {}).items() if isinstance(layer, dict)}
    for name in ABSENCE_LAYERS:   # their checks stay on disk
        kept = layers.get(name)
        if kept is not None and absence_only(record["layers"][name], name):
            kept["absence_only"] = True
    out["layers"] = {name: _shared(layer) for name, layer in layers.items()} if share else layers
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


def write_run_reports(out: Path, records: Iterable[dict], *, k: int, oos_route: str | None,
                      baseline: Mapping[str, Any] | None, routing: RoutingLines | None = None) -> dict[str, str]:
    """The run-level reports after the last case (contracts §11): routing_results.jsonl and
    routing_report.json, repeats.jsonl and reliability.json (k > 1), comparison.json (with a
    baseline). `records` in plan order, re-iterable (a list, or DerivedFiles.ordered() streamed
    from disk). The runner's finalize and the shard merge both call this. Returns the sha256 of
    the JSONL files written (the end-of-run check compares those instead of re-deriving them).
    `routing` (the runner's, when usable): the routing rows' lines as the cases finished."""
    hashes: dict[str, str] = {}
    seen = None if routing is not None and routing.usable else RoutingPass(records)
    if seen is None and routing.rows:   # the lines as the cases finished: the records are not read
        hashes["routing_results.jsonl"] = writer.write_chunks(out / "routing_results.jsonl", routing.spill.chunks())
        rows = (plain_loads(line) for line in routing.spill.lines())
        atomic_write_json(out / "routing_report.json", report_doc(rows, routing.left_out, oos_route))
    if seen is not None and seen.rows:
        hashes["routing_results.jsonl"] = writer.write_chunks(out / "routing_results.jsonl",
                                                              _lines(iter_routing_rows(records, seen.sealed)))
        atomic_write_json(out / "routing_report.json", routing_report_doc(records, oos_route, seen))
    if k > 1:
        main = [r for r in records if not r.get("canary")]
        hashes["repeats.jsonl"] = writer.write_chunks(out / "repeats.jsonl",
                                                      _lines(row for r in records for row in repeat_rows(r)))
        atomic_write_json(out / "reliability.json", reliability_doc(main, k))
    if baseline is not None:
        from ..core.errors import AssayError
        from ..stats.paired import compare, paired_population
        # holdout ids are sealed in comparison.json as in every run-level report; a canary of
        # either run is no pair (the population compare_runs.py's paired statistics are over)
        canaries = {r["case_id"] for r in records if r.get("canary")} | set(baseline.get("canary_ids") or [])
        cand = paired_population([row for row in (stats_row(r) for r in records) if row], canaries)
        base = paired_population(baseline["rows"], canaries)
        try:
            doc = compare(*seal_pairs(base, cand, sealed_ids(records), baseline.get("holdout_ids") or []))
        except AssayError as exc:
            doc = {"error": exc.message, "comparable": False}
        doc = dict(doc, baseline_run_id=baseline.get("run_id"))
        atomic_write_json(out / "comparison.json", doc)
    return hashes


class DerivedFiles:
    """The finished records, folded (stats.tally) and spilled in plan order (rundir.spill), and the
    batched refresh of the derived files: memory per case is a few bytes, whatever the run's size."""

    def __init__(self, out: Path, manifest: Mapping[str, Any], n_cases: int, state_dir: Path | None = None) -> None:
        self.out = out
        self.manifest = {k: v for k, v in manifest.items() if k != "cases"}   # its blocks, not its rows
        self.state_dir = state_dir   # where prices.yaml is, for the final results.json's cost_latency
        self.n_cases = n_cases
        self.tally = Tally()
        self._done = bytearray(n_cases)
        self._vline, self._sline, self._rline, self._slim = (PlanLines(out, n_cases) for _ in range(4))
        self.routing = RoutingLines(PlanLines(out, n_cases))   # routing_results.jsonl's rows, as they finish
        self._rows = 0                  # results.json case rows (non-holdout finished cases)
        self.count = 0
        self._canaries: dict[int, dict] = {}  # the finished canaries' slim records (a handful)
        self._last_count = 0
        self._last_time = time.monotonic()
        # run-dir relative path -> sha256 of the bytes the last refresh wrote (the end-of-run
        # check compares the files with these instead of re-deriving them)
        self.written: dict[str, str] = {}
        self._summary: dict | None = None
        self.extra: dict[str, Any] = {}   # top-level results.json keys of the run itself (stopped_early)

    def add(self, index: int, record: dict) -> None:
        if self._done[index]:
            raise ValueError(f"case {record.get('case_id')!r} (plan index {index}) finished twice")
        record = slim(record)
        self._done[index] = 1
        self.count += 1
        self.tally.add(index, record)
        if record.get("canary"):
            self._canaries[index] = record
        self._vline.add(index, writer.encode(_line(verdict_row(record))))
        if not record.get("holdout"):
            self._rline.add(index, writer.encode(_line(results_row(record))))
            self._rows += 1
        srow = stats_row(record)
        if srow:
            self._sline.add(index, writer.encode(_line(srow)))
        self._slim.add(index, writer.encode(_line(record)))
        self.routing.add(index, record, _row_bytes)

    @property
    def canaries(self) -> list[dict]:
        return [self._canaries[i] for i in sorted(self._canaries)]

    @property
    def canary_failed(self) -> bool:
        return any(r.get("verdict") == FAIL for r in self._canaries.values())

    def finished(self, index: int) -> bool:
        return bool(self._done[index])

    def ordered(self) -> "Ordered":
        """The finished slim records in plan order, streamed from disk (iterable more than once)."""
        return Ordered(self)

    def due(self) -> bool:
        grown = self.count - self._last_count
        if grown <= 0:
            return False
        return (grown >= max(REFRESH_MIN_CASES, REFRESH_GROWTH * self._last_count)
                or time.monotonic() - self._last_time >= REFRESH_MAX_S)

    def refresh(self, *, status: str = "running", missing: list | None = None, exit_code: int | None = None,
                finished_at: str | None = None, results_only: bool = False) -> None:
        """Rewrite the derived files from the finished records. `results_only`: the records did
        not change since the last refresh (the final one after the end-of-run check), so the two
        JSONL files stand and only results.json (status, exit code) is rewritten."""
        cost_latency = None
        if finished_at is not None:  # the final write only: it reads each traced case's trajectory once
            from ..stats.cost import results_summary
            cost_latency = results_summary(self.out, dict(self.manifest), self.ordered(), self.state_dir)
        # the same records as the last refresh: the JSONL files stand and the counts are reused
        same = results_only and self.count == self._last_count and self._summary is not None
        if not same:
            self.written["verdicts.jsonl"] = writer.write_chunks(self.out / "verdicts.jsonl", self._vline.chunks())
            self.written["verdicts_for_stats.jsonl"] = writer.write_chunks(
                self.out / "verdicts_for_stats.jsonl", self._sline.chunks())
        counted = self._summary if same else self.tally.summary(status=status, missing_artifacts=missing or [])
        doc = results_doc(self.manifest, [], status=status, missing=missing or [], exit_code=exit_code,
                          finished_at=finished_at, with_cases=False, cost_latency=cost_latency, counted=counted)
        self._summary = doc["summary"]
        doc.update(self.extra)
        self.written["results.json"] = writer.write_chunks(self.out / "results.json", self._results_chunks(doc))
        self._last_count = self.count
        self._last_time = time.monotonic()

    def _results_chunks(self, doc: Mapping[str, Any]) -> Iterator[bytes]:
        """results_text(doc, rows), streamed: the case rows come from the spill in plan order."""
        body = dumps(dict(doc, cases=[]), indent=2)
        if not self._rows:
            yield writer.encode(body + "\n")
            return
        head, _, tail = body.partition('"cases": []')
        yield writer.encode(head + '"cases": [\n    ')
        sep = b""
        for data in self._rline.chunks():
            yield sep + data[:-1].replace(b"\n", b",\n    ")
            sep = b",\n    "
        yield writer.encode("\n  ]" + tail + "\n")

    def close(self) -> None:
        for spill in (self._vline, self._sline, self._rline, self._slim, self.routing.spill):
            spill.close()


class Ordered:
    """DerivedFiles' finished records in plan order, parsed from the spill on each pass."""

    def __init__(self, files: DerivedFiles) -> None:
        self._files = files

    def __iter__(self) -> Iterator[dict]:
        for line in self._files._slim.lines():
            yield plain_loads(line)

    def __len__(self) -> int:
        return self._files.count


KNOWN = object()   # Known.get: "this process holds that case's record" (never read back here)


class Known:
    """The runner's own finished cases, for its end-of-run check (completeness.check_run_dir's
    `known`): which case ids this process holds, and their records in plan order, streamed."""

    def __init__(self, files: DerivedFiles, index_of) -> None:
        self.files = files
        self._index_of = index_of     # plan case id -> plan index, or None
        self.stream = files.ordered()

    def get(self, case_id: str) -> Any:
        i = self._index_of(case_id)
        return KNOWN if i is not None and self.files.finished(i) else None

    def __len__(self) -> int:
        return self.files.count
