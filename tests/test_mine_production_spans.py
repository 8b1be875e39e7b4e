"""mine_traces.py on spans a real OpenTelemetry-instrumented app exports, holding what its users typed.

Before the fix, these reached the case file as they were:
- a key in a longer name or in quotes: the JSON a user pastes (`{"password": "...", "secret_key": "..."}`),
  `auth_token: ...`, and tool arguments named `db_password`, `accessToken`, `bearer` (proposed verbatim
  as `expect.args`, so an accepted case would even have asserted the password);
- a `Set-Cookie` header and a URL's `?access_token=` in the answer (the notes' "Observed answer");
- the name of a failed span, `POST https://pay.example.com/charge?api_key=...` (the notes' failure line).
A message holding one long run of letters and digits (a pasted hex dump) took minutes (the e-mail rule
was quadratic in the run), and a line that is JSON but not OTLP was named by file only, not by line.
"""

from __future__ import annotations

import json

import pytest
import yaml

from helpers import run_script
from otlp_util import agent_spans, span, traces_data, write_spans
from test_mine_rerun import _state

pytestmark = pytest.mark.slow   # subprocesses

PLANT = {
    "json password": "Hx9-plaintext-pw", "json secret_key": "sk3y-value-77", "auth_token": "authtok-value-42",
    "db_password argument": "DbPassw0rd-value", "set-cookie": "sess-cookie-value-9",
    "access_token query / accessToken argument": "acctoken-q-88", "bearer argument": "opaqueBearer77",
    "failed span name": "spanname-apikey-555", "email": "jane.roe@corp-mail.example.org",
    "card": "4242 4242 4242 4242", "aws key id": "AKIAQWERTYUIOPASDFGH",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyMSJ9.c2lnbmF0dXJlLXZhbHVl",
    "slack": "xoxb-2222222222-abcdefghijKL", "github": "ghp_R4nd0mT0k3nV4lu3ABCDEFGHIJKLMNOP12",
    "pem body": "MIIEowIBAAKCAQEAplantedPEMbody",
}
P = PLANT
USER = (f'My config is {{"password": "{P["json password"]}", "secret_key": "{P["json secret_key"]}"}} and '
        f'auth_token: {P["auth_token"]}; mail me at {P["email"]}, card {P["card"]}, AWS {P["aws key id"]}, '
        f'jwt {P["jwt"]}, slack {P["slack"]}, gh {P["github"]}\n-----BEGIN RSA PRIVATE KEY-----\n'
        f'{P["pem body"]}\n-----END RSA PRIVATE KEY-----')
ANSWER = (f'Set-Cookie: session={P["set-cookie"]}; then call '
          f'https://api.example.com/x?access_token={P["access_token query / accessToken argument"]} (INV-1001)')
T0 = 1_700_000_000_000_000_000


def _trace(tid: str, user: str) -> list[dict]:
    """invoke_agent > chat (captured messages, an HTTP client's attributes) + a tool call with credentials
    + a failed HTTP span named by its full URL."""
    spans = agent_spans(tid, "support", [("connect_db", {
        "db_password": P["db_password argument"], "host": "db1", "bearer": P["bearer argument"],
        "accessToken": P["access_token query / accessToken argument"]}, {"ok": True})], llm_tokens=None)
    root = spans[0]
    chat = span(trace_id=tid, parent_span_id=root["spanId"], operation="chat", model="m",
                start_ns=T0 + 500_000, end_ns=T0 + 900_000, attributes={
                    "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]),
                    "http.request.header.authorization": "Bearer " + P["bearer argument"],
                    "url.full": "https://llm.example.com/v1/chat?api_key=" + P["json secret_key"],
                    "db.statement": f"SELECT * FROM users WHERE email='{P['email']}'"})
    failed = span(name=f"POST https://pay.example.com/charge?api_key={P['failed span name']}", trace_id=tid,
                  parent_span_id=root["spanId"], start_ns=T0 + 600_000, end_ns=T0 + 700_000, error="HTTPError")
    return [root, chat, *spans[1:], failed]


def _span_files(tmp_path):
    """The three shapes mine_traces reads: TracesData per line, a span per line, one document
    (here with OpenLLMetry's older gen_ai.prompt.<i> / gen_ai.completion.<i> attributes)."""
    lines = tmp_path / "traces-data.otlp.jsonl"
    write_spans(lines, _trace("ab" * 16, USER))
    per_span = tmp_path / "span-per-line.jsonl"
    per_span.write_text("".join(json.dumps(s) + "\n" for s in _trace("cd" * 16, USER)), encoding="utf-8")
    old = span(trace_id="ef" * 16, operation="chat", model="gpt-4o", start_ns=T0, end_ns=T0 + 10**6, attributes={
        "traceloop.span.kind": "llm", "llm.request.type": "chat", "gen_ai.system": "openai",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": USER,
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": ANSWER})
    doc = tmp_path / "document.json"
    doc.write_text(json.dumps(traces_data([old]), indent=1), encoding="utf-8")
    return [lines, per_span, doc]


def test_no_secret_or_personal_value_reaches_a_file_written_or_the_output(tmp_path):
    for n, path in enumerate(_span_files(tmp_path)):
        (tmp_path / str(n)).mkdir()
        state = _state(tmp_path / str(n))
        before = {p for p in state.rglob("*")}
        r = run_script("mine_traces", path, "--state-dir", state)
        assert r.rc == 0 and len(r.json["written"]) == 1, (path.name, r.stdout, r.stderr)
        written = [p for p in state.rglob("*") if p.is_file() and p not in before]
        assert written, path.name
        for where, text in [*((p.name, p.read_text(encoding="utf-8")) for p in written),
                            ("stdout", r.stdout), ("stderr", r.stderr)]:
            leaked = [kind for kind, value in PLANT.items() if value in text]
            assert not leaked, (path.name, where, leaked, text)
        case = yaml.safe_load((state / r.json["written"][0]).read_text(encoding="utf-8"))
        assert case["gating"] is False and case["review"]["status"] == "pending", case
        assert '"password": "<token>"' in case["input"]["messages"][0]["content"], case["input"]
        if n < 2:   # the tool call: only the argument that holds no secret is proposed; the notes name the rest
            assert case["expect"]["args"] == {"connect_db": {"host": "db1"}}, case["expect"]
            assert "connect_db.db_password" in case["notes"] and "connect_db.bearer" in case["notes"], case["notes"]
            assert "POST https://pay.example.com/charge?api_key=<token> reported an error" in case["notes"]


def test_a_message_with_a_long_run_is_mined_in_linear_time(tmp_path):
    """A pasted 400 KB hex dump: minutes before (the e-mail rule tried every start in the run), a second now."""
    path = tmp_path / "spans.jsonl"
    dump = "0123456789abcdef" * 25_000
    write_spans(path, [span(trace_id="1" * 32, operation="chat", model="m", start_ns=T0, end_ns=T0 + 1, attributes={
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content":
                                              f"why does this blob fail to decode? {dump}"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])})])
    state = _state(tmp_path)
    r = run_script("mine_traces", path, "--state-dir", state, timeout=60)
    assert r.rc == 0 and r.json["written"], r.stdout + r.stderr
    assert dump not in (state / r.json["written"][0]).read_text(encoding="utf-8")   # a 20+ hex run is a token


def test_a_secret_named_before_a_long_run_of_whitespace_is_mined_in_linear_time(tmp_path):
    """`password is` and then 1 MB of padding (a pasted fixed-width table): the rule for `name is value`
    tried every split of the run between its two optional blanks, quadratic in the run (~3 s at 8 KB, hours
    at 1 MB); now a second. The timeout is one only a hang reaches; the value after the run is still redacted."""
    path = tmp_path / "spans.jsonl"
    text = "my password is" + " " * 1_000_000 + ", and the vault password is Hx9-plaintext-pw"
    write_spans(path, [span(trace_id="2" * 32, operation="chat", model="m", start_ns=T0, end_ns=T0 + 1, attributes={
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])})])
    state = _state(tmp_path)
    r = run_script("mine_traces", path, "--state-dir", state, timeout=300)
    assert r.rc == 0 and r.json["written"], r.stdout + r.stderr
    assert "Hx9-plaintext-pw" not in (state / r.json["written"][0]).read_text(encoding="utf-8")


def test_a_line_that_is_json_but_not_otlp_is_named_by_its_line(tmp_path):
    path = tmp_path / "spans.jsonl"
    write_spans(path, _trace("ab" * 16, "hello"))
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"message": "a log line, not a span"}\n')
    state = _state(tmp_path)
    r = run_script("mine_traces", path, "--state-dir", state)
    assert r.rc == 2 and (r.json["file"], r.json["line"]) == (str(path), 2), r.stdout + r.stderr
    assert r.json["error"].startswith(f"{path}:2: not an OTLP span document"), r.json
    assert "Traceback" not in r.stderr and not (state / "datasets").exists()
