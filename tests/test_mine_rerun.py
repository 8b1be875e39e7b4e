"""mine_traces.py run a second time over the same spans, after a person reviewed the first batch.

A newcomer mines a span file, edits a proposed case (rewrites its input, accepts it, makes it
gating), then mines the same file again (or a later export that still holds that trace). The
trace was mined already: its case must be left as the person left it, byte for byte, and the
output must say the trace was already mined. Before the fix the second run wrote the case
afresh under the same id (c-<sha of trace id>): the accepted, gating case silently became
pending and non-gating again, so the gate lost a check a person had turned on.
"""

from __future__ import annotations

import json
import shutil

import yaml

from helpers import ROOT, run_script
from otlp_util import agent_spans, span, write_spans


def _spans(path, requests):
    """One trace per request: invoke_agent > chat (captured messages) + execute_tool spans."""
    for n, (agent, user, answer, tools) in enumerate(requests, 1):
        tid = f"{n:032x}"
        spans = agent_spans(tid, agent, tools, t0=1_700_000_000_000_000_000 + n * 10**10, llm_tokens=None)
        root = spans[0]
        messages = {"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}])}
        chat = span(trace_id=tid, parent_span_id=root["spanId"], operation="chat", model="m", input_tokens=10,
                    output_tokens=5, start_ns=1_700_000_000_000_000_000 + n * 10**10 + 500_000,
                    end_ns=1_700_000_000_000_000_000 + n * 10**10 + 900_000, attributes=messages)
        write_spans(path, [root, chat, *spans[1:]])


REQUESTS = [
    ("billing", "What is the total of invoice INV-1001?", "Invoice INV-1001 totals 120.00 USD.",
     [("lookup_invoice", {"invoice_id": "INV-1001"}, {"total": 120})]),
    ("billing", "hi there", "Hello! How can I help?", []),
]


def _state(tmp_path):
    state = tmp_path / "s"
    state.mkdir()
    for name in ("adapter.yaml", "profile.yaml"):
        shutil.copy(ROOT / "examples/helpdesk/.assay" / name, state / name)
    return state


def test_second_mine_keeps_a_reviewed_case_and_says_it_was_mined(tmp_path):
    spans = tmp_path / "spans.jsonl"
    _spans(spans, REQUESTS)
    state = _state(tmp_path)
    first = run_script("mine_traces", spans, "--state-dir", state)
    assert first.rc == 0, first.stdout + first.stderr
    assert len(first.json["written"]) == 2, first.stdout
    mined = {yaml.safe_load((state / rel).read_text())["input"]["messages"][0]["content"]: state / rel
             for rel in first.json["written"]}
    hello = mined["hi there"]
    text = hello.read_text()
    edited = (text.replace("content: hi there", "content: Send me a copy of my latest invoice as a PDF")
              .replace("status: pending", "status: accepted\n  by: a reviewer").replace("gating: false", "gating: true"))
    assert edited != text
    hello.write_text(edited)

    second = run_script("mine_traces", spans, "--state-dir", state)
    assert second.rc == 0, second.stdout + second.stderr
    assert hello.read_text() == edited, "the reviewed case was overwritten by the second mine"
    assert second.json["written"] == [], second.stdout
    already = {d["trace_id"] for d in second.json["already_mined"]}
    assert already == {f"{1:032x}", f"{2:032x}"}, second.stdout
    assert second.json["duplicates"] == [], second.stdout


def test_a_mined_case_moved_out_of_mined_is_not_proposed_again(tmp_path):
    spans = tmp_path / "spans.jsonl"
    _spans(spans, REQUESTS[1:])
    state = _state(tmp_path)
    first = run_script("mine_traces", spans, "--state-dir", state)
    assert first.rc == 0, first.stdout + first.stderr
    (rel,) = first.json["written"]
    moved = state / "datasets" / "accepted.yaml"
    text = (state / rel).read_text().replace("content: hi there", "content: Which plan am I on and what does it cost")
    moved.write_text(text)
    (state / rel).unlink()
    second = run_script("mine_traces", spans, "--state-dir", state)
    assert second.rc == 0, second.stdout + second.stderr
    assert second.json["written"] == [], second.stdout
    assert not (state / rel).exists(), "the moved case came back as a second case of the same id"
