"""Characters a reader cannot see, made visible: bidi controls (U+202A-202E, U+2066-2069, U+200E/F,
U+061C), zero-width and other format characters (U+200B-200D, U+2060-2064, U+FEFF, U+00AD...), and
line/paragraph separators. In an app's answer they can reorder or hide what a person reads (a
"trojan source" answer that looks like a refusal); report.html and the label page show each as a
marker such as `⟦U+202E⟧`, so what is on screen is what the app sent.

A zero-width joiner between two pictographs (an emoji sequence: 👩‍💻) is kept: it is visible there.
"""

from __future__ import annotations

import re
import unicodedata

_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
                        "\U000e0000-\U000e007f]")
_ZWJ = "\u200d"


def marker(ch: str) -> str:
    return f"⟦U+{ord(ch):04X}⟧"


def _pictograph(ch: str) -> bool:
    return bool(ch) and (unicodedata.category(ch) == "So" or ch == "\ufe0f")


def show_invisible(text: str) -> str:
    """`text` with every invisible format character replaced by its visible marker."""
    if not isinstance(text, str) or not _INVISIBLE.search(text):
        return text

    def sub(m: re.Match) -> str:
        ch, i = m.group(), m.start()
        if ch == _ZWJ and i > 0 and _pictograph(text[i - 1]) and _pictograph(text[i + 1:i + 2]):
            return ch
        return marker(ch)
    return _INVISIBLE.sub(sub, text)


def show_invisible_in(value):
    """A JSON-like value with `show_invisible` applied to every string in it (keys kept)."""
    if isinstance(value, str):
        return show_invisible(value)
    if isinstance(value, dict):
        return {k: show_invisible_in(v) for k, v in value.items()}
    if isinstance(value, list):
        return [show_invisible_in(v) for v in value]
    return value


# C0 and C1 controls but tab and LF: ESC starts a terminal escape sequence (clear the screen, retitle
# the window, hide a line), CR and BS overwrite what was printed.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def show_controls(text: str) -> str:
    """`text` for a terminal: each control character (ESC, CR, BEL, ...) written as `\\x1b`, and
    every invisible format character as its marker (`show_invisible`). Tab and LF are kept."""
    if not isinstance(text, str):
        text = str(text)
    return show_invisible(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))
