"""PII and secret redaction for mined cases: the documented list, applied to every string.

| kind | what it matches | replaced by |
|---|---|---|
| `email` | `name@domain.tld` | `<email>` |
| `card` | 13-19 digits (spaces or dashes between groups) that pass the Luhn check | `<card>` |
| `iban` | two letters, two check digits, 11-30 letters/digits (spaces allowed) | `<iban>` |
| `phone` | `+` and 8-15 digits, or 3 digit groups split by spaces, dots or dashes (e.g. 555-123-4567), or `(555) 123-4567` | `<phone>` |
| `token` | `Bearer <x>`, `sk-`/`pk-`/`rk-` keys, GitHub (`ghp_`...), Slack (`xox?-`), AWS (`AKIA`...), JWTs, `password=`/`secret:`/`api_key=` values, and any 32+ character run of letters, digits, `_`/`-` that mixes letters and digits | `<token>` |

Order matters (a card number is not a phone number; a token is checked before the long run).
`redact(text) -> (text, counts)`; `redact_value(value, counts)` walks JSON-like data.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
CARD = re.compile(r"(?<![\dA-Za-z])(?:\d[ -]?){12,18}\d(?![\dA-Za-z])")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
PHONE = re.compile(r"(?<![\w+])(?:\+\d[\d .-]{7,17}\d|\(\d{2,4}\)[ .-]?\d{3,4}[ .-]?\d{3,4}"
                   r"|\d{3}[ .-]\d{3,4}[ .-]\d{3,4})(?![\w])")
TOKENS = [
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)\b(password|passwd|pwd|secret|api[_-]?key|token)\b(\s*[:=]\s*)(\S+)"),
    re.compile(r"(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}"),
]
KINDS = ("email", "card", "iban", "phone", "token")


def _luhn(digits: str) -> bool:
    total, alt = 0, False
    for ch in reversed(digits):
        d = int(ch)
        if alt:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
        alt = not alt
    return total % 10 == 0


def redact(text: str, counts: Counter | None = None) -> tuple[str, Counter]:
    counts = Counter() if counts is None else counts

    def sub(kind: str, pattern: re.Pattern, repl: Any, s: str) -> str:
        def one(m: re.Match[str]) -> str:
            out = repl(m) if callable(repl) else repl
            if out != m.group(0):
                counts[kind] += 1
            return out
        return pattern.sub(one, s)

    text = sub("email", EMAIL, "<email>", text)
    text = sub("card", CARD, lambda m: "<card>" if _luhn(re.sub(r"\D", "", m.group(0))) else m.group(0), text)
    text = sub("iban", IBAN, "<iban>", text)
    for pattern in TOKENS:
        if pattern.groups == 3:   # key = value: keep the key, drop the value
            text = sub("token", pattern, lambda m: f"{m.group(1)}{m.group(2)}<token>", text)
        else:
            text = sub("token", pattern, "<token>", text)
    text = sub("phone", PHONE, "<phone>", text)
    return text, counts


def redact_value(value: Any, counts: Counter) -> Any:
    if isinstance(value, str):
        return redact(value, counts)[0]
    if isinstance(value, list):
        return [redact_value(v, counts) for v in value]
    if isinstance(value, dict):
        return {redact_value(k, counts) if isinstance(k, str) else k: redact_value(v, counts) for k, v in value.items()}
    return value
