"""mine_traces.py on traces whose tool arguments hold secrets and personal data the value alone
does not show, on a request seen twice with its tools in two orders, and on a failed request.

A production trace's `execute_tool` span carries `{"api_key": "hunter2hunter2", "phone":
442079460958, "card": 4111111111111111, "ssn": "123-45-6789"}`: only the argument's name (or
its digits, for a number) says what it is. Before the fix each went into `expect.args` of the
case file as it was. The same question answered with `search_kb > get_article` in one trace and
`get_article > search_kb` in the other was proposed with `order_mode: in_order` (a case that fails
for an order production does not keep), and a failed request's error code was proposed as a fact
its answer must contain.
"""

from __future__ import annotations

import yaml

from helpers import run_script
from test_mine_rerun import _spans, _state

PLANTED = ["hunter2hunter2", "Summer2026!", "4111111111111111", "442079460958", "123-45-6789", "07700 900123"]
REQUESTS = [
    ("account", "Connect my store to the payments provider, my SSN is 123-45-6789", "Connected; payments are live.",
     [("connect_provider", {"api_key": "hunter2hunter2", "password": "Summer2026!", "account": "acme-store",
                            "card": 4111111111111111, "phone": 442079460958, "customer_mobile": "07700 900123"},
       {"ok": True})]),
    ("support", "How do I reset the router in the shop app?", "Open Settings, Network, Reset (KB-101).",
     [("search_kb", {"query": "reset router"}, {"id": "KB-101"}), ("get_article", {"id": "KB-101"}, {"ok": 1})]),
    ("support", "How do I reset the router in the shop app?", "Settings > Network > Reset (KB-101).",
     [("get_article", {"id": "KB-101"}, {"ok": 1}), ("search_kb", {"query": "reset router"}, {"id": "KB-101"})]),
    ("billing", "Cancel my order ORD-2003 please", "Sorry, error ERR-503 occurred; try again later.",
     [("lookup_order", {"order_id": "ORD-2003"}, None, "TimeoutError")]),
]


def _mine(tmp_path):
    spans = tmp_path / "spans.jsonl"
    _spans(spans, REQUESTS)
    state = _state(tmp_path)
    res = run_script("mine_traces", spans, "--state-dir", state)
    assert res.rc == 0, res.stdout + res.stderr
    cases = {yaml.safe_load((state / rel).read_text())["input"]["messages"][0]["content"][:12]: state / rel
             for rel in res.json["written"]}
    return res.json, cases


def test_argument_secrets_and_personal_data_never_reach_the_case_file(tmp_path):
    out, cases = _mine(tmp_path)
    for path in cases.values():
        text = path.read_text()
        assert not any(p in text for p in PLANTED), (path.name, text)
    case = yaml.safe_load(cases["Connect my s"].read_text())
    assert case["expect"]["args"] == {"connect_provider": {"account": "acme-store"}}
    for name in ("api_key", "password", "card", "phone", "customer_mobile"):
        assert f"connect_provider.{name}" in case["notes"], case["notes"]
    assert "<id_number>" in case["input"]["messages"][0]["content"]
    assert out["redacted"]["token"] >= 2 and out["redacted"]["card"] >= 1 and out["redacted"]["personal"] >= 2
    assert out["redacted"]["id_number"] >= 1


def test_tools_seen_in_two_orders_propose_no_order_and_a_failed_request_says_so(tmp_path):
    out, cases = _mine(tmp_path)
    assert [d["trace_id"] for d in out["duplicates"]] == [f"{3:032x}"], out["duplicates"]
    kb = yaml.safe_load(cases["How do I res"].read_text())
    assert kb["expect"]["tools"] == {"subset": ["get_article", "search_kb"]}, kb["expect"]
    assert "get_article > search_kb" in kb["notes"] and "no order is proposed" in kb["notes"]
    failed = yaml.safe_load(cases["Cancel my or"].read_text())
    assert "answer" not in failed["expect"], failed["expect"]          # ERR-503 is the failure, not a fact
    assert failed["expect"]["tools"]["order"] == ["lookup_order"]
    assert "failed in production" in failed["notes"] and "execute_tool lookup_order" in failed["notes"]


def test_a_span_file_cut_short_is_named_as_cut_short(tmp_path):
    """Before, a truncated export read 'not OTLP JSON ... export it again', at line 1 for a cut
    multi-line document: the file is JSON, only incomplete."""
    import json
    spans = tmp_path / "spans.jsonl"
    _spans(spans, REQUESTS)
    state = _state(tmp_path)
    text = spans.read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) - 40])
    res = run_script("mine_traces", cut, "--state-dir", state)
    assert res.rc == 2 and res.json["line"] == len(REQUESTS), res.stdout
    assert "cut short" in res.json["error"] and "drop the line" in res.json["error"], res.stdout
    doc = json.dumps({"resourceSpans": [r for line in text.splitlines() for r in json.loads(line)["resourceSpans"]]},
                     indent=1)
    whole = tmp_path / "doc.json"
    whole.write_text(doc[: len(doc) // 2])
    res = run_script("mine_traces", whole, "--state-dir", state)
    assert res.rc == 2 and "cut short" in res.json["error"], res.stdout
    assert res.json["line"] == len(doc[: len(doc) // 2].splitlines()), res.stdout
    assert not (state / "datasets").exists()
