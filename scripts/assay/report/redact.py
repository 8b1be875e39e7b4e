"""PII redaction for report excerpts, and where a run says whether it may contain PII.

Decision (documented in skills/run/SKILL.md §5): the flag is the adapter's
`data.may_contain_pii`. It is read, first match wins, from
  1. manifest.yaml `data.may_contain_pii` or `adapter.data.may_contain_pii`;
  2. the plan the run skill writes, `<state>/work/plan.json`, `adapter.data.may_contain_pii`,
     only if that plan's run_id is this run's (a later plan says nothing about this run);
  3. `<reports>/.gitignore` holding `*/cases/`, which the runner writes only when the flag is true.
If none says, we redact anyway (a report is written to be shared) and say why.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.jsonio import loads
from ..core.patterns import EMAIL as EMAIL_RE   # one definition; linear on a long run (a base64 answer)
from ..core.writer import read_bytes

# A run of >= 7 digits, possibly split by spaces, dots, dashes or parentheses, optionally after '+'.
DIGITS_RE = re.compile(r"(?<![\w])\+?\(?\d(?:[\d().\- ]{5,}\d)?(?![\w])")
ISO_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _digits_sub(match: re.Match) -> tuple[str, bool]:
    text = match.group(0)
    digits = sum(ch.isdigit() for ch in text)
    if digits < 7 or ISO_DATE_RE.fullmatch(text.strip()):
        return text, False
    if text.startswith("+") or re.search(r"[\s().-]", text):
        return "[phone redacted]", True
    return "[number redacted]", True


def redact(text: str) -> tuple[str, int]:
    """(text with emails, phone numbers and long digit runs replaced, number of redactions)."""
    count = 0

    def email(_m: re.Match) -> str:
        nonlocal count
        count += 1
        return "[email redacted]"

    def digits(m: re.Match) -> str:
        nonlocal count
        out, hit = _digits_sub(m)
        count += hit
        return out

    text = EMAIL_RE.sub(email, text)
    text = DIGITS_RE.sub(digits, text)
    return text, count


def _flag_in(doc: object, *keys: str) -> bool | None:
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc if isinstance(doc, bool) else None


def pii_flag(run_dir: Path, manifest: dict | None, run_id: str) -> tuple[bool | None, str]:
    """(may_contain_pii or None when unknown, where it was read from)."""
    for keys in (("data", "may_contain_pii"), ("adapter", "data", "may_contain_pii")):
        value = _flag_in(manifest, *keys)
        if value is not None:
            return value, "`manifest.yaml` `" + ".".join(keys) + "`"
    plan_path = Path(run_dir).resolve().parent.parent / "work" / "plan.json"
    try:
        plan = loads(read_bytes(plan_path).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        plan = None
    if isinstance(plan, dict) and plan.get("run_id") == run_id:
        value = _flag_in(plan, "adapter", "data", "may_contain_pii")
        if value is not None:
            return value, "the run's plan, `<state>/work/plan.json` `adapter.data.may_contain_pii`"
    try:
        ignore = read_bytes(Path(run_dir).parent / ".gitignore").decode("utf-8", "replace")
    except OSError:
        ignore = ""
    if "*/cases/" in ignore.split():
        return True, "`reports/.gitignore`, which the runner writes only when the flag is true"
    return None, "not recorded in `manifest.yaml`, the run's plan or `reports/.gitignore`"
