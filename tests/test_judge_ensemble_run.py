"""A judge you can trust, end to end (run_cases.py and gate.py as subprocesses, a fake app and fake
judges on real loopback ports speaking the Anthropic Messages / OpenAI Chat Completions wire
formats, and a command judge): an ensemble of three with one dissenter, a judge that alternates
its answer (judge_unstable, named apart by the gate), and conversations judged turn by turn."""

from __future__ import annotations

import json
import sys
import threading

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, run_runner, state  # noqa: F401 (fixtures)
from helpers import run_script
from judgefake import anthropic_handler, judge_block, openai_handler, prompt_parts, write_calibration, write_rubric
from rundir_util import cases_view

FULL = "Refund of 20 USD issued; it arrives within 5 business days."
NO_ETA = "Refund of 20 USD issued."
DISSENT = """import json, sys
sys.stdin.read()
print(json.dumps({"verdict": "fail", "evidence": [], "reason": "the dissenter always fails"}))
"""


def go(state, plan, env=None):
    path = state / "work" / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    return run_runner("--plan", path, "--out", out, "--progress", "never", env=env), out


def read(path):
    return json.loads(path.read_text(encoding="utf-8"))


def rcase(cid, message):
    return case(cid, message, expect={"answer": {"must_contain": ["Refund"], "rubric": ["refund-eta-v1"]}})


def single_app(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": {"full": FULL, "no-eta": NO_ETA}[req.json["message"]]})


@pytest.fixture
def servers():
    with FakeApp() as a, FakeApp() as b, FakeApp() as c:
        yield a, b, c


def test_ensemble_of_three_one_dissenter_majority_keeps_every_call(state, servers):
    app, anth, oai = servers
    app.handler = single_app
    anth.handler, oai.handler = anthropic_handler(), openai_handler()
    (state / "dissent.py").write_text(DISSENT, encoding="utf-8")
    config = {"judges": [{"provider": "anthropic", "model": "claude-test", "base_url": anth.url},
                         {"provider": "openai", "model": "gpt-test", "base_url": oai.url + "/v1"},
                         {"provider": "command", "command": [sys.executable, "dissent.py"]}],
              "aggregate": "majority", "max_concurrency": 3}
    write_rubric(state)
    plan = make_plan(state, [rcase("c-1", "full")], app_url=app.url)
    plan["judge"] = judge_block(state, config)
    plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True}, config)
    r, out = go(state, plan)
    assert r.rc == 0, r.stdout + r.stderr
    doc = read(cases_view(out) / "c-1" / "judge.json")
    rub = doc["rubrics"][0]
    assert rub["verdict"] == "pass" and rub["provisional"] is False  # calibrated as the ensemble configured
    for node in rub["nodes"]:
        assert node["verdict"] == "pass"
        assert [(j["judge"], j["verdict"]) for j in node["judges"]] == [(1, "pass"), (2, "pass"), (3, "fail")]
        assert len(node["calls"]) == 3 and sorted(c["judge"] for c in node["calls"]) == [1, 2, 3]
        assert node["reason"].startswith("majority of 3 judges (pass x2, fail)")
    assert doc["aggregate"] == "majority" and [j["provider"] for j in doc["judges"]] == ["anthropic", "openai", "command"]
    v = read(cases_view(out) / "c-1" / "verdict.json")
    assert v["layers"]["judged"]["verdict"] == "pass" and v["verdict"] == "pass"
    # usage split by model: two priced models and the command judge (no model, no usage)
    by_model = v["judge_usage"]["by_model"]
    assert by_model["claude-test"]["calls"] == 2 and by_model["gpt-test"]["input_tokens"] == 400
    assert v["judge_usage"]["calls"] == 6 and v["judge_usage"]["calls_without_usage"] == 2
    assert run_runner("--verify", out).rc == 0
    # the calibration was of this ensemble: with the dissenter removed, the same sidecar does not apply
    two = dict(config, judges=config["judges"][:2], aggregate="unanimous")
    plan2 = make_plan(state, [rcase("c-1", "full")], app_url=app.url, run_id="smoke-20261129T101600Z")
    plan2["judge"] = judge_block(state, two)
    plan2["paths"]["judge_calibration"] = "judge/calibration.json"
    r2, out2 = go(state, plan2)
    assert r2.rc == 0, r2.stdout + r2.stderr
    j2 = read(cases_view(out2) / "c-1" / "verdict.json")["layers"]["judged"]
    assert j2["provisional"] is True and "the set of judges" in j2["rubrics"][0]["why_provisional"]


def alternating(seen_lock=threading.Lock()):
    """A judge that alternates pass / fail on the arrival node of the reply without an ETA (and is
    steady everywhere else)."""
    counts: dict[str, int] = {}

    def decide(node, answer):
        if node == "states-amount":
            return {"verdict": "pass", "evidence": ["20 USD"], "reason": "amount stated"}
        if answer == FULL:
            return {"verdict": "pass", "evidence": ["within 5 business days"], "reason": "arrival stated"}
        with seen_lock:
            counts[answer] = counts.get(answer, 0) + 1
            n = counts[answer]
        return ({"verdict": "pass", "evidence": ["Refund of 20 USD"], "reason": "looks fine"} if n % 2
                else {"verdict": "fail", "evidence": [], "reason": "no arrival time"})
    return decide


def test_alternating_judge_is_unstable_unscored_and_named_apart(state, servers):
    app, anth, _ = servers
    app.handler = single_app
    anth.handler = anthropic_handler(alternating())
    config = {"provider": "anthropic", "model": "claude-test", "base_url": anth.url, "repeats": 2}
    write_rubric(state)
    plan = make_plan(state, [rcase("c-1", "full"), rcase("c-2", "no-eta")], app_url=app.url)
    plan["judge"] = judge_block(state, config)
    plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True}, config)
    r, out = go(state, plan)
    assert r.rc == 0, r.stdout + r.stderr
    v1, v2 = (read(cases_view(out) / c / "verdict.json") for c in ("c-1", "c-2"))
    assert v1["verdict"] == "pass" and v1["judge_unstable"] is False
    assert v2["verdict"] == "unscored" and v2["judge_unstable"] is True   # never pass, never an app fail
    j = v2["layers"]["judged"]
    assert j["verdict"] == "unscored" and j["judge_unstable"] is True
    assert "states-arrival" in j["reason"] and "answered pass, fail over 2 asks" in j["reason"]
    node = {n["node_id"]: n for n in read(cases_view(out) / "c-2" / "judge.json")["rubrics"][0]["nodes"]}
    assert node["states-arrival"]["verdict"] == "judge_unstable" and len(node["states-arrival"]["calls"]) == 2
    assert node["states-amount"]["verdict"] == "pass"
    res = read(out / "results.json")
    judged = res["summary"]["judged"]
    assert judged["unstable_cases"] == 1
    assert judged["instability"]["refund-eta-v1"] == {"judged_nodes": 4, "unstable_nodes": 1, "rate": 0.25}
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout
    lines = g.stdout.splitlines()
    unstable = [ln for ln in lines if "judge unstable: 1 gating case(s)" in ln]
    assert len(unstable) == 1, g.stdout
    assert len(unstable) == 1 and "c-2" in unstable[0] and "not app failures" in unstable[0]
    # apart from app failures and from checks that never ran
    assert not any("c-2" in ln for ln in lines if "never ran" in ln or "gating failure" in ln)
    assert any("judge instability: refund-eta-v1: 1 of 4 node verdict(s) unstable (25.0 %)" in ln for ln in lines)
    md = run_script("draft_report", out, "-o", "-")
    assert md.rc == 0 and "refund-eta-v1" in md.stdout and "25.0 %" in md.stdout


# ---------------------------------------------------------------- conversations
class Desk:
    """Turn 1 names the open invoice; turn 2 refunds it (and says when only when `eta`); turn 3 thanks."""

    def __init__(self, eta: bool) -> None:
        self.eta = eta

    def __call__(self, req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        text = req.json["message"]
        if "open" in text:
            return Reply(200, {"message": "Invoice INV-2 is open (20 USD).", "route": "billing"})
        if "refund" in text:
            return Reply(200, {"message": "Refund of 20 USD issued for INV-2"
                                          + ("; it arrives within 5 business days." if self.eta else "."),
                               "route": "billing"})
        return Reply(200, {"message": "You are welcome.", "route": "chat"})


def convo(cid, *, checkpoint_rubric=None, case_rubric=None):
    turns = [{"user": "which invoice is open?", "expect": {"route": "billing"}},
             {"user": "refund that one", "expect": {"route": "billing"}},
             {"user": "thanks"}]
    if checkpoint_rubric:
        turns[1]["expect"]["answer"] = {"rubric": [checkpoint_rubric]}
    expect = {"answer": {"must_contain": ["welcome"]}}
    if case_rubric:
        expect["answer"]["rubric"] = [case_rubric]
    return {"id": cid, "split": ["smoke"], "category": "multistep", "test_type": "MFT", "template_id": None,
            "input": {"turns": turns}, "expect": expect}


def test_conversation_fails_at_the_turn_whose_rubric_fails_and_the_transcript_is_judged(state, servers):
    app, anth, _ = servers
    seen: list = []
    anth.handler = anthropic_handler(seen=seen)
    write_rubric(state)
    config = {"provider": "anthropic", "model": "claude-test", "base_url": anth.url}
    cases = [convo("c-turn", checkpoint_rubric="refund-eta-v1"), convo("c-whole", case_rubric="refund-eta-v1")]
    ad = adapter(app.url, conversation={"style": "client-id", "memory": "session"})
    app.handler = Desk(eta=False)
    plan = make_plan(state, cases, app_url=app.url, adapter_doc=ad)
    plan["judge"] = judge_block(state, config)
    plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True}, config)
    r, out = go(state, plan)
    assert r.rc == 0, r.stdout + r.stderr
    v = read(cases_view(out) / "c-turn" / "verdict.json")
    # the checkpoint rubric on turn 2 fails: the conversation fails THERE and turn 3 is never sent
    assert (v["verdict"], v["failed_turn"], v["turns_sent"]) == ("fail", 2, 2)
    assert v["stop_reason"].startswith("turn 2: judged:")
    assert v["layers"]["judged"]["turn"] == 2 and v["layers"]["judged"]["verdict"] == "fail"
    assert [t.get("judged", False) for t in v["turns"]] == [False, True]
    tdoc = read(cases_view(out) / "c-turn" / "turns" / "2" / "judge.json")
    assert tdoc["turn"] == 2 and tdoc["scopes"] == ["turn"] and tdoc["rubrics"][0]["scope"] == "turn"
    prompt = tdoc["rubrics"][0]["nodes"][0]["calls"][0]["prompt"]
    # the turn is judged with the transcript so far as context
    assert "<untrusted-earlier-turns-" in prompt and "Invoice INV-2 is open (20 USD)." in prompt
    assert prompt.index("<untrusted-earlier-turns-") < prompt.index("<untrusted-answer-")
    node, answer = prompt_parts(prompt)
    assert answer == "Refund of 20 USD issued for INV-2."
    case_doc = read(cases_view(out) / "c-turn" / "judge.json")
    assert case_doc["multi_turn"] is True and case_doc["rubrics"][0]["turn"] == 2
    assert "calls" not in case_doc["rubrics"][0]["nodes"][0]   # the calls are kept per turn
    # the case-level rubric judges the whole conversation once, at its last turn: the amount is in
    # turn 1's answer (a pass quoting it), the arrival nowhere (a fail at turn 3)
    w = read(cases_view(out) / "c-whole" / "verdict.json")
    assert w["turns_sent"] == 3 and [t.get("judged", False) for t in w["turns"]] == [False, False, True]
    assert (w["verdict"], w["failed_turn"]) == ("fail", 3)
    wdoc = read(cases_view(out) / "c-whole" / "turns" / "3" / "judge.json")
    assert wdoc["rubrics"][0]["scope"] == "transcript"
    wnodes = {n["node_id"]: n for n in wdoc["rubrics"][0]["nodes"]}
    assert (wnodes["states-amount"]["verdict"], wnodes["states-arrival"]["verdict"]) == ("pass", "fail")
    wprompt = wdoc["rubrics"][0]["nodes"][0]["calls"][0]["prompt"]
    assert "<untrusted-conversation-" in wprompt and "[turn 2 answer]\nRefund of 20 USD issued for INV-2." in wprompt
    assert "You are welcome." in wprompt
    assert run_runner("--verify", out).rc == 0


# ---------------------------------------------------------------- judge cost
def traced_app(span_file):
    """The single-turn app, continuing the traceparent it is sent into an OTLP file: one chat span of
    the app's own model per request (1000 in + 500 out tokens)."""
    from otlp_util import agent_spans, parse_traceparent, write_spans

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        tp = next((v for k, v in req.headers.items() if k.lower() == "traceparent"), None)
        trace_id, parent = parse_traceparent(tp)
        write_spans(span_file, agent_spans(trace_id, None, parent_span_id=parent, llm_tokens=(1000, 500),
                                           model="app-model"))
        return Reply(200, {"message": {"full": FULL, "no-eta": NO_ETA}[req.json["message"]]})
    return handler


def _priced_judged_run(state, servers, tmp_path, judge_handler, case_ids, k=1, run_id=None):
    """A traced app and an anthropic judge, both priced (prices.yaml), over `case_ids` at `k`: (result, run dir)."""
    app, anth, _ = servers
    span_file = tmp_path / (f"spans-{run_id}.jsonl" if run_id else "spans.jsonl")
    app.handler = traced_app(span_file)
    anth.handler = judge_handler
    (state / "prices.yaml").write_text("currency: USD\nper: 1000000\nmodels:\n  app-model: {input: 1.0, output: 2.0}\n"
                                       "  claude-test: {input: 10.0, output: 50.0}\n", encoding="utf-8")
    write_rubric(state)
    ad = adapter("${APP_URL}")
    ad["traces"] = {"source": "otlp-file", "location": "${SPANS}", "convention": "gen_ai",
                    "correlation": "traceparent-echo", "completeness": {"quiescence_ms": 30, "max_wait_s": 2}}
    plan = make_plan(state, [rcase(cid, "full") for cid in case_ids], adapter_doc=ad, k=k,
                     **({"run_id": run_id} if run_id else {}))
    plan["judge"] = judge_block(state, {"provider": "anthropic", "model": "claude-test", "base_url": anth.url})
    return go(state, plan, env={"APP_URL": app.url, "SPANS": str(span_file)})


def test_judge_cost_in_results_and_it_closes_a_budget(state, servers, tmp_path):
    r, out = _priced_judged_run(state, servers, tmp_path, anthropic_handler(), ["c-1", "c-2"])
    assert r.rc == 0, r.stdout + r.stderr
    cl = read(out / "results.json")["cost_latency"]
    assert cl["cost"]["total"] == pytest.approx(0.004) and cl["cost"]["mean_per_case"] == pytest.approx(0.002)
    # two nodes x (120 in + 30 out) per case at 10 / 50 USD per million: 0.0054 a case, apart from the app's
    assert cl["judge"] == {"calls": 4, "input_tokens": 480, "output_tokens": 120, "currency": "USD", "complete": True,
                           "total": pytest.approx(0.0108), "mean_per_case": pytest.approx(0.0054),
                           "unpriced_models": [], "reason": None}
    closed = run_script("gate", out, "--max-cost-per-case", "0.005")
    assert closed.rc == 1, closed.stdout
    assert "cost 0.0074 USD/case (app 0.002 + judge 0.0054) is over the budget 0.005" in closed.stdout
    assert "judge cost: 0.0108 USD over 4 call(s), 0.0054 per case, apart from the app's" in closed.stdout
    apart = run_script("gate", out, "--max-cost-per-case", "0.005", "--no-judge-cost")
    assert apart.rc == 0, apart.stdout
    assert "cost 0.002 USD/case (the app's only: 4 judge call(s) left out by --no-judge-cost)" in apart.stdout
    sc = run_script("score_cost", out)
    assert sc.rc == 0 and json.loads(sc.stdout)["totals"]["judge"]["cost"] == pytest.approx(0.0108), sc.stdout


def test_a_judged_cost_per_case_is_one_answers_at_k3_as_at_k1(state, servers, tmp_path):
    """The same app and judge cost the same per case at k=1 and at k=3: one answer's app cost plus one
    answer's judge cost (a case's judge calls over its judged repeats); the totals are each run's spend.
    The judge's per case figure was every judged repeat's calls over the cases, so at k=3 the budget
    checked 0.002 + 3 x 0.0054 = 0.0182 and closed a budget the k=1 run met; and a comparison of the
    two runs said only the candidate's k note."""
    one_run, one = _priced_judged_run(state, servers, tmp_path, anthropic_handler(), ["c-1", "c-2"],
                                      run_id="smoke-20261129T101500Z")
    assert one_run.rc == 0, one_run.stdout + one_run.stderr
    three_run, three = _priced_judged_run(state, servers, tmp_path, anthropic_handler(), ["c-1", "c-2"], k=3,
                                          run_id="smoke-20261129T111500Z")
    assert three_run.rc == 0, three_run.stdout + three_run.stderr
    cl1, cl3 = read(one / "results.json")["cost_latency"], read(three / "results.json")["cost_latency"]
    assert cl3["judge"]["calls"] == 12 and cl3["judge"]["total"] == pytest.approx(3 * 0.0108)   # the run's spend
    assert cl3["cost"]["total"] == pytest.approx(3 * 0.004)
    for cl in (cl1, cl3):   # one unit: one answer's app cost + one answer's judge cost
        assert cl["cost"]["mean_per_case"] == pytest.approx(0.002)
        assert cl["judge"]["mean_per_case"] == pytest.approx(0.0054), cl["judge"]
    assert cl3["judge"]["answers"] == 6 and "answers" not in cl1["judge"]
    assert "the judge's cost per case is one answer's too: its 12 call(s) on 6 judged answer(s)" in cl3["k_note"]
    sc = json.loads(run_script("score_cost", three).stdout)["totals"]["judge"]
    assert (sc["cost"], sc["mean_per_case"], sc["answers"]) == (pytest.approx(0.0324), pytest.approx(0.0054), 6)

    budget = ("--max-cost-per-case", "0.008")   # met at k=1, so met at k=3: the same app and judge
    g1, g3 = run_script("gate", one, *budget), run_script("gate", three, *budget)
    assert g1.rc == 0 and g3.rc == 0, g1.stdout + g3.stdout
    assert "budget: cost 0.0074 USD/case (app 0.002 + judge 0.0054), budget 0.008" in g1.stdout
    line = next(x for x in g3.stdout.splitlines() if x.startswith("  budget: cost "))
    assert line.startswith("  budget: cost 0.0074 USD/case (one answer's: the mean over every repeat of 2 case(s) at "
                           "k=3, 6 answer(s)) (app 0.002 + judge 0.0054, the judge's one answer's too: its 12 call(s) "
                           "on 6 judged answer(s))"), line
    assert ("judge cost: 0.0324 USD over 12 call(s) on 6 judged answer(s), 0.0054 per case (one answer's), apart "
            "from the app's") in g3.stdout
    assert "judge cost: 0.0108 USD over 4 call(s), 0.0054 per case, apart from the app's" in g1.stdout

    cmp = run_script("compare_runs", one, three)
    assert cmp.rc == 0, cmp.stdout + cmp.stderr
    block = json.loads(cmp.stdout)["cost_latency"]
    assert block["base"]["cost_per_case_with_judge"] == block["candidate"]["cost_per_case_with_judge"] == \
        pytest.approx(0.0074)
    assert block["note"].startswith("the two runs' costs were read differently: base k=1: each case is one answer; "
                                    "candidate k=3: every repeat's trace is read"), block["note"]

    # a k=3 run written before verdict.json counted the judged repeats: they are read from its judge.json
    from rundir_util import case_json, edit_case
    for cid in ("c-1", "c-2"):
        v = case_json(three, cid)
        assert v["judge_usage"]["judged_repeats"] == 3
        del v["judge_usage"]["judged_repeats"]
        edit_case(three, cid, "verdict.json", json.dumps(v, sort_keys=True).encode())
    old = json.loads(run_script("score_cost", three).stdout)["totals"]["judge"]
    assert (old["cost"], old["mean_per_case"], old["answers"]) == (pytest.approx(0.0324), pytest.approx(0.0054), 6)


def test_judge_calls_without_usage_leave_the_cost_budget_uncheckable(state, servers, tmp_path):
    """A judge that answers without `usage` has an unknown cost, never 0 (wave 4 §1, as an app's model
    call without usage): a cost budget the app alone meets cannot be checked, and the gate closes saying
    why; --no-judge-cost checks the app's cost alone. It read `judge 0` and opened before."""
    answer = anthropic_handler()

    def no_usage(req):
        reply = answer(req)
        if isinstance(reply.body, dict):
            reply.body.pop("usage", None)
        return reply
    r, out = _priced_judged_run(state, servers, tmp_path, no_usage, ["c-1"])
    assert r.rc == 0, r.stdout + r.stderr
    why = "2 of 2 judge call(s) reported no token usage (their cost is unknown, not 0)"
    judge = read(out / "results.json")["cost_latency"]["judge"]
    assert judge["total"] is None and judge["complete"] is False and judge["reason"] == why, judge
    closed = run_script("gate", out, "--max-cost-per-case", "0.005")
    assert closed.rc == 1, closed.stdout
    assert f"gate closed: cost budget 0.005 USD/case cannot be checked: {why}" in closed.stdout
    assert f"judge cost: not priced ({why})" in closed.stdout
    apart = run_script("gate", out, "--max-cost-per-case", "0.005", "--no-judge-cost")
    assert apart.rc == 0, apart.stdout
