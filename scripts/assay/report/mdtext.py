"""Small Markdown-writing helpers: escape data, code spans, fenced blocks, percentages."""

from __future__ import annotations

import re

from ..core.visible import show_controls

_SPECIAL = re.compile(r"([\\`*_\[\]<>|#!{}])")


def esc(value: object) -> str:
    """Data as literal Markdown text (one line). A control character (ESC, NUL, BEL, ...) is written
    as its `\\x1b` escape: raw, it would drive the terminal of whoever reads the file with `cat`."""
    text = str(value).replace("\r", " ").replace("\n", " ")
    return _SPECIAL.sub(r"\\\1", show_controls(text))


def code(value: object) -> str:
    """An inline code span that survives backticks, table pipes and line breaks in the data: Markdown
    reads a CR as a line end, so an app's route or tool name holding `\\r## PASS` would otherwise end
    the span (and a table row) and start a heading; it and every other control character are shown
    as escapes (`\\x0d`)."""
    text = show_controls(str(value).replace("\n", " ").replace("|", "¦"))
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: str, lang: str = "text") -> str:
    """A fenced block of data: its lines kept, its other control characters shown as escapes."""
    text = show_controls(text)
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def pct(num: float | int | None, den: float | int | None = None, digits: int = 1) -> str:
    if den is not None:
        if not den:
            return "n/a"
        num = num / den
    if not isinstance(num, (int, float)) or isinstance(num, bool):
        return "n/a"
    return f"{num * 100:.{digits}f}%"


def num(value: object, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"
