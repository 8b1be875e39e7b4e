"""The summary's layer table (`layers`: a count per layer and verdict), `unscorable_layers` and
`unjudged`, folded one record at a time (stats.tally).

A record whose layer shape (score.layershape) has only plain dict entries, no `unscorable` layer and
no `unscored` judged one adds nothing but its shape's counts (the rest of the fold reads those
entries: blocked_by, the unjudged reason): the first record of such a shape is folded as every
record is, the later ones are only counted, and their counts are added when the table is read
(`counted`). The first record put every bucket and verdict key in place, so the table's key order
(first seen) is the same as when each record is folded.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.vocab import LAYER_ORDER, UNSCORABLE, UNSCORED
from ..score.layershape import LayerShape


class LayerTable:
    def __init__(self) -> None:
        self.layers: dict[str, dict[str, int]] = {name: {} for name in LAYER_ORDER}
        self.unscorable: dict[str, list] = {}    # layer -> [cases, (index, blocked_by) or None]
        self.unjudged: dict[str, int] = {}
        self._later: dict[LayerShape, int] = {}  # shape -> its records not yet in `layers` (-1: each is folded)

    def add(self, index: int, layers: Mapping[str, Any], verdicts: Mapping[str, str],
            shape: LayerShape | None = None) -> None:
        """`verdicts`: score.hollow.layer_verdicts(layers); `shape`: layershape.layer_shape of them, or None."""
        if shape is not None:
            later = self._later.get(shape)
            if later is not None and later >= 0:
                self._later[shape] = later + 1
                return
        for (name, entry), lv in zip(layers.items(), verdicts.values()):
            lv = lv if type(entry) is dict or isinstance(entry, dict) else str(entry)   # a Mapping too: as itself
            bucket = self.layers.get(name) or self.layers.setdefault(name, {})
            bucket[lv] = bucket.get(lv, 0) + 1
            if lv == UNSCORABLE:
                slot = self.unscorable.setdefault(name, [0, None])
                slot[0] += 1
                if isinstance(entry, dict) and entry.get("blocked_by") is not None:
                    if slot[1] is None or index < slot[1][0]:
                        slot[1] = (index, entry.get("blocked_by"))
            if name == "judged" and lv == UNSCORED and isinstance(entry, dict):
                reason = str(entry.get("reason") or "")
                if reason.startswith("unjudged"):
                    self.unjudged[reason] = self.unjudged.get(reason, 0) + 1
        if shape is not None and shape not in self._later:
            counted_only = shape.plain and UNSCORABLE not in shape.verdicts and not (
                "judged" in shape.names and shape.verdicts[shape.names.index("judged")] == UNSCORED)
            self._later[shape] = 0 if counted_only else -1

    def counted(self) -> dict[str, dict[str, int]]:
        """`layers`, with every record's counts in (a copy of each bucket)."""
        for shape, later in self._later.items():
            if later > 0:
                for name, lv in zip(shape.names, shape.verdicts):
                    self.layers[name][lv] += later
                self._later[shape] = 0
        return {name: dict(b) for name, b in self.layers.items()}
