"""The `answer` layer: must_contain, must_not_contain and format.json_schema.

Contract of `score_answer(answer, expect)`:
- `answer` is the text at the adapter's `<answer>` path; None means there was none:
  the layer is `unscored` ("no answer at the adapter's <answer> path"). A number or bool leaf
  is checked as its text. An object or list leaf (passed as such, or as its JSON text with
  `leaf`: what the runner recorded of it, score.answer_leaf.leaf_of) is checked by
  format.json_schema as its JSON; a must_contain / must_not_contain on it is `unscorable` (on
  JSON it would match key names, other fields, escaped quotes), and the layer records the leaf
  as `answer_not_text` (results.json summary.answer_not_text; the gate closes on it).
- `echo` (score.answer_leaf.echo_of): the answer is the user's turn word for word. A `must_contain`
  entry found in it is `unscorable` (it was found in the question; proves nothing), the others are
  scored; the layer records `answer_echo` (the echo and those entries; summary.answer_echo, the gate
  closes on it).
- `expect["answer"]["must_contain"]` / `["must_not_contain"]`: lists. An entry is
  - a string: a plain substring check after NFC on both sides (no case folding);
  - `/re/` (starts and ends with `/`): `re.search` over the NFC'd answer, the pattern
    as written, bounded by `regex_timeout_s` in a worker process (assay.core.regex_guard);
  - a number (not a bool): checked as its text (`42` -> "42");
  - anything else (bool, null, list, object), an invalid regex, a timed-out regex or a
    trailing-flag regex like `/x/i` (only inline flags such as `(?i)` are supported):
    the check is `unscorable` with a reason, never a crash and never a pass.
  A `must_not_contain` entry checked against an empty (or whitespace-only) answer is
  `unscorable` too: an error body such as `{"answer": "", "error": "..."}` holds no text,
  so its absence proves nothing (a case with only such checks reads `unscored`).
  A trailing-flag regex is recognised as `/.../` followed only by regex flag letters
  (`aiLmsux`, plus `gy` from other dialects), so a plain path like "/usr/bin" is text.
- `expect["format"]["json_schema"]`: the answer must be JSON valid against the schema
  (jsonschema; the schema's `$schema` picks the draft, default 2020-12; a 2020-12 schema that
  assay.schemas.user can vouch for is checked without importing jsonschema, with the same result). A bool never
  passes as a number. When the answer is not bare JSON, the first fenced code block
  (```json, or any fence) that parses is used; no JSON at all is a `fail`.
- A present-but-off-shape expectation (a bare string instead of a list, a schema that
  is not a valid JSON Schema) raises ScorerInputError (the engine's `error` layer).

Output: `{verdict, partially_unscored, unscorable, checks[{check, entry, status,
reason?}]}`; `unscorable` is the number of unscorable checks and `partially_unscored`
is true when some checks were unscorable but the verdict is still pass or fail.
Verdict: fail if any check fails, else pass if any passes, else `unscored` (with a
reason) -- every check unscorable is never a pass.
"""

from __future__ import annotations

import json
import re
from typing import Any

from assay.core import regex_guard
from assay.core.writer import clip
from assay.score.answer_leaf import echo_reason, leaf_of, not_text_reason
from assay.score.base import (
    FAIL, PASS, UNSCORABLE, UNSCORED, ScorerInputError, fold_checks, is_number, nfc, short,
)

NO_ANSWER_REASON = "no answer at the adapter's <answer> path"
EMPTY_ANSWER_REASON = ("the answer is empty, so nothing can be absent from it and must_not_contain proves nothing "
                       "(open the case's response.json: an error body? check the adapter's <answer> path)")
_TRAILING_FLAGS = re.compile(r"^/(.*)/([aiLmsuxgy]+)$", re.DOTALL)


def trailing_flag_entry(entry: str) -> re.Match | None:
    """The match (pattern, flags) when an answer entry is a regex with trailing flags (`/x/i`), which the
    scorer never reads (the check is unscorable); None for a `/re/` entry or plain text (`/usr/bin`).
    One definition: the linter refuses exactly the entries this scorer leaves unscorable."""
    if len(entry) >= 2 and entry.startswith("/") and entry.endswith("/"):
        return None
    return _TRAILING_FLAGS.match(entry)


_UNSLASHED_REGEX = re.compile(r"^(?:\(\?[aiLmsux]+\)|(?i:regex):)(.*)$", re.DOTALL)


def unslashed_regex_entry(entry: str) -> str | None:
    """The `/.../` form an answer entry meant, when it is a regex written without slashes: a leading
    inline flag group (`(?i)sorry`) or a `regex:` prefix (`regex:sorry|apolog`, another tool's
    spelling). Read as text it is in no answer, so a `must_not_contain` entry could never fail;
    the scorer leaves it unscorable. None for a `/re/` entry or plain text.
    One definition: the linter refuses exactly the entries this scorer leaves unscorable."""
    if len(entry) >= 2 and entry.startswith("/") and entry.endswith("/"):
        return None
    matched = _UNSLASHED_REGEX.match(entry)
    if not matched:
        return None
    return f"/{entry}/" if entry.startswith("(?") else f"/{matched.group(1)}/"
# A fenced block: ``` and the rest of its line (the info string, its first word the language), then the body
# up to the next ```. The blanks and the language are possessive: the rest of the line takes whatever they
# would give back, so backtracking into them only re-reads a line with no newline after it (quadratic
# on ``` and a long run of letters or digits, a one-line answer), never a different match.
_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+-]*+)[^\n]*\n(.*?)```", re.DOTALL)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """`_FENCE.findall(text)`, in linear time. findall tries every ``` in turn; one that opens no block (no
    newline after it, or no ``` after that newline) means none after it opens one either, so the scan
    stops there instead of reading to the end again from each later ``` (many ``` on one last line)."""
    blocks: list[tuple[str, str]] = []
    at = text.find("```")
    while at >= 0:
        m = _FENCE.match(text, at)
        if m is None:
            break
        blocks.append(m.groups())
        at = text.find("```", m.end())
    return blocks
_MAX_SCHEMA_ERRORS = 5


def score_answer(answer: Any, expect: dict, *, regex_timeout_s: float = 2.0,
                 leaf: dict | None = None, echo: dict | None = None) -> dict:
    """Score the answer layer (see the module docstring for the full contract)."""
    specs = _read_specs(expect)
    if answer is None:
        return {"verdict": UNSCORED, "reason": NO_ANSWER_REASON, "checks": [],
                "unscorable": 0, "partially_unscored": False}
    if not isinstance(answer, str):
        # The <answer> leaf held a number, bool, list or object: app output, never an input error.
        leaf = leaf or leaf_of(answer)
        answer = json.dumps(answer, ensure_ascii=False, sort_keys=True, default=str)
    text = nfc(answer)
    checks: list[dict[str, Any]] = []
    echoed: list[Any] = []
    for check_name, entries in specs["lists"]:
        for entry in entries:
            check = (_unscorable({"check": check_name, "entry": entry}, not_text_reason(leaf)) if leaf
                     else _text_check(check_name, entry, text, regex_timeout_s))
            if echo and check_name == "must_contain" and check.get("status") == PASS:
                # found in an answer that is the user's turn word for word: found in the question
                check = _unscorable({"check": check_name, "entry": entry}, echo_reason(echo))
                echoed.append(clip(str(entry), 80))
            checks.append(check)
    if specs["schema"] is not None:
        checks.append(_schema_check(specs["schema"], answer))
    out = _fold(checks)
    if leaf and any(entries for _, entries in specs["lists"]):
        out["answer_not_text"] = leaf
    if echoed:
        out["answer_echo"] = dict(echo, entries=echoed)
    return out


def _read_specs(expect: Any) -> dict[str, Any]:
    if not isinstance(expect, dict):
        raise ScorerInputError(f"expect must be an object, got {type(expect).__name__}")
    lists: list[tuple[str, list]] = []
    answer_spec = expect.get("answer")
    if answer_spec is not None:
        if not isinstance(answer_spec, dict):
            raise ScorerInputError(f"expect.answer must be an object, got {type(answer_spec).__name__}")
        for key in ("must_contain", "must_not_contain"):
            if key in answer_spec and answer_spec[key] is not None:
                entries = answer_spec[key]
                if not isinstance(entries, list):
                    raise ScorerInputError(
                        f"expect.answer.{key} must be a list of strings, got {type(entries).__name__} "
                        f"(write `{key}: [{short(entries, 40)!s}]`)")
                lists.append((key, entries))
    schema = None
    format_spec = expect.get("format")
    if format_spec is not None:
        if not isinstance(format_spec, dict):
            raise ScorerInputError(f"expect.format must be an object, got {type(format_spec).__name__}")
        if "json_schema" in format_spec and format_spec["json_schema"] is not None:
            schema = format_spec["json_schema"]
            _check_schema(schema)
    return {"lists": lists, "schema": schema}


def _text_check(check: str, entry: Any, text: str, timeout_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {"check": check, "entry": entry}
    if is_number(entry):
        entry_text = str(entry)
    elif isinstance(entry, str):
        entry_text = entry
    else:
        kind = "null" if entry is None else type(entry).__name__
        return _unscorable(out, f"entry is a {kind}, not a string or number (quote it in the YAML)")
    if entry_text == "":
        return _unscorable(out, "entry is an empty string, which every answer contains")
    if check == "must_not_contain" and not text.strip():
        return _unscorable(out, EMPTY_ANSWER_REASON)
    is_regex = len(entry_text) >= 2 and entry_text.startswith("/") and entry_text.endswith("/")
    if is_regex:
        pattern = entry_text[1:-1]
        try:
            found = regex_guard.bounded_search(pattern, text, timeout_s)
        except regex_guard.RegexTimeout:
            return _unscorable(out, f"regex timed out after {timeout_s:g} s")
        except regex_guard.RegexInvalid as err:
            return _unscorable(out, str(err))
        except regex_guard.RegexProblem as err:
            return _unscorable(out, str(err))
    else:
        flagged = trailing_flag_entry(entry_text)
        if flagged:
            return _unscorable(out, f"trailing regex flag '/{flagged.group(2)}' is not supported; "
                                    f"use an inline flag, e.g. /(?i){flagged.group(1)}/")
        meant = unslashed_regex_entry(entry_text)
        if meant:
            return _unscorable(out, f"a regex written without slashes is read as text, which no answer holds; "
                                    f"write it {meant}")
        found = nfc(entry_text) in text
    wanted = check == "must_contain"
    out["status"] = PASS if found == wanted else FAIL
    if out["status"] == FAIL:
        out["reason"] = ("not found in the answer" if wanted else "found in the answer")
    return out


def _unscorable(out: dict[str, Any], reason: str) -> dict[str, Any]:
    out["status"] = UNSCORABLE
    out["reason"] = reason
    return out


def _validator_class(schema: Any):
    import jsonschema  # runtime dependency, imported lazily so the module loads without it
    from jsonschema import validators

    return jsonschema, validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def _check_schema(schema: Any) -> None:
    if not isinstance(schema, (dict, bool)):
        raise ScorerInputError(f"expect.format.json_schema must be an object, got {type(schema).__name__}")
    from assay.schemas.user import dialect_problem, well_formed
    if well_formed(schema):
        return   # check_schema is sure to pass (assay.schemas.user): jsonschema is not imported
    problem = dialect_problem(schema)
    if problem:
        raise ScorerInputError(f"expect.format.json_schema is not a valid JSON Schema: {problem}")
    jsonschema, cls = _validator_class(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as err:
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise ScorerInputError(f"expect.format.json_schema is not a valid JSON Schema at {where}: "
                               f"{short(err.message)}") from None


LOOPING_SCHEMA = ("expect.format.json_schema never finishes on this answer: a $ref leads back to where it "
                  "started without going into the answer (e.g. {\"$ref\": \"#\"}, or allOf/not/anyOf back to "
                  "itself), and jsonschema recurses forever; make the loop step into a property or an item")


def _parse_answer_json(answer: str) -> tuple[bool, Any, str | None]:
    """(found, document, note). Bare JSON first, then fenced code blocks (```json first)."""
    try:
        return True, json.loads(answer), None
    except ValueError:
        pass
    blocks = fenced_blocks(answer)
    ordered = [b for b in blocks if b[0].lower() == "json"] + [b for b in blocks if b[0].lower() != "json"]
    for lang, body in ordered:
        try:
            return True, json.loads(body), f"parsed from a fenced ```{lang} block"
        except ValueError:
            continue
    return False, None, None


def _schema_check(schema: Any, answer: str) -> dict[str, Any]:
    out: dict[str, Any] = {"check": "json_schema", "entry": "expect.format.json_schema"}
    try:
        found, doc, note = _parse_answer_json(answer)
    except RecursionError:
        return _unscorable(out, "the answer's JSON is nested too deeply to check")
    if not found:
        out["status"] = FAIL
        out["reason"] = "the answer is not JSON (no bare JSON and no fenced JSON block)"
        return out
    if note:
        out["note"] = note
    from assay.schemas.user import doc_in_bounds, user_checker
    fast = user_checker(schema)
    try:
        if fast is not None and doc_in_bounds(doc) and fast(doc):
            out["status"] = PASS   # the same pass jsonschema gives; a miss goes on to jsonschema's errors
            return out
    except RecursionError:
        pass
    jsonschema, cls = _validator_class(schema)
    try:
        errors = sorted(cls(schema).iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    except RecursionError:
        if doc_in_bounds(doc):   # a shallow answer (a tree schema checks 150 levels fine): the loop is the schema's
            raise ScorerInputError(LOOPING_SCHEMA) from None
        return _unscorable(out, "the answer's JSON is nested too deeply to check")
    except Exception as err:  # an unresolvable $ref (remote refs are never fetched) is the schema's fault
        if type(err).__module__.split(".")[0] in ("jsonschema", "referencing"):
            raise ScorerInputError(f"expect.format.json_schema cannot be applied: {type(err).__name__}: "
                                   f"{short(str(err), 160)}") from None
        raise
    if errors:
        out["status"] = FAIL
        shown = []
        for err in errors[:_MAX_SCHEMA_ERRORS]:
            where = "/".join(str(p) for p in err.absolute_path) or "(root)"
            shown.append(f"{where}: {short(err.message, 160)}")
        more = len(errors) - len(shown)
        out["reason"] = "; ".join(shown) + (f"; and {more} more" if more else "")
    else:
        out["status"] = PASS
    return out


def _fold(checks: list[dict[str, Any]]) -> dict[str, Any]:
    verdict = fold_checks(checks)
    n_unscorable = sum(1 for c in checks if c["status"] == UNSCORABLE)
    out: dict[str, Any] = {
        "verdict": verdict,
        "checks": checks,
        "unscorable": n_unscorable,
        "partially_unscored": verdict in (PASS, FAIL) and n_unscorable > 0,
    }
    if verdict == UNSCORED:
        out["reason"] = ("every answer check was unscorable: " + "; ".join(
            f"{c['check']} {short(c['entry'], 60)}: {c['reason']}" for c in checks)
            if checks else "no must_contain, must_not_contain or format.json_schema to check")
    return out
