"""A second new-user trial, on a new app: a travel-booking assistant that issues its own session
ids (server-id conversations), a rubric judged by a `command` judge, and a CLI face. Each test
writes the state dir in YAML the way the docs say, drives the scripts as a user does and checks
that every mistake (or limit of this build) closes the gate or stops with an error naming the
file, key and fix -- never a green gate over a check that did not run.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

from fakeapp import FakeApp, Reply, run_runner
from fixtures_authoring import run_inproc
from helpers import ROOT, run_script, write_yaml
from rundir_util import cases_view

RUN_ID = "smoke-20261130T000000Z"

ADAPTER = """\
adapter_version: 1
app: {name: travel, repo_access: read-only}
access_level: black
invocation:
  mode: http
  base_url: ${R2_URL}
  auth: {type: none}
  endpoint: POST /v1/assist
  request_body: '{"text": "<user turn>", "session": "<session>"}'
  response_body: '{"data": {"reply": "<answer>"}}'
  health_check: {method: GET, path: /health, expect_status: [200]}
  route_from_response: data.intent
  timeout_s: 5
  max_concurrency: 2
  conversation:
    style: server-id
    session_from: {body: meta.session_id}
    memory: session
TRACES
tools: []
environment: {kind: mocked, safe_to_attack: false}
"""

PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: router_executor}
oos_handling: route:other
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
  multi_turn: {enabled: true}
  trajectory: {enabled: false, blocked_by: no traces}
  tool_selection: {enabled: false, blocked_by: no traces}
  execution: {enabled: false, blocked_by: no oracle}
  authz: {enabled: false, blocked_by: no identities}
  state: {enabled: false, blocked_by: reserved}
"""

RUBRIC = """\
---
rubric_id: booking
version: 1
nodes:
  - id: gives-reference
    criterion: The reply gives the booking reference.
---
# booking
"""

# The judge: a script in the state dir (the judge command's working directory). It passes when
# the reply holds a BK- reference, and prints prose instead of JSON when asked about Atlantis.
JUDGE_PY = """\
import json, re, sys
prompt = sys.stdin.read()
if "Atlantis" in prompt:
    print("I think it passes.")
else:
    m = re.search(r"BK-[0-9]+", prompt)
    print(json.dumps({"verdict": "pass" if m else "fail", "evidence": [m.group(0)] if m else [], "reason": "ok"}))
"""

HEAD = ("unit: booking\nsplit: [smoke, full]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n"
        "review: {status: accepted, by: Ana Reviewer}\n")
CONVERSATION = f"""\
id: c-conv0001
{HEAD}input:
  turns:
    - user: Show me flights to Rome
      expect: {{route: flights}}
    - user: Book the cheapest one
expect:
  route: booking
  answer: {{rubric: [booking-v1]}}
"""
SINGLE = f"""\
id: c-one00001
{HEAD}input:
  messages:
    - {{role: user, content: Book me a flight to Atlantis}}
expect:
  route: booking
  answer: {{rubric: [booking-v1]}}
"""


def travel_app() -> FakeApp:
    """A deterministic booking assistant that remembers a session it issued (server-id)."""
    sessions: dict[str, list[str]] = {}

    def handle(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        if req.path != "/v1/assist":
            return Reply(404, {"error": "not found"})
        body = req.json or {}
        sid = body.get("session") or uuid.uuid4().hex
        seen = sessions.setdefault(sid, [])
        text = str(body.get("text", ""))
        seen.append(text)
        if "Book" in text:
            intent, reply = "booking", "Booked U2 123 for 120 EUR. Your reference is BK-4711."
        else:
            intent, reply = "flights", "Flights to Rome: AZ7 180 EUR, U2 123 120 EUR."
        return Reply(200, {"data": {"reply": reply, "intent": intent}, "meta": {"session_id": sid}})
    return FakeApp(handle)


def write_state(root: Path, *, traces: str = "traces: {source: none}", judge: str | None = None,
                calibrated: bool = True) -> Path:
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.replace("TRACES", traces))
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "rubrics" / "booking.md", RUBRIC)
    write_yaml(state / "judge.py", JUDGE_PY)
    write_yaml(state / "judge" / "judge.yaml",
               judge or f"provider: command\ncommand: [{json.dumps(sys.executable)}, judge.py]\ntimeout_s: 20\n")
    if calibrated:  # as score_agreement.py --write leaves it: bound to this judge and this rubric text
        from assay.judge.config import load_judge_config
        from judgefake import write_calibration
        write_calibration(state, {"booking-v1": True}, config=load_judge_config(state))
    write_yaml(state / "datasets" / "c-conv0001.yaml", CONVERSATION)
    write_yaml(state / "datasets" / "c-one00001.yaml", SINGLE)
    return state


def plan(state: Path, *extra: str, run_id: str = RUN_ID) -> Path:
    work = state / "work"
    r = run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout
    out = work / "plan.json"
    r = run_inproc("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", out,
                   "--run-id", run_id, *extra)
    assert r.rc == 0, r.stdout
    return out


def verdict(run_dir: Path, cid: str) -> dict:
    return json.loads((cases_view(run_dir) / cid / "verdict.json").read_text())


def test_a_calibrated_rubric_that_was_never_judged_closes_the_gate_in_the_run_and_in_rescore(tmp_path):
    # Before: the conversation passed (its turns were not judged, the calibrated pin read as a chosen
    # "unjudged") and the gate said PASS; rescore skipped the conversation with a false reason ("the
    # adapter declares no invocation.conversation") and said PASS too. Now the conversation's own pin
    # judges its whole transcript (and passes on the reference the last turn gives).
    state = write_state(tmp_path)
    plan_file = plan(state, "--judge")
    run_dir = state / "reports" / RUN_ID
    with travel_app() as app:
        r = run_runner("--plan", plan_file, "--out", run_dir, "--progress", "never", env={"R2_URL": app.url})
    assert r.rc == 0, (r.stdout, r.stderr)
    conv = verdict(run_dir, "c-conv0001")
    assert conv["verdict"] == "pass" and conv["turns_sent"] == 2
    assert conv["layers"]["judged"]["verdict"] == "pass" and conv["layers"]["judged"]["turn"] == 2
    assert (cases_view(run_dir) / "c-conv0001" / "turns" / "2" / "judge.json").is_file()
    one = verdict(run_dir, "c-one00001")  # the judge printed prose: the node is unknown, and the gate says why
    assert one["verdict"] == "unscored"
    assert "node(s) unknown: gives-reference (the judge's reply did not parse" in one["layers"]["judged"]["reason"]
    g = run_script("gate", run_dir, "--no-verify")
    assert g.rc == 1, g.stdout
    never = next(x for x in g.stdout.splitlines()
                 if x.startswith("  gate closed:") and "gating case(s) asserted a check that never ran" in x)
    assert "c-conv0001" not in never
    assert "c-one00001 (judged: booking-v1: node(s) unknown: gives-reference (the judge's reply did not parse" in never
    assert "adapter's the" not in g.stdout

    again = state / "reports" / "smoke-20261130T000001Z"
    r = run_script("rescore", run_dir, "--out", again)
    assert r.rc == 0, (r.stdout, r.stderr)
    conv = verdict(again, "c-conv0001")
    assert conv["verdict"] == "infra_error", conv.get("skip_reason")
    assert "rescore does not replay conversations in this build" in conv["infra_reason"]
    g = run_script("gate", again)  # --verify included: the rescored run is complete
    assert g.rc == 1, g.stdout
    infra = next(x for x in g.stdout.splitlines() if "gate closed: infra rate" in x)
    assert "c-conv0001 (turn 1: connection: a conversation (input.turns): rescore does not replay" in infra
    assert "check the reasons on the infra line(s) above" in g.stdout


def test_preflight_names_where_a_missing_variable_is_used_and_a_judge_command_that_cannot_start(tmp_path):
    spans = "traces: {source: otlp-file, location: ${R2_SPANS}, correlation: traceparent-echo}"
    judge = "provider: openai\nmodel: m\nbase_url: http://127.0.0.1:9/v1\napi_key: ${R2_JUDGE_KEY}\n"
    state = write_state(tmp_path, traces=spans, judge=judge)
    # ${VAR} unquoted in a flow mapping is a YAML syntax error: the message says how to write it
    r = run_inproc("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work")
    assert r.rc == 2 and r.json["error"].startswith("adapter.yaml:19: invalid YAML: while parsing a flow mapping")
    assert 'a ${VAR} inside {...} or [...] must be quoted, e.g. {location: "${VAR}"}' in r.json["error"]
    write_yaml(state / "adapter.yaml", ADAPTER.replace("TRACES", spans.replace("${R2_SPANS}", '"${R2_SPANS}"')))
    plan_file = plan(state, "--judge")
    out = state / "reports" / RUN_ID
    r = run_runner("--plan", plan_file, "--out", out, env={"R2_URL": "http://127.0.0.1:9"})
    assert r.rc == 3, r.stdout
    assert ("not set or empty: R2_JUDGE_KEY (judge/judge.yaml: api_key), R2_SPANS (adapter.yaml: traces.location)"
            in r.json["error"])
    assert r.json["referenced_by"] == {"R2_JUDGE_KEY": "judge/judge.yaml: api_key",
                                       "R2_SPANS": "adapter.yaml: traces.location"}
    # a judge command that is not installed, and a judge script that is not where the command looks
    # (before: both ran every case and showed only "infra_error" on the provisional judged line)
    for command, says in (("[no-such-judge-cmd-r2]", "command[0] 'no-such-judge-cmd-r2' is not found on PATH"),
                          (f"[{json.dumps(sys.executable)}, judges/judge.py]",
                           f"command[1] 'judges/judge.py' resolves to {state.resolve() / 'judges' / 'judge.py'}, "
                           "which does not exist; a relative path is relative to the state dir"),
                          # past the interpreter's options (before: only command[1], here `-u`, was looked at)
                          (f"[{json.dumps(sys.executable)}, -u, -W, ignore, judges/judge.py]",
                           f"command[4] 'judges/judge.py' resolves to {state.resolve() / 'judges' / 'judge.py'}, "
                           "which does not exist")):
        write_yaml(state / "judge" / "judge.yaml", f"provider: command\ncommand: {command}\n")
        plan_file = plan(state, "--judge")
        r = run_runner("--plan", plan_file, "--out", out, env={"R2_URL": "http://127.0.0.1:9", "R2_SPANS": "x"})
        assert r.rc == 3, r.stdout
        assert r.json["key"] == "command" and says in r.json["error"], r.json["error"]
        assert not (out / "results.json").exists()


CLI_ADAPTER = """\
adapter_version: 1
app: {name: travel-cli, repo: .., repo_access: read-only}
access_level: black
invocation:
  mode: cli
  command: COMMAND
  stdin: none
  cwd: scratch
  env_allowlist: [PATH]
  response_body: '{"answer": "<answer>"}'
  route_from_response: route
  timeout_s: 10
  max_concurrency: 2
traces: {source: otlp-file, location: "${R2_SPANS}", correlation: traceparent-echo, completeness: {quiescence_ms: 50, max_wait_s: 0.3}}
tools: [{name: search_flights, side_effects: safe-live}]
environment: {kind: mocked, safe_to_attack: false}
"""


def cli_case(cid: str, message: str) -> str:
    return (f"id: {cid}\n{HEAD}input:\n  messages:\n    - {{role: user, content: {json.dumps(message)}}}\n"
            "expect:\n  route: greet\n  tools: {subset: [search_flights]}\n")


def test_a_cli_app_names_its_stderr_the_span_file_it_looked_for_and_a_command_not_on_path(tmp_path):
    state = tmp_path / "app" / ".assay"  # app.repo is `..`: the scratch area must lie outside it
    agent = [sys.executable, str(ROOT / "tests" / "cliagent.py")]
    write_yaml(state / "adapter.yaml", CLI_ADAPTER.replace("COMMAND", json.dumps(agent + ["<user turn>"])))
    write_yaml(state / "profile.yaml", PROFILE.replace("trajectory: {enabled: false, blocked_by: no traces}",
                                                       "trajectory: {enabled: true}"))
    write_yaml(state / "datasets" / "c-hello001.yaml", cli_case("c-hello001", "hello there"))
    write_yaml(state / "datasets" / "c-crash001.yaml", cli_case("c-crash001", "exit 3"))
    write_yaml(state / "datasets" / "c-canary01.yaml", cli_case("c-canary01", "exit 4")
               .replace("split: [smoke, full]", "split: [canary, smoke]"))
    plan_file = plan(state, "--max-attempts", "1")
    run_dir = state / "reports" / RUN_ID
    spans = tmp_path / "spanz.jsonl"  # the app exports to spans.jsonl: a typo
    env = {"R2_SPANS": str(spans), "ASSAY_SCRATCH_DIR": str(tmp_path / "scratch")}
    r = run_runner("--plan", plan_file, "--out", run_dir, "--progress", "never", env=env)
    assert r.rc == 0, (r.stdout, r.stderr)
    # the crash says what the command printed on stderr (before: only "exited with code 3")
    crash = verdict(run_dir, "c-crash001")
    assert crash["infra_reason"] == ("exit: the command exited with code 3 (stderr: bad input) on all 1 attempt(s)")
    # a span file named by a variable is a path, not a secret: shown resolved, the variable named
    # (before: "the span file <redacted> does not exist")
    hello = verdict(run_dir, "c-hello001")
    assert f"the span file {spans} does not exist (traces.location ${{R2_SPANS}}" in hello["infra_reason"]
    assert "check $R2_SPANS" in hello["infra_reason"]
    g = run_script("gate", run_dir, "--no-verify")
    assert g.rc == 1, g.stdout
    infra = next(x for x in g.stdout.splitlines() if "gate closed: infra rate" in x)
    assert infra.endswith("c-crash001 (exit: the command exited with code 3 (stderr: bad input) on all 1 attempt(s))")
    # a canary that got no verdict is NOT VERIFIED, and now says why (before: no id, no reason)
    assert g.stdout.splitlines()[3].endswith(
        "NOT VERIFIED (infra, unscored or skipped: the harness was not verified by it; not a canary failure): "
        "c-canary01 (infra_error: exit: the command exited with code 4 (stderr: bad input) on all 1 attempt(s))")

    # PATH is allowlisted, the command is not on it: the fix is not "add PATH to env_allowlist"
    write_yaml(state / "adapter.yaml", CLI_ADAPTER.replace("COMMAND", '[travel-cli-r2, "<user turn>"]'))
    plan_file = plan(state, run_id="smoke-20261130T000002Z")
    r = run_runner("--plan", plan_file, "--out", state / "reports" / "smoke-20261130T000002Z", env=env)
    assert r.rc == 3, r.stdout
    assert "is not found on the child's PATH" in r.json["error"]
    assert "put it on that PATH, or give its path (e.g. ./travel-cli-r2: a relative path is relative to the app repo" \
        in r.json["error"] and "add PATH" not in r.json["error"]


def test_the_conversation_line_points_at_the_key_its_reason_names():
    from assay.report.gate_reasons import conversations_reason
    from assay.score.hollow_hints import hollow_layer_line

    def conv(why, **extra):
        block = {"n": 2, "skipped": 0, "passes": 0, "failures": 0, "top_unscored_reason": why,
                 "infra_errors": 0, "infra_incomplete": 0, **extra}
        return conversations_reason({"by_kind": {"conversation": block}})
    assert conv("answer: no answer at the adapter's <answer> path").endswith(
        "check the adapter's response_body (its <answer> path)")
    assert conv("turn 1: no session id at body path meta.sid (style server-id); turn 2 not sent").endswith(
        "check the adapter's invocation.conversation (style, session_from)")
    assert conv(None, infra_errors=2).endswith(
        "most common reason: 2 ended infra_error/infra_incomplete; check the reasons on the infra line(s) above")
    line = hollow_layer_line("judged", {"cases": 1, "reason": "r",
                                        "adapter_key": "the judge configuration (judge/judge.yaml) and the rubric pins"})
    assert line.endswith("; check the judge configuration (judge/judge.yaml) and the rubric pins")
    assert hollow_layer_line("execution", {"cases": 1, "reason": "r", "adapter_key": "result_from_response"}).endswith(
        "; check the adapter's result_from_response")


def test_gen_ai_spans_read_under_another_convention_say_which_convention_they_speak():
    # real gen_ai spans (the genai-util recording) with traces.convention: openinference: before, the
    # reason listed the span names only; gen_ai's marker is never "foreign", so nothing said to switch
    from test_trace_conventions import LOOKUP_OK, layers, trajectory
    got = layers(trajectory("genai-util", "lookup", "openinference"), LOOKUP_OK)
    reason = got["trajectory"]["reason"]
    assert got["trajectory"]["verdict"] == "unscored"
    assert ("no span maps to an LLM or tool call under convention openinference; the spans carry "
            "gen_ai.operation.name (gen_ai): set traces.convention to gen_ai or auto (span names:") in reason


def test_a_typo_in_an_enum_value_or_a_rubric_pin_is_named_with_its_line_and_the_closest_value(tmp_path):
    state = write_state(tmp_path)
    write_yaml(state / "profile.yaml", PROFILE.replace("  routing: {enabled: true}", "  routng: {enabled: true}"))
    work = state / "work"
    r = run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 2, r.stdout  # before: the list of allowed keys, no hint
    assert r.json["error"].startswith("profile.yaml does not match its schema: profile.yaml:7: capability_matrix: "
                                      "'routng' is not one of [")
    assert "(did you mean 'routing'?). Fix the YAML" in r.json["error"]
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "c-one00001.yaml", SINGLE.replace("booking-v1", "booking-v2"))
    r = run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout
    r = run_inproc("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o",
                   work / "plan.json")
    assert r.rc == 2, r.stdout  # before: line 1 (the id), not the pin's line
    assert "datasets/c-one00001.yaml:13: c-one00001 [rubric_version_mismatch] expect.answer.rubric: rubric pin " \
        "'booking-v2' but rubrics/booking.md is version 1; pin booking-v1" in r.json["error"]
    # a pin on a conversation checkpoint is linted too (before: never checked)
    write_yaml(state / "datasets" / "c-one00001.yaml", SINGLE)
    write_yaml(state / "datasets" / "c-conv0001.yaml", CONVERSATION.replace(
        "expect: {route: flights}", "expect: {route: flights, answer: {rubric: [bookng-v1]}}"))
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_inproc("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o",
                   work / "plan.json")
    assert r.rc == 2, r.stdout
    assert "c-conv0001 [unknown_rubric] input.turns[0].expect.answer.rubric: rubric pin 'bookng-v1'" in r.json["error"]
    # a misspelt turn key names its line and the closest key (before: line of the id, no hint)
    write_yaml(state / "datasets" / "c-conv0001.yaml", CONVERSATION.replace("      expect: {route", "      expct: {route"))
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_inproc("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o",
                   work / "plan.json")
    assert "datasets/c-conv0001.yaml:11: c-conv0001 [unknown_turn_key] input.turns[0].expct is not a turn key " \
        "(user, expect); did you mean 'expect'?" in r.json["error"], r.json["error"]


def test_a_gating_conversation_skipped_for_want_of_the_adapters_conversation_block_closes_the_gate(tmp_path):
    # The newcomer wrote input.turns cases and forgot invocation.conversation: the linter only warns
    # (turns_will_skip), the runner skips them. Before: "1 skipped" and PASS, exit 0.
    state = write_state(tmp_path, calibrated=False)
    adapter = (state / "adapter.yaml").read_text()
    block = "  conversation:\n    style: server-id\n    session_from: {body: meta.session_id}\n    memory: session\n"
    write_yaml(state / "adapter.yaml", adapter.replace(block, ""))
    write_yaml(state / "datasets" / "c-one00001.yaml", SINGLE.replace("Atlantis", "Rome"))
    plan_file = plan(state)
    run_dir = state / "reports" / RUN_ID
    with travel_app() as app:
        r = run_runner("--plan", plan_file, "--out", run_dir, "--progress", "never", env={"R2_URL": app.url})
    assert r.rc == 0, (r.stdout, r.stderr)
    assert verdict(run_dir, "c-conv0001")["verdict"] == "skipped"
    g = run_script("gate", run_dir)
    assert g.rc == 1, g.stdout
    assert ("gate closed: 1 gating case(s) were not sent because the adapter lacks invocation.conversation (skipped, "
            "not a pass; declare it, or mark the case gating: false): c-conv0001 (conversation not run: the adapter "
            "declares no invocation.conversation") in g.stdout
    # a non-gating conversation may be skipped: the gate stays open on the single-turn case's pass
    write_yaml(state / "datasets" / "c-conv0001.yaml", CONVERSATION.replace("review:", "gating: false\nreview:"))
    plan_file = plan(state, run_id="smoke-20261130T000003Z")
    run_dir = state / "reports" / "smoke-20261130T000003Z"
    with travel_app() as app:
        r = run_runner("--plan", plan_file, "--out", run_dir, "--progress", "never", env={"R2_URL": app.url})
    g = run_script("gate", run_dir)
    assert g.rc == 0 and "1 skipped" in g.stdout, g.stdout


def test_a_typo_in_an_annotation_key_is_refused_not_counted_as_an_unpaired_label(tmp_path):
    # before: `judge_lable` made the line a human-only label (unpaired, silently out of the 2x2) and
    # `rubric` for `rubric_id` read as "rubric_id None is not a rubric pin"
    ann = tmp_path / "batch.jsonl"
    ann.write_text(json.dumps({"case_id": "c-1", "rubric_id": "booking-v1", "node_id": "gives-reference",
                               "label": "pass", "judge_lable": "pass", "reviewer": "ana", "ts": "2026-12-01"}) + "\n")
    r = run_inproc("score_agreement", ann)
    assert r.rc == 2, r.stdout
    assert r.json["error"].startswith(f"{ann}:1: unknown key(s) 'judge_lable' ('judge_lable'; did you mean "
                                      "'judge_label'?); an annotation line has only case_id, rubric_id")


def test_a_regression_run_with_a_calibrated_rubric_and_no_judge_config_closes_the_gate(tmp_path):
    # judge/judge.yaml deleted (or never copied to CI), the calibration sidecar kept: before, the
    # hard gate said PASS with "judged layers: unjudged (no judge configured ...)" -- the release
    # signal over a gating check that never ran.
    state = write_state(tmp_path)
    (state / "judge" / "judge.yaml").unlink()
    write_yaml(state / "datasets" / "c-one00001.yaml", SINGLE.replace("Atlantis", "Rome"))
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_inproc("make_plan", work / "converted.json", "--mode", "regression", "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", "regression-20261130T000000Z", "--k", "1")
    assert r.rc == 0, r.stdout
    run_dir = state / "reports" / "regression-20261130T000000Z"
    with travel_app() as app:
        r = run_runner("--plan", work / "plan.json", "--out", run_dir, "--progress", "never", env={"R2_URL": app.url})
    assert r.rc == 0, (r.stdout, r.stderr)
    one = verdict(run_dir, "c-one00001")
    assert one["verdict"] == "unscored" and one["layers"]["routing"]["verdict"] == "pass"
    assert one["layers"]["judged"]["reason"] == (
        "no judge/judge.yaml in the state dir, so the calibrated (gating) rubric booking-v1 never ran in this "
        "regression run; add judge/judge.yaml (docs/runner-contract.md, The judge)")
    g = run_script("gate", run_dir, "--no-verify")
    assert g.rc == 1, g.stdout
    assert "c-one00001 (judged: no judge/judge.yaml in the state dir" in g.stdout


def test_an_otlp_http_listener_that_received_nothing_says_so_not_that_a_span_file_is_missing(tmp_path):
    # before: "... arrived over OTLP/HTTP at 127.0.0.1:N/v1/traces within max_wait_s=0.3; the span file
    # /nonexistent/otlp-http does not exist" -- a file the user never named
    traces = ("traces: {source: otlp-http, location: '127.0.0.1:0', correlation: traceparent-echo, "
              "completeness: {quiescence_ms: 50, max_wait_s: 0.3}}")
    state = write_state(tmp_path, traces=traces, calibrated=False)
    write_yaml(state / "profile.yaml", PROFILE.replace("trajectory: {enabled: false, blocked_by: no traces}",
                                                       "trajectory: {enabled: true}"))
    (state / "datasets" / "c-conv0001.yaml").unlink()
    write_yaml(state / "datasets" / "c-one00001.yaml", SINGLE.replace("answer: {rubric: [booking-v1]}",
                                                                      "tools: {subset: [book_trip]}"))
    plan_file = plan(state)
    run_dir = state / "reports" / RUN_ID
    with travel_app() as app:  # it exports no spans anywhere: its OTEL endpoint is not the runner's
        r = run_runner("--plan", plan_file, "--out", run_dir, "--progress", "never", env={"R2_URL": app.url})
    assert r.rc == 0, (r.stdout, r.stderr)
    why = verdict(run_dir, "c-one00001")["infra_reason"]
    assert "arrived over OTLP/HTTP at 127.0.0.1:" in why and "/nonexistent" not in why
    assert why.endswith("; this listener received no export at all: is the app's OTEL_EXPORTER_OTLP_ENDPOINT "
                        f"http://{why.split('OTLP/HTTP at ')[1].split('/v1/traces')[0]} (traces.location)?")


def test_gating_one_shards_run_dir_never_opens_and_the_merged_run_does(tmp_path):
    # a CI matrix job that gates its own shard: before, "PASS" with nothing saying 1 of 2 cases ran;
    # then (round 2) a line saying it covers a slice, and still exit 0 (issue 24 A8): a slice is not a run
    state = write_state(tmp_path, calibrated=False)
    write_yaml(state / "datasets" / "c-one00001.yaml", SINGLE.replace("Atlantis", "Rome"))
    plan_file = plan(state, "--shards", "2")
    shards = [state / "reports" / f"{RUN_ID}.shard-{i}" for i in (1, 2)]
    with travel_app() as app:
        for i, run_dir in enumerate(shards, 1):
            r = run_runner("--plan", plan_file, "--shard", i, "--out", run_dir, "--progress", "never",
                           env={"R2_URL": app.url})
            assert r.rc == 0, (r.stdout, r.stderr)
    g = run_script("gate", shards[0], "--no-verify")
    assert g.rc == 1, g.stdout
    assert g.stdout.splitlines()[0].split(" -- closed: ")[0].endswith(": FAIL")
    assert ("  gate closed: this is shard 1/2's run dir, a slice of the plan, not a run: merge every shard "
            "(merge_runs.py --plan PLAN --out <run dir> <shard dirs>) and gate the merged run") \
        in g.stdout.splitlines(), g.stdout
    merged = state / "reports" / RUN_ID
    m = run_script("merge_runs", "--plan", plan_file, "--out", merged, *shards)
    assert m.rc == 0, (m.stdout, m.stderr)
    g = run_script("gate", merged, "--no-verify")
    assert g.rc == 0 and "shard" not in g.stdout and "slice" not in g.stdout, g.stdout


def test_a_judge_base_url_without_v1_is_caught_at_pre_flight_naming_url_and_fix(tmp_path):
    # base_url without /v1 on an OpenAI-compatible server: every judge call is a 404. Round 2: the case
    # was infra_error with infra_reason null and the gate said "c-one00001 (no reason recorded)"; then
    # the reason was named per case. Issue 24 D3: the judge probe stops it at pre-flight (exit 3), naming
    # the resolved URL, the status and the fix; a mid-run refusal names the same (tests/test_judge_probe.py).
    with travel_app() as app:
        judge = f"provider: openai\nmodel: llama3\nbase_url: {app.url}\n"
        state = write_state(tmp_path, judge=judge)
        (state / "datasets" / "c-conv0001.yaml").unlink()
        write_yaml(state / "datasets" / "c-two00001.yaml", SINGLE.replace("c-one00001", "c-two00001")
                   .replace("Atlantis", "Rome").replace("  answer: {rubric: [booking-v1]}\n", ""))
        plan_file = plan(state, "--judge")
        run_dir = state / "reports" / RUN_ID
        r = run_runner("--plan", plan_file, "--out", run_dir, "--progress", "never", env={"R2_URL": app.url})
    assert r.rc == 3, (r.stdout, r.stderr)
    err = r.json["error"]
    assert f"judge probe POST {app.url}/chat/completions (no api_key) got HTTP 404" in err
    assert "usually ends in /v1" in err and "no case was sent" in err
    assert not (cases_view(run_dir)).exists() or not any((cases_view(run_dir)).iterdir())
