"""One promptfoo assertion -> the assay check that means the same, or the reason there is none.

`map_assertion(assertion, render)` returns a `Mapped`: `must_contain` / `must_not_contain`
entries, a `json_schema`, a rubric, or a budget, with `exact` (True when assay's check passes
exactly when promptfoo's does, for NFC text) and a note; or `skipped` with the reason.
The table (docs/importing.md says the same, for people):

| promptfoo | assay | exact |
|---|---|---|
| contains, not-contains | must_contain / must_not_contain the text | yes |
| icontains (-any, -all), not- forms | `/(?i)<escaped>/` entries | yes (ASCII case folding) |
| contains-any, not-contains-any | one `/(?:a|b)/` entry / each in must_not_contain | yes |
| contains-all, not-contains-all | each in must_contain / one `/(?s)\\A(?=.*a)(?=.*b)/` in must_not_contain | yes |
| starts-with, not-starts-with | `/\\A<escaped>/` | yes |
| equals (text), not-equals | `/\\A<escaped>\\Z/` | yes |
| regex, not-regex | `/<pattern>/` rewritten to JavaScript's meaning (pf_regex.py) | yes, below U+10000 |
| equals (object) | format.json_schema `{const: value}` + BARE_JSON_GUARDS | no: stricter on ``` in a string |
| is-json [schema] | format.json_schema + BARE_JSON_GUARDS (a `format` is listed) | no: as equals (object) |
| contains-json [schema] | format.json_schema | no: promptfoo finds JSON anywhere in the text |
| llm-rubric, model-graded-closedqa, factuality | a rubric (provisional until calibrated) | judged |
| latency, cost | the suite's budgets, and the case's not_converted (no per-case bound) | no: per call there, p95 / mean per case here |
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .pf_regex import FAILS_IN_PROMPTFOO, JS_SPACE, js_to_python_regex  # noqa: F401 (re-exported)
from .pf_render import Unrenderable, has_timestamp

ANY_JSON = {"type": ["object", "array", "string", "number", "integer", "boolean", "null"]}
RUBRIC_TYPES = ("llm-rubric", "model-graded-closedqa", "factuality", "model-graded-factuality")
TEXT_TYPES = ("contains", "icontains", "contains-any", "icontains-any", "contains-all", "icontains-all",
              "starts-with", "regex", "equals")
CODE_TYPES = ("javascript", "python", "ruby")
WHY_NOT = {
    "javascript": "runs JavaScript on the output; assay's checks are declarative (rewrite it as must_contain, "
                  "a /regex/ or format.json_schema, or a rubric)",
    "python": "runs Python on the output; assay's checks are declarative (rewrite it as must_contain, "
              "a /regex/ or format.json_schema, or a rubric)",
    "ruby": "runs Ruby on the output; assay's checks are declarative",
    "webhook": "asks an external service for the verdict; assay never sends answers to a third service",
    "similar": "embedding similarity needs an embedding model; assay has no embedding check (write a rubric "
               "for the meaning, or must_contain for the facts)",
    "classifier": "a HuggingFace classifier's score; assay has no classifier check",
    "moderation": "a moderation API's verdict; assay has no moderation check",
    "select-best": "compares the outputs of several prompts with each other; assay scores each case alone",
    "max-score": "compares the outputs of several prompts with each other; assay scores each case alone",
    "human": "a person's rating in promptfoo's viewer; assay's labels are calibration annotations",
}


@dataclass
class Mapped:
    ptype: str
    must_contain: list[str] = field(default_factory=list)
    must_not_contain: list[str] = field(default_factory=list)
    json_schema: Any = None
    rubric: dict[str, str] | None = None        # {kind, criterion}
    budget: dict[str, float] | None = None      # {max_p95_latency_s} or {max_cost_per_case}
    exact: bool = True
    note: str = ""
    skipped: str | None = None                  # the reason when nothing is converted
    lost: str | None = None                     # converted, but a part of it is not: the case's not_converted
    lost_part: str = "format"                   # which part (named in the not_converted entry's check)


# promptfoo's is-json and equals-with-an-object run JSON.parse on the whole output. assay's json_schema also
# reads a fenced block and Python's NaN / Infinity, which JSON.parse refuses: these two must_not_contain
# entries refuse them too (the second skips over JSON strings, so a NaN inside a string is text).
# Stricter than promptfoo only on a bare JSON answer with ``` inside one of its strings.
BARE_JSON_GUARDS = ["```", r'/(?s)\A(?:[^"]|"(?>(?:[^"\\]|\\.)*)")*?(?:\A|[\[,:])[ \t\n\r]*-?(?:NaN|Infinity)/']
BARE_JSON_NOTE = ("promptfoo parses the whole output with JSON.parse: a fenced block or NaN/Infinity fails there "
                  "and here (must_not_contain); assay is stricter only on bare JSON with ``` inside a string")


def _format_keywords(node: Any) -> list[str]:
    """The `format` values a schema names: promptfoo's ajv checks them (ajv-formats), assay's json_schema
    check does not."""
    if isinstance(node, dict):
        here = [node["format"]] if isinstance(node.get("format"), str) else []
        return here + [f for v in node.values() for f in _format_keywords(v)]
    if isinstance(node, list):
        return [f for v in node for f in _format_keywords(v)]
    return []


def js_string(value: Any) -> str:
    """`String(value)` as JavaScript prints it (4.0 -> "4", True -> "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_META = re.compile(r"([.^$*+?{}\[\]\\|()])")


def esc(text: str) -> str:
    """`re.escape` for the regex metacharacters only (spaces and letters stay readable)."""
    return _META.sub(r"\\\1", text)


def literal(text: str) -> str:
    """A must_contain entry that matches `text` literally: a text starting with `/` would be
    read as a regex (or a trailing-flag mistake), so it is written as an escaped regex."""
    return f"/{esc(text)}/" if text.startswith("/") else text


def _regex(pattern: str, flags: str = "") -> str:
    return f"/{flags}{pattern}/"


_JS_SPACE = re.compile(f"[{JS_SPACE}]")
# the trailing run is matched from its first blank only: tried from each blank of a long run inside the
# text (no end after it), it was read again to the run's end, quadratic (`a` + 100 KB of blanks + `b`: ~40 s)
_JS_TRIM = re.compile(f"\\A[{JS_SPACE}]+|(?<![{JS_SPACE}])[{JS_SPACE}]+\\Z")


def comma_values(text: str) -> list[str]:
    """promptfoo's parseCommaSeparatedValues (contains-any/-all given as one text): fields split on commas and
    trimmed, repeated commas skipped, a `"quoted"` field keeps its commas and spaces (`\\"`, `\\\\` or `""`
    inside it is one character). Raises ValueError where promptfoo's parse throws (it fails the test)."""
    out: list[str] = []
    i, n = 0, len(text)

    def spaces(i: int) -> int:
        while i < n and _JS_SPACE.match(text[i]):
            i += 1
        return i
    while i < n:
        while True:
            i = spaces(i)
            if i < n and text[i] == ",":
                i += 1
                continue
            break
        if i >= n:
            break
        if text[i] != '"':
            end = text.find(",", i)
            end = n if end < 0 else end
            out.append(_JS_TRIM.sub("", text[i:end]))     # JavaScript's trim()
            i = end
            continue
        i, field, closed = i + 1, [], False
        while i < n:
            if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\':
                field.append(text[i + 1])
                i += 2
            elif text[i] == '"' and i + 1 < n and text[i + 1] == '"':
                field.append('"')
                i += 2
            elif text[i] == '"':
                i, closed = i + 1, True
                break
            else:
                field.append(text[i])
                i += 1
        if not closed:
            raise ValueError("an unterminated quoted field")
        out.append("".join(field))
        i = spaces(i)
        if i < n and text[i] != ",":
            raise ValueError("text after a quoted field before the next comma")
    return out


def _list_value(value: Any) -> list[str] | None:
    if isinstance(value, str):
        value = comma_values(value)
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        return [js_string(v) for v in value]
    return None


def _schema(value: Any, ptype: str) -> tuple[Any, str | None]:
    if value in (None, ""):
        return ANY_JSON, None
    if isinstance(value, str):
        if value.startswith("file://"):
            return None, "its JSON schema is a file:// reference; paste the schema inline and import again"
        from ..core.errors import AssayError
        from ..core.strict_yaml import loads
        try:
            value, _ = loads(value, "its schema", core=True)     # as promptfoo's js-yaml reads it
        except AssayError as exc:
            return None, f"its schema is not YAML/JSON ({exc.message[:100]})"
    if isinstance(value, bool):
        return ({} if value else {"not": {}}), None
    if not isinstance(value, dict):
        return None, f"its schema is a {type(value).__name__}, not an object"
    from jsonschema import validators
    try:
        validators.validator_for(value).check_schema(value)
    except Exception as exc:   # jsonschema.SchemaError, or a $schema it does not know
        return None, f"its JSON schema is invalid ({str(exc).splitlines()[0][:120]})"
    return value, None


def map_assertion(a: dict[str, Any], render: Callable[[Any], Any]) -> Mapped:
    ptype = str(a.get("type", ""))
    inverse = ptype.startswith("not-")
    base = ptype[4:] if inverse else ptype
    m = Mapped(ptype)
    if a.get("transform") or a.get("contextTransform"):
        m.skipped = "it transforms the output with code before checking it; assay checks the answer as returned"
        return m
    if base in WHY_NOT or base in CODE_TYPES:
        m.skipped = WHY_NOT.get(base, WHY_NOT["javascript"])
        return m
    raw_value = a.get("value")
    if has_timestamp(raw_value):
        m.skipped = ("its value is a YAML date, which promptfoo compares as a JavaScript Date's text (local time "
                     "zone); quote it to compare the text")
        return m
    if isinstance(raw_value, str) and raw_value.startswith("file://"):
        m.skipped = "its value is read from a file:// reference; paste the value inline and import again"
        return m
    try:
        value = render(raw_value)
    except Unrenderable as exc:
        m.skipped = f"its value uses {exc}, which the import does not evaluate"
        return m
    if base in TEXT_TYPES:
        return _text(m, base, inverse, value)
    if base in ("is-json", "contains-json"):
        if inverse:
            m.skipped = f"{ptype}: assay cannot assert that an answer is not JSON"
            return m
        schema, why = _schema(value, base)
        if why:
            m.skipped = why
            return m
        m.json_schema, m.exact = schema, False
        if base == "is-json":
            m.must_not_contain, m.note = list(BARE_JSON_GUARDS), BARE_JSON_NOTE
        else:
            m.note = ("assay reads the bare answer as JSON, or else its first fenced code block that parses; "
                      "promptfoo accepts JSON embedded anywhere in the text, so assay is stricter there")
        formats = sorted(set(_format_keywords(schema)))
        if formats:
            m.lost = (f"its schema's format {', '.join(formats)}: promptfoo's ajv checks the format, assay's "
                      "json_schema check ignores it (the rest of the schema is checked); check the value with "
                      "a /regex/, or delete this entry to accept")
        return m
    if base in RUBRIC_TYPES:
        if inverse:
            m.skipped = f"{ptype}: an inverted judgement has no assay rubric form; write the rubric positively"
            return m
        if not isinstance(value, str) or not value.strip():
            m.skipped = f"{base} needs a text value (the criterion or reference answer)"
            return m
        criterion = value.strip()
        if base in ("factuality", "model-graded-factuality"):
            criterion = ("The reply is consistent with this reference answer: it may add detail, but it does "
                         f"not contradict it or leave out what it asserts. Reference: {criterion}")
        m.rubric = {"kind": base, "criterion": criterion}
        m.exact = False
        m.note = "judged by the state dir's judge; provisional (never gating) until calibrated against people"
        if a.get("threshold") is not None:
            m.note += "; promptfoo's score threshold has no equivalent (an assay judge answers pass/fail per node)"
        return m
    if base in ("latency", "cost"):
        thr = a.get("threshold")
        if inverse or not isinstance(thr, (int, float)) or isinstance(thr, bool) or thr <= 0:
            m.skipped = f"{ptype} needs a positive numeric threshold"
            return m
        m.budget = ({"max_p95_latency_s": thr / 1000.0} if base == "latency" else {"max_cost_per_case": float(thr)})
        m.exact = False
        m.note = ("promptfoo checks every call; assay's gate checks the run's p95 latency" if base == "latency"
                  else "promptfoo checks every call; assay's gate checks the mean cost per traced case "
                       "(token prices in prices.yaml)")
        # assay's case format has no per-case latency or cost bound: the run-level budget alone passes a run
        # where one case is slow (or dear) among many, which promptfoo fails
        key, unit = next(iter(m.budget)), ("ms" if base == "latency" else "")
        m.lost_part = "per call"
        m.lost = (f"promptfoo fails this test when its call {'takes' if base == 'latency' else 'costs'} over "
                  f"{js_string(thr)}{' ' + unit if unit else ''}; assay has no per-case {base} bound, and the "
                  f"import's budgets.{key} {m.budget[key]:g} in profile.yaml is the run's "
                  f"{'p95' if base == 'latency' else 'mean per traced case'}, which one slow case among many "
                  f"passes: delete this entry to gate on the run's {base} budget alone")
        return m
    if base in PROMPTFOO_TYPES or ":" in base:   # promptfoo's own (a redteam grader reads promptfoo:redteam:<plugin>)
        m.skipped = f"no assay check computes {base!r}"
        return m
    from ..core.suggest import closest
    hint = closest(base, sorted(PROMPTFOO_TYPES))
    m.skipped = (f"{ptype!r} is not a promptfoo assertion type: {FAILS_IN_PROMPTFOO} (\"Unknown assertion "
                 f"type\"); fix the type in the config" + (f" (did you mean {hint!r}?)" if hint else "")
                 + " and import again")
    return m


def _text(m: Mapped, base: str, inverse: bool, value: Any) -> Mapped:
    if base in ("contains-any", "icontains-any", "contains-all", "icontains-all"):
        try:
            items = _list_value(value)
        except ValueError as exc:
            m.skipped = (f"{m.ptype}: its value has {exc}, which promptfoo refuses (it fails this test); close the "
                         'quotes ("a, b", c) or give the value as a list, and import again')
            return m
        if items is None:
            m.skipped = f"{m.ptype} needs a list of strings"
            return m
        flags = "(?i)" if base.startswith("i") else ""
        if base.endswith("-any"):
            alt = "|".join(esc(v) for v in items)
            if inverse:     # none of them
                m.must_not_contain = [_regex(esc(v), flags) if flags else literal(v) for v in items]
            else:
                m.must_contain = [_regex(f"(?:{alt})", flags)]
        elif inverse:       # not all of them: fails exactly when every item is present
            look = "".join(f"(?=.*?{esc(v)})" for v in items)
            m.must_not_contain = [_regex(r"\A" + look, "(?s" + ("i" if flags else "") + ")")]
        else:
            m.must_contain = [_regex(esc(v), flags) if flags else literal(v) for v in items]
        if flags:
            m.note = "case-insensitive as a (?i) regex: the same as promptfoo's toLowerCase on ASCII text"
        return m
    if isinstance(value, (dict, list)) and base == "equals":
        m.json_schema, m.exact = {"const": value}, False
        m.must_not_contain, m.note = list(BARE_JSON_GUARDS), "the answer must be JSON equal to the value; " + BARE_JSON_NOTE
        if inverse:
            m.skipped = "not-equals with an object value has no assay form"
        return m
    if not isinstance(value, (str, int, float)) or isinstance(value, bool) and base != "equals" or value == "":
        m.skipped = f"{m.ptype} needs a non-empty text value"
        return m
    text = js_string(value)
    if base == "regex":
        py, why = js_to_python_regex(text)
        if why:
            m.skipped = why
            return m
        entry = _regex(py)
        m.note = ("rewritten to what JavaScript means ($ is the very end, . stops at \\r too, \\d \\w \\b are "
                  "ASCII: scripts/assay/importers/pf_regex.py); differs only on characters outside the BMP")
    elif base == "contains":
        entry = literal(text)
    elif base == "icontains":
        entry = _regex(esc(text), "(?i)")
        m.note = "case-insensitive as a (?i) regex: the same as promptfoo's toLowerCase on ASCII text"
    elif base == "starts-with":
        entry = _regex(r"\A" + esc(text))
    else:   # equals
        entry = _regex(r"\A" + esc(text) + r"\Z")
    (m.must_not_contain if inverse else m.must_contain).append(entry)
    return m


def assertion_from_string(expected: str) -> dict[str, Any]:
    """promptfoo's CSV `__expected` string form -> an assertion (its documented prefixes)."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if expected.startswith(prefix):
            return {"type": "javascript", "value": expected[len(prefix):].strip()}
    for prefix in ("grade:", "llm-rubric:"):
        if expected.startswith(prefix):
            return {"type": "llm-rubric", "value": expected[len(prefix):]}
    if expected.startswith("python:"):
        return {"type": "python", "value": expected[len("python:"):].strip()}
    m = re.match(r"^(not-)?([a-z][a-z0-9-]*)(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$", expected)
    if m and m.group(2) in KNOWN_TYPES:
        ptype = (m.group(1) or "") + m.group(2)
        value = m.group(4)
        out: dict[str, Any] = {"type": ptype}
        if m.group(2) in ("is-json", "contains-json", "contains-all", "contains-any", "icontains-all",
                          "icontains-any"):     # a list's text is split (comma_values) when it is mapped
            out["value"] = value
        else:
            out["value"] = value.strip() if isinstance(value, str) else value
        if m.group(3):
            out["threshold"] = float(m.group(3))
        return out
    return {"type": "equals", "value": expected}


# promptfoo's base assertion types (the ones its CSV prefix form recognises)
KNOWN_TYPES = frozenset((
    "answer-relevance", "bleu", "classifier", "contains", "contains-all", "contains-any", "contains-html",
    "contains-json", "contains-sql", "contains-xml", "context-faithfulness", "context-recall",
    "context-relevance", "cost", "equals", "factuality", "finish-reason", "g-eval", "gleu", "icontains",
    "icontains-all", "icontains-any", "is-html", "is-json", "is-refusal", "is-sql", "is-valid-function-call",
    "is-valid-openai-function-call", "is-valid-openai-tools-call", "is-xml", "javascript", "latency",
    "levenshtein", "llm-rubric", "meteor", "model-graded-closedqa", "model-graded-factuality", "moderation",
    "perplexity", "perplexity-score", "pi", "python", "regex", "rouge-n", "ruby", "similar", "starts-with",
    "webhook", "word-count", "trace-span-count", "trace-span-duration", "trace-error-spans", "tool-call-f1",
))
# every type promptfoo 0.121 runs (its BaseAssertionTypesSchema, and the special ones WHY_NOT lists): a type
# outside them is a typo that promptfoo itself refuses ("Unknown assertion type")
PROMPTFOO_TYPES = KNOWN_TYPES | frozenset(WHY_NOT) | frozenset((
    "agent-rubric", "conversation-relevance", "guardrails", "search-rubric", "skill-used"))
