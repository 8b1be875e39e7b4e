"""run_cases.py before any spend: plan errors (exit 2, nothing written), secrets and
pre-flight (exit 3), --dry-run, --out rules, baseline checks (scorers-tests facts §5: 1-20, 41)."""

from __future__ import annotations

import json
import pytest

from fakeapp import RUN_ID, adapter, app, case, make_plan, make_state, run_runner, state
from helpers import run_script



def run(state, plan, *args, env=None, out=None, raw_plan=None, subprocess=False):
    """In-process by default (fast); `subprocess=True` runs the script as a user does."""
    path = state / "work" / "plan.json"
    path.write_text(raw_plan if raw_plan is not None else json.dumps(plan), encoding="utf-8")
    out = out if out is not None else state / "reports" / (plan or {}).get("run_id", RUN_ID)
    argv = ("--plan", path, "--out", out, "--progress", "never", *args)
    return run_script("run_cases", *argv, env=env) if subprocess else run_runner(*argv, env=env)


def nothing_written(state, app=None):
    """No run dir and no artifact. A refusal at pre-flight leaves one file beside the run dir, as the
    lock does: the record that the run never started (contract §10.4a), so that `gate.py --latest`
    never gates an older run in its place."""
    reports = state / "reports"
    names = sorted(p.name for p in reports.iterdir())
    assert names in ([], [f".{RUN_ID}.not-started.json"]), names
    if names:
        record = json.loads((reports / names[0]).read_text(encoding="utf-8"))
        assert record["run_id"] == RUN_ID and record["exit_code"] in (2, 3) and record["error"], record
    if app is not None:
        assert app.posts() == []


BAD_PLANS = {
    "unknown top-level key": lambda p: p.update(surprise=1),
    "missing capability_matrix": lambda p: p.pop("capability_matrix"),
    "plan_version 2": lambda p: p.update(plan_version=2),
    "bad run_id": lambda p: p.update(run_id="Smoke-today"),
    "k 0": lambda p: p.update(k=0),
    "empty cases": lambda p: p.update(cases=[]),
    "duplicate id": lambda p: p["cases"].append(dict(p["cases"][0])),
    "path-like id ../x": lambda p: p["cases"][0].update(id="../x"),
    "absolute id": lambda p: p["cases"][0].update(id="/etc/passwd"),
    "slash id": lambda p: p["cases"][0].update(id="a/b"),
    "hidden id": lambda p: p["cases"][0].update(id=".hidden"),
    "space id": lambda p: p["cases"][0].update(id="a b"),
    "long id": lambda p: p["cases"][0].update(id="a" * 129),
    "case outside selecting_split": lambda p: p["cases"][0].update(split=["full"]),
    "backoff length": lambda p: p.update(execution={"max_attempts": 3, "backoff_s": [1]}),
    "unknown execution key": lambda p: p.update(execution={"retries": 2}),
    "infra_rate_abort > 1": lambda p: p.update(execution={"infra_rate_abort": 1.5}),
    "holdout without ledger": lambda p: p.update(mode="holdout", selecting_split="holdout", gate="decision",
                                                 cases=[dict(p["cases"][0], split=["holdout"])]),
    "ledger not jsonl": lambda p: p.update(mode="holdout", selecting_split="holdout", gate="decision",
                                           paths=dict(p["paths"], holdout_ledger="datasets/looks.txt"),
                                           cases=[dict(p["cases"][0], split=["holdout"])]),
}


def run_in_process(state, plan, *extra, environ=None):
    """The library entry point the script calls (fast: no interpreter start); returns the AssayError."""
    import argparse

    from assay.core.errors import AssayError
    from assay.run.command import run as run_cases
    path = state / "work" / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    args = argparse.Namespace(plan=str(path), out=str(state / "reports" / plan.get("run_id", RUN_ID)),
                              resume=False, dry_run=False, baseline_verdicts=None, progress="never", verify=None)
    for flag in extra:
        setattr(args, flag, True)
    with pytest.raises(AssayError) as info:
        run_cases(args, environ=environ if environ is not None else {})
    return info.value


@pytest.mark.parametrize("name", sorted(BAD_PLANS))
def test_bad_plan_exits_2_and_writes_nothing(app, state, name):
    plan = make_plan(state, [case("c-1")], app_url=app.url)
    BAD_PLANS[name](plan)
    err = run_in_process(state, plan)
    assert err.code == 2, (name, err.message)
    nothing_written(state, app)
    assert not (state / "datasets" / "holdout-looks.jsonl").exists()


def test_bad_plan_as_a_user_meets_it(app, state):
    plan = make_plan(state, [case("c-1")], app_url=app.url, k=0)
    r = run(state, plan, subprocess=True)
    assert r.rc == 2 and "k" in r.json["error"] and r.stdout.count("\n") == 1
    nothing_written(state, app)


def test_missing_key_is_named(app, state):
    plan = make_plan(state, [case("c-1")], app_url=app.url)
    plan.pop("capability_matrix")
    r = run(state, plan)
    assert r.rc == 2 and "capability_matrix" in r.json["error"]


def test_unreadable_plan_is_exit_2(state):
    r = run(state, None, raw_plan="{not json", out=state / "reports" / RUN_ID)
    assert r.rc == 2 and "not readable JSON" in r.json["error"]
    nothing_written(state)


def test_out_rules(app, state, tmp_path):
    plan = make_plan(state, [case("c-1")], app_url=app.url)
    r = run(state, plan, out=state / "reports" / "smoke-20261129T000000Z")
    assert r.rc == 2 and "run_id" in r.json["error"]
    r = run(state, plan, out=tmp_path / "elsewhere" / RUN_ID)
    assert r.rc == 2 and "outside the state dir" in r.json["error"]
    assert not (tmp_path / "elsewhere").exists()
    target = tmp_path / "target"
    target.mkdir()
    (state / "reports" / RUN_ID).symlink_to(target)
    r = run(state, plan)
    assert r.rc == 2
    (state / "reports" / RUN_ID).unlink()
    (state / "reports" / RUN_ID).mkdir()
    (state / "reports" / RUN_ID / "x").write_text("x")
    r = run(state, plan)
    assert r.rc == 2 and "--resume" in r.json["error"]
    assert app.posts() == []


def test_holdout_ledger_outside_state_dir_is_refused(app, state):
    plan = make_plan(state, [case("h-1", split=["holdout"])], app_url=app.url, mode="holdout",
                     selecting_split="holdout")
    plan["paths"]["holdout_ledger"] = "../../escape.jsonl"
    r = run(state, plan)
    assert r.rc == 2 and "outside the state dir" in r.json["error"]
    nothing_written(state, app)


def test_all_missing_env_named_at_once_exit_3(app, state):
    ad = adapter("${FAKE_BASE_URL}", auth={"type": "bearer", "token_env": "FAKE_TOKEN"},
                 headers={"X-Api-Key": "${FAKE_KEY}"})
    plan = make_plan(state, [case("c-1")], adapter_doc=ad)
    env = {k: "" for k in ("FAKE_BASE_URL", "FAKE_TOKEN", "FAKE_KEY")}
    r = run(state, plan, env=env, subprocess=True)
    assert r.rc == 3, r.stdout
    assert r.json["missing_env"] == ["FAKE_BASE_URL", "FAKE_KEY", "FAKE_TOKEN"]
    nothing_written(state, app)


@pytest.mark.parametrize("invocation, needle", [
    ({"mode": "cli"}, "'command' is required"),
    ({"mode": "cli", "command": ["no-such-program-xyz", "<user turn>"]}, "no-such-program-xyz"),
    ({"mode": "cli", "command": ["/bin/sh"], "cwd": "no/such/dir"}, "invocation.cwd"),
    ({"mode": "grpc"}, "grpc"),
    ({"base_url": "ftp://127.0.0.1:1"}, "base_url"),
    ({"request_body": "{not json"}, "request_body"),
    ({"response_body": '{"message": "x"}'}, "<answer>"),
    ({"mode": "function", "entrypoint": "no_such_module_xyz:handle"}, "no_such_module_xyz"),
])
def test_preflight_refusals_exit_3_without_app_calls(app, state, invocation, needle):
    plan = make_plan(state, [case("c-1")], adapter_doc=adapter(app.url, **invocation))
    err = run_in_process(state, plan)
    assert err.code == 3, err.message
    assert needle in err.message
    assert app.count() == 0
    nothing_written(state)


def test_cli_mode_without_a_command_is_refused_at_preflight(app, state):
    r = run(state, make_plan(state, [case("c-1")], adapter_doc=adapter(app.url, mode="cli")), subprocess=True)
    assert r.rc == 3 and "command" in r.json["error"], r.stdout
    nothing_written(state, app)


def test_health_check_failures_exit_3(app, state):
    app.handler = lambda req: __import__("fakeapp").Reply(503, "down")
    plan = make_plan(state, [case("c-1")], app_url=app.url)
    r = run(state, plan)
    assert r.rc == 3 and "health check" in r.json["error"] and r.json["status"] == 503
    assert app.posts() == []
    plan = make_plan(state, [case("c-1")], app_url="http://127.0.0.1:9")  # nothing listens on port 9
    r = run(state, plan)
    assert r.rc == 3 and "health check" in r.json["error"]
    nothing_written(state)


def test_health_check_defaults_to_get_base_url_any_status(app, state):
    from fakeapp import Reply
    app.handler = lambda req: Reply(404, "nope") if req.method == "GET" else Reply(200, {"message": "hello there"})
    ad = adapter(app.url)
    ad["invocation"].pop("health_check")
    r = run(state, make_plan(state, [case("c-1")], adapter_doc=ad))
    assert r.rc == 0, r.stdout
    assert app.requests[0].method == "GET" and app.requests[0].path == "/"


def test_unsupported_trace_store_exit_3(app, state):
    ad = adapter(app.url)
    ad["traces"] = {"source": "jaeger", "correlation": "traceparent-echo"}
    r = run(state, make_plan(state, [case("c-1")], adapter_doc=ad))
    assert r.rc == 3 and "jaeger" in r.json["error"]
    assert app.posts() == []


def test_dry_run_prints_plan_and_writes_nothing(app, state):
    plan = make_plan(state, [case("c-1"), case("c-2", split=["smoke", "canary"]),
                             case("c-3", category="adversarial-refusal")], app_url=app.url)
    plan["adapter"]["environment"]["safe_to_attack"] = False
    r = run(state, plan, "--dry-run", subprocess=True)
    assert r.rc == 0, r.stdout
    doc = r.json
    assert doc["dry_run"] is True and [c["id"] for c in doc["cases"]] == ["c-1", "c-2", "c-3"]
    assert doc["cases"][2]["skip_reason"] and doc["cost_inputs"]["calls"] == 2
    assert app.count() == 0
    nothing_written(state)


def test_baseline_mismatch_refused_before_spend(app, state, tmp_path):
    base_dir = state / "reports" / "regression-20261128T000000Z"
    base_dir.mkdir()
    (base_dir / "verdicts_for_stats.jsonl").write_text('{"case_id": "c-1", "verdict": "pass"}\n')
    (base_dir / "manifest.yaml").write_text(json.dumps(
        {"run_id": base_dir.name, "dataset_version": 1, "harness_version": "0.1.0", "k": 3}))
    plan = make_plan(state, [case("c-1")], app_url=app.url)
    r = run(state, plan, "--baseline-verdicts", base_dir / "verdicts_for_stats.jsonl")
    assert r.rc == 2 and r.json["mismatch"] == ["k"]
    (base_dir / "manifest.yaml").write_text(json.dumps(
        {"run_id": base_dir.name, "dataset_version": 2, "harness_version": "0.0.9", "k": 1}))
    r = run(state, plan, "--baseline-verdicts", base_dir / "verdicts_for_stats.jsonl")
    assert r.rc == 2 and r.json["mismatch"] == ["dataset_version", "harness_version"]
    assert app.count() == 0
    assert sorted(p.name for p in (state / "reports").iterdir()) == [base_dir.name]


def test_verify_on_a_non_run_dir_is_exit_2(tmp_path):
    r = run_script("run_cases", "--verify", tmp_path / "nope")
    assert r.rc == 2
    r = run_script("run_cases", "--verify", tmp_path)
    assert r.rc == 2 and "not a run directory" in r.json["error"]


def test_plan_from_stdin(app, state):
    plan = make_plan(state, [case("c-1")], app_url=app.url)
    r = run_script("run_cases", "--plan", "-", "--dry-run", input=json.dumps(plan))
    assert r.rc == 0 and r.json["run_id"] == RUN_ID and r.json["cost_inputs"]["calls"] == 1
    nothing_written(state, app)


@pytest.mark.parametrize("invocation", [
    {"auth": {"type": "bearer"}},
    {"headers": ["X-A"]},
    {"identity_map": "X-Role"},
    {"max_concurrency": 0},
])
def test_malformed_adapter_is_exit_3_not_a_crash(app, state, invocation):
    err = run_in_process(state, make_plan(state, [case("c-1")], adapter_doc=adapter(app.url, **invocation)))
    assert err.code == 3, err.message
    assert app.count() == 0
    nothing_written(state)


def test_plan_validation_with_many_cases_reports_the_full_schema_errors(tmp_path):
    # validate_plan checks well-shaped cases in plain code and sends only one through
    # jsonschema; any off-shape case sends them all, so the error is the full validation's.
    import sys
    from helpers import SCRIPTS
    sys.path.insert(0, str(SCRIPTS))
    from assay.core.errors import AssayError
    from assay.plan.validate import validate_plan
    from assay.schemas import validate
    plan = make_plan(make_state(tmp_path), [case(f"c-{i}") for i in range(50)])
    assert validate_plan(plan) is plan
    for bad in ({"id": 7, "split": ["smoke"]}, {"id": "x", "split": []}, {"id": "x", "split": ["nope"]},
                {"id": "x"}, {"split": ["smoke"]}, "not a case", {"id": "x", "split": "smoke"}):
        broken = dict(plan, cases=plan["cases"][:30] + [bad] + plan["cases"][30:])
        with pytest.raises(AssayError) as fast:
            validate_plan(broken)
        with pytest.raises(AssayError) as full:
            validate(broken, "plan", source="plan.json", what="plan")
        assert fast.value.message == full.value.message and "cases[30]" in fast.value.message
        assert fast.value.fields == full.value.fields

