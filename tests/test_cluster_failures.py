"""cluster_failures.py: failing non-holdout cases grouped by (layer, normalized reason), counts,
two exemplars each; draft_report fills the report's clusters slot from it (no TODO ever)."""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply, case, make_plan, run_runner, run_runner_mixed_split, state, write_plan  # noqa: F401 (fixture)
from helpers import run_script

from assay.report.clusters import failure_reason, normalize


def test_normalize_folds_numbers_and_hex_but_keeps_labels():
    assert normalize("expected 245.75, got 200.5") == "expected <n>, got <n>"
    assert normalize("search_kb called 4 times  (threshold 3)") == "search_kb called <n> times (threshold <n>)"
    assert normalize("trace 7640d51b0bbe9279 missing") == "trace <hex> missing"
    assert normalize("forbidden record id(s) returned: ['INV-2001']") == "forbidden record id(s) returned: ['INV-<n>']"


def test_failure_reason_speaks_each_layers_terms():
    assert failure_reason("routing", {"verdict": "fail", "expected": "billing", "observed": "tech_support"}) == \
        "expected billing, observed tech_support"
    answer = {"verdict": "fail", "checks": [{"check": "must_contain", "entry": "245.75", "status": "fail",
                                             "reason": "not found in the answer"},
                                            {"check": "must_not_contain", "entry": "x", "status": "pass"}]}
    assert failure_reason("answer", answer) == "must_contain: not found in the answer"
    execution = {"verdict": "fail", "diff": {"summary": "expected 245.75, got 200.5"}}
    assert failure_reason("execution", execution) == "expected <n>, got <n>"
    assert failure_reason("trajectory", {"verdict": "fail", "failures": ["expected tool call(s) missing: ['a']"]}) \
        == "expected tool call(s) missing: ['a']"
    assert failure_reason("http", {"verdict": "fail", "status": 404, "expected_status": None}) == \
        "expected any 2xx, got HTTP 404"
    assert failure_reason("newlayer", {"verdict": "fail", "reason": "took 12 s"}) == "took <n> s"


def misrouting_app(req) -> Reply:
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = (req.json or {}).get("message", "")
    return Reply(200, {"message": f"about {msg}: call 555-123-4567", "route": "tech" if "bill" in msg else "billing"})


def test_clusters_group_by_layer_and_reason_with_exemplars_and_seal_holdout(state, monkeypatch):
    cases = [case(f"c-bill{i}", f"bill question {i}", expect={"route": "billing"}, title=f"Billing #{i}")
             for i in range(1, 4)]
    cases += [case("c-words", "hello", expect={"route": "billing", "answer": {"must_contain": ["goodbye"]}}),
              case("c-fine", "fine", expect={"route": "billing"}),
              case("c-sealed1", "bill sealed", split=("smoke", "holdout"), expect={"route": "billing"})]
    with FakeApp(misrouting_app) as app:
        plan = make_plan(state, cases, app_url=app.url)
        plan["adapter"]["data"]["may_contain_pii"] = True   # c-sealed1's split: a run from before plans refused it
        r = run_runner_mixed_split(monkeypatch, "--plan", write_plan(state, plan), "--out",
                                   state / "reports" / plan["run_id"])
        assert r.rc == 0, r.stdout + r.stderr
    run_dir = state / "reports" / plan["run_id"]
    out = run_script("cluster_failures", run_dir)
    assert out.rc == 0, out.stdout
    doc = out.json
    assert doc["failing_cases"] == 4 and doc["holdout_failures"] == 1 and doc["redacted"] is True
    assert doc["status"] == "ok" and "incomplete" not in doc and "not a whole run" not in out.stderr
    (big, *rest) = doc["clusters"]
    assert (big["layer"], big["reason"], big["count"]) == ("routing", "expected billing, observed tech", 3)
    assert big["case_ids"] == ["c-bill1", "c-bill2", "c-bill3"] and len(big["exemplars"]) == 2
    ex = big["exemplars"][0]
    assert ex["case_id"] == "c-bill1" and ex["title"] == "Billing #1" and ex["input"] == "bill question 1"
    assert ex["expected"] == {"route": "billing"} and "555-123-4567" not in ex["answer"]
    assert [(c["layer"], c["count"]) for c in rest] == [("answer", 1)]
    assert "c-sealed1" not in out.stdout
    assert run_script("cluster_failures", run_dir, "--top", "1").json["clusters"] == [big]
    bad = run_script("cluster_failures", state / "nope")
    assert bad.rc == 2 and "no results.json" in bad.json["error"]

    assert run_script("draft_report", run_dir).rc == 0
    text = (run_dir / "report.md").read_text(encoding="utf-8")
    slot = text[text.index("<!-- assay:clusters -->"):text.index("<!-- /assay:clusters -->")]
    assert "**1. routing**: `expected billing, observed tech` (3 cases:" in slot and "input:    bill question 1" in slot
    assert "TODO" not in text and "c-sealed1" not in text
    json.loads((run_dir / "results.json").read_text())  # the run itself is untouched


def test_an_auth_status_is_named_in_the_layer_description():
    from assay.report.sections import describe_layer
    assert describe_layer("http", {"verdict": "fail", "status": 401, "expected_status": None}) == \
        "expected any 2xx, got 401 (an authentication problem: check invocation.auth and the env var it reads)"
    assert describe_layer("http", {"verdict": "fail", "status": 404, "expected_status": None}) == \
        "expected any 2xx, got 404"


def test_a_run_that_did_not_finish_is_never_read_as_nothing_failing(state):
    """A newcomer clusters a run that stopped (a failed canary here; an infra abort or --fail-fast
    alike): it printed `0 failing case(s) in 0 cluster(s)`, exit 0, and said nothing of the cases that
    never ran. Now the document carries the run's status and `incomplete` says how much of the plan
    finished, and stderr says it is not a whole run."""
    cases = [case("c-canary", "ping", split=("smoke", "canary"), expect={"answer": {"must_contain": ["pong"]}}),
             case("c-bill", "bill question", expect={"route": "billing"}),
             case("c-other", "bill again", expect={"route": "billing"})]
    with FakeApp(misrouting_app) as app:
        plan = make_plan(state, cases, app_url=app.url)
        r = run_runner("--plan", write_plan(state, plan), "--out", state / "reports" / plan["run_id"])
        assert r.rc == 4, r.stdout + r.stderr
    run_dir = state / "reports" / plan["run_id"]
    out = run_script("cluster_failures", run_dir)
    assert out.rc == 0, out.stdout + out.stderr
    doc = out.json
    assert (doc["status"], doc["failing_cases"], doc["clusters"]) == ("aborted_canary", 0, [])
    assert doc["incomplete"] == ("the run ended with status 'aborted_canary' (runner exit 4: a canary failed; run "
                                 "stopped); 0 cases + 1 canary finished of 2 cases + 1 canary planned, so these "
                                 "clusters cover only the cases that finished, not the suite: fix what stopped it "
                                 "and cluster a run that ends 'ok'"), doc
    assert "not a whole run: the run ended with status 'aborted_canary'" in out.stderr
