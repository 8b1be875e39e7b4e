"""A case's layer shape: its layer names in order, each one's verdict string and each entry's type.

A run's records come in a handful of shapes (100,000 cases: often one or two). The folds over them
(stats.layer_table's counts, score.hollow.HollowFold, rundir.shaped's derived lines) each do the
same work for every record of a shape whenever that work reads nothing of a layer entry but its
verdict: they keep it per shape, keyed by this object (one per distinct shape, hashed by identity,
so a record's shape is hashed once, here, not once per fold). Whether a fold may do so is its own
rule, decided where the fold is; `plain` says every entry is a plain dict (then the entry's verdict
string is `verdicts`' value: score.hollow.layer_verdicts reads nothing else of it).
"""

from __future__ import annotations

from typing import Any

_HELD = 4096   # distinct shapes kept at most (a cache, never a leak): past it, no shape (the folds read each record)


class LayerShape:
    __slots__ = ("names", "verdicts", "plain")

    def __init__(self, names: tuple[str, ...], verdicts: tuple[str, ...], types: tuple[type, ...]) -> None:
        self.names, self.verdicts = names, verdicts
        self.plain = all(t is dict for t in types)

    def __repr__(self) -> str:
        return f"LayerShape({dict(zip(self.names, self.verdicts))!r}, plain={self.plain})"


_SHAPES: dict[tuple, LayerShape] = {}


def layer_shape(layers: dict[str, Any], verdicts: dict[str, str]) -> LayerShape | None:
    """The shape of a plain dict of layers (`verdicts`: score.hollow.layer_verdicts(layers)), or None
    when too many shapes were seen in this process."""
    key = (tuple(verdicts), tuple(verdicts.values()), tuple(map(type, layers.values())))
    shape = _SHAPES.get(key)
    if shape is None and len(_SHAPES) < _HELD:
        shape = _SHAPES[key] = LayerShape(*key)
    return shape
