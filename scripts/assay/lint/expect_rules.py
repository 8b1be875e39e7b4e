"""Shape rules for one `expect` block (top level or a conversation checkpoint).

`check_expect(expect, where, report, user_text, id_pattern)` reports through
`report(code, message)`; `where` is the key path shown in messages
(`expect`, `input.turns[1].expect`). Shape errors are hard errors: a bad enum, a
bare string or an unquoted scalar never falls back to the loosest reading.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Callable

from .regex_risk import matches_every_text, nested_quantifier
from ..score.answer import trailing_flag_entry, unslashed_regex_entry
from ..score.result_spec import columns_problem, tolerance_problem, zero_tolerance_problem
from ..core.suggest import did_you_mean
from .key_homes import ANSWER_KEYS, AUTHZ_KEYS, EXPECT_KEYS, RESULT_KEYS, TOOLS_KEYS, misplaced

Report = Callable[[str, str], None]

ORDER_MODES = ("in_order", "exact", "any_order")
CALL_SCOPES = ("any", "all", "first")


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _entry_key(where: str, i: int) -> str:
    """The dotted key of entry i under `where` (`input.turns[0].expect.answer.must_contain` ->
    `input.turns.0.expect.answer.must_contain.0`), so make_plan names the entry's own line."""
    return re.sub(r"\[(\d+)\]", r".\1", where) + f".{i}"


def _str_list(value: Any, where: str, report: Report) -> list[str] | None:
    """A list of non-empty strings, or report why not (string_not_list / unquoted_bool_or_number)."""
    if isinstance(value, str):
        report("string_not_list", f"{where} is a bare string; write a list: [{value!r}]", key=where)
        return None
    if not isinstance(value, list):
        report("bad_expect_shape", f"{where} must be a list of strings (got {type(value).__name__})", key=where)
        return None
    ok = True
    for i, entry in enumerate(value):
        if isinstance(entry, (bool, int, float)):
            report("unquoted_bool_or_number",
                   f"{where}[{i}] is the {type(entry).__name__} {entry!r}; quote it so it is compared as text: "
                   f"\"{str(entry).lower() if isinstance(entry, bool) else entry}\"", key=_entry_key(where, i))
            ok = False
        elif not isinstance(entry, str) or not entry:
            report("bad_expect_shape", f"{where}[{i}] must be a non-empty string", key=_entry_key(where, i))
            ok = False
    return value if ok else None


def _unknown_keys(block: dict, allowed: tuple[str, ...], where: str, report: Report) -> None:
    for key in sorted(set(block) - set(allowed), key=str):   # each named on its own line: its home, or the closest key
        report("bad_expect_shape", misplaced(key, where) or f"{where} has unknown key(s) {[key]}"
               f"{did_you_mean(str(key), list(allowed))}; allowed: {list(allowed)}", key=f"{where}.{key}")


CATASTROPHIC_HINT = ("repeats a group that itself repeats (a nested quantifier, like `(a+)+`): on an answer "
                     "that almost matches it can backtrack for hours; each search is stopped after "
                     "scoring.scorer_timeout_s (2 s) and the check is unscorable. Rewrite it without the nested "
                     "repeat (`(a+)+` -> `a+`), or make the inner part possessive/atomic (`(?>a+)+`)")


def _check_entries_regex(entries: list[str], where: str, report: Report) -> None:
    for i, entry in enumerate(entries):
        if len(entry) >= 2 and entry.startswith("/"):
            if entry.endswith("/"):
                try:
                    re.compile(entry[1:-1])
                except re.error as exc:
                    report("bad_regex", f"{where}[{i}] {entry!r} is not a valid regex ({exc}); fix it or "
                           "drop the slashes to match the text literally", key=_entry_key(where, i))
                    continue
                if nested_quantifier(entry[1:-1]):
                    report("catastrophic_regex", f"{where}[{i}] {entry!r} {CATASTROPHIC_HINT}", key=_entry_key(where, i))
                if where.endswith(".must_contain") and matches_every_text(entry[1:-1]):
                    report("vacuous_regex", f"{where}[{i}] {entry!r} matches the empty text, so it is found in "
                           "every answer and the check can never fail; write what a correct answer must hold "
                           "(`/refund.*issued/`, not `/.*/`, `/(refund)?/` or `/x|/`)", key=_entry_key(where, i))
            elif flagged := trailing_flag_entry(entry):
                report("regex_trailing_flags", f"{where}[{i}] {entry!r} ends in flags after '/', which the "
                       "scorer never reads: the check is unscorable on every answer, so it can never fail "
                       f"(and the case passes on its other checks); use inline flags: {_inline(flagged)!r}",
                       key=_entry_key(where, i))
        elif meant := unslashed_regex_entry(entry):
            report("regex_without_slashes", f"{where}[{i}] {entry!r} is a regex written without slashes: it is "
                   "compared as text, which no answer holds, so the check is unscorable on every answer "
                   f"(a must_not_contain entry could never fail); write it {meant!r}", key=_entry_key(where, i))


def _inline(flagged: re.Match) -> str:
    """`/x/gi` -> `/(?i)x/`: the trailing flags Python can read inline (`g`, `y` have no meaning here)."""
    flags = "".join(dict.fromkeys(f for f in flagged.group(2) if f in "imsx"))
    return f"/(?{flags}){flagged.group(1)}/" if flags else f"/{flagged.group(1)}/"


def check_expect(expect: Any, where: str, report: Report, *, user_text: str = "",
                 id_pattern: str | None = None, id_pattern_known: bool = False) -> None:
    if not isinstance(expect, dict):
        report("bad_expect_shape", f"{where} must be a mapping of checks (got {type(expect).__name__})", key=where)
        return
    for key in sorted(set(expect) - set(EXPECT_KEYS)):
        report("unknown_expect_key", misplaced(key, where) or f"{where}.{key} is not an expect key (a typo asserts "
               f"nothing){did_you_mean(key, EXPECT_KEYS)}; allowed: {', '.join(EXPECT_KEYS)}", key=f"{where}.{key}")
    http = expect.get("http")
    if "http" in expect and not (isinstance(http, dict) and set(http) <= {"status"}
                                 and isinstance(http.get("status"), int) and not isinstance(http.get("status"), bool)
                                 and 100 <= http["status"] <= 599):
        report("bad_expect_shape", f"{where}.http must be {{status: <100-599>}}", key=f"{where}.http")
    if "route" in expect and not (isinstance(expect["route"], str) and expect["route"]):
        yaml_bool = (" (YAML reads an unquoted yes/no/on/off/true/false as a boolean: quote the route)"
                     if isinstance(expect["route"], bool) else "")
        report("bad_expect_shape", f"{where}.route must be a non-empty string (the route label){yaml_bool}",
               key=f"{where}.route")
    if "route_acceptable" in expect:
        _str_list(expect["route_acceptable"], f"{where}.route_acceptable", report)
    if "clarify_ok" in expect and not isinstance(expect["clarify_ok"], bool):
        report("bad_expect_shape", f"{where}.clarify_ok must be true or false", key=f"{where}.clarify_ok")
    if "exit_code" in expect and (not isinstance(expect["exit_code"], int) or isinstance(expect["exit_code"], bool)):
        report("bad_expect_shape", f"{where}.exit_code must be an integer", key=f"{where}.exit_code")
    _check_empty(expect, where, report)
    if "tools" in expect:
        _check_tools(expect["tools"], f"{where}.tools", report)
    if "args" in expect:
        _check_args(expect["args"], f"{where}.args", report)
    if "result" in expect:
        _check_result(expect["result"], f"{where}.result", report)
    if "authz" in expect:
        _check_authz(expect["authz"], f"{where}.authz", report, id_pattern, id_pattern_known)
    if "answer" in expect:
        _check_answer(expect["answer"], f"{where}.answer", report, user_text)
    if "format" in expect:
        _check_format(expect["format"], f"{where}.format", report)
    from .agent_rules import check_agent_expect
    check_agent_expect(expect, where, report)
    if "state" in expect:
        report("reserved_expectation", f"{where}.state is reserved: nothing scores it, so it cannot fail")


# The check lists an empty value leaves asserting nothing (`allowed_record_ids: []` is left out: with a
# record_id_pattern it says the caller may see no record at all), and the blocks that hold only such lists.
EMPTY_CHECK_LISTS = {"": ("route_acceptable",), "answer": ("must_contain", "must_not_contain", "rules", "rubric"),
                     "tools": ("subset", "order", "forbidden"), "authz": ("forbidden_record_ids", "forbidden_tools")}


def _check_empty(expect: dict, where: str, report: Report) -> None:
    """`must_not_contain: []`, `tools: {forbidden: []}`, `answer: {}`: a check written and given nothing to
    check reads as checked (beside real checks the case passes on those alone), so it is an ERROR."""
    for block, keys in EMPTY_CHECK_LISTS.items():
        holder = expect.get(block) if block else expect
        loc = f"{where}.{block}" if block else where
        if block and isinstance(holder, dict) and not holder:
            report("empty_check", f"{loc} is empty: it checks nothing, yet the case reads as if it did; write "
                   f"its checks ({', '.join(keys)}) or drop the key", key=loc)
            continue
        if not isinstance(holder, dict):
            continue
        for key in keys:
            if isinstance(holder.get(key), list) and not holder[key]:
                report("empty_check", f"{loc}.{key} is an empty list: it checks nothing, yet the case reads as "
                       "if it did (and passes on its other checks); list what it must check, or drop the key",
                       key=f"{loc}.{key}")


def _check_tools(tools: Any, where: str, report: Report) -> None:
    if not isinstance(tools, dict):
        report("bad_expect_shape", f"{where} must be a mapping with subset / order / order_mode / forbidden", key=where)
        return
    _unknown_keys(tools, TOOLS_KEYS, where, report)
    for key in ("subset", "order", "forbidden"):
        if key in tools:
            _str_list(tools[key], f"{where}.{key}", report)
    if "order_mode" in tools and tools["order_mode"] not in ORDER_MODES:
        report("bad_order_mode", f"{where}.order_mode {tools['order_mode']!r} is not one of {list(ORDER_MODES)}",
               key=f"{where}.order_mode")
    if "order_mode" in tools and "order" not in tools:
        report("bad_expect_shape", f"{where}.order_mode is set but {where}.order is missing", key=f"{where}.order_mode")


def _check_args(args: Any, where: str, report: Report) -> None:
    if not isinstance(args, dict) or not args:
        report("bad_expect_shape", f"{where} must be a mapping of tool name -> {{param: value, calls?}}", key=where)
        return
    for tool, entry in args.items():
        loc = f"{where}.{tool}"
        if not isinstance(entry, dict):
            report("bad_expect_shape", f"{loc} must be a mapping of parameter -> expected value", key=loc)
            continue
        if "calls" in entry and entry["calls"] not in CALL_SCOPES:
            report("bad_call_scope", f"{loc}.calls {entry['calls']!r} is not one of {list(CALL_SCOPES)}",
                   key=f"{loc}.calls")
        params = {k: v for k, v in entry.items() if k != "calls"}
        if not params:
            report("vacuous_args_entry", f"{loc} asserts nothing besides `calls`; name at least one parameter", key=loc)
        for name, value in params.items():
            if isinstance(value, dict):
                if set(value) == {"present"} and isinstance(value["present"], bool):
                    continue
                if set(value) == {"from_tool_result"} and isinstance(value["from_tool_result"], str) \
                        and value["from_tool_result"]:
                    continue
                report("bad_expect_shape", f"{loc}.{name} must be a literal, {{present: true}} or "
                       "{from_tool_result: <tool>[.<field>]}", key=f"{loc}.{name}")


def _check_result(result: Any, where: str, report: Report) -> None:
    if not isinstance(result, dict):
        report("bad_expect_shape", f"{where} must be a mapping with scalar or rows", key=where)
        return
    _unknown_keys(result, RESULT_KEYS, where, report)
    if "scalar" in result and "rows" in result:
        report("both_scalar_and_rows", f"{where} has both scalar and rows; keep the one the app returns", key=where)
    elif "scalar" not in result and "rows" not in result:
        report("neither_scalar_nor_rows", f"{where} has neither scalar nor rows; the execution check needs one",
               key=where)
    if "rows" in result and not isinstance(result["rows"], list):
        report("bad_expect_shape", f"{where}.rows must be a list of rows", key=f"{where}.rows")
    if "scalar" in result and isinstance(result["scalar"], (dict, list)):
        report("bad_expect_shape", f"{where}.scalar must be a single value (use rows for tables)",
               key=f"{where}.scalar")
    if "columns" in result:
        cols = result["columns"]
        if isinstance(cols, list) and not cols:
            report("empty_columns", f"{where}.columns is empty, which would compare nothing; list the columns "
                   "or drop the key", key=f"{where}.columns")
        elif not isinstance(cols, list) or not all(isinstance(c, str) and c for c in cols):
            report("bad_expect_shape", f"{where}.columns must be a list of column names", key=f"{where}.columns")
        elif problem := columns_problem(result.get("rows"), cols):
            report("columns_mismatch", f"{where}.{problem}", key=f"{where}.columns")
    if "ordered" in result and not isinstance(result["ordered"], bool):
        report("bad_expect_shape", f"{where}.ordered must be true or false", key=f"{where}.ordered")
    tol = result.get("float_tolerance")
    if "float_tolerance" in result and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or tol < 0):
        as_text = (f" (YAML reads {tol} as text: write it with a dot, or as a decimal such as 0.01)"
                   if isinstance(tol, str) and re.fullmatch(r"[-+]?[0-9]+[eE][-+]?[0-9]+", tol.strip()) else "")
        report("bad_expect_shape", f"{where}.float_tolerance must be a number >= 0{as_text}",
               key=f"{where}.float_tolerance")
    elif "float_tolerance" in result and (problem := tolerance_problem(
            result.get("scalar") if "scalar" in result else result.get("rows"), tol,
            "scalar" if "scalar" in result else "rows")):
        report("tolerance_swallows_value", f"{where}: {problem}", key=f"{where}.float_tolerance")
    elif "float_tolerance" in result and (problem := zero_tolerance_problem(
            result.get("scalar") if "scalar" in result else result.get("rows"), tol,
            "scalar" if "scalar" in result else "rows")):
        report("tolerance_swallows_zero", f"{where}: {problem}", key=f"{where}.float_tolerance")
    if "reference_query" in result and not isinstance(result["reference_query"], str):
        report("bad_expect_shape", f"{where}.reference_query must be a string", key=f"{where}.reference_query")


def _check_authz(authz: Any, where: str, report: Report, id_pattern: str | None, id_pattern_known: bool) -> None:
    if not isinstance(authz, dict):
        report("bad_expect_shape", f"{where} must be a mapping", key=where)
        return
    _unknown_keys(authz, AUTHZ_KEYS, where, report)
    ids: list[str] = []
    for key in ("allowed_record_ids", "forbidden_record_ids", "forbidden_tools"):
        if key in authz:
            entries = _str_list(authz[key], f"{where}.{key}", report)
            if entries and key != "forbidden_tools":
                ids.extend(entries)
    if "expect_refusal" in authz and not isinstance(authz["expect_refusal"], bool):
        report("bad_expect_shape", f"{where}.expect_refusal must be true or false", key=f"{where}.expect_refusal")
    if ids and id_pattern_known:
        if not id_pattern:
            report("unrecognizable_record_ids", f"{where} lists record ids but the profile has no "
                   "record_id_pattern, so ids the app returns cannot be recognized; add record_id_pattern")
        else:
            try:
                rx = re.compile(id_pattern)
            except re.error:
                return
            if nested_quantifier(id_pattern):
                report("catastrophic_regex", f"the profile's record_id_pattern {id_pattern!r} (used by {where}) "
                       f"{CATASTROPHIC_HINT}")
            forbidden = set(authz.get("forbidden_record_ids") or []) if isinstance(authz.get("forbidden_record_ids"), list) else set()
            bad = [i for i in ids if not rx.fullmatch(i)]
            never = [i for i in bad if i in forbidden]
            if never:
                report("unobservable_record_ids", f"{where}.forbidden_record_ids {never} do not match the profile's "
                       f"record_id_pattern {id_pattern!r}: the app never writes an id that way, so the check could "
                       "only pass; write them as the app does (ids are compared exactly)",
                       key=f"{where}.forbidden_record_ids")
            bad = [i for i in bad if i not in forbidden]
            if bad:
                report("unrecognizable_record_ids", f"{where} ids {bad} do not match the profile's "
                       f"record_id_pattern {id_pattern!r}; the authz scorer will not see them", key=where)


def _check_answer(answer: Any, where: str, report: Report, user_text: str) -> None:
    if not isinstance(answer, dict):
        report("bad_expect_shape", f"{where} must be a mapping with must_contain / must_not_contain / rules / rubric",
               key=where)
        return
    _unknown_keys(answer, ANSWER_KEYS, where, report)
    for key in ANSWER_KEYS:
        if key not in answer:
            continue
        entries = _str_list(answer[key], f"{where}.{key}", report)
        if entries is None or key not in ("must_contain", "must_not_contain"):
            continue
        _check_entries_regex(entries, f"{where}.{key}", report)
        if key == "must_not_contain":
            _check_case_variants(entries, f"{where}.{key}", report)
        if key == "must_contain" and user_text:
            said = nfc(user_text).casefold()
            for i, entry in enumerate(entries):
                if not entry.startswith("/") and nfc(entry).casefold() in said:
                    report("echo_assertion", f"{where}.must_contain[{i}] {entry!r} is already in the user's "
                           "input: an app that echoes the question passes; assert something only a correct "
                           "answer contains", key=_entry_key(f"{where}.must_contain", i))


# Plain words (letters, spaces, apostrophes, hyphens): the text an answer writes in whatever case its
# sentence needs. Ids, numbers and code (`INV-1003`, `300.00`, `Traceback (most recent call last)`) keep theirs.
_WORDS = re.compile(r"[^\W\d_]+(?:[\s'’-]+[^\W\d_]+)*")


def _check_case_variants(entries: list[str], where: str, report: Report) -> None:
    """A plain-text must_not_contain entry of words is compared case-sensitively (the scorer never folds
    case): `Error` is not found in "an error occurred", so the check passes. A WARN names the entry and
    both ways to say what was meant; a `/.../` entry has said it already."""
    for i, entry in enumerate(entries):
        if entry.startswith("/") or not _WORDS.fullmatch(entry):
            continue
        variants = [v for v in dict.fromkeys((entry.lower(), entry.capitalize(), entry.upper())) if v != entry]
        report("case_sensitive_absence", f"{where}[{i}] {entry!r} is compared case-sensitively: an answer "
               f"saying {' or '.join(repr(v) for v in variants[:2])} does not contain it, so the check passes; "
               f"write {'/(?i)' + re.escape(entry) + '/'!r} to forbid it in any case, or {'/' + re.escape(entry) + '/'!r} "
               "to forbid only this spelling", key=_entry_key(where, i))


def _check_format(fmt: Any, where: str, report: Report) -> None:
    if not isinstance(fmt, dict) or set(fmt) != {"json_schema"} or not isinstance(fmt["json_schema"], dict):
        report("bad_expect_shape", f"{where} must be {{json_schema: <a JSON Schema mapping>}}", key=where)
        return
    from ..schemas.user import always_loops, dialect_problem, well_formed
    if well_formed(fmt["json_schema"]):
        return   # check_schema is sure to pass (and no $ref loops): jsonschema is not imported
    problem = dialect_problem(fmt["json_schema"])
    if problem:
        report("bad_expect_shape", f"{where}.json_schema is not a valid JSON Schema: {problem}",
               key=f"{where}.json_schema")
        return
    try:
        import jsonschema

        jsonschema.validators.validator_for(fmt["json_schema"]).check_schema(fmt["json_schema"])
    except Exception as exc:  # jsonschema.SchemaError and friends
        report("bad_expect_shape", f"{where}.json_schema is not a valid JSON Schema: "
               f"{getattr(exc, 'message', exc)}", key=f"{where}.json_schema")
        return
    _check_schema_keywords(fmt["json_schema"], where, report)
    loop = always_loops(fmt["json_schema"])
    if loop:
        report("bad_expect_shape", f"{where}.json_schema loops on every answer ({loop}): a $ref leads back "
               "to where it started without going into the answer, so no answer can be checked; make the "
               "loop step into a property or an item")


def _check_schema_keywords(schema: dict, where: str, report: Report) -> None:
    """A key JSON Schema does not know is ignored, so it checks nothing: a near-miss of a checking
    keyword (`requird`, `tyep`) is a check the author meant and lost, an ERROR; any other (`nullable`,
    an OpenAPI word; `descripton`, a near-miss of an annotation, which checks nothing anyway) a WARN."""
    import jsonschema

    from ..core.suggest import closest
    from ..schemas.user import ANNOTATIONS, ignored_keywords
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    for at, key in ignored_keywords(schema, cls.VALIDATORS):
        hit = closest(key, list(cls.VALIDATORS) + list(ANNOTATIONS))
        line_key = ".".join([f"{where}.json_schema", *(p for p in at.split("/") if p and at != "(root)"), key])
        if hit in cls.VALIDATORS:
            report("unknown_schema_keyword", f"{where}.json_schema at {at} has {key!r}, which is no JSON Schema "
                   f"keyword: it is ignored and checks nothing (did you mean {hit!r}?)", key=line_key)
        else:
            hint = (' (OpenAPI\'s nullable is "type": [<type>, "null"] in JSON Schema)' if key == "nullable"
                    else f" (did you mean {hit!r}?)" if hit else "")
            report("ignored_schema_keyword", f"{where}.json_schema at {at} has {key!r}, which JSON Schema ignores: "
                   f"it checks nothing{hint}; remove it, or say the check with a keyword", key=line_key)
