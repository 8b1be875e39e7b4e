"""routing_results.jsonl and routing_report.json from a run's records (plan order): the rows of the
single-turn routing-scorable cases, holdout ids sealed as `<holdout #i>`, and the report over them.
The runner's finalize, the shard merge and --verify derive them here; the records may be a list
or a run streamed from disk, so every pass is counted (`RoutingPass` reads the run once for what
the rows and the report need beside the rows themselves)."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from ..core.vocab import FAIL, PASS
from .artifacts import routing_scorable

ROUTING_KEYS = ("expected", "observed", "acceptable", "clarify_ok", "clarified", "observed_from")


def sealed_ids(records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Run-level reports name a holdout case only as `<holdout #i>` (i = its order among the
    run's holdout cases), so the seal holds in routing and reliability reports too."""
    out: dict[str, str] = {}
    for r in records:
        _seal(out, r)
    return out


def seal_pairs(base_rows: list, cand_rows: list, sealed: Mapping[str, str],
               base_holdout: Iterable[str]) -> tuple[list, list]:
    """The two runs' verdicts_for_stats rows with every holdout id sealed, as comparison.json pairs them:
    `sealed` is the candidate's (`sealed_ids`: `<holdout #i>`), and a baseline holdout id the candidate
    does not have is `<baseline holdout #n>`. The runner's comparison.json and stats.py both seal here."""
    labels = dict(sealed)
    for cid in base_holdout:
        labels.setdefault(cid, f"<baseline holdout #{len(labels) + 1}>")

    def seal(rows: list) -> list:
        return [dict(row, case_id=labels.get(row.get("case_id"), row.get("case_id")))
                if isinstance(row, dict) else row for row in rows]
    return seal(base_rows), seal(cand_rows)


def _seal(sealed: dict[str, str], record: Mapping[str, Any]) -> None:
    if record.get("holdout"):
        sealed[record["case_id"]] = f"<holdout #{len(sealed) + 1}>"


def routing_rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """routing_results.jsonl: non-canary routing-scorable cases, plan order, holdout ids sealed."""
    return list(iter_routing_rows(records))


def iter_routing_rows(records: Iterable[Mapping[str, Any]], sealed: Mapping[str, str] | None = None
                      ) -> Iterator[dict[str, Any]]:
    """routing_rows, streamed (`records` is read twice: the holdout seal, unless given, then the rows)."""
    if sealed is None:
        sealed = sealed_ids(records)
    for record in records:
        if record.get("canary") or not routing_scorable(record):
            continue
        yield routing_row(record, sealed)


def routing_row(record: Mapping[str, Any], sealed: Mapping[str, str]) -> dict[str, Any]:
    """A routing-scorable record's routing_results.jsonl row (its id sealed when it is a holdout case)."""
    layer = record["layers"]["routing"]
    row = {"case_id": sealed.get(record["case_id"], record["case_id"])}
    row.update({k: layer.get(k) for k in ROUTING_KEYS})
    return row


def left_out(record: Mapping[str, Any]) -> bool:
    """A conversation whose routing layer scored: one case, not a routing decision per turn."""
    return bool(record.get("multi_turn")) and \
        ((record.get("layers") or {}).get("routing") or {}).get("verdict") in (PASS, FAIL)


class _Counted:
    """An iterable that counts what it yielded (routing_report reads its rows once, then len)."""

    def __init__(self, rows: Iterable) -> None:
        self._rows, self.n = rows, 0

    def __iter__(self) -> Iterator:
        for row in self._rows:
            self.n += 1
            yield row

    def __len__(self) -> int:
        return self.n


class RoutingPass:
    """One read of the records for the routing reports: the holdout seal, whether any row exists,
    and the conversations left out (each was a pass of its own over a run streamed from disk)."""

    def __init__(self, records: Iterable[Mapping[str, Any]]) -> None:
        self.sealed: dict[str, str] = {}
        self.rows = self.left_out = 0
        for r in records:
            _seal(self.sealed, r)
            if r.get("canary"):
                continue
            if routing_scorable(r):
                self.rows += 1
            elif left_out(r):
                self.left_out += 1


def routing_report_doc(records: Iterable[dict], oos_route: str | None, seen: RoutingPass | None = None) -> dict[str, Any]:
    seen = seen or RoutingPass(records)
    return report_doc(iter_routing_rows(records, seen.sealed), seen.left_out, oos_route)


def report_doc(rows: Iterable[dict], conversations_left_out: int, oos_route: str | None) -> dict[str, Any]:
    """routing_report.json over the rows (read once) and the conversations left out."""
    from ..score.routing import routing_report
    doc = routing_report(_Counted(rows), oos_route)
    # conversations are one case each, not one routing decision per turn: left out, and said so
    n = conversations_left_out
    doc["conversations_left_out"] = n
    doc["conversations_note"] = (f"{n} conversation(s) left out: a conversation's turns are not "
                                 "independent routing decisions, so this report covers single-turn cases only; "
                                 "their routing verdicts are in each case's verdict.json" if n else None)
    return doc


class RoutingLines:
    """The runner's routing rows as its cases finish (DerivedFiles.add): each row's line kept in plan
    order on disk, so the finalize writes routing_results.jsonl and the report without reading the
    records again. `usable` is False once a holdout case's row arrives: its id is sealed by its order
    among the finished holdout cases, known only at the end, and the records path is taken instead."""

    def __init__(self, spill: Any) -> None:
        self.spill = spill          # rundir.spill.PlanLines
        self.rows = self.left_out = 0
        self.usable = True

    def add(self, index: int, record: Mapping[str, Any], encode) -> None:
        if record.get("canary"):
            return
        if routing_scorable(record):
            self.rows += 1
            if record.get("holdout"):
                self.usable = False
            elif self.usable:
                self.spill.add(index, encode(routing_row(record, {})))
        elif left_out(record):
            self.left_out += 1
