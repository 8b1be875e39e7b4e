"""A new user's cost budget on a new app (no silent green): the travel app of test_no_silent_green,
traced to a span file, gated on `budgets.max_cost_per_case` in its profile.yaml, driven as the README
says against a real HTTP app on a loopback port.
"""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply
from helpers import run_script, write_yaml
from test_no_silent_green import ADAPTER, case_yaml, plan, run, write_state

MODEL = "gpt-4.1-mini"


def traced_state(tmp_path, model: str, llm_span_for=lambda message: True, tokens=(1000, 100), renamed=None,
                 edit=None):
    """A two-case state dir whose app writes an invoke_agent span per request and, when
    `llm_span_for(message)`, a chat span of `model` (`tokens`: 1000 in + 100 out; None leaves that
    side's usage attribute out of the span) under it; `renamed` maps an attribute key the instrumentation
    writes under another name; `edit(message, spans)` rewrites a request's spans before they are written."""
    from otlp_util import agent_spans, parse_traceparent, write_spans
    spans_file = tmp_path / "spans.jsonl"

    def reply(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        message = (req.json or {}).get("message", "")
        trace_id, parent = parse_traceparent(req.headers.get("traceparent"))
        llm = tokens if llm_span_for(message) else None
        spans = agent_spans(trace_id, "quotes", parent_span_id=parent, llm_tokens=llm, model=model)
        for sp in spans:
            for attr in sp["attributes"]:
                attr["key"] = (renamed or {}).get(attr["key"], attr["key"])
        if edit is not None:
            edit(message, spans)
        write_spans(spans_file, spans)
        return Reply(200, {"answer": "A flight costs 120 EUR.", "route": "quotes", "quote": {"price": 120}})

    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001"),
                                   "c-00000002": case_yaml("c-00000002", content="A flight to Bergen?")})
    write_yaml(state / "adapter.yaml", ADAPTER.replace("RESULT_PATH", "quote.price").replace(
        "traces: {source: none}\n",
        f"traces: {{source: otlp-file, location: {spans_file}, correlation: traceparent-echo, "
        "completeness: {quiescence_ms: 100, max_wait_s: 5}}\n"))
    # 0.40 / 1.60 per million: a case with its model call costs 0.00056 USD
    write_yaml(state / "prices.yaml", f"currency: USD\nmodels:\n  {MODEL}: {{input: 0.40, output: 1.60}}\n")
    profile = state / "profile.yaml"
    profile.write_text(profile.read_text().replace("cost_latency: {enabled: false, blocked_by: no traces}",
                                                   "cost_latency: {enabled: true}")
                       + "budgets: {max_cost_per_case: 0.0005}\n")
    return state, reply


def gate_run(tmp_path, state, reply):
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(reply) as app:
        run_dir = run(state, plan_file, app)
    return run_script("gate", run_dir, "--no-verify")


def test_a_dated_model_id_not_in_prices_names_the_close_name_the_file_has(tmp_path):
    # the provider answers with its dated id (gen_ai.response.model), the prices file names the alias
    state, reply = traced_state(tmp_path, f"{MODEL}-2025-04-14")
    g = gate_run(tmp_path, state, reply)
    assert g.rc == 1, g.stdout
    closed = next(x for x in g.stdout.splitlines() if x.startswith("  gate closed: cost budget"))
    assert "model(s) gpt-4.1-mini-2025-04-14 not in prices.yaml: not priced at 0" in closed
    assert "prices.yaml names 'gpt-4.1-mini'" in closed and "add 'gpt-4.1-mini-2025-04-14' to models" in closed


def test_a_case_whose_trace_lost_its_model_call_is_said_beside_the_cost_budget(tmp_path):
    # The Bergen path lost its chat span: that case counts at 0, so the mean (0.00028) is under the
    # 0.0005 budget while every case really cost 0.00056. The gate cannot tell a lost span from a case
    # answered without a model; before, its budget line said nothing of it ("margin 0.00022").
    state, reply = traced_state(tmp_path, MODEL, llm_span_for=lambda m: "Bergen" not in m)
    g = gate_run(tmp_path, state, reply)
    line = next(x for x in g.stdout.splitlines() if x.startswith("  budget: cost"))
    assert line.startswith("  budget: cost 0.00028 USD/case (1 of 2 traced case(s) made no model call and count at 0: "
                           "if the app called a model there, its instrumentation lost the span), budget 0.0005"), line


def legacy_chat_span(sp: dict) -> None:
    """Rewrite a chat span as an instrumentation from before GenAI semantic conventions 1.27 writes it:
    no gen_ai.operation.name, the provider in gen_ai.system, the usage under its old names."""
    old = {"gen_ai.usage.input_tokens": "gen_ai.usage.prompt_tokens",
           "gen_ai.usage.output_tokens": "gen_ai.usage.completion_tokens"}
    sp["name"] = "openai.chat"
    sp["attributes"] = [{**a, "key": old.get(a["key"], a["key"])} for a in sp["attributes"]
                        if a["key"] != "gen_ai.operation.name"] + [{"key": "gen_ai.system", "value": {"stringValue": "openai"}}]


def is_chat(sp: dict) -> bool:
    return any(a["key"] == "gen_ai.operation.name" and a["value"].get("stringValue") == "chat" for a in sp["attributes"])


def test_a_model_span_the_reader_cannot_read_makes_the_cost_unknown_not_0(tmp_path):
    # The Bergen path calls its model through an older instrumentation: its chat span carries gen_ai.system, the
    # model and 1000 + 100 tokens, but no gen_ai.operation.name, so it is read as no model call. That case
    # counted at 0 and the mean (0.00028) passed the 0.0005 budget, while each case really cost 0.00056.
    def edit(message, spans):
        if "Bergen" in message:
            for sp in spans:
                if is_chat(sp):
                    legacy_chat_span(sp)

    state, reply = traced_state(tmp_path, MODEL, edit=edit)
    g = gate_run(tmp_path, state, reply)
    assert g.rc == 1, g.stdout
    assert not any(x.startswith("  budget: cost") for x in g.stdout.splitlines()), g.stdout
    closed = next(x for x in g.stdout.splitlines() if x.startswith("  gate closed: cost budget"))
    assert closed.startswith("  gate closed: cost budget 0.0005 USD/case cannot be checked: 1 span(s) in case(s) "
                             "c-00000002 look like a model call but are not read as one"), closed
    run_dir = state / "reports" / "smoke-20261130T000000Z"
    cost = run_script("score_cost", run_dir).json
    assert cost["totals"]["complete"] is False and cost["totals"]["unread_model_spans"] == 1
    assert cost["totals"]["cases_without_model_call"] == 0
    rows = {c["case_id"]: c for c in cost["cases"]}
    assert rows["c-00000002"]["cost"] is None and rows["c-00000002"]["unread_model_spans"] == 1
    assert rows["c-00000001"]["cost"] == pytest.approx(0.00056)
    block = json.loads((run_dir / "results.json").read_text())["cost_latency"]["cost"]
    assert block["total"] is None and "look like a model call" in block["reason"]


def test_a_model_call_that_reported_input_tokens_only_leaves_the_cost_budget_uncheckable(tmp_path):
    # The app's instrumentation writes gen_ai.usage.input_tokens but drops output_tokens (a streamed
    # reply, a partial exporter). Read as 0 output tokens, each case cost 0.0004 USD, under the 0.0005
    # budget, and the gate opened with a margin, while with its 100 output tokens a case costs 0.00056.
    state, reply = traced_state(tmp_path, MODEL, tokens=(1000, None))
    g = gate_run(tmp_path, state, reply)
    assert g.rc == 1, g.stdout
    assert not any(x.startswith("  budget: cost") for x in g.stdout.splitlines()), g.stdout
    closed = next(x for x in g.stdout.splitlines() if x.startswith("  gate closed: cost budget"))
    assert closed.startswith("  gate closed: cost budget 0.0005 USD/case cannot be checked: 2 of 2 model call(s) "
                             "reported input or output tokens but not both (the missing side's cost is unknown, not 0)")
    run_dir = state / "reports" / "smoke-20261130T000000Z"
    cost = run_script("score_cost", run_dir).json
    assert cost["totals"]["complete"] is False and cost["totals"]["cost"]["mean"] is None
    assert cost["totals"]["calls_partial_usage"] == 2 and all(c["cost"] is None for c in cost["cases"])
    block = json.loads((run_dir / "results.json").read_text())["cost_latency"]["cost"]
    assert block["total"] is None and "but not both" in block["reason"]
    # the report's cost line gives the run's own reason; it said "0 case(s) use model(s) the prices file
    # does not name (none named)", sending the user to a prices file that was fine
    assert run_script("draft_report", run_dir, "--no-verify").rc == 0
    line = next(x for x in (run_dir / "report.md").read_text().splitlines() if x.startswith("- Cost:"))
    assert line.startswith("- Cost: incomplete (not priced at 0): 2 of 2 model call(s) reported input or output "
                           "tokens but not both"), line


def test_a_model_call_with_the_deprecated_usage_names_is_priced(tmp_path):
    # An instrumentation on an older GenAI semantic-conventions release writes the usage under its
    # deprecated names (gen_ai.usage.prompt_tokens / completion_tokens, renamed input_tokens /
    # output_tokens in 1.27). The gate said "2 of 2 model call(s) reported no token usage" though every
    # span carried it; the budget is checked on the tokens the spans hold (0.00056 over 0.0005).
    state, reply = traced_state(tmp_path, MODEL, renamed={"gen_ai.usage.input_tokens": "gen_ai.usage.prompt_tokens",
                                                          "gen_ai.usage.output_tokens": "gen_ai.usage.completion_tokens"})
    g = gate_run(tmp_path, state, reply)
    assert g.rc == 1, g.stdout
    assert "no token usage" not in g.stdout, g.stdout
    closed = next(x for x in g.stdout.splitlines() if x.startswith("  gate closed: cost"))
    assert closed.startswith("  gate closed: cost 0.00056 USD/case is over the budget 0.0005"), closed


def test_a_p95_budget_at_k3_reads_every_repeats_latency(tmp_path):
    # The app answers each question fast the first time and in 1.3 s after (a cache that only its first
    # call warms, or a slow tail): 8 of the run's 12 requests take 1.3 s. The p95 read only the deciding
    # repeat's latency (the first, when all three passed), so the gate opened on "p95 latency 0.002s,
    # budget 1s: margin 0.998s" while two thirds of the requests were over the 1 s budget.
    import collections
    import threading

    state = write_state(tmp_path, {f"c-0000000{i}": case_yaml(f"c-0000000{i}", content=f"A flight to {city}?")
                                   for i, city in enumerate(("Oslo", "Bergen", "Tromsø", "Bodø"), 1)})
    (state / "profile.yaml").write_text((state / "profile.yaml").read_text() + "budgets: {max_p95_latency_s: 1}\n")
    calls, lock = collections.Counter(), threading.Lock()

    def reply(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        with lock:
            calls[(req.json or {}).get("message")] += 1
            first = calls[(req.json or {}).get("message")] == 1
        return Reply(200, {"answer": "A flight costs 120 EUR.", "route": "quotes", "quote": {"price": 120}},
                     delay=0 if first else 1.3)

    out = regression_k3(state, reply)
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout
    closed = next(x for x in g.stdout.splitlines() if x.startswith("  gate closed: p95 latency"))
    assert " (over 12 latencies: every repeat of 4 case(s) at k=3) is over the budget 1s" in closed, closed
    assert json.loads((out / "results.json").read_text())["cost_latency"]["latency_ms"]["p95"] >= 1300
    assert run_script("score_cost", out).json["totals"]["latency_ms"]["n"] == 12


def test_a_cost_budget_read_over_part_of_the_run_says_so(tmp_path):
    # The Bergen path is not instrumented: its request writes no span, so its case is infra_incomplete
    # and the user, who tolerates a flaky exporter, gates with --max-infra-rate 0.5. The budget's mean
    # is the Oslo case's alone (0.0004, under 0.0005): the line read "cost 0.0004 USD/case, budget
    # 0.0005: margin 0.0001" and the report "0.000400 USD in all", as if every case had been priced.
    state, traced_reply = traced_state(tmp_path, MODEL, tokens=(800, 50))

    def reply(req) -> Reply:
        if req.method == "POST" and "Bergen" in str((req.json or {}).get("message")):
            return Reply(200, {"answer": "A flight costs 120 EUR.", "route": "quotes", "quote": {"price": 120}})
        return traced_reply(req)

    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(reply) as app:
        run_dir = run(state, plan_file, app)
    g = run_script("gate", run_dir, "--no-verify", "--max-infra-rate", "0.5")
    line = next(x for x in g.stdout.splitlines() if x.startswith("  budget: cost"))
    assert line.startswith("  budget: cost 0.0004 USD/case (the mean of 1 traced case(s) of 2: 1 have no trace, so "
                           "their cost is unknown and left out), budget 0.0005: margin 0.0001"), line
    assert run_script("draft_report", run_dir, "--no-verify", "--max-infra-rate", "0.5").rc == 0
    cost = next(x for x in (run_dir / "report.md").read_text().splitlines() if x.startswith("- Cost:"))
    assert cost.startswith("- Cost: 0.000400 USD in all of the 1 traced cases of 2 (1 have no trace: their cost is "
                           "unknown and not in it)"), cost


def test_a_cost_budget_at_k3_counts_the_repeat_that_ran_away(tmp_path):
    # At k=3 the Oslo case's second repeat loops: ten model calls of 100k input tokens each (0.56 USD), while
    # its first repeat, which decided the verdict, made one call of 500 + 50 tokens (0.00028 USD). The cost
    # read only the deciding repeat's trace, so the gate opened on "cost 0.00028 USD/case, budget 0.001"
    # and score_cost.py's totals were a third of the run's calls, though every repeat's trace was stored.
    import collections
    import threading
    from otlp_util import span

    state, traced_reply = traced_state(tmp_path, MODEL, tokens=(500, 50))
    spans_file = tmp_path / "spans.jsonl"
    calls, lock = collections.Counter(), threading.Lock()

    def reply(req) -> Reply:
        out = traced_reply(req)
        if req.method == "POST" and "Oslo" in str((req.json or {}).get("message")):
            with lock:
                calls["Oslo"] += 1
                runaway = calls["Oslo"] == 2   # a case's repeats run in order: repeat 2
            if runaway:
                from otlp_util import parse_traceparent, write_spans
                trace_id, parent = parse_traceparent(req.headers.get("traceparent"))
                t = 1_700_000_000_000_000_000
                write_spans(spans_file, [span(trace_id=trace_id, parent_span_id=parent, operation="chat", model=MODEL,
                                              input_tokens=100_000, output_tokens=10_000, start_ns=t + i * 1_000_000,
                                              end_ns=t + i * 1_000_000 + 500_000) for i in range(10)])
        return out

    out = regression_k3(state, reply)
    assert calls["Oslo"] == 3

    cost = run_script("score_cost", out).json
    t = cost["totals"]
    # every repeat's calls: Oslo 1 + 11 + 1, Bergen 1 + 1 + 1
    assert (t["model_calls"], t["input_tokens"], t["output_tokens"]) == (16, 5 * 500 + 1_000_500, 5 * 50 + 100_050)
    assert t["traced_answers"] == 6 and t["complete"] is True
    cheap, runaway = 0.00028, 0.00028 + 10 * 0.056
    assert t["cost"]["total"] == pytest.approx(6 * cheap + 10 * 0.056)   # the run's spend
    assert t["cost"]["mean"] == pytest.approx(((3 * cheap + 10 * 0.056) / 3 + cheap) / 2)   # one answer's
    assert {c["case_id"]: c["cost"] for c in cost["cases"]} == pytest.approx(
        {"c-00000001": (2 * cheap + runaway) / 3, "c-00000002": cheap})
    assert t["k_note"].startswith("k=3: every repeat's trace is read for 2 case(s)"), t["k_note"]
    block = json.loads((out / "results.json").read_text())["cost_latency"]
    assert block["cost"]["total"] == t["cost"]["total"] and block["model_calls"] == 16
    assert block["k_note"] == t["k_note"]

    g = run_script("gate", out, "--max-cost-per-case", "0.001")   # verifies the run dir first
    assert g.rc == 1, g.stdout
    closed = next(x for x in g.stdout.splitlines() if x.startswith("  gate closed: cost "))
    assert closed.startswith(f"  gate closed: cost {t['cost']['mean']:.6g} USD/case (one answer's: the mean over "
                             "every repeat of 2 case(s) at k=3, 6 answer(s)) is over the budget 0.001"), closed

    rep = run_script("draft_report", out, "--max-cost-per-case", "0.001")
    assert rep.rc == 0, rep.stdout
    assert f"- {t['k_note']}." in (out / "report.md").read_text().splitlines()

    # the same run as a run dir written before each repeat stored its trace (its repeats carry no
    # trace_collected, only the case-level trajectory.json, the deciding repeat's): read as it was, and said
    import shutil
    from rundir_util import case_json, edit_case
    old = shutil.copytree(out, tmp_path / "old" / out.name)
    for cid in ("c-00000001", "c-00000002"):
        v = case_json(old, cid)
        for r2 in v["repeats"]:
            del r2["trace_collected"]
            for name in ("trajectory.json", "trace.json"):
                edit_case(old, cid, f"repeats/{r2['n']}/{name}", None)
        edit_case(old, cid, "verdict.json", json.dumps(v).encode())
    t = run_script("score_cost", old, "--prices", state / "prices.yaml").json["totals"]
    assert (t["model_calls"], t["traced_answers"], t["cost"]["mean"]) == (2, 2, pytest.approx(cheap))
    assert t["k_note"] == ("k=3: 2 case(s) have only the deciding repeat's trace (a run dir written before each "
                           "repeat's trace was stored), so their tokens and cost are of one repeat; the run spent "
                           "about 3 times as much on them")


def regression_k3(state, reply):
    """The state's suite planned as a k=3 regression run and run against a FakeApp answering `reply`: its run dir."""
    from fakeapp import run_runner
    from fixtures_authoring import run_inproc
    work, run_id = state / "work", "regression-20261130T000000Z"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    p = run_inproc("make_plan", work / "converted.json", "--mode", "regression", "--k", "3", "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", run_id)
    assert p.rc == 0, p.stdout
    out = state / "reports" / run_id
    with FakeApp(reply) as app:
        r = run_runner("--plan", work / "plan.json", "--out", out, env={"TRAVEL_BASE_URL": app.url})
    assert r.rc == 0, (r.stdout, r.stderr)
    return out
