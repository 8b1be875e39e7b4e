"""A promptfoo `regex` is a JavaScript RegExp and `is-json` is JSON.parse: an imported case must fail where
promptfoo fails.

Read by Python as written, `^Paris$` passes "Paris\\n", `\\d` passes Arabic-Indic digits and `.` passes a
carriage return, all of which promptfoo fails; assay's json_schema check also reads a fenced block and
Python's NaN, which JSON.parse refuses, and ignores a schema's `format`, which promptfoo's ajv checks.
The end-to-end test imports a config of such tests as a user runs it, runs it against a real local app
and gates: every one of them fails (or, for `format`, is refused until a person decides), and the gate
is closed. The dialect table is checked against Node's own RegExp when `node` is on PATH.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from fakeapp import FakeApp, Reply
from helpers import run_script

ANSWERS = {
    "trailing": "Paris\n", "arabic": "\u0664\u0662", "crlf": "Paris\rFrance", "exact": "Paris",
    "fenced": 'Sure:\n```json\n{"name": "Ada", "age": 36}\n```', "nan": '{"score": NaN}',
    "bare": '{"name": "Ada", "age": 36, "note": "a: NaN"}', "email": '{"email": "not-an-email"}',
}
CONFIG = """prompts: ["{{{{q}}}}"]
providers:
  - id: {url}/chat
    config:
      method: POST
      headers: {{Content-Type: application/json}}
      body: {{message: "{{{{prompt}}}}"}}
      transformResponse: json.reply
tests:
  - {{description: dollar, vars: {{q: trailing}}, assert: [{{type: regex, value: "^Paris$"}}]}}
  - {{description: digit, vars: {{q: arabic}}, assert: [{{type: regex, value: "^\\\\d+$"}}]}}
  - {{description: dot, vars: {{q: crlf}}, assert: [{{type: regex, value: "Paris.France"}}]}}
  - {{description: fenced, vars: {{q: fenced}}, assert: [{{type: is-json}}]}}
  - {{description: nan, vars: {{q: nan}}, assert: [{{type: is-json}}]}}
  - {{description: object, vars: {{q: fenced}}, assert: [{{type: equals, value: {{name: Ada, age: 36}}}}]}}
  - {{description: regex ok, vars: {{q: exact}}, assert: [{{type: regex, value: "^\\\\w+$"}}]}}
  - {{description: json ok, vars: {{q: bare}}, assert: [{{type: is-json, value: {{required: [name]}}}}]}}
  - {{description: email, vars: {{q: email}}, assert: [{{type: is-json, value: {{properties: {{email: {{format: email}}}}}}}}]}}
"""
FAILS = {"dollar", "digit", "dot", "fenced", "nan", "object"}
PASSES = {"regex ok", "json ok"}


def test_imported_regex_and_json_checks_fail_where_promptfoo_fails(tmp_path):
    with FakeApp() as app:
        app.handler = lambda req: Reply(200, {"reply": ANSWERS.get((req.json or {}).get("message"), "?")})
        cfg = tmp_path / "pf" / "promptfooconfig.yaml"
        cfg.parent.mkdir()
        cfg.write_text(CONFIG.format(url=app.url), encoding="utf-8")
        state, work = tmp_path / "s", tmp_path / "s" / "work"
        imp = run_script("import_promptfoo", cfg, "--state-dir", state)
        assert imp.rc == 0, imp.stdout + imp.stderr
        listed = [(x["line"], x["what"]) for x in imp.json["not_converted"]]
        assert listed == [(18, "is-json format")], imp.stdout     # the format is listed, the schema kept
        cases = {}
        for f in (state / "datasets" / "promptfoo").glob("*.yaml"):
            case = yaml.safe_load(f.read_text(encoding="utf-8"))
            cases[case["title"]] = (f, case)
        assert cases["email"][1]["expect"]["format"]["json_schema"]["properties"]["email"] == {"format": "email"}
        assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
        refused = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                             "-o", work / "plan.json")
        assert refused.rc != 0 and "check_not_converted" in refused.stdout and "is-json format" in refused.stdout
        f, case = cases["email"]               # the person accepts the loss, as docs/importing.md says
        del case["not_converted"]
        f.write_text(yaml.safe_dump(case, sort_keys=False), encoding="utf-8")
        assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
        plan = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                          "--timeout-s", "60", "-o", work / "plan.json")
        assert plan.rc == 0, plan.stdout + plan.stderr
        assert "catastrophic_regex" not in plan.stderr, plan.stderr
        run_dir = state / "reports" / plan.json["run_id"]
        run = run_script("run_cases", "--plan", work / "plan.json", "--out", run_dir, timeout=300)
        assert run.rc == 0, run.stdout + run.stderr
    verdicts = {json.loads(line)["case_id"]: json.loads(line)["verdict"]
                for line in (run_dir / "verdicts.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()}
    got = {title: verdicts[case["id"]] for title, (_, case) in cases.items()}
    assert {t for t, v in got.items() if v == "fail"} == FAILS, got
    assert PASSES <= {t for t, v in got.items() if v == "pass"}, got
    gate = run_script("gate", run_dir)
    assert gate.rc == 1, gate.stdout


# (pattern, text): node decides the truth; the import's Python pattern must agree on every pair
PAIRS = [(p, t) for p in ["^Paris$", "Paris.France", r"^\d+$", r"\bcat\b", r"[\w-]+@x", r"^\s*$", "a{,3}",
                          r"(?<y>\d)-\k<y>", "[^]", "x[]", r"[\d.]+$", "^(foo|bar)$"]
         for t in ["Paris", "Paris\n", "Paris\rFrance", "Paris France", "\u0664\u0662", "42", "caté cat",
                   "écat", "a_b-c@x", "\ufeff", "\x1c", "a{,3}", "aaa", "7-7", "x", "1.5\n", "foo", "bar\n"]]


def test_the_regex_rewrite_agrees_with_javascript():
    from assay.importers.pf_regex import js_to_python_regex
    from assay.score.answer import score_answer
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: the JavaScript side of the dialect table is not checked")
    script = "const p=JSON.parse(require('fs').readFileSync(0,'utf8'));" \
             "console.log(JSON.stringify(p.map(([r,t])=>new RegExp(r).test(t))))"
    js = json.loads(subprocess.run([node, "-e", script], input=json.dumps(PAIRS), capture_output=True, text=True,
                                   timeout=120, check=True).stdout)
    wrong = []
    for (pattern, text), want in zip(PAIRS, js):
        py, why = js_to_python_regex(pattern)
        assert why is None, (pattern, why)
        got = score_answer(text, {"answer": {"must_contain": [f"/{py}/"]}})["verdict"] == "pass"
        if got != want:
            wrong.append((pattern, text, want, py))
    assert not wrong, wrong
    for python_only in ["(?i)paris", r"\AParis", r"Paris\Z", "a++", "(?P<n>a)", "(?#c)a", "(?>a)"]:
        py, why = js_to_python_regex(python_only)
        assert py is None and why, python_only
