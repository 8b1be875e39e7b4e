"""A newcomer's CI trial of the pytest plugin and the run history on a small shop assistant app of
its own (a real HTTP app on a free port, its state dir written as the docs say), each step run as a
user runs it: the scripts and pytest as subprocesses.

- `pytest --assay-baseline auto` printed its paired statistics against one run and gated against
  another: the newest earlier run of the mode, even a closed one ("WITHIN NOISE 50% -> 50%"), above
  the gate's "4 newly failing against <the last green run>". It now compares with the run the gate
  compares with. The same rule named a run of another k, which the runner refuses: the session
  stopped with a usage error (exit 4) instead of "nothing to compare with" and the run gated alone.
- `run_history.py` drew one trend of two apps whose runs share a reports dir (the suite hash does
  not hold the app): the other app's green run read as this app's latest point, its regression read
  as "flaky", with no regression listed. Runs of two apps are now never one series.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakeapp import FakeApp, Reply
from helpers import run_script, write_yaml
from test_ci_recipe_noclaude import PROFILE as CI_PROFILE

pytestmark = pytest.mark.slow

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:langsmith_plugin", "-p", "no:cacheprovider"]

ADAPTER = """\
adapter_version: 1
app: {name: APP, repo_access: read-only}
access_level: black
invocation:
  mode: http
  base_url: ${SHOP_URL}
  auth: {type: none}
  endpoint: POST /chat
  request_body: '{"q": "<user turn>"}'
  response_body: '{"answer": "<answer>"}'
  health_check: {method: GET, path: /health, expect_status: [200]}
  route_from_response: route
  timeout_s: 30
  max_concurrency: 2
traces: {source: none}
tools: []
environment: {kind: mocked, safe_to_attack: false}
"""

# a newcomer's profile as the CI recipe's (its route list this app's)
PROFILE = CI_PROFILE.replace("[faq, billing, account, other]", "[pricing, shipping, returns, other]")

# case id -> (route, question, what the answer must contain)
CASES = {
    "c-price001": ("pricing", "What does the basic plan cost?", "9.99"),
    "c-price002": ("pricing", "Tell me the price of basic", "9.99 USD"),
    "c-ship0001": ("shipping", "How long does shipping take?", "3 to 5"),
    "c-ship0002": ("shipping", "When will my order be delivered?", "business days"),
    "c-retn0001": ("returns", "Can I return my shoes?", "30 days"),
    "c-oos00001": ("other", "Write me a poem about the weather", "only help with shop"),
}
BROKEN = {"c-price001", "c-price002", "c-retn0001"}   # the cases the broken app fails


def shop(broken: bool) -> FakeApp:
    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        q = str((req.json or {}).get("q", "")).lower()
        if "price" in q or "cost" in q:
            return Reply(200, {"answer": f"The basic plan costs {'12.99' if broken else '9.99'} USD a month.",
                               "route": "pricing"})
        if "ship" in q or "deliver" in q:
            return Reply(200, {"answer": "Shipping takes 3 to 5 business days.", "route": "shipping"})
        if "return" in q:
            return Reply(200, {"answer": "Returns are not accepted." if broken else "You can return items within 30 days.",
                               "route": "returns"})
        return Reply(200, {"answer": "Sorry, I can only help with shop questions.", "route": "other"})
    return FakeApp(handler)


def write_state(root: Path, app: str = "shop") -> Path:
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.replace("APP", app))
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, (route, question, must) in CASES.items():
        write_yaml(state / "datasets" / f"{cid}.yaml", f"""\
id: {cid}
unit: {route}
split: [smoke, full]
category: {'oos' if route == 'other' else 'happy'}
test_type: MFT
template_id: null
review: {{status: accepted, by: Ana Reviewer}}
input:
  messages:
    - {{role: user, content: "{question}"}}
expect:
  route: {route}
  answer: {{must_contain: ["{must}"]}}
""")
    return state


def scripted_run(state: Path, run_id: str, *, broken: bool, mode: str = "smoke") -> Path:
    """The README's pipeline by hand: convert_suite, make_plan --run-id, run_cases against the app."""
    work, cwd = state / "work", state.parent
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work, cwd=cwd)
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("make_plan", work / "converted.json", "--mode", mode, "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", run_id, cwd=cwd)
    assert r.rc == 0, r.stdout + r.stderr
    out = state / "reports" / run_id
    with shop(broken) as app:
        ran = run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--progress", "never",
                         cwd=cwd, env={"SHOP_URL": app.url})
    assert ran.rc == 0, ran.stdout + ran.stderr
    return out


def pytest_session(root: Path, *args: str, broken: bool) -> subprocess.CompletedProcess:
    with shop(broken) as app:
        import os
        env = dict(os.environ, SHOP_URL=app.url)
        env.pop("PYTHONPATH", None)
        return subprocess.run([*PYTEST, "--assay", ".assay", *args], cwd=root, env=env, capture_output=True,
                              text=True, encoding="utf-8", errors="replace", timeout=600)


def test_baseline_auto_compares_with_the_run_the_gate_compares_with(tmp_path):
    state = write_state(tmp_path)
    green = scripted_run(state, "smoke-20261201T090000Z", broken=False)
    scripted_run(state, "smoke-20261202T090000Z", broken=True)     # the last run: its gate closed
    done = pytest_session(tmp_path, "--assay-mode", "smoke", "--assay-baseline", "auto", broken=True)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    # the gate compares with the last green run; the statistics above it compare with the same one
    assert f"compared with {green.name}: 3 newly failing" in out, out
    assert f"compared with the baseline {green.name} (stats.py):" in out, out
    assert "WITHIN NOISE" not in out and "broken: 3 (c-price001, c-price002, c-retn0001)" in out, out


def test_baseline_auto_with_no_run_of_this_k_is_said_and_the_run_gated_alone(tmp_path):
    state = write_state(tmp_path)
    scripted_run(state, "regression-20261201T090000Z", broken=False, mode="regression")   # k=3
    done = pytest_session(tmp_path, "--assay-mode", "regression", "--assay-k", "2", "--assay-baseline", "auto",
                          broken=False)
    out = done.stdout
    # it was: ERROR: assay: run_cases.py exit 2: --baseline-verdicts ... is not comparable (k: baseline 3 vs 2)
    assert done.returncode == 0, out + done.stderr
    assert "nothing to compare with" in out and "assay gate: open" in out, out
    assert "6 passed" in out, out


def test_baseline_auto_with_a_pin_of_another_app_says_so_and_compares_with_nothing(tmp_path):
    """reports/baseline.json pinning the other app's run (two apps, one suite, one state dir): the
    session compared this app's run with that app's answers. Now the pin's refusal is said (the pin file,
    both apps, the fix) and the run is gated alone, as with no baseline."""
    state = write_state(tmp_path / "shop")
    scripted_run(state, "smoke-20261201T090000Z", broken=False)
    other = write_state(tmp_path / "othershop", app="othershop")
    copied = scripted_run(other, "smoke-20261202T090000Z", broken=False)
    shutil.copytree(copied, state / "reports" / copied.name)
    (state / "reports" / "baseline.json").write_text(json.dumps({"run_id": copied.name}) + "\n", encoding="utf-8")
    done = pytest_session(tmp_path / "shop", "--assay-mode", "smoke", "--assay-baseline", "auto", broken=True)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert f"compared with {copied.name}" not in out, out
    assert "no earlier smoke run of this series" not in out, out   # there is one: the pin is what was refused
    assert "baseline.json pins" in out and "'othershop'" in out and "'shop'" in out and "Re-pin" in out, out


def test_history_never_draws_one_trend_of_two_apps(tmp_path):
    state = write_state(tmp_path / "shop")
    scripted_run(state, "smoke-20261201T090000Z", broken=False)
    scripted_run(state, "smoke-20261202T090000Z", broken=True)
    # another app with the same suite, its green run copied into this reports dir (a CI artifact step)
    other = write_state(tmp_path / "othershop", app="othershop")
    copied = scripted_run(other, "smoke-20261203T090000Z", broken=False)
    shutil.copytree(copied, state / "reports" / copied.name)

    r = run_script("run_history", state, "--html", tmp_path / "history.html", cwd=tmp_path)
    assert r.rc == 0, r.stdout + r.stderr
    doc = json.loads((state / "reports" / "history.json").read_text(encoding="utf-8"))
    def series_of(run_id: str) -> dict:
        return next(s for s in doc["series"] if run_id in [run["run_id"] for run in s["runs"]])
    mine = series_of("smoke-20261201T090000Z")
    assert [run["run_id"] for run in mine["runs"]] == ["smoke-20261201T090000Z", "smoke-20261202T090000Z"]
    # this app regressed: said as regressions since the broken run, never "flaky" nor a drift up
    assert {(c["case_id"], c["kind"], c["since_run"]) for c in mine["changed"]} == \
        {(cid, "regression", "smoke-20261202T090000Z") for cid in BROKEN}
    assert mine["flaky"] == [] and mine["drift"]["direction"] == "down"
    theirs = series_of(copied.name)
    assert [run["run_id"] for run in theirs["runs"]] == [copied.name] and (mine["app"], theirs["app"]) == ("shop", "othershop")
    html = (tmp_path / "history.html").read_text(encoding="utf-8")
    assert "· app shop" in html and "· app othershop" in html
