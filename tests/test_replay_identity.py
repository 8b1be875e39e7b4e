"""A replay answers only for who asked (docs/runner-contract.md §3 and §22).

Recorded against a real app (http on a loopback port, and a cli app as a child process), then the
case's identity is edited to a user the app leaks a record to, and the run replayed with the app
gone. The replay key used to see a case identity's `token_env` only as `<redacted>` (http) and a cli
app's identity variables by name only, so the old user's refusal was replayed as the new user's
answer and the case passed; a live run fails it. Now the request records the token by its variable's
name (never its value) and a cli app's identity values, and the edit is a replay miss naming both.

Nor for another app: a function or cli app with no app.name recorded in one app repo and then pointed
at another (adapter.yaml app.repo) keyed alike (the same entrypoint or command as written) and read
PASS on the first app's answers. Now its recording names where its code is, seen from the cache.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner
from helpers import run_script
from rundir_util import cases_view

pytestmark = pytest.mark.slow

TOKENS = {"tok-mallory-0001": "mallory", "tok-eve-0002": "eve"}
ENV = {"MALLORY_TOKEN": "tok-mallory-0001", "EVE_TOKEN": "tok-eve-0002"}
EXPECT = {"answer": {"must_not_contain": ["INV-7"]}}


def leaky(req):
    """Refuses mallory, leaks INV-7 to eve (the regression a replay must not hide)."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    who = TOKENS.get(req.headers.get("Authorization", "").split(" ")[-1])
    return Reply(200, {"message": "Invoice INV-7: 99.00 USD" if who == "eve" else "I cannot show that invoice."})


def go(state, plan, *extra, env=None):
    path = state / "work" / f"plan-{plan['run_id']}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / plan["run_id"]
    r = run_runner("--plan", path, "--out", out, "--progress", "never", *extra, env=env)
    assert r.rc == 0, r.stdout + r.stderr
    return json.loads((cases_view(out) / "c-1" / "verdict.json").read_text())


def test_a_case_whose_identity_token_changed_is_a_replay_miss_never_the_old_users_answer(tmp_path):
    state = make_state(tmp_path)
    was = case("c-1", "show me invoice INV-7", expect=EXPECT, identity={"token_env": "MALLORY_TOKEN"})
    now = dict(was, identity={"token_env": "EVE_TOKEN"})
    with FakeApp(leaky) as app:
        recorded = go(state, make_plan(state, [was], app_url=app.url, run_id="smoke-20261129T101500Z"),
                      "--record", env=ENV)
        live = go(state, make_plan(state, [now], app_url=app.url, run_id="smoke-20261129T101600Z"), env=ENV)
    assert (recorded["verdict"], live["verdict"]) == ("pass", "fail")
    replayed = go(state, make_plan(state, [now], run_id="smoke-20261129T101700Z"), "--replay", env=ENV)
    assert replayed["verdict"] == "infra_error", replayed
    assert replayed["infra_reason"] == ('replay miss: case c-1: request 1 differs from the recording at '
                                        'headers.Authorization: recorded "Bearer ${MALLORY_TOKEN}", now '
                                        '"Bearer ${EVE_TOKEN}"'), replayed["infra_reason"]
    written = "".join(p.read_text(errors="replace") for p in state.rglob("*") if p.is_file())
    assert "tok-mallory-0001" not in written and "tok-eve-0002" not in written   # a name, never the token


def test_a_cli_case_whose_identity_changed_is_a_replay_miss(tmp_path):
    state = make_state(tmp_path)
    agent = tmp_path / "agent.py"
    agent.write_text("import json, os, sys\nsys.stdin.read()\n"
                     "print(json.dumps({'answer': 'Invoice INV-7: 99.00 USD' if os.environ.get('APP_USER') == 'eve'"
                     " else 'I cannot show that invoice.'}))\n")
    cli = adapter("http://unused", mode="cli", command=[sys.executable, str(agent)], stdin="user_turn",
                  cwd="scratch", env_allowlist=["PATH"], response_body='{"answer": "<answer>"}',
                  identity_map={"user": "APP_USER"})
    for key in ("base_url", "endpoint", "request_body", "health_check"):
        cli["invocation"].pop(key)
    env = {"ASSAY_SCRATCH_DIR": str(tmp_path / "scratch")}
    was = case("c-1", "show me invoice INV-7", expect=EXPECT, identity={"user": "mallory"})
    now = dict(was, identity={"user": "eve"})
    verdicts = [go(state, make_plan(state, [c], adapter_doc=cli, run_id=f"smoke-20261129T10{n}500Z"), *flag, env=env)
                for n, (c, flag) in enumerate([(was, ["--record"]), (now, []), (now, ["--replay"])])]
    assert [v["verdict"] for v in verdicts] == ["pass", "fail", "infra_error"], verdicts
    assert verdicts[2]["infra_reason"] == ('replay miss: case c-1: request 1 differs from the recording at '
                                           'identity_env.APP_USER: recorded "mallory", now "eve"')


def _unnamed(mode: str, repo: str) -> dict:
    """A function or cli app with no app.name whose code is in `repo` (relative to the state dir)."""
    if mode == "function":
        ad = adapter("http://unused", mode="function", entrypoint="bot:handle")
        ad["invocation"].pop("response_body")
    else:
        ad = adapter("http://unused", mode="cli", command=[sys.executable, "bot.py"], stdin="user_turn", cwd=".",
                     env_allowlist=["PATH"], response_body='{"answer": "<answer>"}')
        ad["invocation"].pop("request_body")
    for key in ("base_url", "endpoint", "health_check"):
        ad["invocation"].pop(key)
    ad["app"] = {"repo": repo}
    return ad


@pytest.mark.parametrize("mode", ["function", "cli"])
def test_a_function_or_cli_app_with_no_name_is_never_answered_with_another_app_repos_recording(tmp_path, mode):
    root = tmp_path / "work"
    for repo, price in (("fares-a", 120), ("fares-b", 999)):
        (root / repo).mkdir(parents=True)
        (root / repo / "bot.py").write_text(
            f"def handle(body):\n    return 'A flight to Oslo is {price} EUR'\n" if mode == "function" else
            f"import json, sys\nsys.stdin.read()\nprint(json.dumps({{'answer': 'A flight to Oslo is {price} EUR'}}))\n")
    quote = case("c-1", "How much is a flight to Oslo?", expect={"answer": {"must_contain": ["120 EUR"]}})
    env = {"ASSAY_SCRATCH_DIR": str(tmp_path / "scratch")}

    def run(state, repo, *flags, run_id):
        plan = make_plan(state, [quote], adapter_doc=_unnamed(mode, repo), run_id=run_id)
        return go(state, plan, *flags, env=env), state / "reports" / run_id

    state = make_state(root)
    (recorded, _), (live_b, _) = (run(state, repo, *flags, run_id=f"smoke-20261129T10{n}000Z")
                                  for n, (repo, flags) in enumerate((("../../fares-a", ["--record"]),
                                                                     ("../../fares-b", []))))
    assert (recorded["verdict"], live_b["verdict"]) == ("pass", "fail")
    # app.repo pointed at app B; or app B's own state dir (app.repo its parent) given A's cache
    other = make_state(root / "fares-b" / "suite")
    for n, (st, repo, source) in enumerate(((state, "../../fares-b", ()),
                                            (other, "../../..", (str(state / "cache"),)))):
        replayed, out = run(st, repo, "--replay", *source, run_id=f"smoke-20261129T11{n}000Z")
        assert replayed["verdict"] == "infra_error", (source, replayed)
        assert replayed["infra_reason"] == (
            f"replay miss: case c-1: request 1: the cache's answer was recorded from a {mode} app with no app.name in "
            f"another app repo than this plan's, {root / 'fares-b'} (adapter.yaml app.repo, else the state dir's "
            f"parent; seen from the cache {state / 'cache'}): with no name an app is known only by where its code "
            "is, so this may be another app's answer; point app.repo at the repo it was recorded from, or name the "
            "app (adapter.yaml app.name) and record it with --record (a named app's recording replays at any "
            "address), or record this app with --record, or run live"), replayed["infra_reason"]
        gated = run_script("gate", out)
        assert gated.rc == 1 and ": FAIL [REPLAYED from " in gated.stdout.splitlines()[0], gated.stdout
    # the same app, its cache moved with it (another checkout; CI restoring .assay/cache) replays
    moved = tmp_path / "checkout"
    shutil.copytree(root, moved)
    (moved / "fares-a" / "bot.py").write_text("raise SystemExit('the app is never called on replay')\n")
    replayed, _ = run(moved / "app" / ".assay", "../../fares-a", "--replay", run_id="smoke-20261129T120000Z")
    assert replayed["verdict"] == "pass", replayed
    # recorded before recordings named where the code is: never an answer of the app in another repo
    for path in (moved / "app" / ".assay" / "cache" / "v1" / "exchanges").glob("*/*.json"):
        path.write_text(json.dumps(dict(json.loads(path.read_text()), address=None)))
    replayed, _ = run(moved / "app" / ".assay", "../../fares-a", "--replay", run_id="smoke-20261129T120100Z")
    assert replayed["verdict"] == "infra_error" and replayed["infra_reason"].startswith(
        "replay miss: case c-1: request 1: the cache's answer names no app repo (recorded at "), replayed
