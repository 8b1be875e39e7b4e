"""validate_cases.py: every code has a case that triggers it and a near miss that does not.

Per-case codes run as two suites through the script (one subprocess each, fast); suite-level
codes use small suites. Every finding must name its source YAML file.
"""

from __future__ import annotations

import copy
import json

import pytest

from fixtures_authoring import convert, make_state, run_inproc
from helpers import run_script

from assay.lint.engine import lint_suite
from assay.lint.findings import CODES

BASE = {
    "id": "c-base", "unit": "billing", "split": ["full", "smoke"], "category": "happy", "test_type": "MFT",
    "template_id": None, "review": {"status": "accepted", "by": "Dana Whitfield"},
    "input": {"messages": [{"role": "user", "content": "What is the total of invoice INV-1001?"}]},
    "expect": {"route": "billing", "answer": {"must_contain": ["120.00"]}},
}
MATRIX = {"answer_quality": {"enabled": True}, "routing": {"enabled": True},
          "execution": {"enabled": False, "blocked_by": "no oracle"}}
SCORING = {"record_id_pattern": r"INV-\d{4}"}


def turns(n, **extra):
    out = [{"user": f"turn {i}"} for i in range(n)]
    if extra:
        out[-1].update(extra)
    return out


def conv(turn_list, **inp):
    return {"input": {"turns": turn_list, **inp}}


SIM = {"persona": "A terse customer.", "goal": "Get a refund.", "stop_when": "The refund is confirmed."}
SIM_EXPECT = {"tools": {"subset": ["issue_refund"]}}


def sim(expect_=None, **block):
    """A simulated-user case: input.simulated_user (SIM with `block` merged; a None value drops the key)."""
    merged = {k: v for k, v in {**SIM, **block}.items() if v is not None}
    return lambda c: c.update(input={"simulated_user": merged}, expect=expect_ or SIM_EXPECT)


def T(**kw):
    return lambda c: c.update(kw)


def expect(**kw):
    return lambda c: c.update(expect={**kw})


def drop(key):
    return lambda c: c.pop(key)


def answer(**kw):
    return lambda c: c.update(expect={"route": "billing", "answer": kw})


# code -> (mutation that triggers it, near-miss mutation that does not)
PER_CASE = {
    "unsafe_id": (T(id="../evil"), T(id="c-ok.v1_x")),
    "missing_split": (T(split=[]), T(split=["full"])),
    "bad_split": (T(split="full"), T(split=["smoke"])),
    "holdout_not_sealed": (T(split=["holdout", "full"]), T(split=["holdout"])),
    "bad_category": (T(category="happy-path"), T(category="edge")),
    "missing_test_type": (drop("test_type"), T(test_type="MFT")),
    "bad_test_type": (T(test_type="mft"), T(test_type="DIR", metamorphic_parent="c-base")),
    "missing_metamorphic_parent": (T(test_type="INV"), T(test_type="INV", metamorphic_parent="c-base")),
    "self_metamorphic_parent": (lambda c: c.update(test_type="INV", metamorphic_parent=c["id"]),
                                T(test_type="INV", metamorphic_parent="c-base")),
    "dangling_metamorphic_parent": (T(test_type="DIR", metamorphic_parent="c-nope"),
                                    T(test_type="DIR", metamorphic_parent="c-base")),
    "missing_template_id": (drop("template_id"), T(template_id=None)),
    "template_without_params": (T(template_id="t1"), T(template_id="t1", instantiation_params={"x": 1})),
    "params_without_template": (T(instantiation_params={"x": 1}), T(template_id=None)),
    "missing_input": (drop("input"), T()),
    "bad_messages": (T(input={"messages": "hi"}), T()),
    "turns_and_messages": (T(input={"turns": turns(2), "messages": BASE["input"]["messages"]}),
                           T(**conv(turns(2)))),
    "bad_turns": (T(input={"turns": "hi"}), T(**conv(turns(2)))),
    "single_turn_conversation": (T(**conv(turns(1))), T(**conv(turns(2)))),
    "long_conversation": (T(**conv(turns(9))), T(**conv(turns(8)))),
    "bad_turn": (T(**conv(["hello", {"user": "x"}])), T(**conv([{"user": "hello"}, {"user": "x"}]))),
    "turn_key_reserved": (T(**conv(turns(2, assistant="hi"))), T(**conv(turns(2)))),
    "unknown_turn_key": (T(**conv(turns(2, mood="sad"))), T(**conv(turns(2)))),
    "final_turn_expect": (T(**conv(turns(2, expect={"route": "billing"})))),
    "every_turn_collision": (T(**conv(turns(2), every_turn={"answer": {"must_contain": ["x"]}})),
                             T(**conv(turns(2), every_turn={"clarify_ok": True}))),
    "every_turn_without_turns": (T(input={**BASE["input"], "every_turn": {"route": "billing"}}),
                                 T(**conv(turns(2), every_turn={"clarify_ok": True}))),
    "simulated_and_scripted": (lambda c: (sim()(c), c["input"].update(turns=turns(2))), sim()),
    "bad_simulated_user": (sim(goal=None), sim(facts={"invoice_id": "INV-1002"}, max_turns=6, seed=7)),
    "unknown_simulated_key": (sim(mood="sad"), sim(facts=["my invoice is INV-1002"])),
    "scripted_only_expect": (sim(expect_={"route": "billing", "tools": {"subset": ["issue_refund"]}}),
                             sim(expect_={"authz": {"forbidden_record_ids": ["INV-2001"]}})),
    "multi_turn_canary": (T(split=["smoke", "canary"], **conv(turns(2))), T(**conv(turns(2)))),
    "multi_turn_in_messages": (T(input={"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}),
                               T(input={"messages": [{"role": "user", "content": "a"}]})),
    "not_one_user_message": (T(input={"messages": [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}]}),
                             T(input={"messages": [{"role": "user", "content": "b"}]})),
    "session_not_fresh": (T(input={**BASE["input"], "session": "sticky"}), T(input={**BASE["input"], "session": "fresh"})),
    "bad_expect_shape": (expect(route=5), expect(route="billing")),
    "unknown_expect_key": (expect(route="billing", answers={"must_contain": ["x"]}), expect(route="billing")),
    "no_graded_layer": (expect(http={"status": 200}, state={"x": 1}),
                        expect(http={"status": 200}, route="billing")),
    "bad_order_mode": (expect(tools={"order": ["a"], "order_mode": "strict"}),
                       expect(tools={"order": ["a"], "order_mode": "exact"})),
    "bad_call_scope": (expect(args={"lookup": {"id": "x", "calls": "some"}}),
                       expect(args={"lookup": {"id": "x", "calls": "all"}})),
    "vacuous_args_entry": (expect(args={"lookup": {"calls": "any"}}), expect(args={"lookup": {"id": {"present": True}}})),
    "both_scalar_and_rows": (expect(route="billing", result={"scalar": 1, "rows": []}),
                             expect(route="billing", result={"scalar": 0})),
    "neither_scalar_nor_rows": (expect(route="billing", result={"ordered": True}),
                                expect(route="billing", result={"rows": [{"a": 1}], "ordered": True})),
    "empty_columns": (expect(route="billing", result={"rows": [], "columns": []}),
                      expect(route="billing", result={"rows": [], "columns": ["a"]})),
    # the trial's green-that-should-be-red: a row key columns leaves out is never compared (the wrong
    # value passed); a tolerance at least the expected value lets 0 pass. "near zero" (expect 0) is fine
    "columns_mismatch": (expect(route="billing", result={"rows": [{"a": 1, "b": 2}], "columns": ["a"]}),
                         expect(route="billing", result={"rows": [{"a": 1, "b": 2}], "columns": ["b", "a"]})),
    "columns_mismatch#lacks": (expect(route="billing", result={"rows": [{"a": 1}], "columns": ["a", "z"]}),
                               expect(route="billing", result={"rows": [{"a": 1}, {"a": 2}], "columns": ["a"]})),
    "columns_mismatch#list_row": (expect(route="billing", result={"rows": [[1, 2]], "columns": ["a"]}),
                                  expect(route="billing", result={"rows": [[1, 2]]})),
    "tolerance_swallows_value": (expect(route="billing", result={"scalar": 0.5, "float_tolerance": 0.5}),
                                 expect(route="billing", result={"scalar": 0, "float_tolerance": 0.5})),
    "tolerance_swallows_value#rows": (
        expect(route="billing", result={"rows": [{"n": 120.0, "rate": 0.02}], "float_tolerance": 0.05}),
        expect(route="billing", result={"rows": [{"n": 120.0, "rate": 0.02, "ok": True}], "float_tolerance": 0.01})),
    "string_not_list": (answer(must_contain="120"), answer(must_contain=["120"])),
    "unquoted_bool_or_number": (answer(must_contain=[120, True]), answer(must_contain=["120", "true"])),
    "bad_regex": (answer(must_contain=["/(unclosed/"]), answer(must_contain=["/(closed)/"])),
    "vacuous_regex": (answer(must_contain=["/(refund)?/", "/.*$/", "/^/"]),
                      answer(must_contain=["/^$/", "/^refund/"], must_not_contain=["/.*/"])),
    # a trailing flag is unscorable on every answer (an ERROR); "/usr/bin" is text to the scorer, so not flagged
    "regex_trailing_flags": (answer(must_not_contain=["/abc/i"]), answer(must_contain=["/(?i)abc/", "/usr/bin"])),
    "catastrophic_regex": (answer(must_contain=["/(a+)+$/"]), answer(must_contain=["/a+$/"])),
    "echo_assertion": (answer(must_contain=["invoice INV-1001"]), answer(must_contain=["120.00"])),
    "unrecognizable_record_ids": (expect(authz={"allowed_record_ids": ["ABC-1"]}),
                                  expect(authz={"allowed_record_ids": ["INV-2001"]})),
    # wave 4 §1: a forbidden id the app never writes (inc-1002 for INC-1002) is an ERROR, never a pass
    "unobservable_record_ids": (expect(authz={"forbidden_record_ids": ["inv-2001"]}),
                                expect(authz={"forbidden_record_ids": ["INV-2001"]})),
    "reserved_expectation": (expect(route="billing", state={"rows": 1}), expect(route="billing")),
    "machine_accepted": (T(review={"status": "accepted", "by": "claude-generator"}),
                         T(review={"status": "accepted", "by": "Priya Natarajan"})),
    "no_op_pass": (T(no_op_expectation="pass"), T(no_op_expectation="pass", no_op_justification="refusal case")),
    # an imported gating case that lost a check (import_promptfoo.py's not_converted) passes without it
    "check_not_converted": (T(not_converted=[{"check": "javascript", "source": "tests/faq.yaml:9"}]),
                            T(not_converted=[{"check": "javascript", "source": "tests/faq.yaml:9"}], gating=False)),
    "source_derived_expectation": (T(notes="expected total read from the source code of billing.py"),
                                   T(notes="expected total from the invoice spec")),
    "filter_unattested": (T(filter={"self_contained": True}), T()),
    "available_tools_not_scoped": (T(available_tools=["a"]), T()),
    "excluded_tools_not_scored": (T(excluded_tools=["a"]), T()),
    "seed_state_not_loaded": (T(seed_state={"a": 1}), T()),
    "gating_unreviewed": (T(review={"status": "quarantined"}), T(review={"status": "quarantined"}, gating=False)),
    "canary_not_in_smoke": (T(split=["full", "canary"]), T(split=["smoke", "canary"])),
}
# The near miss for final_turn_expect: a checkpoint on an earlier turn.
PER_CASE["final_turn_expect"] = (
    T(**conv(turns(2, expect={"route": "billing"}))),
    T(**conv([{"user": "a", "expect": {"route": "billing"}}, {"user": "b"}])),
)
# With the matrix: a case grading only a disabled layer is no_graded_layer too.
DISABLED = ("no_graded_layer#disabled", expect(result={"scalar": 1}), expect(result={"scalar": 1}, route="billing"))


def build_suite(table):
    cases, sources = [copy.deepcopy(BASE)], {"c-base": "datasets/c-base.yaml"}
    for code, (bad, good) in table.items():
        for kind, mutate in (("bad", bad), ("ok", good)):
            case = copy.deepcopy(BASE)
            case["id"] = f"{kind}-{code.replace('#', '-')}"
            mutate(case)
            cases.append(case)
            sources[case["id"]] = f"datasets/{case['id']}.yaml"
    return {"cases": cases, "sources": sources, "unnamed_sources": [], "scoring": SCORING}


def run_validate(tmp_path, suite, *args, name="suite.json", subprocess=False):
    path = tmp_path / name
    path.write_text(json.dumps(suite))
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps(MATRIX))
    cap_args = ("--no-capabilities",) if "--no-capabilities" in args else ("--capabilities", caps)
    rest = [a for a in args if a != "--no-capabilities"]
    runner = run_script if subprocess else run_inproc
    return runner("validate_cases", "--cases", path, *cap_args, *rest)


def codes_by_case(out):
    found = {}
    for f in out["findings"]:
        found.setdefault(f["case_id"], set()).add(f["code"])
    return found


def test_every_per_case_code_triggers_and_near_misses_do_not(tmp_path):
    table = dict(PER_CASE)
    table[DISABLED[0]] = DISABLED[1:]
    suite = build_suite(table)
    # the unsafe id has no usable source key: give it one through sources anyway
    r = run_validate(tmp_path, suite, subprocess=True)
    assert r.rc == 1, r.stdout
    out = r.json
    found = codes_by_case(out)
    for code in table:
        real = code.split("#")[0]
        bad_id, ok_id = f"bad-{code.replace('#', '-')}", f"ok-{code.replace('#', '-')}"
        if real == "unsafe_id":
            bad_id = "../evil"
            ok_id = "c-ok.v1_x"
        assert real in found.get(bad_id, set()), f"{real} not raised for its trigger case ({found.get(bad_id)})"
        assert real not in found.get(ok_id, set()), f"{real} raised for its near miss ({found.get(ok_id)})"
    assert "c-base" not in found or not {f for f in found["c-base"]} - {"echo_assertion"}
    for f in out["findings"]:
        if f["case_id"] is not None and f["case_id"] in suite["sources"]:
            assert f["source"] == suite["sources"][f["case_id"]], f
    assert out["error_count"] == sum(1 for f in out["findings"] if f["severity"] == "ERROR")
    assert out["warn_count"] == len(out["findings"]) - out["error_count"]
    assert set(out) == {"harness_version", "strict", "capabilities_checked", "summary", "findings",
                        "error_count", "warn_count"}
    assert set(out["findings"][0]) == {"case_id", "source", "severity", "code", "message"}
    for f in out["findings"]:
        assert f["severity"] == CODES[f["code"]]


def test_missing_id_names_the_file_via_unnamed_sources(tmp_path):
    state = make_state(tmp_path, cases={"c-x": "split: [full]\ncategory: happy\n", "c-y": "id: c-y\n"}, dataset=None)
    work = convert(state)
    r = run_validate(tmp_path, json.loads((work / "suite.json").read_text()))
    missing = [f for f in r.json["findings"] if f["code"] == "missing_id"]
    assert missing and missing[0]["source"] == "datasets/c-x.yaml"
    assert not [f for f in r.json["findings"] if f["code"] == "missing_id" and f["source"] == "datasets/c-y.yaml"]


def lint(cases, **kw):
    kw.setdefault("matrix", {})
    return lint_suite({"cases": cases, "sources": {}, "unnamed_sources": [], "scoring": None, "label": "t"}, **kw)


def suite_codes(out):
    return {f["code"] for f in out["findings"]}


def variants(n, **kw):
    out = []
    for i in range(n):
        c = copy.deepcopy(BASE)
        c["id"] = f"c-{i:03d}"
        c.update(kw)
        out.append(c)
    return out


def test_duplicate_id_with_both_sources():
    cases = variants(2)
    cases[1]["id"] = "c-000"
    out = lint_suite({"cases": cases, "sources": {"c-000": "datasets/a.yaml"}, "unnamed_sources": [],
                      "scoring": None, "label": "t"}, matrix={})
    dup = [f for f in out["findings"] if f["code"] == "duplicate_id"]
    assert len(dup) == 1 and dup[0]["case_id"] == "c-000"
    assert "duplicate_id" not in suite_codes(lint(variants(2)))


def test_no_metamorphic_coverage():
    assert "no_metamorphic_coverage" in suite_codes(lint(variants(11)))
    assert "no_metamorphic_coverage" not in suite_codes(lint(variants(10)))
    cases = variants(11)
    cases[5].update(test_type="INV", metamorphic_parent="c-000")
    assert "no_metamorphic_coverage" not in suite_codes(lint(cases))


def test_all_one_off():
    assert "all_one_off" in suite_codes(lint(variants(5)))
    assert "all_one_off" not in suite_codes(lint(variants(4)))
    cases = variants(5)
    cases[0].update(template_id="t", instantiation_params={"a": 1})
    assert "all_one_off" not in suite_codes(lint(cases))


def test_category_skew():
    cases = variants(5)
    assert "category_skew" in suite_codes(lint(cases))
    for c, cat in zip(cases, ["happy", "happy", "edge", "oos", "noise"]):
        c["category"] = cat
    assert "category_skew" not in suite_codes(lint(cases))


def test_nothing_gates():
    assert "nothing_gates" in suite_codes(lint(variants(2, gating=False)))
    assert "nothing_gates" in suite_codes(lint(variants(2, split=["smoke", "canary"])))
    assert "nothing_gates" not in suite_codes(lint(variants(2)))


def test_not_a_matrix_key_and_enabled_layers():
    out = lint(variants(1), matrix={"answer": {"enabled": False}, "routing": {"enabled": True}})
    assert "not_a_matrix_key" in suite_codes(out)
    assert "answer" in out["summary"]["enabled_layers"]  # a row name switches nothing
    out = lint(variants(1), matrix={"answer_quality": {"enabled": False}, "routing": {"enabled": True}})
    assert "not_a_matrix_key" not in suite_codes(out)
    assert "answer" not in out["summary"]["enabled_layers"]


def test_capabilities_unchecked_and_gradedness_without_matrix(tmp_path):
    case = copy.deepcopy(BASE)
    case["expect"] = {"result": {"scalar": 1}}  # execution is disabled in MATRIX
    suite = {"cases": [case], "sources": {"c-base": "datasets/c-base.yaml"}}
    r = run_validate(tmp_path, suite, "--no-capabilities")
    assert r.rc == 0 and r.json["capabilities_checked"] is False
    assert suite_codes(r.json) == {"capabilities_unchecked"}
    assert r.json["summary"]["enabled_layers"] is None
    r = run_validate(tmp_path, suite)
    assert r.rc == 1 and "no_graded_layer" in suite_codes(r.json) and "capabilities_unchecked" not in suite_codes(r.json)


def test_strict_turns_warnings_into_errors(tmp_path):
    case = copy.deepcopy(BASE)
    case["filter"] = {}
    suite = {"cases": [case], "sources": {"c-base": "datasets/c-base.yaml"}}
    r = run_validate(tmp_path, suite)
    assert r.rc == 0 and r.json["warn_count"] == 1 and r.json["error_count"] == 0
    r = run_validate(tmp_path, suite, "--strict")
    assert r.rc == 1 and r.json["strict"] is True and r.json["error_count"] == 1 and r.json["warn_count"] == 0
    assert r.json["findings"][0]["severity"] == "ERROR" and r.json["findings"][0]["source"] == "datasets/c-base.yaml"


ADAPTER_STATUS_ONLY = {
    "adapter_version": 1,
    "invocation": {"mode": "http", "base_url": "${U}", "endpoint": "POST /c", "request_body": "{}",
                   "route_from_status": {"200": "answered", "400": "out_of_scope"}},
    "environment": {"kind": "mocked", "safe_to_attack": False},
}
ADAPTER_CODES = {
    "route_not_observable": (expect(route="billing"), expect(route="answered")),
    "attack_category_will_skip": (T(category="adversarial-refusal"), T(category="happy")),
    "clarify_unobservable": (expect(route="answered", clarify_ok=True), expect(route="answered", clarify_ok=False)),
    "turns_will_skip": (T(**conv(turns(2))), T()),
    "identity_will_skip": (T(identity={"role": "viewer"}), T(persona="viewer")),
}


def test_adapter_codes(tmp_path):
    base_route = BASE["expect"]
    BASE["expect"] = {"route": "answered", "answer": {"must_contain": ["120.00"]}}
    try:
        suite = build_suite(ADAPTER_CODES)
    finally:
        BASE["expect"] = base_route
    (tmp_path / "adapter.json").write_text(json.dumps(ADAPTER_STATUS_ONLY))
    r = run_validate(tmp_path, suite, "--adapter", tmp_path / "adapter.json")
    found = codes_by_case(r.json)
    for code in ADAPTER_CODES:
        assert code in found.get(f"bad-{code}", set()), (code, found.get(f"bad-{code}"))
        assert code not in found.get(f"ok-{code}", set()), (code, found.get(f"ok-{code}"))
    # without --adapter none of them is raised
    r = run_validate(tmp_path, suite)
    assert not suite_codes(r.json) & set(ADAPTER_CODES)


def test_route_observable_from_response_path_or_trace(tmp_path):
    suite = {"cases": [copy.deepcopy(BASE)], "sources": {}}
    adapter = copy.deepcopy(ADAPTER_STATUS_ONLY)
    del adapter["invocation"]["route_from_status"]
    (tmp_path / "a.json").write_text(json.dumps(adapter))
    assert "route_not_observable" in suite_codes(run_validate(tmp_path, suite, "--adapter", tmp_path / "a.json").json)
    adapter["traces"] = {"source": "otlp-file", "location": "${T}", "convention": "gen_ai", "correlation": "traceparent-echo"}
    (tmp_path / "a.json").write_text(json.dumps(adapter))
    assert "route_not_observable" not in suite_codes(run_validate(tmp_path, suite, "--adapter", tmp_path / "a.json").json)


def test_manifest_mismatch_and_match(tmp_path):
    state = make_state(tmp_path)
    work = convert(state)
    args = ("--capabilities", work / "capabilities.json", "--manifest", work / "manifest.json")
    r = run_inproc("validate_cases", "--cases", work / "suite.json", *args)
    assert r.rc == 0, r.stdout
    assert "manifest_mismatch" not in suite_codes(r.json)
    bad = json.loads((work / "manifest.json").read_text())
    bad["cases"] = 99
    bad["splits"]["smoke"] = 1
    bad["coverage_grid"]["by_unit"]["invoices"]["INV"] = 5
    (work / "manifest.json").write_text(json.dumps(bad))
    r = run_script("validate_cases", "--cases", work / "suite.json", *args)
    assert r.rc == 1
    mm = [f for f in r.json["findings"] if f["code"] == "manifest_mismatch"]
    assert len(mm) == 3 and all(f["source"] == "datasets/dataset.yaml" for f in mm)
    assert any("coverage_grid.by_unit.invoices.INV" in f["message"] for f in mm)


def test_hand_written_state_dir_validates_with_no_error(tmp_path):
    state = make_state(tmp_path)
    work = convert(state)
    r = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                   "--adapter", work / "adapter.json", "--manifest", work / "manifest.json")
    assert r.rc == 0, r.stdout
    assert r.json["error_count"] == 0
    s = r.json["summary"]
    assert s["cases"] == 10 and s["by_split"]["holdout"] == 1 and s["by_graded_layer"]["routing"] == 8
    assert set(s) == {"cases", "by_category", "by_test_type", "by_split", "one_off", "by_graded_layer",
                      "enabled_layers", "http_only"}


def test_input_forms_stdin_jsonl_list_and_single_case(tmp_path):
    case = copy.deepcopy(BASE)
    for text in (json.dumps([case]), json.dumps(case) + "\n", json.dumps({"cases": [case]})):
        r = run_inproc("validate_cases", "--cases", "-", "--no-capabilities", input=text)
        assert r.rc == 0 and r.json["summary"]["cases"] == 1, r.stdout


@pytest.mark.parametrize("args, needle", [
    (("--cases", "MISSING.json", "--no-capabilities"), "cannot read"),
    (("--cases", "BAD.json", "--no-capabilities"), "neither JSON nor JSONL"),
    (("--cases", "EMPTY.json", "--no-capabilities"), "no cases"),
    (("--cases", "NONOBJ.json", "--no-capabilities"), "not an object"),
    (("--cases", "OK.json",), "one of the arguments"),
    (("--cases", "OK.json", "--no-capabilities", "--capabilities", "OK.json"), "not allowed with"),
    (("--cases", "OK.json", "--capabilities", "BADCAPS.json"), "capability"),
    (("--cases", "OK.json", "--no-capabilities", "--adapter", "EMPTY.json"), "adapter"),
    (("--cases", "SHAPE.json", "--no-capabilities"), "gating"),
    (("--cases", "DEEP.json", "--no-capabilities"), "nested too deeply"),
])
def test_bad_input_is_exit_2_json(tmp_path, args, needle):
    files = {"BAD.json": "{nope", "EMPTY.json": json.dumps({"cases": []}), "NONOBJ.json": "[1]",
             "OK.json": json.dumps([BASE]), "BADCAPS.json": json.dumps({"routing": {"enabled": "yes"}}),
             "SHAPE.json": json.dumps([{**BASE, "gating": "yes"}]), "DEEP.json": "[" * 100000 + "]" * 100000}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    r = run_inproc("validate_cases", *[str(tmp_path / a) if a.endswith(".json") else a for a in args])
    assert r.rc == 2, r.stdout
    assert needle in r.json["error"], r.json


def test_identity_needs_a_header_for_each_key(tmp_path):
    adapter = copy.deepcopy(ADAPTER_STATUS_ONLY)
    adapter["invocation"]["identity_map"] = {"role": "X-Role"}
    (tmp_path / "a.json").write_text(json.dumps(adapter))
    mapped, unmapped, token = (copy.deepcopy(BASE) for _ in range(3))
    mapped.update(id="c-m", identity={"role": "viewer"})
    unmapped.update(id="c-u", identity={"role": "viewer", "user": "bob"})
    token.update(id="c-t", identity={"token_env": "USER_TOKEN"})
    out = run_validate(tmp_path, {"cases": [mapped, unmapped, token]}, "--adapter", tmp_path / "a.json").json
    found = codes_by_case(out)
    assert "identity_will_skip" in found.get("c-u", set())
    assert "identity_will_skip" not in found.get("c-m", set()) | found.get("c-t", set())


def test_echo_assertion_on_a_turn_checkpoint_reads_only_the_turns_sent_so_far():
    # issue 24 D8: turn 1's checkpoint asserted "refund"; only turn 2 mentions it (under --strict
    # the false warning failed CI)
    case = copy.deepcopy(BASE)
    case["input"] = {"turns": [{"user": "What happened to my order?", "expect": {"answer": {"must_contain": ["refund"]}}},
                               {"user": "Then I want a refund."}]}
    case["expect"] = {"answer": {"must_contain": ["processed"]}}
    out = lint([case])
    assert not [f for f in out["findings"] if f["code"] == "echo_assertion"], out["findings"]
    # the echo of the turn that was sent is still found, on the checkpoint and at the end
    case["input"]["turns"][0]["user"] = "What about my refund?"
    case["expect"] = {"answer": {"must_contain": ["want a refund"]}}
    echoes = [f for f in lint([case])["findings"] if f["code"] == "echo_assertion"]
    assert len(echoes) == 2, echoes


def test_an_answer_entry_finding_names_the_entrys_own_line(tmp_path):
    # before: a finding on one must_contain entry (vacuous_regex, bad_regex, an empty string, ...) carried no
    # key, so make_plan named the case's first line (its id), not the entry's
    from assay.lint.expect_rules import check_expect
    from assay.plan.lint_gate import located
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "c-x.yaml").write_text(
        "id: c-x\ninput:\n  turns:\n    - user: hi\n      expect:\n        answer:\n          must_contain:\n"
        "            - ok\n            - /.*/\n    - user: bye\n", encoding="utf-8")
    got = []
    check_expect({"answer": {"must_contain": ["ok", "/.*/"]}}, "input.turns[0].expect",
                 lambda code, msg, key=None: got.append({"code": code, "message": msg, "key": key}))
    assert [f["code"] for f in got] == ["vacuous_regex"]
    line = located(dict(got[0], source="datasets/c-x.yaml", case_id="c-x"), tmp_path)
    assert line.startswith("datasets/c-x.yaml:9: c-x [vacuous_regex] input.turns[0].expect.answer.must_contain[1] '/.*/'")
    # a misspelt input key: its line and the closest key (before: line 1 and no hint)
    case = copy.deepcopy(BASE)
    case["input"] = {"turn": [{"user": "a"}, {"user": "b"}]}
    out = lint_suite({"cases": [case], "sources": {"c-base": "datasets/c-x.yaml"}, "unnamed_sources": []}, matrix=MATRIX)
    bad = [f for f in out["findings"] if f["code"] == "bad_messages"][0]
    assert "input.turn is not an input key; did you mean 'turns'?" in bad["message"] and bad["key"] == "input.turn"


CONV_HEAD = ("id: {cid}\nunit: invoices\nsplit: [full, smoke]\ncategory: multistep\ntest_type: MFT\n"
             "template_id: null\nreview: {{status: accepted, by: Dana Reviewer}}\ninput:\n")   # input: is line 8


def test_conversation_findings_name_the_line_of_the_turn_they_are_about(tmp_path):
    # before: a finding on a conversation's turn named line 1 (the id) or the `input:` line: a typo in a
    # checkpoint's expect (`input.turns[0].expect.rout`), an expect on the last turn, a turn without user
    # text, turns beside messages, an echo in the final expect; each now names the line it is about
    cases = {
        "c-typo": CONV_HEAD + "  turns:\n    - user: which invoice is open?\n      expect:\n        rout: invoices\n"
                  "    - user: refund it\nexpect: {route: invoices}\n",
        "c-last": CONV_HEAD + "  turns:\n    - user: which invoice is open?\n    - user: refund it\n"
                  "      expect: {route: invoices}\nexpect: {route: invoices}\n",
        "c-noone": CONV_HEAD + "  turns:\n    - user: which invoice is open?\n    - assistant: INV-0001\n"
                   "    - user: refund it\nexpect: {route: invoices}\n",
        "c-mixed": CONV_HEAD + "  turns:\n    - user: which invoice is open?\n    - user: refund it\n"
                   "  messages: [{role: user, content: hi}]\nexpect: {route: invoices}\n",
        "c-echo": CONV_HEAD + "  turns:\n    - user: my invoice is INV-0042\n    - user: what is it?\n"
                  "expect:\n  route: invoices\n  answer:\n    must_contain:\n      - INV-0042\n",
        "c-nullexp": CONV_HEAD + "  turns:\n    - user: which invoice is open?\n      expect:\n"
                     "    - user: refund it\nexpect: {route: invoices}\n",
        "c-clash": CONV_HEAD + "  turns:\n    - user: which invoice is open?\n    - user: refund it\n"
                   "  every_turn: {route: invoices}\nexpect:\n  route: invoices\n",
    }
    cases = {cid: text.replace("{cid}", cid).replace("{{", "{").replace("}}", "}") for cid, text in cases.items()}
    state = make_state(tmp_path, cases=cases, dataset=None)
    work = convert(state)
    r = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                   "--adapter", work / "adapter.json")
    got = {(f["case_id"], f["code"]): f.get("line") for f in r.json["findings"] if f["case_id"]}
    assert got[("c-typo", "unknown_expect_key")] == 12, got       # `rout:` under turn 1's expect
    assert got[("c-last", "final_turn_expect")] == 12, got        # the last turn's `expect:`
    assert got[("c-noone", "bad_turn")] == 11, got                # `- assistant: INV-0001`
    assert got[("c-mixed", "turns_and_messages")] == 12, got      # `messages:`
    assert got[("c-echo", "echo_assertion")] == 16, got           # `- INV-0042` in the final expect
    assert got[("c-nullexp", "bad_expect_shape")] == 11, got      # turn 1's empty `expect:`
    assert got[("c-clash", "every_turn_collision")] == 14, got    # the top-level `route:` (was line 1)
    # make_plan names the same lines when it refuses the suite
    plan = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                      "-o", work / "plan.json")
    assert plan.rc == 2
    for where in ("datasets/c-typo.yaml:12: c-typo [unknown_expect_key]",
                  "datasets/c-last.yaml:12: c-last [final_turn_expect]",
                  "datasets/c-noone.yaml:11: c-noone [bad_turn]",
                  "datasets/c-nullexp.yaml:11: c-nullexp [bad_expect_shape]"):
        assert where in plan.json["error"], plan.json["error"]
