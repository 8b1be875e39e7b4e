"""A new user's mistakes on a new app (no silent green): each one fails loudly, naming the
file, key or case and the fix. Same small travel app and state dir as test_no_silent_green;
the pipeline is driven the way the README says, against a real HTTP app on a loopback port.
"""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply, run_runner
from fixtures_authoring import run_inproc
from helpers import run_script, write_yaml
from test_no_silent_green import ADAPTER, case_yaml, plan, run, write_state
from rundir_util import cases_view


def fare_reply(req) -> Reply:
    """Oslo has a fare; Atlantis does not (the app answers, on route, without a quote)."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    if "Atlantis" in (req.json or {}).get("message", ""):
        return Reply(200, {"answer": "Sorry, I have no fare to Atlantis.", "route": "quotes"})
    return Reply(200, {"answer": "A flight to Oslo costs 120 EUR.", "route": "quotes", "quote": {"price": 120}})


def test_a_case_whose_result_never_came_is_unscored_and_closes_the_gate(tmp_path):
    # c-1 scores execution (so the layer is not hollow); c-2's app answered without a quote:
    # its route passed, but the result it asserts was never compared. Before: pass, gate PASS.
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001"),
                                   "c-00000002": case_yaml("c-00000002", content="A flight to Atlantis?")})
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(fare_reply) as app:
        run_dir = run(state, plan_file, app)
    verdict = json.loads((cases_view(run_dir) / "c-00000002" / "verdict.json").read_text())
    assert verdict["layers"]["routing"]["verdict"] == "pass"
    assert verdict["verdict"] == "unscored"
    assert verdict["unscored_reason"].startswith("execution: no actual result")
    summary = json.loads((run_dir / "results.json").read_text())["summary"]
    assert (summary["passes"], summary["unscored"], summary["hollow_layers"]) == (1, 1, {})
    g = run_script("gate", run_dir, "--no-verify")
    assert g.rc == 1, g.stdout
    line = next(x for x in g.stdout.splitlines() if x.startswith("  gate closed:") and "never ran" in x and "gating case" in x)
    assert "1 gating case(s)" in line and "c-00000002 (execution: no actual result" in line
    assert "'quote.price' is absent" in line


def test_a_non_gating_case_whose_check_never_ran_leaves_the_gate_open(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001"),
                                   "c-00000002": case_yaml("c-00000002", content="A flight to Atlantis?",
                                                           top="gating: false\n")})
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(fare_reply) as app:
        run_dir = run(state, plan_file, app)
    g = run_script("gate", run_dir, "--no-verify")
    assert g.rc == 0, g.stdout
    assert "1 unscored" in g.stdout


def test_a_literal_secret_header_is_refused_before_anything_is_written(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001")})
    write_yaml(state / "adapter.yaml", ADAPTER.replace("result_from_response: RESULT_PATH", "result_from_response: quote.price")
               .replace("  auth: {type: none}\n",
                        "  auth: {type: none}\n  headers: {X-Plain: visible, Authorization: 'Bearer sk-live-1234'}\n"))
    work = state / "work"
    r = run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 2, r.stdout
    assert r.json["key"] == "invocation.headers.Authorization" and r.json["line"] == 9
    assert r.json["error"].startswith("adapter.yaml:9: invocation.headers.Authorization holds a literal value")
    assert "${" in r.json["error"] and "sk-live-1234" not in r.stdout
    assert not work.exists()


def test_make_plan_on_the_app_dir_names_the_state_dir(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001")})
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_inproc("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", tmp_path,
                   "-o", work / "plan.json")
    assert r.rc == 2, r.stdout
    assert "no adapter.yaml" in r.json["error"] and f"--state-dir {state}" in r.json["error"]
    assert not (work / "plan.json").exists()


def test_a_case_whose_trace_never_came_closes_the_gate(tmp_path):
    # The app writes no spans on one path (instrumentation missing there): that case is
    # infra_incomplete, which infra_rate (infra errors only) does not count. Before: gate PASS
    # with the case in no count on the summary line.
    from otlp_util import agent_spans, parse_traceparent, write_spans
    spans_file = tmp_path / "spans.jsonl"

    def traced(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        if "Oslo" in (req.json or {}).get("message", ""):
            trace_id, parent = parse_traceparent(req.headers.get("traceparent"))
            write_spans(spans_file, agent_spans(trace_id, "quotes", parent_span_id=parent))
        return Reply(200, {"answer": "A flight costs 120 EUR.", "route": "quotes", "quote": {"price": 120}})

    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001"),
                                   "c-00000002": case_yaml("c-00000002", content="A flight to Bergen?")})
    write_yaml(state / "adapter.yaml", ADAPTER.replace("RESULT_PATH", "quote.price").replace(
        "traces: {source: none}\n",
        f"traces: {{source: otlp-file, location: {spans_file}, correlation: traceparent-echo, "
        "completeness: {quiescence_ms: 100, max_wait_s: 1}}\n"))
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(traced) as app:
        run_dir = run(state, plan_file, app)
    summary = json.loads((run_dir / "results.json").read_text())["summary"]
    assert (summary["passes"], summary["infra_incomplete"], summary["infra_rate"]) == (1, 1, 0.0)
    g = run_script("gate", run_dir, "--no-verify")
    assert g.rc == 1, g.stdout
    lines = g.stdout.splitlines()
    assert lines[1].endswith("0 skipped, 1 infra_incomplete")  # every case is on the count line
    closed = next(x for x in lines if x.startswith("  gate closed:") and "infra_incomplete (their trace never completed" in x)
    assert "50.0% of the cases sent, above 5.0%" in closed and "c-00000002 (no span with trace id" in closed


def test_a_misspelt_tool_name_is_named_with_the_closest_declared_one(tmp_path):
    import copy

    from test_validate_cases import BASE, run_validate
    adapter = {"adapter_version": 1, "tools": [{"name": "fare_lookup", "side_effects": "safe-live"},
                                               {"name": "visa_rules", "side_effects": "safe-live"}],
               "invocation": {"mode": "http", "base_url": "${U}", "endpoint": "POST /c", "request_body": "{}",
                              "route_from_response": "route"}}
    (tmp_path / "adapter.json").write_text(json.dumps(adapter))
    bad, ok = copy.deepcopy(BASE), copy.deepcopy(BASE)
    bad["id"], ok["id"] = "c-bad", "c-ok"
    bad["expect"]["tools"] = {"forbidden": ["fare_lookpu"]}
    ok["expect"]["tools"] = {"forbidden": ["fare_lookup"]}
    ok["expect"]["args"] = {"visa_rules": {"country": "japan"}}
    suite = {"cases": [bad, ok], "sources": {"c-bad": "datasets/c-bad.yaml", "c-ok": "datasets/c-ok.yaml"}}
    r = run_validate(tmp_path, suite, "--adapter", tmp_path / "adapter.json")
    found = [f for f in r.json["findings"] if f["code"] == "unknown_tool"]
    assert [(f["case_id"], f["source"], f["severity"]) for f in found] == [("c-bad", "datasets/c-bad.yaml", "ERROR")]
    assert "expect.tools.forbidden names 'fare_lookpu'" in found[0]["message"]
    assert "did you mean 'fare_lookup'?" in found[0]["message"]


def test_validate_with_the_docs_manifest_flag_and_no_dataset_yaml_says_why(tmp_path):
    # case-format.md's command passes --manifest; convert_suite writes manifest.json only
    # when datasets/dataset.yaml exists (it is optional)
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001")})
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_inproc("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                   "--manifest", work / "manifest.json")
    assert r.rc == 2, r.stdout
    assert "only when the state dir has datasets/dataset.yaml" in r.json["error"] and "drop --manifest" in r.json["error"]


def test_a_span_file_that_never_existed_is_named_with_its_resolved_path(tmp_path):
    # traces.location written relative to the app, not the state dir: every trace "never arrives";
    # the reason says which file was watched and that it does not exist
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001")})
    write_yaml(state / "adapter.yaml", ADAPTER.replace("RESULT_PATH", "quote.price").replace(
        "traces: {source: none}\n", "traces: {source: otlp-file, location: spans.jsonl, correlation: traceparent-echo, "
        "completeness: {quiescence_ms: 100, max_wait_s: 0.5}}\n"))
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(fare_reply) as app:
        run_dir = run(state, plan_file, app)
    v = json.loads((cases_view(run_dir) / "c-00000001" / "verdict.json").read_text())
    assert v["verdict"] == "infra_incomplete"
    assert f"the span file {state.resolve() / 'spans.jsonl'} does not exist" in v["infra_reason"]
    assert "resolves against the state dir" in v["infra_reason"]


def test_a_401_canary_in_a_traced_run_is_named_as_authentication_not_a_missing_trace(tmp_path):
    # the app refuses a wrong token and writes no span: before, every case (canary included)
    # waited for its trace and read infra_incomplete, and nothing said "401"
    def refuse(req) -> Reply:
        return Reply(200, {"ok": True}) if req.method == "GET" else Reply(401, {"error": "bad token"})

    canary = case_yaml("c-00000001").replace("split: [smoke, full]", "split: [smoke, full, canary]")
    state = write_state(tmp_path, {"c-00000001": canary, "c-00000002": case_yaml("c-00000002")})
    write_yaml(state / "adapter.yaml", ADAPTER.replace("RESULT_PATH", "quote.price").replace(
        "traces: {source: none}\n", f"traces: {{source: otlp-file, location: {tmp_path / 'spans.jsonl'}, "
        "correlation: traceparent-echo, completeness: {quiescence_ms: 100, max_wait_s: 0.3}}\n"))
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(refuse) as app:
        r = run_runner("--plan", plan_file, "--out", state / "reports" / "smoke-20261130T000000Z",
                       env={"TRAVEL_BASE_URL": app.url})
    assert r.rc == 4, r.stdout
    err = json.loads(r.stdout)["error"]
    assert "canary c-00000001 failed on http: got HTTP 401" in err and "an authentication problem" in err
    v = json.loads((cases_view(state / "reports" / "smoke-20261130T000000Z") / "c-00000001" / "verdict.json").read_text())
    assert v["verdict"] == "fail" and v["layers"]["loops"]["verdict"] == "unscored"
    assert v["layers"]["loops"]["reason"].startswith("no complete trace after HTTP 401 (the http layer failed)")


def test_a_misspelt_split_or_category_is_named_at_its_line_with_the_closest_name(tmp_path):
    # the hand-written-suite trial: `split: [full, smok]` was named at line 1 (the id), with no hint
    smok = case_yaml("c-00000001").replace("split: [smoke, full]", "split: [full, smok]")
    bare = case_yaml("c-00000002").replace("split: [smoke, full]", "split: smoke")
    hapy = case_yaml("c-00000003").replace("category: happy", "category: hapy")
    state = write_state(tmp_path, {"c-00000001": smok, "c-00000002": bare, "c-00000003": hapy})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", work / "p.json")
    assert r.rc == 2, r.stdout
    err = r.json["error"]
    assert ("datasets/c-00000001.yaml:3: c-00000001 [bad_split] split ['full', 'smok'] must be a list of full, smoke, "
            "holdout, canary; did you mean 'smoke'?") in err
    assert "datasets/c-00000002.yaml:3: c-00000002 [bad_split] split 'smoke' must be" in err
    assert "; write a list: [smoke]" in err and "did you mean 'smoke'?; write" not in err
    assert "datasets/c-00000003.yaml:4: c-00000003 [bad_category] category 'hapy'" in err
    assert "did you mean 'happy'?" in err


def test_yaml_that_reads_a_value_as_another_type_says_so_at_its_line(tmp_path):
    # the hand-written-suite trial: `route: no` (a YAML boolean) and `float_tolerance: 1e-2` (YAML text)
    # were refused at line 1 with no word of why the value was not what the author wrote
    no = case_yaml("c-00000001", expect="  route: no\n  result: {scalar: 120}\n")
    tol = case_yaml("c-00000002", expect="  route: quotes\n  result: {scalar: 120, float_tolerance: 1e-2}\n")
    state = write_state(tmp_path, {"c-00000001": no, "c-00000002": tol})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", work / "p.json")
    assert r.rc == 2, r.stdout
    err = r.json["error"]
    assert "datasets/c-00000001.yaml:13: c-00000001 [bad_expect_shape] expect.route must be a non-empty string" in err
    assert "YAML reads an unquoted yes/no/on/off/true/false as a boolean: quote the route" in err
    assert "datasets/c-00000002.yaml:14: c-00000002 [bad_expect_shape] expect.result.float_tolerance" in err
    assert "YAML reads 1e-2 as text" in err, err


def test_a_case_file_outside_datasets_is_refused_naming_it_and_where_it_goes(tmp_path):
    # The case the app gets wrong (Atlantis: no quote) written to .assay/cases/ and beside adapter.yaml
    # instead of datasets/ (or saved there as .YAML / .yaml.txt): convert_suite read datasets/ only, the plan held the passing case, and the
    # gate opened (exit 0) on a suite without the failure. Now convert_suite.py refuses, naming each file.
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001")})
    wrong = case_yaml("c-00000002", content="A flight to Atlantis?")
    write_yaml(state / "cases" / "c-00000002.yaml", wrong)
    write_yaml(state / "c-00000003.yml", wrong.replace("c-00000002", "c-00000003"))
    # generated dirs and datasets/templates/ are not cases; a YAML that is not a case is left alone
    write_yaml(state / "reports" / "old" / "c-00000004.yaml", wrong.replace("c-00000002", "c-00000004"))
    write_yaml(state / "datasets" / "templates" / "t.yaml", wrong.replace("c-00000002", "c-00000005"))
    write_yaml(state / "notes.yaml", "owner: travel team\nexpect: fares in EUR\n")
    # under datasets/, a name case_files() skips: a near miss of .yaml is refused, a set-aside is not
    write_yaml(state / "datasets" / "c-00000006.YAML", wrong.replace("c-00000002", "c-00000006"))
    write_yaml(state / "datasets" / "c-00000007.yaml.txt", wrong.replace("c-00000002", "c-00000007"))
    write_yaml(state / "datasets" / "c-00000008.yaml~", wrong.replace("c-00000002", "c-00000008"))
    write_yaml(state / "datasets" / "NOTES", "cases for the travel desk\n")
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 2 and not (work / "converted.json").exists(), (r.stdout, r.stderr)
    err = r.json["error"]
    assert "4 case file(s) that no run would read" in err, err
    assert "c-00000003.yml -> datasets/c-00000003.yml" in err and "cases/c-00000002.yaml -> datasets/c-00000002.yaml" in err
    assert "datasets/c-00000006.YAML -> datasets/c-00000006.yaml" in err
    assert "datasets/c-00000007.yaml.txt -> datasets/c-00000007.yaml" in err
    assert "move or rename each as shown, or delete it" in err
    assert r.json["files"] == ["c-00000003.yml", "cases/c-00000002.yaml", "datasets/c-00000006.YAML",
                               "datasets/c-00000007.yaml.txt"]
    for left_alone in ("reports/", "templates", "notes.yaml", "c-00000008", "NOTES"):
        assert left_alone not in err, (left_alone, err)
    for name in ("c-00000006.YAML", "c-00000007.yaml.txt", "c-00000008.yaml~", "NOTES"):
        (state / "datasets" / name).unlink()

    (state / "c-00000003.yml").unlink()
    _moved_where_said_closes_the_gate(state, state / "cases" / "c-00000002.yaml")


def _moved_where_said_closes_the_gate(state, misplaced):
    """The misplaced failing case moved where the error says: it is planned, fails and closes the gate."""
    misplaced.rename(state / "datasets" / "c-00000002.yaml")
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(fare_reply) as app:
        run_dir = run(state, plan_file, app)
    g = run_script("gate", run_dir)
    assert g.rc == 1 and "c-00000002" in g.stdout, g.stdout


def test_a_case_file_in_a_datasets_folder_beside_the_state_dir_is_refused(tmp_path):
    # The failing case (Atlantis: no quote) saved to ./datasets/ next to .assay/ instead of .assay/datasets/:
    # convert_suite read .assay/datasets/ only, the plan held the passing case, and the gate opened on a
    # suite without the failure. Now convert_suite.py refuses, naming the file and where it goes.
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001")})
    wrong = case_yaml("c-00000002", content="A flight to Atlantis?")
    write_yaml(tmp_path / "datasets" / "c-00000002.yaml", wrong)
    write_yaml(tmp_path / "datasets" / "train.yaml", "name: fares\nsplits: [train, test]\n")   # not a case
    write_yaml(tmp_path / "cases" / "c-00000003.yaml", wrong.replace("c-00000002", "c-00000003"))   # not looked at
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 2 and not (work / "converted.json").exists(), (r.stdout, r.stderr)
    err = r.json["error"]
    assert "1 case file(s) that no run would read: ../datasets/c-00000002.yaml -> .assay/datasets/c-00000002.yaml" \
        in err, err
    assert "the datasets/ beside .assay/ is not read: .assay/datasets/ is" in err, err
    assert r.json["files"] == ["../datasets/c-00000002.yaml"]
    assert "train.yaml" not in err and "c-00000003" not in err, err

    _moved_where_said_closes_the_gate(state, tmp_path / "datasets" / "c-00000002.yaml")


def test_a_datasets_folder_beside_the_state_dir_without_cases_is_left_alone(tmp_path):
    # control: an app's own datasets/ (data, not cases) beside .assay/, and a state dir that is a repo's
    # root (its parent is outside the repo, so a datasets/ there is not the app's) convert as before
    state = write_state(tmp_path / "app", {"c-00000001": case_yaml("c-00000001")})
    write_yaml(tmp_path / "app" / "datasets" / "fares.yaml", "name: fares\nsplits: [train, test]\nexpect: 3 rows\n")
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
    root = tmp_path / "repo"
    write_yaml(root / "adapter.yaml", (state / "adapter.yaml").read_text())
    write_yaml(root / "profile.yaml", (state / "profile.yaml").read_text())
    write_yaml(root / "datasets" / "c-00000001.yaml", case_yaml("c-00000001"))
    (root / ".git").mkdir()
    write_yaml(tmp_path / "datasets" / "c-00000002.yaml", case_yaml("c-00000002"))
    r = run_script("convert_suite", root, "-o", tmp_path / "converted.json")
    assert r.rc == 0, (r.stdout, r.stderr)
