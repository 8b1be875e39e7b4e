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
