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
        layer = record["layers"]["routing"]
        row = {"case_id": sealed.get(record["case_id"], record["case_id"])}
        row.update({k: layer.get(k) for k in ROUTING_KEYS})
        yield row


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
            elif r.get("multi_turn") and ((r.get("layers") or {}).get("routing") or {}).get("verdict") in (PASS, FAIL):
                self.left_out += 1


def routing_report_doc(records: Iterable[dict], oos_route: str | None, seen: RoutingPass | None = None) -> dict[str, Any]:
    from ..score.routing import routing_report
    seen = seen or RoutingPass(records)
    doc = routing_report(_Counted(iter_routing_rows(records, seen.sealed)), oos_route)
    # conversations are one case each, not one routing decision per turn: left out, and said so
    left_out = seen.left_out
    doc["conversations_left_out"] = left_out
    doc["conversations_note"] = (f"{left_out} conversation(s) left out: a conversation's turns are not "
                                 "independent routing decisions, so this report covers single-turn cases only; "
                                 "their routing verdicts are in each case's verdict.json" if left_out else None)
    return doc
