"""The promptfoo config shapes of issue 52 (part B), imported, and run side by side with promptfoo.

tests/fixtures/promptfoo/shapes/promptfooconfig.yaml holds every shape in one config: YAML
1.1 booleans and numbers (`Yes`, `off`, `1:30`, `017` are what js-yaml reads), a prompt
given as `{id: file://chat.json, label}` whose file is a chat with a system message and
content parts, a prompt rendering the test's own `vars._conversation`, CSV `__metadata:`
columns, a grader provider, a `metric`, a per-test header `X-User: "{{user}}"` and `$ref`s
to an assertion template. form.yaml is an http provider with a form body (refused whole).

The import checks run without promptfoo. The side-by-side runs ONE `promptfoo eval` of the
config and one assay run (import, convert, plan, run) against the same app, and compares
every case's verdict over the checks the import converted exactly: they must all agree.
It skips, saying why, when promptfoo (`make promptfoo`) cannot be installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fakeapp import FakeApp, Reply
from helpers import ROOT, run_script
from test_promptfoo_side_by_side import _env, promptfoo

pytestmark = pytest.mark.slow     # many import subprocesses (and, here, one promptfoo eval)
SHAPES = ROOT / "tests" / "fixtures" / "promptfoo" / "shapes"


def user_text(message) -> str:
    """What the app reads: a text, or (promptfoo parses a chat prompt into the body) the last
    user message of a message list, its text parts joined by a newline."""
    if isinstance(message, list):
        users = [m for m in message if isinstance(m, dict) and m.get("role") == "user"]
        content = users[-1]["content"] if users else ""
        return "\n".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content)
    return str(message)


def echo(req) -> Reply:
    if req.method != "POST":
        return Reply(200, {"ok": True})
    doc = req.json if isinstance(req.json, dict) else {}
    user = next((v for k, v in req.headers.items() if k.lower() == "x-user"), "")
    answer = "You said: " + user_text(doc.get("message"))
    return Reply(200, {"answer": answer + (f" [user={user}]" if user and user != "anon" else "")})


def _copy(tmp: Path, url: str) -> Path:
    folder = tmp / "shapes"
    shutil.copytree(SHAPES, folder)
    cfg = folder / "promptfooconfig.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("APP_URL", url), encoding="utf-8")
    return cfg


@pytest.fixture(scope="module")
def app():
    with FakeApp() as running:
        running.handler = echo
        yield running


@pytest.fixture(scope="module")
def imported(tmp_path_factory, app):
    """One import of the shapes config, pointed at the module's echo app (the side-by-side runs it)."""
    tmp = tmp_path_factory.mktemp("shapes")
    cfg = _copy(tmp, app.url)
    res = run_script("import_promptfoo", cfg, "--state-dir", tmp / "s")
    assert res.rc == 0, res.stdout + res.stderr
    state = tmp / "s"
    cases = {}
    for f in (state / "datasets" / "promptfoo").glob("*.yaml"):
        case = yaml.safe_load(f.read_text(encoding="utf-8"))
        cases[case["id"]] = case
    record = json.loads((state / "import.json").read_text(encoding="utf-8"))
    by = {(record["cases"][cid]["prompt"], c["title"]): c for cid, c in cases.items()}
    return {"out": res.json, "state": state, "by": by, "record": record, "config": cfg,
            "adapter": yaml.safe_load((state / "adapter.yaml").read_text(encoding="utf-8"))}


def _turn(case) -> str:
    return case["input"]["messages"][0]["content"]


def test_every_test_under_every_prompt_is_a_case(imported):
    # 3 prompts (one given as {id: file://chat.json, label}) x 9 tests (7 inline, 2 CSV rows)
    assert imported["out"]["cases"] == 27, imported["out"]
    assert {p for p, _ in imported["by"]} == {"plain", "chat", "history"}


@pytest.mark.parametrize("title,text", [("Yes stays text", "Yes"), ("off stays text", "off"),
                                        ("sexagesimal stays text", "1:30"), ("a leading zero is decimal", "17")])
def test_yaml_scalars_are_read_as_promptfoo_reads_them(imported, title, text):
    case = imported["by"][("plain", title)]
    assert _turn(case) == text
    assert case["instantiation_params"]["word"] in (text, int(text) if text.isdigit() else text)


def test_a_chat_file_gives_its_user_text(imported):
    case = imported["by"][("chat", "Yes stays text")]
    assert _turn(case) == "Yes"                      # not the JSON document
    assert "system message is not sent" in case["notes"] and "whole message list" in case["notes"]


def test_conversation_given_as_data_is_rendered(imported):
    turn = _turn(imported["by"][("history", "conversation given as data")])
    assert turn == "History:\nQ: hi A: hello\nQ: price? A: 10 USD\nNow: and now?"


def test_metadata_grader_metric_and_per_test_header(imported):
    case = imported["by"][("plain", "csv yes")]
    assert 'promptfoo metadata: {"topic": "greeting"}' in case["notes"]
    assert imported["record"]["cases"][case["id"]]["metadata"] == {"topic": "greeting"}
    listed = {s["what"] for s in imported["out"]["not_converted"]}
    assert {"options.provider openai:gpt-4o-mini", "metric who"} <= listed, listed
    assert imported["adapter"]["invocation"]["identity_map"] == {"user": "X-User"}
    assert "X-User" not in imported["adapter"]["invocation"].get("headers", {})
    assert imported["by"][("plain", "per-test header")]["identity"] == {"user": "alice"}
    assert imported["by"][("plain", "Yes stays text")]["identity"] == {"user": "anon"}


def test_a_ref_to_an_assertion_template_is_the_template(imported):
    case = imported["by"][("plain", "ref template and metric")]
    assert "/(?i)YOU SAID/" in case["expect"]["answer"]["must_contain"]
    assert not any("has no type" in s["why"] or "$ref" in s["why"] for s in imported["out"]["not_converted"])


def test_a_form_body_refuses_the_provider_whole(tmp_path):
    res = run_script("import_promptfoo", SHAPES / "form.yaml", "--state-dir", tmp_path / "s")
    assert res.rc == 0, res.stdout
    assert res.json["adapter"] == "skeleton", res.json
    refused = [s for s in res.json["not_converted"] if s["what"] == "provider http"]
    assert refused and "form" in refused[0]["why"], res.json["not_converted"]
    adapter = (tmp_path / "s" / "adapter.yaml").read_text(encoding="utf-8")
    assert "urlencoded" not in adapter


def test_yaml_core_schema_unit():
    from assay.core.strict_yaml import YamlTimestamp, loads
    value, _ = loads("a: [Yes, off, y, 1:30, 1_000, 017, 0o17, 0x1F, TRUE, ~, 1e3, 2024-01-02, '017']\n",
                     "x.yaml", core=True)
    assert value["a"] == ["Yes", "off", "y", "1:30", "1_000", 17, 15, 31, True, None, 1000.0, "2024-01-02", "017"]
    assert isinstance(value["a"][11], YamlTimestamp)
    assert loads("a: [Yes, 017]\n", "x.yaml")[0] == {"a": [True, 15]}     # the other readers keep YAML 1.1


def test_assay_agrees_with_promptfoo_on_every_shape(tmp_path, imported):
    binary, why = promptfoo()
    if binary is None:
        pytest.skip(why)
    cfg, state = imported["config"], imported["state"]
    out_json = tmp_path / "pf.json"
    # promptfoo's eval and assay's run go at the same time (the app answers both): one wait, not two
    with open(tmp_path / "pf.log", "w") as log:
        proc = subprocess.Popen([str(binary), "eval", "-c", str(cfg), "-o", str(out_json), "--no-cache",
                                 "--no-table", "--no-progress-bar", "-j", "4"], cwd=tmp_path, env=_env(tmp_path),
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            work = tmp_path / "work"
            assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
            plan = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                              "--timeout-s", "120", "-o", work / "plan.json")     # a loaded machine is slow
            assert plan.rc == 0, plan.stdout
            run_dir = state / "reports" / plan.json["run_id"]
            run = run_script("run_cases", "--plan", work / "plan.json", "--out", run_dir, timeout=600)
            assert run.rc == 0, run.stdout + run.stderr
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert out_json.is_file(), (tmp_path / "pf.log").read_text()[-3000:]
    pf = json.loads(out_json.read_text(encoding="utf-8"))["results"]["results"]

    record = json.loads((state / "import.json").read_text(encoding="utf-8"))
    exact = {(m["case"], m["type"]) for m in record["mapped"] if m["exact"]}
    ids = {}
    for f in (state / "datasets" / "promptfoo").glob("*.yaml"):
        case = yaml.safe_load(f.read_text(encoding="utf-8"))
        ids[(record["cases"][case["id"]]["prompt"], case["title"])] = case["id"]
    verdicts = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines() if line.strip()]
    assay = {v["case_id"]: v["verdict"] for v in verdicts}
    why = {v["case_id"]: json.dumps(v)[:400] for v in verdicts}
    compared = []
    for result in pf:
        cid = ids[(result["prompt"]["label"], result["testCase"]["description"])]
        parts = [c for c in result["gradingResult"]["componentResults"] if (cid, c["assertion"]["type"]) in exact]
        assert parts, (result["prompt"]["label"], result["testCase"]["description"])
        theirs = "pass" if all(c["pass"] for c in parts) else "fail"
        compared.append((result["prompt"]["label"], result["testCase"]["description"], theirs, assay[cid]))
    disagree = [c + (why[ids[c[:2]]],) for c in compared if c[2] != c[3]]
    assert not disagree, disagree
    assert len(compared) == 27
    assert {c[2] for c in compared} == {"pass", "fail"}


def test_a_yaml_date_is_listed_not_changed(tmp_path):
    # js-yaml reads 2024-01-02 as a Date: promptfoo prints and compares it as JavaScript's Date text
    (tmp_path / "c.yaml").write_text('prompts: ["{{q}}", "{{q}} on {{d}}"]\ntests:\n  - description: dated\n'
                                     "    vars: {q: hi, d: 2024-01-02}\n"
                                     "    assert: [{type: contains, value: 2024-01-02}, {type: contains, value: hi}]\n",
                                     encoding="utf-8")
    res = run_script("import_promptfoo", tmp_path / "c.yaml", "--state-dir", tmp_path / "s")
    assert res.rc == 0 and res.json["cases"] == 1, res.stdout
    why = {s["what"]: s["why"] for s in res.json["not_converted"]}
    assert "YAML date" in why["contains"] and "YAML date" in why["test x prompt {{q}} on {{d}}"], why


def test_an_assertion_grader_is_listed(tmp_path):
    (tmp_path / "c.yaml").write_text('prompts: ["{{q}}"]\ntests:\n  - vars: {q: hi}\n    assert:\n'
                                     "      - {type: llm-rubric, value: is polite, provider: openai:gpt-4o,"
                                     " rubricPrompt: Grade it}\n", encoding="utf-8")
    res = run_script("import_promptfoo", tmp_path / "c.yaml", "--state-dir", tmp_path / "s")
    assert res.rc == 0, res.stdout
    listed = {s["what"] for s in res.json["not_converted"]}
    assert {"llm-rubric provider openai:gpt-4o", "llm-rubric rubricPrompt Grade it"} <= listed, listed


def test_no_method_is_promptfoos_get_and_listed(tmp_path):
    # promptfoo sends GET when the http provider names no method (the body is not sent)
    (tmp_path / "c.yaml").write_text('prompts: ["{{q}}"]\nproviders: [{id: http, config: {url: "http://127.0.0.1:9/chat",'
                                     ' body: {message: "{{prompt}}"}}}]\ntests: [{vars: {q: hi}}]\n', encoding="utf-8")
    res = run_script("import_promptfoo", tmp_path / "c.yaml", "--state-dir", tmp_path / "s")
    assert res.rc == 0, res.stdout
    why = {s["what"]: s["why"] for s in res.json["not_converted"]}
    assert "promptfoo's default is GET" in why["http method GET"], why
