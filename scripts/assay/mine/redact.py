"""PII and secret redaction for mined cases: the documented list, applied to every string.

| kind | what it matches | replaced by |
|---|---|---|
| `email` | `name@domain.tld` | `<email>` |
| `card` | 13-19 digits (spaces or dashes between groups) that pass the Luhn check | `<card>` |
| `iban` | two letters, two check digits, 11-30 letters/digits (spaces allowed) | `<iban>` |
| `phone` | `+` and 8-15 digits, or 3 digit groups split by spaces, dots or dashes (e.g. 555-123-4567), or `(555) 123-4567` | `<phone>` |
| `token` | the credential rules below | `<token>` |
| `id_number` | a US social security number's shape, `123-45-6789` | `<id_number>` |

A tool argument is judged with its name (`redact_arg`): `api_key: hunter2` is a secret though
`hunter2` alone is not (the keyword rule below, counted `token`), and a value under a name for
personal data (phone, mobile, e-mail, ssn, card, iban, passport, birth date, address, postcode...)
is personal whatever its shape (`phone: 442079460958`, counted `personal`); a number is judged
as its digits (a card number sent as an integer is a card).

The `token` rules port the ideas of a maintained secret scanner (detect-secrets' plugins: known
prefixes, keyword context, high-entropy strings) rather than a short hand list; a test checks the
corpus against detect-secrets itself when it is installed (the test extra):

- PEM private-key blocks (`-----BEGIN ... PRIVATE KEY-----` to its END, or to the end of the
  text when cut), PuTTY key files;
- credentials in a URL (`scheme://user:password@host`: `user:password`), the value of an
  `Authorization` / `Proxy-Authorization` header (`Basic ...`, `Bearer ...`, any scheme) and of a
  `Cookie` / `Set-Cookie` header (to the end of the line), and a signed URL's query values
  (`?sig=`, `&X-Amz-Signature=`, `&X-Amz-Credential=`, `&X-Amz-Security-Token=`, `?code=`, `?key=`);
- known prefixes: Stripe `sk_live_`/`rk_live_`/`pk_live_` (and `_test_`), OpenAI/Anthropic `sk-`,
  `pk-`/`rk-` keys, GitHub `gh?_` and `github_pat_`, GitLab `glpat-`..., Slack `xox?-` and
  webhooks, AWS key ids (`AKIA`, `ASIA`, `ABIA`, `ACCA`, `A3T?`), Google `AIza`, SendGrid `SG.`,
  npm `npm_`, PyPI `pypi-`, Square `sq0csp-`, Azure `AccountKey=`, Telegram bot tokens, JWTs;
- a keyword and its value: `password=x`, `secret: x`, `api_key=x`, `token=x`, and in prose
  "password is: x", "my passphrase is x", "the PIN: x" (the keyword is kept, the value goes); the
  keyword may end a longer name (`db_password`, `auth_token`, `x-api-key`, `accessToken`, or with
  `_key`/`_id` after it: `secret_key`, `session_id`), the name and the value may be quoted
  (`"password": "two words"`, the JSON a user pastes: the quoted value goes whole), and `cookie`,
  `credential(s)`, `bearer`, `session id`/`session key` are keywords too;
- an AWS secret access key (40 characters of `A-Za-z0-9/+` after an `aws ... key` keyword, or
  anywhere when its entropy is a random key's);
- high-entropy runs: 20+ hex digits mixing letters and digits (a 31-hex token), 32+ letters,
  digits, `_`/`-` mixing letters and digits, and 30+ characters (letters, digits, `/+_-`) in both
  cases whose Shannon entropy is at least 4.2 bits a character (a random 40-letter token; an
  English camel-case name is under 4.15).

Order matters (a URL's password is not an e-mail address; a card number is not a phone number;
a token is checked before the long run). `redact(text) -> (text, counts)`; `redact_arg(name,
value, counts)` judges one tool argument with its name.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from ..core.patterns import EMAIL  # noqa: F401 (one definition, the report's too; linear on a long run)

CARD = re.compile(r"(?<![\dA-Za-z])(?:\d[ -]?){12,18}\d(?![\dA-Za-z])")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
PHONE = re.compile(r"(?<![\w+])(?:\+\d[\d .-]{7,17}\d|\(\d{2,4}\)[ .-]?\d{3,4}[ .-]?\d{3,4}"
                   r"|\d{3}[ .-]\d{3,4}[ .-]\d{3,4})(?![\w])")
# before the e-mail rule: `https://user:pass@host.tld` holds no e-mail address
FIRST = [
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
               re.DOTALL),
    re.compile(r"PuTTY-User-Key-File-\d.*?(?:Private-MAC: \S+|\Z)", re.DOTALL),
    re.compile(r"(?<=://)[^:/?#\[\]@!$&'()*+,;=\s]+:[^:/?#\[\]@!$&'()*+,;=\s]+(?=@)"),
]
AUTH_HEADER = re.compile(r"(?i)\b((?:proxy-)?authorization\b[\"']?)(\s*[:=]\s*[\"']?)((?:[A-Za-z-]+\s+)?[^\s\"',;]+)")
COOKIE_HEADER = re.compile(r"(?i)\b((?:set-)?cookie\b[\"']?)(\s*[:=]\s*[\"']?)([^\r\n\"']+)")
_KEYWORD = (r"pass(?:word|wd|phrase|code)?|pwd|pin|secret|client[_ -]?secret|api[_ -]?key|access[_ -]?key|"
            r"auth[_ -]?key|private[_ -]?key|token|contrase[nñ]a|cookie|credentials?|bearer|session[_ -]?(?:id|key)")
# A name the keyword ends (`db_password`, `x-api-key`, `user.password`, `accessToken`), or that goes on with
# `_key`/`_id` (`secret_key`); bounded, so a long run of `a-a-a-...` is read in linear time.
_NAME = (r"(?:[A-Za-z0-9]{1,40}[_.-]){0,4}(?-i:[a-z0-9]{1,40}(?=[A-Z]))?"
         rf"(?:{_KEYWORD})(?:[_.-]?(?:key|id))?")
TOKENS = [
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)\bbasic\s+[A-Za-z0-9+/]{8,}={0,2}"),
    re.compile(r"\b[spr]k_(?:live|test)_[0-9A-Za-z]{10,}"),
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9_]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bgl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9_/]+"),
    re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}|\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|\bnpm_[A-Za-z0-9]{36}"
               r"|\bpypi-AgE[A-Za-z0-9_-]{50,}|\bsq0csp-[0-9A-Za-z_-]{43}|AccountKey=[A-Za-z0-9+/=]{40,}"
               r"|\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)(\baws\b.{0,20}?(?:secret|key|token).{0,20}?[\s:=\"']+)([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"),
    re.compile(r"(?i)([?&](?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|code|key)=)"
               r"(?!<[a-z]+>)([^&#\s\"']+)"),
    re.compile(rf"(?i)\b({_NAME})\b([\"']?(?:\s*(?:[:=]|=>|:=)\s*|\s+(?:is|was|would be)\s*+:?\s*+)[\"']?)"
               r"(?!<[a-z]+>)(\"[^\"\n]*\"|'[^'\n]*'|(?<=\")[^\"\n]*(?=\")|(?<=')[^'\n]*(?=')|[^\s,;]+)"),
]
HEX_RUN = re.compile(r"(?<![A-Za-z0-9_-])(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{20,}(?![A-Za-z0-9_-])")
LONG_RUN = re.compile(r"(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}")
RANDOM_RUN = re.compile(r"(?<![A-Za-z0-9/+_-])[A-Za-z0-9/+_-]{30,}={0,2}(?![A-Za-z0-9/+_-])")
ID_NUMBER = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
# Argument names that hold personal data whatever the value looks like.
PERSONAL_ARG = re.compile(r"(?i)e-?mail|phone|mobile|cell|\btel|fax|ssn|social.?security|national.?id|tax.?id|"
                          r"passport|licen[cs]e.?n|card|\bcvv|\bcvc|iban|account.?n(?:umbe)?r|\bbirth|\bdob\b|"
                          r"date.?of.?birth|address|street|post.?code|zip")
ENTROPY_LIMIT = 4.2
KINDS = ("email", "card", "iban", "phone", "token", "id_number", "personal")


def _luhn(digits: str) -> bool:
    total, alt = 0, False
    for ch in reversed(digits):
        d = int(ch)
        if alt:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
        alt = not alt
    return total % 10 == 0


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


def _random_looking(m: re.Match[str]) -> str:
    s = m.group(0)
    mixed = re.search(r"[a-z]", s) and re.search(r"[A-Z]", s)
    return "<token>" if mixed and entropy(s.rstrip("=")) >= ENTROPY_LIMIT else s


def redact(text: str, counts: Counter | None = None) -> tuple[str, Counter]:
    counts = Counter() if counts is None else counts

    def sub(kind: str, pattern: re.Pattern, repl: Any, s: str) -> str:
        def one(m: re.Match[str]) -> str:
            out = repl(m) if callable(repl) else repl
            if out != m.group(0):
                counts[kind] += 1
            return out
        return pattern.sub(one, s)

    for pattern in FIRST:
        text = sub("token", pattern, "<token>", text)
    text = sub("token", AUTH_HEADER, lambda m: f"{m.group(1)}{m.group(2)}<token>", text)
    text = sub("token", COOKIE_HEADER, lambda m: f"{m.group(1)}{m.group(2)}<token>", text)
    text = sub("email", EMAIL, "<email>", text)
    text = sub("card", CARD, lambda m: "<card>" if _luhn(re.sub(r"\D", "", m.group(0))) else m.group(0), text)
    text = sub("iban", IBAN, "<iban>", text)
    text = sub("id_number", ID_NUMBER, "<id_number>", text)
    for pattern in TOKENS:
        if pattern.groups == 3:   # key = value: keep the key, drop the value
            text = sub("token", pattern, lambda m: f"{m.group(1)}{m.group(2)}<token>", text)
        elif pattern.groups == 2:  # context, then the value
            text = sub("token", pattern, lambda m: f"{m.group(1)}<token>", text)
        else:
            text = sub("token", pattern, "<token>", text)
    text = sub("token", HEX_RUN, "<token>", text)
    text = sub("token", LONG_RUN, "<token>", text)
    text = sub("token", RANDOM_RUN, _random_looking, text)
    text = sub("phone", PHONE, "<phone>", text)
    return text, counts


def redact_arg(name: str, value: Any, counts: Counter) -> Any:
    """A scalar tool argument as it may be written: its value redacted, judged with its name
    (`password: x`, `phone: 4420...`); a number is judged as its digits. Returns the value
    unchanged when nothing in it is personal or secret, else its redacted text."""
    text = str(value)
    shown = redact(text, counts)[0]
    if shown != text:
        return shown
    keyed = redact(f"{name}: {text}", counts)[0]
    if keyed != f"{name}: {text}":
        return keyed.split(": ", 1)[-1]
    if text and PERSONAL_ARG.search(str(name).replace("_", " ")):
        counts["personal"] += 1
        return "<personal>"
    return value
