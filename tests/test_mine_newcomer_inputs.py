"""mine_traces.py on what a newcomer first points it at (references/suite-tools.md, mine_traces.py).

- a directory of span files instead of the files: it was an internal error and a traceback
  (IsADirectoryError); now exit 2 naming the directory and the glob to give instead;
- an empty span file (the app's exporter never wrote, or the wrong file): it was exit 0 with
  nothing written and "review each case under datasets/mined/"; now exit 2 naming the file;
- traces whose LLM span holds the user's message in an older attribute form mine_traces does not
  read (`gen_ai.prompt.0.content` with no traceloop marker): still exit 0 and counted in
  `without_user_text`, never guessed, but `next` says why nothing was proposed and what to turn on,
  where it told the user to review cases that were never written.
"""

from __future__ import annotations

import json

from helpers import run_script
from otlp_util import span, write_spans
from test_mine_rerun import _state


def test_a_directory_or_an_empty_file_is_a_named_error(tmp_path):
    state = _state(tmp_path)
    spans_dir = tmp_path / "spans"
    spans_dir.mkdir()
    r = run_script("mine_traces", spans_dir, "--state-dir", state)
    assert r.rc == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert r.json["error"] == f"{spans_dir}: is a directory; give the span files in it (e.g. {spans_dir}/*.jsonl)"
    empty = spans_dir / "app.otlp.jsonl"
    empty.write_text("\n")
    r = run_script("mine_traces", empty, "--state-dir", state)
    assert r.rc == 2 and r.json["file"] == str(empty), r.stdout + r.stderr
    assert r.json["error"].startswith(f"{empty}: the file is empty (no spans): point the app's OTLP JSON file "
                                      "exporter at it"), r.json
    assert not (state / "datasets").exists()


def test_traces_without_a_user_message_it_reads_say_why_nothing_was_proposed(tmp_path):
    state = _state(tmp_path)
    path = tmp_path / "old.otlp.jsonl"
    older = {"gen_ai.system": "openai", "gen_ai.prompt.0.role": "user",
             "gen_ai.prompt.0.content": "What is the status of invoice INV-2001?",
             "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "INV-2001 is paid: 50.00 USD."}
    write_spans(path, [span(trace_id="a" * 32, operation="chat", model="gpt-4o", attributes=older)])
    r = run_script("mine_traces", path, "--state-dir", state)
    assert r.rc == 0, r.stdout + r.stderr
    out = r.json
    assert (out["traces"], out["without_user_text"], out["written"]) == (1, 1, [])
    assert out["next"].startswith("nothing proposed: none of the 1 trace(s) carried the user's message where "
                                  "mine_traces reads it"), out["next"]
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true" in out["next"]
    assert "INV-2001" not in json.dumps(out)
