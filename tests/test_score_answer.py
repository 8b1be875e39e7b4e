"""assay.score.answer: must_contain / must_not_contain / json_schema, and unscorable entries."""

from __future__ import annotations

import unicodedata

import pytest

from assay.score.answer import NO_ANSWER_REASON, score_answer
from assay.score.base import ScorerInputError, contains_token, fold_checks


def contain(*entries, answer_text, must_not=()):
    return score_answer(answer_text, {"answer": {"must_contain": list(entries),
                                                 "must_not_contain": list(must_not)}})


def statuses(result):
    return [c["status"] for c in result["checks"]]


# ------------------------------------------------------------------ fold + base helpers

def test_fold_checks():
    assert fold_checks([]) == "unscored"
    assert fold_checks(["unscorable"]) == "unscored"
    assert fold_checks(["pass", "unscorable"]) == "pass"
    assert fold_checks([{"status": "pass"}, {"status": "fail"}, {"status": "unscorable"}]) == "fail"


def test_whole_token_id_match():
    assert contains_token("invoice INV-1 is paid", "INV-1")
    assert not contains_token("invoice INV-10 is paid", "INV-1")
    assert not contains_token("XINV-1", "INV-1")
    assert contains_token("(INV-1)", "INV-1")
    # sentence punctuation ends a token (same rule as authz.tokens_of)
    assert contains_token("Your invoice is INV-9.", "INV-9")
    assert contains_token("INV-9. Next", "INV-9")
    assert not contains_token("INV-9.5", "INV-9")
    assert not contains_token("INV-9-2", "INV-9")


# ------------------------------------------------------------------ substrings

def test_plain_substring_pass_and_fail():
    r = contain("refund", "voucher", answer_text="Your refund is on the way")
    assert r["verdict"] == "fail"
    assert statuses(r) == ["pass", "fail"]
    assert r["checks"][1]["reason"] == "not found in the answer"
    assert r["partially_unscored"] is False and r["unscorable"] == 0


def test_no_case_folding():
    assert contain("Refund", answer_text="your refund")["verdict"] == "fail"


def test_nfc_on_both_sides():
    decomposed = unicodedata.normalize("NFD", "café")
    assert decomposed != "café"
    assert contain("café", answer_text=f"a {decomposed} au lait")["verdict"] == "pass"
    assert contain(decomposed, answer_text="a café au lait")["verdict"] == "pass"


def test_must_not_contain():
    r = contain("refund", answer_text="refund issued, sorry", must_not=["sorry", "error"])
    assert statuses(r) == ["pass", "fail", "pass"]
    assert r["checks"][1] == {"check": "must_not_contain", "entry": "sorry", "status": "fail",
                              "reason": "found in the answer"}
    assert r["verdict"] == "fail"


def test_number_entry_is_text():
    assert contain(42, 2.5, answer_text="42 items at 2.5 each")["verdict"] == "pass"
    assert contain(43, answer_text="42 items")["verdict"] == "fail"


# ------------------------------------------------------------------ regex entries

def test_regex_entry():
    r = contain(r"/\d+ EUR/", r"/^Total/", answer_text="Total: 42 EUR")
    assert r["verdict"] == "pass"
    assert contain(r"/\d+ USD/", answer_text="Total: 42 EUR")["verdict"] == "fail"


def test_regex_inline_flag_works_trailing_flag_is_unscorable():
    assert contain("/(?i)total/", answer_text="TOTAL")["verdict"] == "pass"
    r = contain("/total/i", answer_text="TOTAL")
    assert r["verdict"] == "unscored"
    check = r["checks"][0]
    assert check["status"] == "unscorable"
    assert "trailing regex flag '/i'" in check["reason"] and "(?i)" in check["reason"]


def test_slash_path_is_plain_text_not_a_flagged_regex():
    r = contain("/usr/bin", answer_text="installed in /usr/bin/tool")
    assert statuses(r) == ["pass"]


def test_invalid_regex_is_unscorable():
    r = contain("/(unclosed/", "ok", answer_text="ok")
    assert r["verdict"] == "pass"
    assert r["partially_unscored"] is True and r["unscorable"] == 1
    assert r["checks"][0]["status"] == "unscorable"
    assert "invalid regex" in r["checks"][0]["reason"]


def test_regex_matches_nfc_answer():
    decomposed = unicodedata.normalize("NFD", "café")
    assert contain("/caf\u00e9/", answer_text=decomposed)["verdict"] == "pass"


def test_catastrophic_regex_is_unscorable_not_a_hang():
    r = score_answer("a" * 40 + "b", {"answer": {"must_contain": [r"/(a+)+$/", "b"]}}, regex_timeout_s=0.5)
    assert r["verdict"] == "pass"
    assert r["checks"][0]["status"] == "unscorable"
    assert r["checks"][0]["reason"] == "regex timed out after 0.5 s"
    assert r["partially_unscored"] is True


def test_catastrophic_regex_in_must_not_contain_never_passes():
    r = score_answer("a" * 40 + "b", {"answer": {"must_not_contain": [r"/(a+)+$/"]}}, regex_timeout_s=0.3)
    assert r["verdict"] == "unscored"
    assert "every answer check was unscorable" in r["reason"]


# ------------------------------------------------------------------ unscorable / error shapes

@pytest.mark.parametrize("entry,kind", [(True, "bool"), (None, "null"), (["a"], "list"), ({"a": 1}, "dict")])
def test_wrong_type_entries_are_unscorable(entry, kind):
    r = contain(entry, answer_text="a True None")
    assert r["verdict"] == "unscored"
    assert r["checks"][0]["status"] == "unscorable"
    assert f"entry is a {kind}" in r["checks"][0]["reason"]


def test_empty_string_entry_is_unscorable():
    assert contain("", answer_text="x")["checks"][0]["status"] == "unscorable"


def test_bare_string_instead_of_list_is_a_scorer_input_error():
    with pytest.raises(ScorerInputError, match="must_contain must be a list"):
        score_answer("x", {"answer": {"must_contain": "refund"}})
    with pytest.raises(ScorerInputError):
        score_answer("x", {"answer": "refund"})
    with pytest.raises(ScorerInputError):
        score_answer("x", {"format": ["json"]})


def test_no_answer_is_unscored():
    r = score_answer(None, {"answer": {"must_contain": ["x"]}})
    assert r["verdict"] == "unscored"
    assert r["reason"] == NO_ANSWER_REASON


def test_non_text_answer_is_checked_as_json_text():
    assert score_answer(42, {"answer": {"must_contain": ["42"]}})["verdict"] == "pass"
    r = score_answer({"total": 3, "items": []}, {"format": {"json_schema": SCHEMA}})
    assert r["verdict"] == "pass"


def test_a_text_check_on_an_object_or_list_answer_is_unscorable_and_the_leaf_recorded():
    """An object's JSON holds its key names and escapes its quotes: a text check there is never scored (the
    schema is, on the JSON); the layer names the leaf and the text field the fix points at."""
    r = score_answer({"text": 'said "no"', "lang": "en"}, {"answer": {"must_contain": ["text"],
                                                                     "must_not_contain": ['"no"']},
                                                          "format": {"json_schema": {"type": "object"}}})
    assert [c["status"] for c in r["checks"]] == ["unscorable", "unscorable", "pass"] and r["verdict"] == "pass"
    assert r["partially_unscored"] is True and r["answer_not_text"]["text_field"] == "text"
    assert "is an object (keys: text, lang), not text" in r["checks"][0]["reason"]
    r = score_answer(["a", "b"], {"answer": {"must_contain": ["a"]}})
    assert r["verdict"] == "unscored" and r["answer_not_text"]["kind"] == "list"
    assert "answer_not_text" not in score_answer(["a"], {"format": {"json_schema": {"type": "array"}}})


def test_nothing_to_check_is_unscored():
    r = score_answer("x", {"answer": {"rules": ["be polite"]}})
    assert r["verdict"] == "unscored"
    assert "no must_contain" in r["reason"]


# ------------------------------------------------------------------ json_schema

SCHEMA = {"type": "object", "required": ["total", "items"],
          "properties": {"total": {"type": "number"}, "items": {"type": "array", "items": {"type": "string"}},
                         "status": {"enum": ["open", "closed"]}}}


def schema_check(answer_text, schema=SCHEMA):
    return score_answer(answer_text, {"format": {"json_schema": schema}})


def test_schema_pass():
    r = schema_check('{"total": 3, "items": ["a"], "status": "open"}')
    assert r["verdict"] == "pass"
    assert r["checks"][0]["check"] == "json_schema"


def test_schema_violations_are_listed():
    r = schema_check('{"total": "3", "items": [1], "status": "lost"}')
    assert r["verdict"] == "fail"
    reason = r["checks"][0]["reason"]
    assert "total: '3' is not of type 'number'" in reason
    assert "items/0" in reason and "status" in reason


def test_bool_never_passes_as_number():
    assert schema_check('{"total": true, "items": []}')["verdict"] == "fail"
    assert schema_check('{"n": false}', {"properties": {"n": {"type": "integer"}}})["verdict"] == "fail"


def test_fenced_json_block_is_used_when_answer_is_not_bare_json():
    text = 'Here you go:\n```json\n{"total": 3, "items": []}\n```\nanything else?'
    r = schema_check(text)
    assert r["verdict"] == "pass"
    assert "fenced" in r["checks"][0]["note"]


def test_fenced_json_preferred_over_other_fences():
    text = '```\n{"total": "bad", "items": []}\n```\n```json\n{"total": 1, "items": []}\n```'
    assert schema_check(text)["verdict"] == "pass"


def test_not_json_fails():
    r = schema_check("I could not find your order.")
    assert r["verdict"] == "fail"
    assert "not JSON" in r["checks"][0]["reason"]


def test_deeply_nested_json_is_unscorable_not_a_crash():
    deep = "[" * 10000 + "]" * 10000
    r = schema_check(deep, {"type": "array"})
    assert r["verdict"] == "unscored"
    assert "nested too deeply" in r["checks"][0]["reason"]


def test_malformed_schema_is_a_scorer_input_error():
    with pytest.raises(ScorerInputError, match="not a valid JSON Schema"):
        schema_check("{}", {"type": "objekt"})
    with pytest.raises(ScorerInputError, match="not a valid JSON Schema"):
        schema_check("{}", {"required": "total"})
    with pytest.raises(ScorerInputError, match="must be an object"):
        schema_check("{}", "object")


def test_unresolvable_ref_is_a_scorer_input_error_and_never_fetched():
    with pytest.raises(ScorerInputError, match="cannot be applied"):
        schema_check("{}", {"$ref": "http://127.0.0.1:9/schema.json"})
    with pytest.raises(ScorerInputError, match="cannot be applied"):
        schema_check("{}", {"$ref": "#/definitions/nope"})


def test_schema_errors_sorted_with_mixed_path_types():
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}},
                                               "b": {"type": "string"}}}
    r = schema_check('{"a": [1, 2], "b": 3}', schema)
    assert r["verdict"] == "fail"
    assert r["checks"][0]["reason"].startswith("a/0:")


def test_malformed_schema_raises_even_without_an_answer():
    with pytest.raises(ScorerInputError):
        score_answer(None, {"format": {"json_schema": {"type": 5}}})


def test_combined_checks_fold():
    r = score_answer('{"total": 3, "items": []}', {"answer": {"must_contain": ["total"], "must_not_contain": ["error"]},
                                                   "format": {"json_schema": SCHEMA}})
    assert r["verdict"] == "pass"
    assert [c["check"] for c in r["checks"]] == ["must_contain", "must_not_contain", "json_schema"]


@pytest.mark.parametrize("schema", [{"$ref": "#"}, {"allOf": [{"$ref": "#"}]},
                                    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"not": {"$ref": "#/$defs/a"}}},
                                     "$ref": "#/$defs/a"},
                                    {"anyOf": [{"type": "string"}, {"$ref": "#"}]}])
def test_a_schema_that_loops_on_itself_is_named_not_blamed_on_the_answer(schema):
    """A $ref back to itself without stepping into the answer makes jsonschema recurse forever on a
    one-level answer: that is the case's schema to fix (ScorerInputError, as an unresolvable $ref
    is), not "the answer's JSON is nested too deeply", which pointed at an answer of depth 1."""
    with pytest.raises(ScorerInputError, match=r"never finishes on this answer: a \$ref leads back"):
        schema_check('{"total": 1}', schema)
    # the same loop behind an anyOf branch an answer satisfies first is never reached: scored as usual
    if "anyOf" in schema:
        assert schema_check('"x"', schema)["verdict"] == "pass"


def test_a_recursive_tree_schema_still_scores_a_deep_answer():
    tree = {"type": "array", "items": {"$ref": "#"}}
    assert schema_check("[" * 60 + "]" * 60, tree)["verdict"] == "pass"
    assert schema_check("[" * 60 + "1" + "]" * 60, tree)["verdict"] == "fail"


def test_the_linter_names_a_loop_every_answer_meets_and_lets_a_tree_schema_be():
    from assay.lint import expect_rules
    from assay.schemas.user import always_loops

    def lint(schema):
        out = []
        expect_rules._check_format({"json_schema": schema}, "expect.format",
                                   lambda code, msg, **kw: out.append((code, msg)))
        return out
    looped = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}
    (code, msg), = lint(looped)
    assert code == "bad_expect_shape"
    assert "loops on every answer (#/$defs/a -> #/$defs/b -> #/$defs/b/allOf/0 -> #/$defs/a)" in msg
    assert lint({"$ref": "#"})[0][1].startswith("expect.format.json_schema loops on every answer (# -> #)")
    # a loop an answer may never reach (behind anyOf/not) or one that steps into the answer is not an error
    for fine in ({"anyOf": [{"type": "string"}, {"$ref": "#"}]}, {"not": {"type": "string", "$ref": "#"}},
                 {"type": "array", "items": {"$ref": "#"}},
                 {"$defs": {"n": {"type": "integer"}}, "allOf": [{"$ref": "#/$defs/n"}, {"$ref": "#/$defs/n"}]}):
        assert lint(fine) == [] and always_loops(fine) is None, fine
    # and every loop the linter names is one the scorer meets on any answer
    for answer in ('1', '"x"', '{"a": [1]}'):
        with pytest.raises(ScorerInputError, match="never finishes"):
            schema_check(answer, looped)


def test_a_draft_named_wrong_is_an_input_error_not_the_latest_draft_in_silence():
    """jsonschema validates a schema whose `$schema` it does not know under the latest draft (a
    DeprecationWarning at most), where draft-07's tuple `items` + `additionalItems` mean nothing:
    the extra item below would pass. A typo'd draft URI is the case's to fix, and both the scorer and
    validate_cases.py say so, naming the drafts there are."""
    from assay.lint import expect_rules

    tuple_of_one = {"type": "array", "items": [{"type": "integer"}], "additionalItems": False}
    right = dict(tuple_of_one, **{"$schema": "http://json-schema.org/draft-07/schema#"})
    assert schema_check("[1, 2]", right)["verdict"] == "fail"     # draft-07 read as draft-07
    assert schema_check("[1]", right)["verdict"] == "pass"
    for typo in ("http://json-schema.org/draft7/schema#", "https://json-schema.org/draft-07/schema#", ""):
        schema = dict(tuple_of_one, **{"$schema": typo})
        with pytest.raises(ScorerInputError, match=r"is not a JSON Schema draft jsonschema knows; use one of .*"
                                                   r"http://json-schema.org/draft-07/schema#"):
            schema_check("[1, 2]", schema)
        out = []
        expect_rules._check_format({"json_schema": schema}, "expect.format",
                                   lambda code, msg, **kw: out.append((code, msg)))
        assert [code for code, _ in out] == ["bad_expect_shape"] and repr(typo) in out[0][1], out
    # the spellings jsonschema does know stay valid, with or without the empty fragment
    for known in ("http://json-schema.org/draft-07/schema", "https://json-schema.org/draft/2020-12/schema#"):
        assert schema_check("[1]", {"$schema": known, "type": "array"})["verdict"] == "pass"


def lint_schema(schema):
    from assay.lint import expect_rules
    out = []
    expect_rules._check_format({"json_schema": schema}, "expect.format", lambda code, msg, **kw: out.append((code, msg)))
    return out


def test_a_typod_schema_keyword_checks_nothing_so_the_linter_names_it():
    """JSON Schema ignores a key it does not know: `requird` asks for nothing and every answer passes,
    the schema's author never told. The scorer keeps JSON Schema's reading (that answer passes); the
    linter makes the near-miss of a checking keyword an ERROR (make_plan refuses the suite) and any
    other unknown key a WARN, wherever it sits among the subschemas."""
    loose = {"type": "object", "requird": ["total"]}
    assert schema_check('{"x": 1}', loose)["verdict"] == "pass"      # why the linter must say so
    (code, msg), = lint_schema(loose)
    assert code == "unknown_schema_keyword" and "at (root) has 'requird'" in msg and "did you mean 'required'?" in msg
    nested = {"type": "object", "properties": {"total": {"tyep": "integer"}},
              "$defs": {"a": {"minimun": 3}}, "anyOf": [{"maxItem": 2}, {"type": "object"}]}
    assert [(c, m.split(" has ")[0].split(" at ")[1], m.split("'")[1]) for c, m in lint_schema(nested)] == [
        ("unknown_schema_keyword", "/properties/total", "tyep"), ("unknown_schema_keyword", "/$defs/a", "minimun"),
        ("unknown_schema_keyword", "/anyOf/0", "maxItem")]
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"tyep": "integer"}],
              "additionalItems": False, "dependencies": {"a": ["b"]}}
    assert [m.split(" has ")[0] for _c, m in lint_schema(draft7)] == ["expect.format.json_schema at /items/0"]
    # not a checking keyword's near-miss: a WARN (OpenAPI's nullable says how to write it)
    warned = lint_schema({"type": "string", "nullable": True, "descripton": "d", "x-owner": "me"})
    assert [c for c, _m in warned] == ["ignored_schema_keyword"] * 3
    assert 'OpenAPI\'s nullable is "type": [<type>, "null"]' in warned[0][1] and "'description'" in warned[1][1]
    # property names, enum / const / default values and known annotations are not keywords
    fine = {"type": "object", "title": "t", "examples": [{}], "properties": {"requird": {"type": "string"}},
            "required": ["requird"], "enum": [{"tyep": 1}], "default": {"minimun": 1}, "$comment": "c",
            "patternProperties": {"^x": {"minLength": 1}}, "dependentSchemas": {"a": {"required": ["b"]}}}
    assert lint_schema(fine) == []
    # every draft's own words: draft-04's boolean exclusiveMinimum and `id`, draft-03's boolean required
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://example.invalid/s",
              "type": "number", "minimum": 0, "exclusiveMinimum": True}
    draft3 = {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object",
              "properties": {"a": {"type": "string", "required": True}}, "extends": {"type": "object"}}
    assert lint_schema(draft4) == [] and lint_schema(draft3) == []
    assert schema_check("0", draft4)["verdict"] == "fail"     # read as draft-04: the bound is exclusive


def test_a_must_contain_found_in_an_echoed_turn_is_unscorable_and_the_echo_recorded():
    """The answer is the user's turn word for word (whitespace aside): an entry found there was found in the
    question; an entry it lacks still fails, must_not_contain is scored as usual."""
    from assay.score.answer_leaf import echo_of
    echo = echo_of("Where is  my order ORD-7?", "Where is my order\nORD-7?", "question")
    assert echo == {"path": "question", "read": "Where is my order ORD-7?"}
    r = score_answer("Where is  my order ORD-7?", {"answer": {"must_contain": ["ORD-7", "shipped"],
                                                              "must_not_contain": ["refund"]}}, echo=echo)
    assert [c["status"] for c in r["checks"]] == ["unscorable", "fail", "pass"] and r["verdict"] == "fail"
    assert "(question) is the user's message word for word" in r["checks"][0]["reason"]
    assert r["answer_echo"] == dict(echo, entries=["ORD-7"])
    assert echo_of("It left the depot, ORD-7.", "Where is my order ORD-7?") is None
    assert echo_of("", "  ") is None
    assert "answer_echo" not in score_answer("ORD-7", {"answer": {"must_contain": ["x"]}},
                                             echo=echo_of("ORD-7", "ORD-7"))
