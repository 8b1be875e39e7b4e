"""promptfoo configs a team would have, imported and run as a user: a check promptfoo makes must not
be lost (or loosened) on the way, or a run promptfoo fails passes in assay.

contains-any / contains-all given as one text: promptfoo splits it on commas except inside a
"quoted" field (its parseCommaSeparatedValues, the same in a YAML value and a CSV `__expected`
cell). The import split on every comma, so `not-contains-any: '"Sorry, I can''t", unable'`
became `"Sorry` and `I can't"` (quote marks included): an app answering "Sorry, I can't ..."
passed the case that promptfoo fails. The pipeline runs as the README says (import_promptfoo,
convert_suite, make_plan, run_cases, gate as subprocesses) against a real HTTP app.
"""

from __future__ import annotations

import json

import yaml

from fakeapp import Reply, run_as_a_user
from helpers import run_script

CONFIG = """description: support bot
prompts: ['{{question}}']
providers:
  - id: http
    config:
      url: http://127.0.0.1:9/chat
      method: POST
      headers: {Content-Type: application/json}
      body: {message: '{{prompt}}'}
      transformResponse: json.answer
tests:
  - description: no apology (yaml)
    vars: {question: Cancel my order}
    assert:
      - type: not-contains-any
        value: '"Sorry, I can''t", unable'
  - description: both phrases (yaml)
    vars: {question: Opening hours}
    assert:
      - type: icontains-all
        value: '"Mon, Tue", "9am"'
  - file://tests.csv
"""
CSV = ('question,__expected,__description\n'
       'Cancel my order please,"not-contains-any:""Sorry, I can\'t"",unable",no apology (csv)\n'
       'Broken quote,"contains-any:""Sorry, I can\'t",unterminated (csv)\n')


def app(req) -> Reply:
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = (req.json or {}).get("message", "")
    if "hours" in msg:
        return Reply(200, {"answer": "Open mon, tue from 9AM."})
    return Reply(200, {"answer": "Sorry, I can't do that."})


def test_a_quoted_comma_in_a_contains_any_text_stays_in_one_value(tmp_path):
    cfg_dir = tmp_path / "pf"
    cfg_dir.mkdir()
    (cfg_dir / "promptfooconfig.yaml").write_text(CONFIG)
    (cfg_dir / "tests.csv").write_text(CSV)
    state = tmp_path / "app" / ".assay"
    imp = run_script("import_promptfoo", cfg_dir / "promptfooconfig.yaml", "--state-dir", state,
                     "--app-url-env", "APP_URL")
    assert imp.rc == 0, imp.stdout + imp.stderr
    cases = {c["title"]: c for c in (yaml.safe_load(f.read_text())
                                     for f in (state / "datasets" / "promptfoo").glob("*.yaml"))}
    for title in ("no apology (yaml)", "no apology (csv)"):
        assert cases[title]["expect"]["answer"]["must_not_contain"] == ["Sorry, I can't", "unable"], cases[title]
    # promptfoo refuses an unterminated quote (it fails the test): listed with the fix, never read as checked
    (lost,) = cases["unterminated (csv)"]["not_converted"]
    assert "unterminated quoted field" in lost["why"] and "close the quotes" in lost["why"], lost
    assert lost["source"].startswith("tests.csv:3"), lost
    (state / "datasets" / "promptfoo" / f"{cases['unterminated (csv)']['id']}.yaml").unlink()

    run_dir, gate = run_as_a_user(tmp_path, state, app, "APP_URL")
    verdicts = {json.loads(line)["case_id"]: json.loads(line)["verdict"]
                for line in (run_dir / "verdicts.jsonl").read_text().splitlines() if line.strip()}
    by_title = {cases[t]["id"]: t for t in cases}
    got = {by_title[cid]: v for cid, v in verdicts.items()}
    # promptfoo: the answer holds "Sorry, I can't" (fail twice); "mon, tue" and "9am" case-insensitively (pass)
    assert got == {"no apology (yaml)": "fail", "no apology (csv)": "fail", "both phrases (yaml)": "pass"}, got
    assert gate.rc == 1, gate.stdout


def test_an_assert_that_is_not_a_list_is_listed_not_dropped_in_silence(tmp_path):
    """`assert: {type: ...}` (one mapping) or `assert: file://asserts.yaml`: promptfoo refuses the config
    ("tests[0].assert must be an array"). The import dropped them without a word: the case became a
    non-gating placeholder whose note sends the reader to IMPORT.md, which listed nothing."""
    cfg = tmp_path / "promptfooconfig.yaml"
    cfg.write_text(CONFIG.split("tests:")[0] + "tests:\n"
                   "  - description: one mapping\n    vars: {question: a}\n    assert: {type: contains, value: ok}\n"
                   "  - description: a file\n    vars: {question: b}\n    assert: file://asserts.yaml\n")
    (tmp_path / "asserts.yaml").write_text("- {type: contains, value: ok}\n")
    state = tmp_path / "s"
    imp = run_script("import_promptfoo", cfg, "--state-dir", state)
    assert imp.rc == 0, imp.stdout + imp.stderr
    listed = {(s["line"], s["what"]): s["why"] for s in imp.json["not_converted"]}
    assert set(listed) == {(14, "assert"), (17, "assert")}, listed
    assert "is a mapping, not a list" in listed[(14, "assert")] and "is a text, not a list" in listed[(17, "assert")]
    assert "write the assertions as a list" in listed[(17, "assert")]
    text = (state / "IMPORT.md").read_text()
    assert "promptfooconfig.yaml:14 `assert`" in text and "promptfooconfig.yaml:17 `assert`" in text, text


RAG = CONFIG.split("tests:")[0].replace("transformResponse: json.answer", "transformResponse: @TRANSFORM@") + """tests:
  - description: refund window
    vars: {question: What is the refund window?}
    assert:
      - type: contains
        value: 30 days
  - description: no pii
    vars: {question: Who am I?}
    assert:
      - type: not-contains
        value: alice@example.com
"""


def rag_app(req) -> Reply:
    """The answer field says one thing; the rest of the body holds what a whole-body check would find."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    if "refund" in (req.json or {}).get("message", ""):
        return Reply(200, {"answer": "I don't know.", "context": "Policy: refunds within 30 days."})
    return Reply(200, {"data": {"reply": "You are a customer."}, "answer": "You are a customer.",
                       "user": "alice@example.com"})


def _import_rag(tmp_path, transform: str):
    cfg = tmp_path / "pf" / "promptfooconfig.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(RAG.replace("@TRANSFORM@", json.dumps(transform)))
    state = tmp_path / "app" / ".assay"
    imp = run_script("import_promptfoo", cfg, "--state-dir", state, "--app-url-env", "APP_URL")
    assert imp.rc == 0, imp.stdout + imp.stderr
    cases = {c["title"]: c for c in (yaml.safe_load(f.read_text())
                                     for f in (state / "datasets" / "promptfoo").glob("*.yaml"))}
    return state, imp, cases


def test_a_transform_response_function_reading_one_field_reads_that_field(tmp_path):
    """`transformResponse: "(json, text) => json.answer"` made assay's answer the whole body: promptfoo
    fails `contains: 30 days` on the answer "I don't know.", assay passed it on the body's context field."""
    state, imp, cases = _import_rag(tmp_path, "(json, text) => json.answer")
    assert not imp.json["not_converted"], imp.json["not_converted"]
    assert yaml.safe_load((state / "adapter.yaml").read_text())["invocation"]["response_body"] == \
        '{"answer": "<answer>"}'
    run_dir, gate = run_as_a_user(tmp_path, state, rag_app, "APP_URL")
    verdicts = {json.loads(line)["case_id"]: json.loads(line)["verdict"]
                for line in (run_dir / "verdicts.jsonl").read_text().splitlines() if line.strip()}
    # promptfoo: "I don't know." lacks "30 days" (fail); "You are a customer." has no e-mail (pass)
    assert verdicts == {cases["refund window"]["id"]: "fail", cases["no pii"]["id"]: "pass"}, verdicts
    assert gate.rc == 1, gate.stdout
    # the other plain forms, any parameter names, map the same way
    for n, (form, body) in enumerate([("(r) => { return r.data.reply; }", '{"data": {"reply": "<answer>"}}'),
                                      ("function (json, text) { return json.answer; }", '{"answer": "<answer>"}')]):
        other, imp, _ = _import_rag(tmp_path / str(n), form)
        assert not imp.json["not_converted"], (form, imp.json["not_converted"])
        assert yaml.safe_load((other / "adapter.yaml").read_text())["invocation"]["response_body"] == body, form


def test_a_transform_response_that_is_other_code_is_carried_by_every_case_it_loosens(tmp_path):
    """Code that does more than read a field (`json.answer.trim()`): assay's answer is the whole body, so
    every answer check is looser than promptfoo's. Each case carries it in not_converted (make_plan
    refuses) with the provider's line and the fix; IMPORT.md lists it once."""
    state, imp, cases = _import_rag(tmp_path, "(json, text) => json.answer.trim()")
    for title in ("refund window", "no pii"):
        (lost,) = cases[title]["not_converted"]
        assert lost["check"] == "http transformResponse" and lost["source"] == "promptfooconfig.yaml:10", lost
        assert "is code" in lost["why"] and "response_body path" in lost["why"], lost
        assert "delete this entry to gate on the whole body" in lost["why"], lost
    assert "promptfooconfig.yaml:10 `http transformResponse`" in (state / "IMPORT.md").read_text()
    _plan_refuses_every_case(state, cases)


def test_a_latency_threshold_is_per_case_in_promptfoo_so_the_case_carries_it(tmp_path):
    """promptfoo's `latency` fails the one test whose call is slow; assay has no per-case latency bound and
    the import wrote only the run's p95 budget, so one slow case among twenty passed. Each case with a
    latency assertion (its own or defaultTest's) carries it in not_converted, besides the budget."""
    cfg = tmp_path / "promptfooconfig.yaml"
    cfg.write_text(CONFIG.split("tests:")[0] + "defaultTest:\n  assert:\n    - {type: latency, threshold: 500}\n"
                   "tests:\n" + "".join(f"  - description: q{n}\n    vars: {{question: Q{n}}}\n"
                                        "    assert: [{type: contains, value: ok}]\n" for n in range(3))
                   + "  - description: slow\n    vars: {question: Slow}\n"
                   "    assert: [{type: contains, value: ok}, {type: latency, threshold: 300}]\n")
    state = tmp_path / "s"
    imp = run_script("import_promptfoo", cfg, "--state-dir", state)
    assert imp.rc == 0, imp.stdout + imp.stderr
    assert yaml.safe_load((state / "profile.yaml").read_text())["budgets"]["max_p95_latency_s"] == 0.3
    cases = {c["title"]: c for c in (yaml.safe_load(f.read_text())
                                     for f in (state / "datasets" / "promptfoo").glob("*.yaml"))}
    for title, case in cases.items():
        lost = {e["source"]: e for e in case.get("not_converted", [])}
        assert set(lost) == ({"promptfooconfig.yaml:13", "promptfooconfig.yaml:26"} if title == "slow"
                             else {"promptfooconfig.yaml:13"}), (title, lost)
        assert all(e["check"] == "latency per call" and "no per-case latency bound" in e["why"]
                   and "delete this entry" in e["why"] for e in lost.values()), lost
    assert "takes over 300 ms" in cases["slow"]["not_converted"][1]["why"]
    _plan_refuses_every_case(state, cases)


def _plan_refuses_every_case(state, cases: dict) -> None:
    """convert_suite.py, then make_plan.py refusing each imported case on its not_converted entry."""
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout + r.stderr
    plan = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                      "-o", work / "plan.json")
    refused = {f["case_id"] for f in plan.json["errors"] if f["code"] == "check_not_converted"}
    assert plan.rc != 0 and refused == {c["id"] for c in cases.values()}, plan.stdout
