"""mine_traces.py's redaction over a corpus of the credentials a user pastes into a chat: each kind
is gone from what is written, ordinary text is left alone, and (when detect-secrets, the test
extra, is installed) nothing that maintained scanner finds in the corpus survives."""

from __future__ import annotations

import json
import shutil

import pytest

from helpers import ROOT, run_script

pytestmark = pytest.mark.slow   # real runs and subprocesses: over ~7 s on a loaded machine

PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2/mr7SZiAMfQy+uvBjM2Ab4Y0fFVP0/mWm3xQ0kq\n"
       "kY8r2Vq1Z9p7lRzq3dGm0u1b8hQyN0pRkP2Zx9c5VtS7mQ==\n-----END RSA PRIVATE KEY-----")
# (kind, the text as a user sends it, the secret that must not be written)
CORPUS = [
    ("stripe secret key", "charge it with sk_live_4eC39HqLyjWDarjtT1zdp7 please", "4eC39HqLyjWDarjtT1zdp7"),
    ("stripe restricted key", "our key rk_live_51H8wRqKZ2abcDEF01 fails", "51H8wRqKZ2abcDEF01"),
    ("aws secret access key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("aws secret key in prose", "here is the secret for the bucket: Zq8mK2vR9xWp4TnL7yHc3Jb6Fd1Gs5Ae0UoIiY/+",
     "Zq8mK2vR9xWp4TnL7yHc3Jb6Fd1Gs5Ae0UoIiY/+"),
    ("http basic authorization", "I send Authorization: Basic dXNlcjpodW50ZXIyMDI2 and get 401",
     "dXNlcjpodW50ZXIyMDI2"),
    ("credentials in a url", "the db is at postgres://admin:Tr0ub4dor3@db.internal.example.com:5432/prod",
     "Tr0ub4dor3"),
    ("password in prose", "my password is: correct-horse-battery, can you reset it?", "correct-horse-battery"),
    ("password without a colon", "the wifi password is Kx7pL2mQ and it stopped working", "Kx7pL2mQ"),
    ("pem private key", f"why does this key fail?\n{PEM}\nthanks", "MIIEpAIBAAKCAQEA3Tz2/mr7SZiAMfQy+uvBjM2Ab4Y0fFVP0/mWm3xQ0kq"),
    ("31-hex token", "the webhook secret a3f9c2e1b7d4058e6f1a2b3c4d5e6f7 is rejected", "a3f9c2e1b7d4058e6f1a2b3c4d5e6f7"),
    ("40-letter token", "use QwErTyUiOpAsDfGhJkLzXcVbNmPoIuYtReWqAsDf as the api token",
     "QwErTyUiOpAsDfGhJkLzXcVbNmPoIuYtReWqAsDf"),
    ("github fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz is mine",
     "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
    ("aws temporary key id", "key id ASIAIOSFODNN7EXAMPLE", "ASIAIOSFODNN7EXAMPLE"),
    ("google api key", "maps key AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI", "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"),
]
ORDINARY = ["invoice INV-1001 is 120.00 USD, due 2026-12-15", "order 1234567890123",
            "refund RF-A197C3 within 5 business days", "I forgot my password, can you help?",
            "the AbstractSingletonProxyFactoryBean class throws", "see https://docs.example.com/a/b?x=1",
            "trace 4bf92f3577b34da6", "shipped to 221B Baker Street on 2026-11-29"]


@pytest.mark.parametrize("kind, text, secret", CORPUS, ids=[c[0] for c in CORPUS])
def test_each_kind_of_credential_is_redacted(kind, text, secret):
    from assay.mine.redact import redact
    out, counts = redact(text)
    assert secret not in out and counts["token"] >= 1, (kind, out)
    assert "<token>" in out


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text):
    from assay.mine.redact import redact
    assert redact(text)[0] == text


def test_nothing_detect_secrets_finds_survives():
    pytest.importorskip("detect_secrets", reason="detect-secrets is not installed (pip install -e '.[test]')")
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    from assay.mine.redact import redact
    found = 0
    with default_settings():
        for _, text, _ in CORPUS:
            for line in text.splitlines():
                for hit in scan_line(line):
                    value = hit.secret_value
                    if value and "High Entropy" not in hit.type:   # its entropy rules flag any quoted word
                        found += 1
                        assert value not in redact(text)[0], (hit.type, value)
    assert found >= 3   # the scanner is really running over the corpus (AWS, URL credentials, private key)


def test_mined_cases_carry_none_of_the_corpus(tmp_path):
    """Every kind in an OTLP span file, mined: no secret in any file written, the cases not gating."""
    spans = []
    for i, (_, text, _) in enumerate(CORPUS):
        msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}])
        spans.append({"traceId": f"{i + 1:032x}", "spanId": f"{i + 1:016x}", "name": "chat gpt-x",
                      "startTimeUnixNano": "1", "endTimeUnixNano": "2",
                      "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                     {"key": "gen_ai.input.messages", "value": {"stringValue": msgs}},
                                     {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
                                         [{"role": "assistant", "parts": [{"type": "text", "content": f"noted ({i})"}]}])}}]})
    path = tmp_path / "spans.otlp.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n", encoding="utf-8")
    state = tmp_path / "s"
    shutil.copytree(ROOT / "examples/helpdesk/.assay", state,
                    ignore=shutil.ignore_patterns("work", "reports", "holdout-looks.jsonl"))
    r = run_script("mine_traces", path, "--state-dir", state)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.json["redacted"]["token"] >= len(CORPUS)
    mined = list((state / "datasets" / "mined").rglob("*.yaml"))
    assert mined and all("gating: false" in p.read_text(encoding="utf-8") for p in mined)
    written = b"".join(p.read_bytes() for p in state.rglob("*") if p.is_file())
    for kind, _, secret in CORPUS:
        assert secret.encode() not in written, kind


def test_a_redacted_argument_is_not_proposed_and_the_notes_say_why():
    """A tool argument holding an e-mail address or a token is redacted in the proposal; expected as
    `<email>` it could never match what the app sends, and the mined case failed for a reason that
    was not the app's (the miner trial). It is left out, named in the notes; the other arguments stay."""
    from collections import Counter

    from assay.mine.propose import propose
    from assay.mine.spans import Observed
    obs = Observed("t" * 32, "reset my password please", 0, "Done: a reset link is on its way.", "account",
                   [{"name": "reset_password", "arguments": {"user": "jane.doe@example.com", "channel": "email",
                                                             "attempts": 2}, "arguments_captured": True}])
    counts = Counter()
    case = propose(obs, counts, ["full"], route_known=True)
    assert case["expect"]["args"] == {"reset_password": {"channel": "email", "attempts": 2}}
    assert "reset_password.user held personal data or a secret" in case["notes"]
    assert counts["email"] == 1 and "jane.doe" not in json.dumps(case)
