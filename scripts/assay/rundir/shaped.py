"""A record's verdicts.jsonl, verdicts_for_stats.jsonl and results.json lines from its shape's template
(and its routing_results.jsonl line from its routing values' template: `ShapedLines.routing`).

The completeness check renders these three lines for each of a run's records (300,000 at 100,000
cases), and a run's records come in a handful of shapes: the lines of two records differ only by
their case id (and title) when everything else they are built from is equal. That is the key: the
record's layer shape (score.layershape: the layer map's names, verdict strings and entry types; all
entries plain dicts, so derived.layer_strings reads only the verdicts), its verdict (a string), and
the flags the rows hold (canary, holdout, gating, a title or none). A key's lines are rendered once by the row builders
themselves (derived.verdict_row / stats_row / results_row, rowline.line_of) for the record with its
case id and title replaced by sentinels, and cut there; a record of that shape gets the pieces with
its own id and title's JSON text put back (a JSON text is the concatenation of its values' texts, so
this is the line the builders give). Anything else (an id or title that is no string, a layer entry
that is no dict, a conversation's failed_turn, a verdict that is no string, a template a sentinel
does not cut exactly once) is rendered by the builders, as before.
"""

from __future__ import annotations

from json.encoder import encode_basestring as _string
from typing import Any, Mapping

from ..core import writer
from ..score.layershape import LayerShape
from . import derived
from .routing_files import ROUTING_KEYS, routing_row
from .rowline import line_of

_ID, _TITLE = "\x00assay:case_id\x00", "\x00assay:title\x00"
_ID_B, _TITLE_B = writer.encode(_string(_ID)), writer.encode(_string(_TITLE))
_HELD = 4096   # shapes kept at most (a cache, never a leak)
_STR = frozenset({str})
# the routing values a template takes (never a float: -0.0 == 0.0, and they are written apart)
_ROUTED = frozenset({str, bool, int, type(None), list})


def _cut(line: bytes, holes: tuple[bytes, ...]) -> tuple[bytes, ...] | None:
    """`line` cut at each hole (in order), or None unless each hole is in it exactly once."""
    parts: list[bytes] = []
    rest = line
    for hole in holes:
        if line.count(hole) != 1 or rest.count(hole) != 1:
            return None
        head, _, rest = rest.partition(hole)
        parts.append(head)
    parts.append(rest)
    return tuple(parts)


class ShapedLines:
    """The three derived lines of a record (see the module docstring); one per check."""

    def __init__(self) -> None:
        self._shapes: dict[tuple, tuple | None] = {}
        self._routes: dict[tuple, tuple | None] = {}        # routing values (with their types) -> pieces
        self._lists: dict[tuple, tuple[int, ...] | None] = {}   # their types -> where the lists are (None: no template)

    def routing(self, record: Mapping[str, Any]) -> bytes:
        """A routing-scorable record's routing_results.jsonl line, its id not sealed
        (`line_of(routing_row(record, {}))`), from a template per routing values: the row is its id and
        those values, so two records with equal values (of equal types: 1 == True as dict keys; lists
        of strings only) have lines that differ only by the id's JSON text. Anything else is built."""
        cid, layer = record.get("case_id"), record["layers"]["routing"]
        if type(cid) is not str or type(layer) is not dict:
            return line_of(routing_row(record, {}))
        values = tuple(map(layer.get, ROUTING_KEYS))
        types = tuple(map(type, values))
        lists = self._lists.get(types, False)
        if lists is False:
            lists = tuple(i for i, t in enumerate(types) if t is list) if _ROUTED.issuperset(types) else None
            if len(self._lists) < _HELD:
                self._lists[types] = lists
        if lists is None:
            return line_of(routing_row(record, {}))
        if lists:
            held = list(values)
            for i in lists:
                if not _STR.issuperset(map(type, held[i])):
                    return line_of(routing_row(record, {}))
                held[i] = tuple(held[i])
            values = tuple(held)
        key = (types, values)
        pieces = self._routes.get(key)
        if pieces is None:
            if key in self._routes or len(self._routes) >= _HELD:
                return line_of(routing_row(record, {}))
            pieces = self._routes[key] = _cut(line_of(routing_row(dict(record, case_id=_ID), {})), (_ID_B,))
            if pieces is None:
                return line_of(routing_row(record, {}))
        return pieces[0] + writer.encode(_string(cid)) + pieces[1]

    def lines(self, record: Mapping[str, Any], verdicts: dict[str, str] | None, shape: LayerShape | None
              ) -> tuple[bytes, bytes | None, bytes | None]:
        """(verdicts.jsonl line, verdicts_for_stats.jsonl line or None, results.json row line or None
        for a holdout case). `verdicts`: hollow.layer_verdicts(record["layers"]) (or None); `shape`:
        layershape.layer_shape of them (or None)."""
        cid, title, verdict = record.get("case_id"), record.get("title"), record.get("verdict")
        titled = type(title) is str and title != ""
        if (shape is None or not shape.plain or type(cid) is not str or type(verdict) is not str
                or not (titled or not title) or (record.get("multi_turn") and record.get("failed_turn"))):
            return self._built(record, verdicts)
        key = (shape, verdict, bool(record.get("canary")), bool(record.get("holdout")),
               record.get("gating", True) is not False, titled)
        pieces = self._shapes.get(key)
        if pieces is None:
            if key in self._shapes or len(self._shapes) >= _HELD:
                return self._built(record, verdicts)
            pieces = self._shapes[key] = self._template(record, verdicts, titled)
            if pieces is None:
                return self._built(record, verdicts)
        vp, sp, rp = pieces
        eid = writer.encode(_string(cid))
        rline = None
        if rp is not None:
            rline = rp[0] + eid + rp[1] + writer.encode(_string(title)) + rp[2] if titled else rp[0] + eid + rp[1]
        return vp[0] + eid + vp[1], sp[0] + eid + sp[1] if sp is not None else None, rline

    @staticmethod
    def _built(record: Mapping[str, Any], verdicts: dict[str, str] | None
               ) -> tuple[bytes, bytes | None, bytes | None]:
        """The three lines from the row builders (the way every line was rendered before templates)."""
        layers = derived.layer_strings(record, verdicts)
        srow = derived.stats_row(record)
        return (line_of(derived.verdict_row(record, layers)), line_of(srow) if srow else None,
                None if record.get("holdout") else line_of(derived.results_row(record, layers)))

    def _template(self, record: Mapping[str, Any], verdicts: dict[str, str], titled: bool) -> tuple | None:
        fake = dict(record, case_id=_ID)
        if titled:
            fake["title"] = _TITLE
        v, s, r = self._built(fake, verdicts)
        vp, sp = _cut(v, (_ID_B,)), _cut(s, (_ID_B,)) if s is not None else None
        rp = None if r is None else _cut(r, (_ID_B, _TITLE_B) if titled else (_ID_B,))
        if vp is None or (s is not None and sp is None) or (r is not None and rp is None):
            return None
        return vp, sp, rp
