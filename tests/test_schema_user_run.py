"""A run whose answers all satisfy their expect.format.json_schema never imports jsonschema (run_cases.py
as a user runs it, with `-X importtime`); a failing answer still gets jsonschema's own message."""

from __future__ import annotations

import json
import subprocess
import sys

from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan
from helpers import ROOT

SCHEMA = {"type": "object", "required": ["n", "tag"], "additionalProperties": False,
          "properties": {"n": {"type": "integer", "minimum": 1}, "tag": {"enum": ["a", "b"]},
                         "items": {"type": "array", "items": {"$ref": "#/$defs/word"}}},
          "$defs": {"word": {"type": "string", "minLength": 1.0}}}


def echo_json(req):
    """The app answers the user's message itself (a JSON document)."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": (req.json or {}).get("message")})


def run(tmp_path, messages):
    state = make_state(tmp_path)
    cases = [case(f"c-aaaa000{i}", m, expect={"format": {"json_schema": SCHEMA}}) for i, m in enumerate(messages)]
    with FakeApp(echo_json) as app:
        plan = make_plan(state, cases, app_url=app.url)
        out = state / "reports" / plan["run_id"]
        proc = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "scripts" / "run_cases.py"),
                               "--plan", str(write_plan(state, plan)), "--out", str(out)],
                              capture_output=True, text=True, timeout=120)
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return proc, imported, out


def test_passing_answers_do_not_import_jsonschema(tmp_path):
    proc, imported, out = run(tmp_path, ['{"n": 1, "tag": "a"}', '{"n": 2.0, "tag": "b", "items": ["x", "é"]}'])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "assay.schemas.user" in imported   # the fast path ran (so the check below can fail)
    assert not {m for m in imported if m.split(".")[0] in ("jsonschema", "referencing", "rpds")}, sorted(imported)
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["summary"]["failures"] == 0


def test_a_failing_answer_reports_jsonschemas_message(tmp_path):
    proc, imported, out = run(tmp_path, ['{"n": 1, "tag": "a"}', '{"n": 0, "tag": "c", "items": [""]}'])
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]   # smoke: a soft gate
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["summary"]["failures"] == 1
    assert "jsonschema" in imported
    text = "".join(p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl"))
    for message in ("items/0: '' should be non-empty", "n: 0 is less than the minimum of 1",
                    "tag: 'c' is not one of ['a', 'b']"):
        assert message in text, message


def test_a_long_unbroken_answer_after_a_fence_is_scored_in_linear_time(tmp_path):
    """An answer that is ``` and then 1 MB of digits on one line (no newline, not JSON): the search for fenced
    blocks re-read the line once per split of its language word (quadratic: ~22 s at 200 KB, ~10 min at 1 MB),
    and once per later ``` on a last line; the run now ends as any other (the timeout is a hang's bound) and
    the layer fails, the answer holding no JSON."""
    state = make_state(tmp_path)
    blob = "```" + "1234567890" * 100_000

    def answer(req):
        return Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, {"message": blob})
    cases = [case("c-long0001", "the digits", expect={"format": {"json_schema": SCHEMA}})]
    with FakeApp(answer) as app:
        plan = make_plan(state, cases, app_url=app.url)
        out = state / "reports" / plan["run_id"]
        proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_cases.py"), "--plan",
                               str(write_plan(state, plan)), "--out", str(out), "--progress", "never"],
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["summary"]["failures"] == 1
