"""Secrets, end to end, with an app and a command judge that echo every secret they can (issue 25
items 2 and 5): a k=3 traced regression run, its rescore, and a rescore that calls the judge
afresh. Every byte written under the test's directory and every byte sent to the judge is
grepped for each secret, its first 10 and its last 10 characters; the rescore of the k=3 run
gives exactly the run's verdicts, per repeat, and never stops on the app's health."""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import pytest

from assay.traces.otlp_writer import new_span_id, new_trace_id, parse_traceparent, span, write_spans
from fakeapp import FakeApp, Reply
from rundir_util import cases_view, committed_lines, edit_case, read_artifact
from fixtures_authoring import PROFILE, _case
from helpers import run_script, write_yaml

TOKEN = "tkA9f3Qz7LmP2xW8vR4nB6yC1dE5hJ0s"        # $LEAK_TOKEN: the bearer token
HEADER_KEY = "hkZ2w8Xq4Nv6Bm1Lp9Rt3Ys7Uc5Ge0Ka"   # $LEAK_HEADER_KEY: a static header
BODY_SECRET = "bsM4k8Jd2Fh6Gt0Wq3Er7Ty1Ui5Op9As"  # $LEAK_BODY_SECRET: in the request body
JUDGE_TOKEN = "jtP7o3Iu9Yt5Re1Wq8As4Df2Gh6Jk0Lz"  # $JUDGE_TOKEN: allowlisted for the judge, no ${VAR}
INHERITED = "ihV5c1Xz7Nb3Mq9Wl4Ek8Rj2Tf6Yg0Hu"    # $LEAKY_API_KEY: in the runner's env, given to nobody
APP_SECRETS = (TOKEN, HEADER_KEY, BODY_SECRET)
ALL_SECRETS = APP_SECRETS + (JUDGE_TOKEN, INHERITED)

ADAPTER = """\
adapter_version: 1
app: {name: leaky}
data: {may_contain_pii: false}
invocation:
  mode: http
  base_url: ${LEAK_URL}
  auth: {type: bearer, token_env: LEAK_TOKEN}
  headers: {X-Api-Key: "${LEAK_HEADER_KEY}"}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>", "body_secret": "${LEAK_BODY_SECRET}"}'
  response_body: '{"message": "<answer>"}'
  route_from_response: domain
  result_from_response: data.value
  health_check: {method: GET, path: /healthz, expect_status: [200]}
  timeout_s: 10
  max_concurrency: 4
traces:
  source: otlp-file
  location: ${LEAK_SPANS}
  convention: gen_ai
  correlation: traceparent-echo
  completeness: {quiescence_ms: 30, max_wait_s: 3}
tools:
  - {name: lookup, side_effects: safe-live, description: Looks a record up., schema: {type: object}}
environment: {kind: mocked, safe_to_attack: true}
oracle: {kind: none}
"""

RUBRIC = """---
rubric_id: says-ok
version: 1
nodes:
  - id: ok
    criterion: The reply says ok.
---
# says-ok
"""

# The judge: records everything it is sent (stdin, argv, environment) outside the state dir, then
# echoes every secret it can reach - its environment and a file of the app's secrets - into its
# verdict (and, for one answer, into a failing stderr whose last 300 characters cut a secret).
JUDGE = r'''
import json, os, sys
prompt = sys.stdin.read()
with open(os.environ["JUDGE_CAPTURE"], "a") as f:
    f.write(json.dumps({"stdin": prompt, "argv": sys.argv, "env": dict(os.environ)}) + "\n")
known = json.load(open(os.environ["JUDGE_KNOWS"]))
echo = " ".join(known + [v for k, v in sorted(os.environ.items())])
if "STDERR-CASE" in prompt:
    sys.stderr.write(os.environ["JUDGE_TOKEN"] + "y" * 290)
    sys.exit(1)
answer = prompt.split("<untrusted-answer-")[1].split(">\n", 1)[1]
verdict = "pass" if "ok" in answer else "fail"
print(json.dumps({"verdict": verdict, "evidence": ["ok"] if verdict == "pass" else [],
                  "reason": ("x" * 150) + echo}))
'''


def case(cid, content, expect, split="[full, smoke]"):
    return _case(cid, unit="billing", split=split, content=content, expect=expect)


CASES = {
    "c-00000001": case("c-00000001", "judged",
                       "  route: billing\n  answer: {must_contain: [ok], rubric: [says-ok-v1]}\n"),
    "c-00000002": case("c-00000002", "json", "  route: billing\n  result: {scalar: 42}\n"),
    "c-00000003": case("c-00000003", "args", "  args: {lookup: {q: other}}\n"),
    "c-00000004": case("c-00000004", "flaky", "  tools: {order: [lookup], order_mode: exact}\n"),
    "c-00000005": case("c-00000005", "plain", "  answer: {must_contain: [nothing-like-it]}\n"),
}
# enough traced cases (>= 8) that an infra-rate abort could trigger: a rescore must never stop on one
CASES.update({f"c-0000001{i}": case(f"c-0000001{i}", f"hello {i}", "  answer: {must_contain: [ok]}\n"
                                    "  tools: {order: [lookup], order_mode: exact}\n") for i in range(6)})


class LeakyApp:
    """Echoes every secret it receives into the answer, the route-free fields, a JSON body, tool
    arguments and results and span attributes; "flaky" calls its tool twice on every 2nd request."""

    def __init__(self, span_file: Path) -> None:
        self.span_file = span_file
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = req.json.get("message", "")
        with self.lock:
            self.counts[msg] = n = self.counts.get(msg, 0) + 1
        got = [(req.headers.get("Authorization") or "").removeprefix("Bearer "), req.headers.get("X-Api-Key") or "",
               req.json.get("body_secret", "")]
        echo = " ".join(got)
        doc = {"message": f"ok {echo}" if msg != "plain" else f"plain {echo}", "domain": "billing"}
        tools = [("lookup", {"q": "k" + echo}, {"found": echo})]
        if msg == "json":
            doc["data"] = {"value": 42, "echo": echo, echo: [echo]}
        elif msg == "args":
            tools = [("lookup", {"q": "x" * 60 + echo}, {"found": echo})]
        elif msg == "flaky" and n % 2 == 0:
            tools = tools * 2
        parsed = parse_traceparent(req.headers.get("traceparent"))
        trace_id, caller = parsed if parsed else (new_trace_id(), None)
        root, t = new_span_id(), 1_700_000_000_000_000_000
        spans = [span(trace_id=trace_id, parent_span_id=root, operation="execute_tool", tool=name, arguments=a,
                      result=r, start_ns=t + 10_000 * (i + 1), end_ns=t + 10_000 * (i + 1) + 5000,
                      attributes={"app.note": f"saw {echo}"}) for i, (name, a, r) in enumerate(tools)]
        spans.append(span(trace_id=trace_id, span_id=root, parent_span_id=caller, operation="invoke_agent",
                          agent="billing", start_ns=t, end_ns=t + 100_000))
        with self.lock:
            write_spans(self.span_file, spans)
        return Reply(200, doc)


def make_state(tmp: Path, cases: dict[str, str]) -> Path:
    state = tmp / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    profile = PROFILE.replace("  - {name: invoices, description: billing questions}\n",
                              "  - {name: billing, description: billing questions}\n") \
        .replace("tool_selection: {enabled: false, blocked_by: no traces}", "tool_selection: {enabled: true}") \
        .replace("trajectory: {enabled: false, blocked_by: no traces}", "trajectory: {enabled: true}")
    write_yaml(state / "profile.yaml", profile)
    for cid, text in cases.items():
        write_yaml(state / "datasets" / f"{cid}.yaml", text)
    write_yaml(state / "rubrics" / "says-ok.md", RUBRIC)
    (state / "judge").mkdir(parents=True, exist_ok=True)
    (state / "judge" / "echo_judge.py").write_text(JUDGE)
    write_yaml(state / "judge" / "judge.yaml",
               f"provider: command\ncommand: [{json.dumps(sys.executable)}, judge/echo_judge.py]\n"
               "env_allowlist: [JUDGE_TOKEN, JUDGE_CAPTURE, JUDGE_KNOWS]\nmax_concurrency: 2\n")
    return state


def environment(tmp: Path, app_url: str, span_file: Path) -> dict[str, str]:
    knows = tmp / "outside" / "judge-knows.json"
    knows.parent.mkdir(exist_ok=True)
    knows.write_text(json.dumps(list(APP_SECRETS)))
    return {"LEAK_URL": app_url, "LEAK_SPANS": str(span_file), "LEAK_TOKEN": TOKEN, "LEAK_HEADER_KEY": HEADER_KEY,
            "LEAK_BODY_SECRET": BODY_SECRET, "JUDGE_TOKEN": JUDGE_TOKEN, "LEAKY_API_KEY": INHERITED,
            "JUDGE_CAPTURE": str(tmp / "outside" / "judge-sent.jsonl"), "JUDGE_KNOWS": str(knows)}


def plan(state: Path, mode: str, run_id: str, *extra: str) -> Path:
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout
    p = run_script("make_plan", work / "converted.json", "--mode", mode, "--state-dir", state,
                   "-o", work / f"{run_id}.json", "--run-id", run_id, *extra)
    assert p.rc == 0, p.stdout + p.stderr
    return work / f"{run_id}.json"


def pieces(secret: str) -> list[bytes]:
    return [secret.encode(), secret[:10].encode(), secret[-10:].encode()]


def leaks(root: Path, secrets: tuple[str, ...], skip: tuple[Path, ...]) -> list[str]:
    hits = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and not any(p == s or s in p.parents for s in skip):
            data = p.read_bytes()
            hits += [f"{p.relative_to(root)}: {piece.decode()}" for s in secrets for piece in pieces(s) if piece in data]
    return hits


def sent_to_judge_leaks(capture: Path) -> list[str]:
    rows = [json.loads(x) for x in capture.read_text().splitlines()]
    assert rows, "the judge was never called"
    hits = []
    for i, row in enumerate(rows):
        text = json.dumps(row["stdin"]) + json.dumps(row["argv"]) + json.dumps(row["env"])
        hits += [f"call {i}: {p.decode()}" for s in APP_SECRETS + (INHERITED,) for p in pieces(s) if p.decode() in text]
        assert row["env"].get("JUDGE_TOKEN") == JUDGE_TOKEN        # the allowlisted variable is given
        assert "LEAKY_API_KEY" not in row["env"] and "LEAK_TOKEN" not in row["env"]
    return hits


def layers_by_repeat(out: Path, cid: str) -> list[dict]:
    rows = []
    for n in (1, 2, 3):
        v = json.loads((cases_view(out) / cid / "repeats" / str(n) / "verdict.json").read_text())
        rows.append({"verdict": v["verdict"], "layers": {k: (e or {}).get("verdict") for k, e in v["layers"].items()}})
    return rows


@pytest.fixture(scope="module")
def k3(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("k3")
    span_file = tmp / "outside" / "spans.jsonl"
    span_file.parent.mkdir()
    span_file.touch()
    state = make_state(tmp, CASES)
    leaky = LeakyApp(span_file)
    out = state / "reports" / "regression-20261201T000000Z"
    new = state / "reports" / "regression-20261201T010000Z"
    with FakeApp(leaky) as app:
        env = environment(tmp, app.url, span_file)
        plan_path = plan(state, "regression", out.name)
        run = run_script("run_cases", "--plan", plan_path, "--out", out, "--progress", "never", env=env)
        posts = len(app.posts())
        rescore = run_script("rescore", out, "--out", new, env=env)
        assert len(app.posts()) == posts        # rescore calls no app
    # what a person reads of both runs: the gate (text, JSON, JUnit) and the report, grepped below too
    readers = [run_script("gate", d, *args, env=env) for d in (out, new)
               for args in ((), ("--json", "--junit", tmp / f"junit-{d.name}.xml"))]
    readers += [run_script("draft_report", d, env=env) for d in (out, new)]
    return tmp, state, out, new, run, rescore, readers


def test_the_app_and_the_judge_really_echoed(k3):
    tmp, state, out, new, run, rescore, readers = k3
    assert run.rc in (0, 1), run.stdout + run.stderr
    answer = (cases_view(out) / "c-00000001" / "answer.txt").read_text()
    assert answer == "ok <redacted> <redacted> <redacted>"
    judge = json.loads((cases_view(out) / "c-00000001" / "judge.json").read_text())
    reason = judge["rubrics"][0]["nodes"][0]["reason"]
    assert reason.count("<redacted>") >= 4, reason          # 3 app secrets and the judge's own token
    args = json.loads((cases_view(out) / "c-00000003" / "verdict.json").read_text())["layers"]["tool_selection"]
    assert args["verdict"] == "fail" and "xxxx" in json.dumps(args)
    for n in (1, 2, 3):   # every repeat keeps its own trace
        assert (cases_view(out) / "c-00000004" / "repeats" / str(n) / "trajectory.json").is_file()


def test_no_secret_on_disk_nor_sent_to_the_judge(k3):
    tmp, state, out, new, run, rescore, readers = k3
    assert rescore.rc == run.rc, rescore.stdout + rescore.stderr
    skip = (tmp / "outside",)          # the app's own span file and what the judge recorded
    assert leaks(tmp, ALL_SECRETS, skip) == []
    assert (tmp / f"junit-{new.name}.xml").is_file() and (new / "report.md").is_file()
    for res in (run, rescore, *readers):
        assert not [s for s in ALL_SECRETS for p in pieces(s) if p.decode() in res.stdout + res.stderr]
    assert sent_to_judge_leaks(tmp / "outside" / "judge-sent.jsonl") == []


def test_rescore_of_a_k3_traced_run_equals_the_run(k3):
    tmp, state, out, new, run, rescore, readers = k3
    assert rescore.rc == run.rc and rescore.json["rescored_from"] == out.name, rescore.stdout
    a = {json.loads(x)["case_id"]: json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()}
    b = {json.loads(x)["case_id"]: json.loads(x) for x in (new / "verdicts.jsonl").read_text().splitlines()}
    assert {c: r["verdict"] for c, r in a.items()} == {c: r["verdict"] for c, r in b.items()}
    assert a["c-00000002"]["verdict"] == "pass"       # a JSON body holding a secret is still JSON
    for cid in CASES:
        assert layers_by_repeat(new, cid) == layers_by_repeat(out, cid), cid
    flaky = [r["layers"]["trajectory"] for r in layers_by_repeat(out, "c-00000004")]
    assert flaky == ["pass", "fail", "pass"]           # the repeats really differ
    summary = json.loads((new / "results.json").read_text())["summary"]
    assert summary["status"] == "ok" and summary["infra_errors"] == 0, summary
    assert run_script("run_cases", "--verify", new).rc == 0
    assert run_script("run_cases", "--verify", out).rc == 0


def test_an_older_run_dir_without_every_repeats_trace_rescores_without_aborting(k3):
    """A run dir from before repeats/<n>/ kept a trace: the other repeats' trace-fed layers read
    infra_incomplete, honestly, and the rescore finishes (it calls no app: never exit 5)."""
    tmp, state, out, new, run, rescore, readers = k3
    old = state / "reports" / "regression-20261201T020000Z"
    shutil.copytree(out, old)
    for cid, line in committed_lines(old).items():
        names = [n for n in json.loads(line)["files"] if n.startswith("repeats/")]
        assert names, cid
        for name in names:
            if name.endswith(("/trajectory.json", "/trace.json")):
                edit_case(old, cid, name, None)
            elif name.endswith("/verdict.json"):
                v = json.loads(read_artifact(old, f"cases/{cid}/{name}"))
                for key in ("trace", "trace_collected"):
                    v.pop(key, None)
                edit_case(old, cid, name, json.dumps(v).encode())
    again = state / "reports" / "regression-20261201T030000Z"
    r = run_script("rescore", old, "--out", again)
    assert r.rc != 5 and r.rc in (0, 1), r.stdout + r.stderr
    summary = json.loads((again / "results.json").read_text())["summary"]
    assert summary["status"] == "ok", summary
    v = json.loads((cases_view(again) / "c-00000010" / "verdict.json").read_text())
    assert v["verdict"] == "infra_incomplete" and [r["verdict"] for r in v["repeats"]].count("infra_incomplete") == 2
    assert run_script("run_cases", "--verify", again).rc == 0


def test_rescore_registers_the_apps_secrets_for_a_judge_it_calls(tmp_path):
    """A smoke run without the judge, rescored with --judge: every judge call is the rescore's own,
    and the judge echoes the app's secrets (and, failing, the tail of its own token on stderr)."""
    cases = dict(CASES)
    cases["c-00000006"] = case("c-00000006", "STDERR-CASE",
                               "  answer: {must_contain: [ok], rubric: [says-ok-v1]}\n", split="[smoke]")
    span_file = tmp_path / "outside" / "spans.jsonl"
    span_file.parent.mkdir()
    span_file.touch()
    state = make_state(tmp_path, cases)
    out = state / "reports" / "smoke-20261201T000000Z"
    new = state / "reports" / "smoke-20261201T010000Z"
    with FakeApp(LeakyApp(span_file)) as app:
        env = environment(tmp_path, app.url, span_file)
        run = run_script("run_cases", "--plan", plan(state, "smoke", out.name), "--out", out, "--progress", "never",
                         env=env)
        assert run.rc in (0, 1), run.stdout + run.stderr
    assert not (tmp_path / "outside" / "judge-sent.jsonl").exists()      # the run did not judge
    rescore = run_script("rescore", out, "--out", new, "--judge", env=env)
    assert rescore.rc in (0, 1), rescore.stdout + rescore.stderr
    judged = json.loads((cases_view(new) / "c-00000001" / "judge.json").read_text())
    assert judged["rubrics"][0]["verdict"] == "pass" and "reused_from" not in judged["rubrics"][0]
    failed = json.loads((cases_view(new) / "c-00000006" / "judge.json").read_text())
    assert "judge command exited 1" in json.dumps(failed)
    assert leaks(tmp_path, ALL_SECRETS, (tmp_path / "outside",)) == []
    assert not [s for s in ALL_SECRETS for p in pieces(s) if p.decode() in rescore.stdout + rescore.stderr]
    assert sent_to_judge_leaks(tmp_path / "outside" / "judge-sent.jsonl") == []
