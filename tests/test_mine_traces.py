"""mine_traces.py on the example app's own spans, as a user runs it, and the redaction list.

Requests carrying an e-mail address, a phone number, a card number and a token go to the
real example app on a free port; its OTLP span file is mined into a copy of the example's
state dir. The proposed cases validate with no finding, are never gating, carry
source: trace:<id>, dedupe against the suite and each other, and no file written holds
any of the planted values.
"""

from __future__ import annotations

import shutil

import pytest
import yaml

from helpers import ROOT, run_script
from test_example_app import RunningApp

pytestmark = pytest.mark.slow

PLANTED = ["dana.whitfield@example.com", "+1 555 123 4567", "4111 1111 1111 1111", "sk-live-abcdefghijklmnop"]
MESSAGES = [
    "What is the total of invoice INV-1001? Reply to dana.whitfield@example.com",
    "The printer on floor 3 jams every hour, call me back on +1 555 123 4567",
    "I forgot my password, my card is 4111 1111 1111 1111",
    "Our API key sk-live-abcdefghijklmnop stopped working and the app crashes on startup",
    "Our API key sk-live-abcdefghijklmnop stopped working and the app crashes at startup",
    "tell me a joke",
]


@pytest.fixture(scope="module")
def mined_spans(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mine")
    app = RunningApp(tmp)
    try:
        for m in MESSAGES:
            app.chat(m)
    finally:
        app.stop()
    return app.otlp


def _state(tmp_path):
    state = tmp_path / "s"
    shutil.copytree(ROOT / "examples/helpdesk/.assay", state,
                    ignore=shutil.ignore_patterns("work", "reports", "holdout-looks.jsonl"))
    return state


def test_mined_cases_validate_redacted_and_never_gate(tmp_path, mined_spans):
    state = _state(tmp_path)
    res = run_script("mine_traces", mined_spans, "--state-dir", state)
    assert res.rc == 0, res.stdout + res.stderr
    out = res.json
    assert out["traces"] == len(MESSAGES)
    assert out["without_user_text"] == 1          # the out-of-scope reply has no LLM span
    assert out["redacted"]["email"] >= 1 and out["redacted"]["phone"] >= 1 and out["redacted"]["card"] >= 1
    assert out["redacted"]["token"] >= 1
    assert any("trace" in d["duplicate_of"] for d in out["duplicates"])   # the two near-identical crash reports
    assert out["written"] and out["dataset_version"] == {"from": 1, "to": 2}
    for rel in out["written"]:
        text = (state / rel).read_text()
        assert not any(p in text for p in PLANTED), rel
        assert "@" not in text
        case = yaml.safe_load(text)
        assert case["gating"] is False and case["review"]["status"] == "pending"
        assert case["source"] == f"trace:{case['origin'].split(':', 1)[1]}"
    billing = [yaml.safe_load((state / r).read_text()) for r in out["written"]]
    invoice = next(c for c in billing if "INV-1001" in c["input"]["messages"][0]["content"])
    assert invoice["expect"]["route"] == "billing"
    assert invoice["expect"]["args"] == {"lookup_invoice": {"invoice_id": "INV-1001"}}
    assert invoice["expect"]["answer"]["must_contain"] == ["120.00 USD"]
    assert "<email>" in invoice["input"]["messages"][0]["content"]
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    val = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                     "--adapter", work / "adapter.json", "--manifest", work / "manifest.json")
    assert val.rc == 0 and val.json["error_count"] == 0 and val.json["warn_count"] == 0, val.stdout


def test_sample_seed_and_holdout_share(tmp_path, mined_spans):
    a = run_script("mine_traces", mined_spans, "--state-dir", _state(tmp_path / "a"), "--sample", "2", "--seed", "5",
                   "--holdout-share", "0.5").json
    b = run_script("mine_traces", mined_spans, "--state-dir", _state(tmp_path / "b"), "--sample", "2", "--seed", "5",
                   "--holdout-share", "0.5").json
    assert a["sampled"] == 2 and a["holdout"] == 1 and a["written"] == b["written"]
    splits = [yaml.safe_load((tmp_path / "a" / "s" / r).read_text())["split"] for r in a["written"]]
    assert sorted(map(tuple, splits)) == [("full",), ("holdout",)]
    bad = run_script("mine_traces", mined_spans, "--state-dir", _state(tmp_path / "c"), "--holdout-share", "2")
    assert bad.rc == 2 and "--holdout-share" in bad.json["error"]


@pytest.mark.parametrize("text, kind", [
    ("write to a.b@example.co.uk", "email"), ("call 555-123-4567", "phone"), ("(555) 123-4567", "phone"),
    ("+44 20 7946 0958", "phone"), ("card 4111-1111-1111-1111", "card"), ("IBAN DE89 3704 0044 0532 0130 00", "iban"),
    ("Bearer abcdefghijklmnop", "token"), ("ghp_abcdefghijklmnopqrstuv1234", "token"), ("AKIAABCDEFGHIJKLMNOP", "token"),
    ("password=hunter22", "token"), ("eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", "token"),
])
def test_redaction_list(text, kind):
    from assay.mine.redact import redact
    out, counts = redact(text)
    assert counts[kind] == 1 and f"<{kind}>" in out, (out, counts)


@pytest.mark.parametrize("text", ["invoice INV-1001 is 120.00 USD, due 2026-12-15", "order 1234567890123",
                                  "refund RF-A197C3 within 5 business days"])
def test_redaction_leaves_ordinary_text(text):
    from assay.mine.redact import redact
    assert redact(text)[0] == text


def test_mining_a_state_dir_with_no_cases_yet(tmp_path, mined_spans):
    state = tmp_path / "fresh"
    state.mkdir()
    for name in ("adapter.yaml", "profile.yaml"):
        shutil.copy(ROOT / "examples/helpdesk/.assay" / name, state / name)
    res = run_script("mine_traces", mined_spans, "--state-dir", state)
    assert res.rc == 0, res.stdout
    assert res.json["written"] and res.json["dataset_version"] is None
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    val = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                     "--adapter", work / "adapter.json")
    assert val.rc == 0 and val.json["error_count"] == 0, val.stdout
    bad = run_script("mine_traces", mined_spans, "--state-dir", tmp_path / "nowhere")
    assert bad.rc == 2 and "not a state dir" in bad.json["error"]


def _disable(state, *keys):
    import re
    text = (state / "profile.yaml").read_text()
    for key in keys:
        text = re.sub(rf"^  {key}: {{enabled: true", f"  {key}: {{enabled: false, blocked_by: no traces yet", text,
                      flags=re.M)
    (state / "profile.yaml").write_text(text)


def test_expectations_on_layers_the_profile_disables_are_not_proposed(tmp_path, mined_spans):
    """The profile's capability_matrix was ignored: expect.tools / args / answer were proposed on layers it
    disables, and a request that showed nothing else became a case that grades nothing (the linter's
    no_graded_layer ERROR, which stops make_plan.py for the whole suite)."""
    fresh = tmp_path / "fresh"   # no case yet, so each request is mined
    fresh.mkdir()
    for name in ("adapter.yaml", "profile.yaml"):
        shutil.copy(ROOT / "examples/helpdesk/.assay" / name, fresh / name)
    _disable(fresh, "routing", "trajectory", "tool_selection", "answer_quality")
    res = run_script("mine_traces", mined_spans, "--state-dir", fresh)
    assert res.rc == 0, res.stdout
    assert res.json["written"] == [] and res.json["grades_nothing"], res.json
    invoice = next(g for g in res.json["grades_nothing"] if g["trace_id"] and "expect.args" in g["why"])
    assert ("is on a layer profile.yaml disables (capability_matrix." in invoice["why"]
            and "capability_matrix.tool_selection, blocked_by: no traces yet" in invoice["why"]
            and "not written" in invoice["why"]), invoice
    assert res.json["next"].startswith("nothing proposed: each of the"), res.json["next"]

    state = _state(tmp_path)   # one layer off: the case is written, and says what was left out and why
    _disable(state, "tool_selection")
    res = run_script("mine_traces", mined_spans, "--state-dir", state)
    assert res.rc == 0 and res.json["grades_nothing"] == [], res.json
    cases = [yaml.safe_load((state / r).read_text()) for r in res.json["written"]]
    invoice = next(c for c in cases if "INV-1001" in c["input"]["messages"][0]["content"])
    assert "args" not in invoice["expect"] and invoice["expect"]["route"] == "billing", invoice["expect"]
    assert ("Not proposed, on a layer profile.yaml disables (never scored): expect.args "
            "(capability_matrix.tool_selection, blocked_by: no traces yet).") in invoice["notes"], invoice["notes"]


def test_mining_what_the_otlp_http_listener_receives(tmp_path):
    import json
    import subprocess
    import sys

    from helpers import SCRIPTS
    state = _state(tmp_path)
    capture = tmp_path / "capture.otlp.jsonl"
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "mine_traces.py"), "--state-dir", str(state),
                             "--listen", "127.0.0.1:0", "--for", "4", "--capture", str(capture)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        address = json.loads(proc.stderr.readline())["listening"]
        (tmp_path / "app").mkdir()
        app = RunningApp(tmp_path / "app", "--otlp-endpoint", f"http://{address}")
        try:
            for m in ("Is invoice INV-1003 paid? write to me at bob@example.org",
                      "My laptop cannot reach the printer on floor 3 since this morning"):
                app.chat(m)
        finally:
            app.stop()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err
    doc = json.loads(out)
    assert doc["exports_received"] == 2 and doc["traces"] == 2 and len(doc["written"]) == 2
    assert "bob@example.org" in capture.read_text()          # the capture is the user's raw file
    for rel in doc["written"]:
        assert "bob@example.org" not in (state / rel).read_text()
