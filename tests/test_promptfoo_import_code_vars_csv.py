"""promptfoo configs whose code rewrites the output or the vars, and CSV test files promptfoo refuses:
imported and run as a user (import_promptfoo, convert_suite, make_plan, run_cases, gate as subprocesses,
against a real HTTP app on a real port).

- A provider's own `transform:` (beside its `config`) rewrites every output before the assertions. The
  import read only `config`, so `contains: "42"` was checked on the whole answer: an app whose
  reasoning says 42 and whose FINAL line says 41 passed, where promptfoo (checking the FINAL part) fails.
- `options.transformVars` (a test's or defaultTest's) computes vars with code before the prompt and the
  assertions are rendered. The import rendered the vars as written: `contains: "Order {{order_id}}"`
  became `contains: "Order "`, which any answer naming an order passes.
- A CSV row with more or fewer fields than the header (a value with an unquoted comma) or a quote left
  open: promptfoo refuses the file; the import read on, shifting the fields (the tail of a question
  became the `__expected` check, the real check was dropped).
"""

from __future__ import annotations

import json

import yaml

from fakeapp import Reply, run_as_a_user
from helpers import run_script

PROVIDER = """providers:
  - id: http
    label: support-bot
@OWN@    config:
      url: http://127.0.0.1:9/chat
      method: POST
      headers: {Content-Type: application/json}
      body: {message: '{{prompt}}'}
      transformResponse: json.answer
"""


def app(req) -> Reply:
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = (req.json or {}).get("message", "")
    if "6*7" in msg:
        return Reply(200, {"answer": "Thinking: 6*7 is 42, minus one... FINAL: 41"})
    if "order" in msg.lower():
        return Reply(200, {"answer": "Order A-7 ships tomorrow."})
    return Reply(200, {"answer": "Sorry, I cannot help with that."})


def _import(tmp_path, config: str, csv: str | None = None):
    cfg = tmp_path / "pf" / "promptfooconfig.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(config)
    if csv is not None:
        (cfg.parent / "tests.csv").write_text(csv)
    state = tmp_path / "app" / ".assay"
    imp = run_script("import_promptfoo", cfg, "--state-dir", state, "--app-url-env", "APP_URL")
    cases = {c["title"]: c for c in (yaml.safe_load(f.read_text())
                                     for f in (state / "datasets" / "promptfoo").glob("*.yaml"))} \
        if imp.rc == 0 else {}
    return state, imp, cases


def _verdicts(run_dir, cases: dict) -> dict[str, str]:
    by_id = {c["id"]: t for t, c in cases.items()}
    return {by_id[json.loads(line)["case_id"]]: json.loads(line)["verdict"]
            for line in (run_dir / "verdicts.jsonl").read_text().splitlines() if line.strip()}


def test_a_provider_transform_is_carried_by_every_case_it_changes(tmp_path):
    config = ("prompts: ['{{question}}']\n"
              + PROVIDER.replace("@OWN@", "    transform: \"output.split('FINAL:')[1]\"\n    prompts: [other]\n")
              + "tests:\n  - description: arithmetic\n    vars: {question: what is 6*7}\n"
                "    assert: [{type: contains, value: '42'}]\n")
    state, imp, cases = _import(tmp_path, config)
    assert imp.rc == 0, imp.stdout + imp.stderr
    listed = {(s["line"], s["what"]): s["why"] for s in imp.json["not_converted"]}
    assert "rewrites the app's output with code before every assertion" in listed[(5, "provider transform")]
    assert "promptfoo runs only the prompts it names" in listed[(6, "provider prompts")], listed
    (lost,) = cases["arithmetic"]["not_converted"]
    assert lost["check"] == "provider transform" and lost["source"] == "promptfooconfig.yaml:5", lost
    assert "delete this entry to gate on the whole answer" in lost["why"], lost
    # make_plan refuses the case until a person decides (never a silent pass on the untransformed answer)
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout + r.stderr
    plan = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                      "-o", work / "plan.json")
    refused = {f["case_id"] for f in plan.json["errors"] if f["code"] == "check_not_converted"}
    assert plan.rc != 0 and refused == {cases["arithmetic"]["id"]}, plan.stdout


def test_transform_vars_keeps_its_tests_out_and_says_where(tmp_path):
    head = "prompts: ['{{question}}']\n" + PROVIDER.replace("@OWN@", "")
    tests = ("tests:\n"
             "  - description: order status\n    vars: {question: 'Where is my order?', num: 7}\n"
             "    options: {transformVars: '{ ...vars, order_id: \"B-\" + vars.num }'}\n"
             "    assert: [{type: contains, value: 'Order {{order_id}}'}]\n"
             "  - description: out of scope\n    vars: {question: 'Write me a poem'}\n"
             "    assert: [{type: not-icontains, value: sorry}]\n")
    state, imp, cases = _import(tmp_path, head + tests)
    assert imp.rc == 0, imp.stdout + imp.stderr
    # the test whose vars code computes is not imported (it would check "Order ", which "Order A-7" passes)
    assert set(cases) == {"out of scope"}, {t: c["expect"] for t, c in cases.items()}
    listed = {(s["line"], s["what"]): s["why"] for s in imp.json["not_converted"]}
    assert "options.transformVars (promptfooconfig.yaml:14) rewrites the vars" in listed[(12, "a test")], listed
    assert "its test is not imported" in listed[(15, "contains")], listed
    run_dir, gate = run_as_a_user(tmp_path, state, app, "APP_URL")
    assert _verdicts(run_dir, cases) == {"out of scope": "fail"}
    assert gate.rc == 1, gate.stdout
    # defaultTest's transformVars reaches every test: nothing to import, and the error names its line
    default = "defaultTest:\n  options:\n    transformVars: '{ ...vars, order_id: \"B-\" + vars.num }'\n"
    _, imp, _ = _import(tmp_path / "d", head + default + tests)
    assert imp.rc == 2 and "promptfooconfig.yaml:19: a test: options.transformVars (promptfooconfig.yaml:13)" \
        in imp.json["error"], imp.stdout


def test_a_csv_row_promptfoo_refuses_is_an_error_naming_its_line(tmp_path):
    config = "prompts: ['{{question}}']\n" + PROVIDER.replace("@OWN@", "") + "tests: file://tests.csv\n"
    header = "question,__expected,__description\n"
    # an unquoted comma: promptfoo refuses (Invalid Record Length); read on, " ask nicely" became the check
    _, imp, _ = _import(tmp_path / "a", config, header + "Poem please,ok,fine\n"
                        "Write a poem, ask nicely,not-icontains:sorry,no apology\n")
    assert imp.rc == 2, imp.stdout + imp.stderr
    assert imp.json["file"] == "tests.csv" and imp.json["line"] == 3, imp.json
    assert "4 field(s), but the header (line 1) names 3" in imp.json["error"], imp.json
    assert 'in double quotes ("a, b")' in imp.json["error"], imp.json
    _, imp, _ = _import(tmp_path / "b", config, header + "Hi,contains:x\n")      # a field short
    assert imp.rc == 2 and imp.json["line"] == 2 and "2 field(s)" in imp.json["error"], imp.stdout
    _, imp, _ = _import(tmp_path / "c", config, header + 'Hi,contains:x,one\n\n"Write a poem,x,y\nnext,row,z\n')
    assert imp.rc == 2 and imp.json["line"] == 4 and "never closed" in imp.json["error"], imp.stdout
    # quoted as promptfoo needs (a stray quote inside an unquoted value it reads as text too): imported and run
    state, imp, cases = _import(tmp_path / "d", config, header + '"Write a poem, ask nicely",'
                                '"not-icontains:sorry",no apology\nSay "hi" to order 7,contains:A-7,quoted\n')
    assert imp.rc == 0, imp.stdout + imp.stderr
    assert cases["no apology"]["expect"]["answer"]["must_not_contain"] == ["/(?i)sorry/"], cases
    assert cases["quoted"]["input"]["messages"][0]["content"] == 'Say "hi" to order 7', cases
    run_dir, gate = run_as_a_user(tmp_path / "d", state, app, "APP_URL")
    assert _verdicts(run_dir, cases) == {"no apology": "fail", "quoted": "pass"}
    assert gate.rc == 1, gate.stdout


def test_weight_zero_and_disable_default_asserts_are_not_failed_on(tmp_path):
    """promptfoo passes an assertion of `weight: 0` whatever the output, and a test with
    `options.disableDefaultAsserts: true` runs without defaultTest's assertions. The import made both
    gating checks: the case failed where promptfoo passes (and its note said weights never change pass/fail)."""
    config = ("prompts: ['{{question}}']\n" + PROVIDER.replace("@OWN@", "")
              + "defaultTest:\n  assert: [{type: not-icontains, value: sorry}]\n"
                "tests:\n  - description: refusal expected\n    vars: {question: 'Write a poem'}\n"
                "    options: {disableDefaultAsserts: true}\n"
                "    assert:\n      - {type: contains, value: Sorry}\n"
                "      - {type: icontains, value: poem, weight: 0}\n"
                "  - description: answers\n    vars: {question: 'Where is my order?'}\n"
                "    assert: [{type: contains, value: A-7}]\n")
    state, imp, cases = _import(tmp_path, config)
    assert imp.rc == 0, imp.stdout + imp.stderr
    assert cases["refusal expected"]["expect"] == {"answer": {"must_contain": ["Sorry"]}}, cases
    assert "notes" not in cases["refusal expected"], cases["refusal expected"]
    assert cases["answers"]["expect"] == {"answer": {"must_not_contain": ["/(?i)sorry/"], "must_contain": ["A-7"]}}
    listed = {(s["line"], s["what"]): s["why"] for s in imp.json["not_converted"]}
    assert "weight 0 whatever the output" in listed[(19, "icontains weight 0")], listed
    run_dir, gate = run_as_a_user(tmp_path, state, app, "APP_URL")
    assert _verdicts(run_dir, cases) == {"refusal expected": "pass", "answers": "pass"}
    assert gate.rc == 0, gate.stdout
