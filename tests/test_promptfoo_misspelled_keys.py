"""A test key promptfoo does not know is dropped by promptfoo, so a near miss of `assert` (`asserts:`,
`assertions:`) or of `vars` (`var:`) runs the test unchecked. The import took the same test as a
non-gating placeholder and IMPORT.md said "Nothing: every assertion ... was converted": beside one
real test the run passed, the gate read open and `pytest --assay` exited 0 on a check nobody made.
The import now refuses such a key (exit 2) naming the file, line, key and the key it meant; the same
for a top-level near miss of `tests` or `defaultTest`."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml

from helpers import run_script

HEAD = """prompts: ['{{question}}']
providers:
  - id: http
    config:
      url: http://127.0.0.1:9/chat
      method: POST
      headers: {Content-Type: application/json}
      body: {message: '{{prompt}}'}
      transformResponse: json.answer
"""
GOOD = """  - description: hours
    vars: {question: What are your hours?}
    assert: [{type: contains, value: 9 to 5}]
"""


def _import(tmp_path, text):
    cfg = tmp_path / "promptfooconfig.yaml"
    cfg.write_text(text)
    state = tmp_path / "s"
    return run_script("import_promptfoo", cfg, "--state-dir", state, "--app-url-env", "APP_URL"), state


def test_asserts_for_assert_is_refused_with_its_line_and_the_fix(tmp_path):
    imp, state = _import(tmp_path, HEAD + "tests:\n" + GOOD + """  - description: refund window
    vars: {question: How do I get a refund?}
    asserts:
      - {type: contains, value: 30 days}
""")
    assert imp.rc == 2, imp.stdout + imp.stderr
    assert imp.json["file"] == "promptfooconfig.yaml" and imp.json["line"] == 16, imp.json
    assert imp.json["key"] == "asserts", imp.json
    assert "did you mean 'assert'?" in imp.json["error"] and "rename it 'assert'" in imp.json["error"], imp.json
    assert not (state / "datasets").exists()


def test_a_misspelled_key_in_default_test_is_refused_too(tmp_path):
    imp, _ = _import(tmp_path, HEAD + "defaultTest:\n  assertions:\n    - {type: not-contains, value: Sorry}\n"
                     "tests:\n" + GOOD)
    assert imp.rc == 2, imp.stdout + imp.stderr
    assert imp.json["line"] == 11 and imp.json["key"] == "assertions", imp.json
    assert "defaultTest has the key 'assertions'" in imp.json["error"], imp.json


def test_promptfoo_test_keys_still_import(tmp_path):
    imp, _ = _import(tmp_path, HEAD + "tests:\n" + GOOD + """  - description: refund
    vars: {question: refund?}
    threshold: 0.5
    metadata: {area: billing}
    options: {}
    assert: [{type: contains, value: 5 days}]
""")
    assert imp.rc == 0, imp.stdout + imp.stderr
    assert imp.json["cases"] == 2 and imp.json["not_converted"] == [], imp.json


def test_default_tests_for_default_test_is_refused(tmp_path):
    """`defaultTests:` held a not-contains every test should meet; dropped, each test passed on its own checks."""
    imp, state = _import(tmp_path, HEAD + "defaultTests:\n  assert:\n    - {type: not-contains, value: Sorry}\n"
                         "tests:\n" + GOOD)
    assert imp.rc == 2, imp.stdout + imp.stderr
    assert (imp.json["line"], imp.json["key"]) == (10, "defaultTests"), imp.json
    assert "did you mean 'defaultTest'?" in imp.json["error"], imp.json
    assert not (state / "datasets").exists()


def test_test_for_tests_names_the_key_not_an_unset_var(tmp_path):
    imp, _ = _import(tmp_path, HEAD + "test:\n" + GOOD)
    assert imp.rc == 2, imp.stdout + imp.stderr
    assert (imp.json["line"], imp.json["key"]) == (10, "test"), imp.json
    assert "did you mean 'tests'?" in imp.json["error"], imp.json


def test_an_anchor_key_beside_tests_still_imports(tmp_path):
    imp, _ = _import(tmp_path, HEAD + "x-tests: &hours\n  question: What are your hours?\ntests:\n" + GOOD)
    assert imp.rc == 0, imp.stdout + imp.stderr


def test_a_test_whose_only_type_is_misspelt_stays_gating_and_is_refused_before_the_run(tmp_path):
    """`type: Contains` (promptfoo: "Unknown assertion type", the test fails) was imported as a non-gating
    placeholder: beside one real test `pytest --assay` passed both items and the gate read open. The case now
    keeps `gating: true` with the typo in not_converted, so the plan (here pytest's collection) is refused."""
    imp, state = _import(tmp_path, HEAD + "tests:\n" + GOOD + """  - description: refund window
    vars: {question: How do I get a refund?}
    assert: [{type: Contains, value: 30 days}]
""")
    assert imp.rc == 0, imp.stdout + imp.stderr
    cases = {c["title"]: c for c in (yaml.safe_load(f.read_text())
                                     for f in (state / "datasets" / "promptfoo").glob("*.yaml"))}
    typo = cases["refund window"]
    assert typo["gating"] is True and imp.json["non_gating"] == [], (typo, imp.json)
    (lost,) = typo["not_converted"]
    assert lost["source"] == "promptfooconfig.yaml:16" and "did you mean 'contains'?" in lost["why"], lost
    env = {**os.environ, "APP_URL": "http://127.0.0.1:9"}   # never called: the plan is refused first
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:langsmith_plugin", "-p", "no:cacheprovider",
                           "--assay", str(state), "--assay-mode", "smoke"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=600)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{typo['id']} [check_not_converted]" in proc.stdout and "Contains at promptfooconfig.yaml:16" in \
        proc.stdout, proc.stdout
    assert "passed" not in proc.stdout.splitlines()[-1], proc.stdout


def test_an_assertion_with_no_type_keeps_its_test_gating(tmp_path):
    """`{typ: contains, value: ...}`: no type, so promptfoo fails the test; it was a non-gating placeholder."""
    imp, state = _import(tmp_path, HEAD + "tests:\n" + GOOD + """  - description: refund window
    vars: {question: How do I get a refund?}
    assert: [{typ: contains, value: 30 days}]
""")
    assert imp.rc == 0, imp.stdout + imp.stderr
    assert imp.json["non_gating"] == [], imp.json
    (listed,) = imp.json["not_converted"]
    assert listed["line"] == 16 and "its keys: typ, value" in listed["why"], listed
    for f in (state / "datasets" / "promptfoo").glob("*.yaml"):
        assert yaml.safe_load(f.read_text())["gating"] is True, f.read_text()


def test_a_regex_javascript_rejects_keeps_its_test_gating(tmp_path):
    """`regex: "(?P<n>30) days"` (Python-only group syntax): promptfoo's JavaScript regex rejects it
    ("Invalid group") and the test fails whatever the answer; it was a non-gating placeholder that passed."""
    for pattern in ("(?P<n>30) days", "[30 days", "30++ days"):
        (tmp_path / str(len(pattern))).mkdir()
        imp, state = _import(tmp_path / str(len(pattern)), HEAD + "tests:\n" + GOOD + f"""  - description: refund window
    vars: {{question: How do I get a refund?}}
    assert: [{{type: regex, value: "{pattern}"}}]
""")
        assert imp.rc == 0 and imp.json["non_gating"] == [], (pattern, imp.stdout + imp.stderr)
        (listed,) = imp.json["not_converted"]
        assert listed["line"] == 16 and "JavaScript" in listed["why"], (pattern, listed)
        for f in (state / "datasets" / "promptfoo").glob("*.yaml"):
            assert yaml.safe_load(f.read_text())["gating"] is True, (pattern, f.read_text())


def test_a_latency_only_test_is_still_a_non_gating_placeholder(tmp_path):
    imp, _ = _import(tmp_path, HEAD + "tests:\n" + GOOD + """  - description: fast
    vars: {question: ping}
    assert: [{type: latency, threshold: 500}]
""")
    assert imp.rc == 0 and len(imp.json["non_gating"]) == 1, imp.stdout + imp.stderr


def test_an_empty_tests_file_or_list_is_named_in_words(tmp_path):
    """An empty test file read "a test: is a NoneType, not a mapping"; `tests: []` "no test could be imported; "
    with nothing after it."""
    (tmp_path / "tests.yaml").write_text("")
    imp, _ = _import(tmp_path, HEAD + "tests: file://tests.yaml\n")
    assert imp.rc == 2, imp.stdout + imp.stderr
    assert "tests.yaml: tests file://tests.yaml: the file holds no test (it is empty)" in imp.json["error"], imp.json
    assert "NoneType" not in imp.stdout, imp.stdout
    imp, _ = _import(tmp_path, HEAD + "tests: []\n")
    assert imp.rc == 2, imp.stdout + imp.stderr
    assert "the config's tests are empty (tests: []); add the tests" in imp.json["error"], imp.json


def test_an_assertion_value_reading_an_unset_var_is_listed_not_converted_to_its_rest(tmp_path):
    """`not-contains: "I am {{ bda }}"` with the test setting `bad`: promptfoo renders the typo empty and checks
    "I am "; the import wrote that as the case's must_not_contain, gating, nothing listed."""
    imp, state = _import(tmp_path, HEAD + "tests:\n" + """  - description: no apology
    vars: {question: refund?, bad: sorry}
    assert: [{type: contains, value: days}, {type: not-contains, value: "I am {{bda}}"}]
""")
    assert imp.rc == 0, imp.stdout + imp.stderr
    (listed,) = imp.json["not_converted"]
    assert listed["line"] == 13 and "reads {{ bda }}, which this test does not set" in listed["why"], listed
    assert "the test sets 'bad': a misspelt var?" in listed["why"], listed
    (case,) = [yaml.safe_load(f.read_text()) for f in (state / "datasets" / "promptfoo").glob("*.yaml")]
    assert case["gating"] is True and case["not_converted"][0]["check"] == "not-contains", case
    assert case["expect"]["answer"] == {"must_contain": ["days"]}, case
