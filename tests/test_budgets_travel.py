"""A run dir copied out of its state dir (downloaded from CI, moved aside) was gated with no budget at
all, and nothing said so: the budgets live in the state dir's profile.yaml, which is not beside the
copy, so a run over its p95 budget read PASS there (a newcomer's trial). The plan now records the
profile's budgets (manifest_extra.budgets), and the gate falls back on them, naming that source, when
the state dir the run sits in has no profile.yaml; a profile.yaml there, a flag or --state-dir wins as
before. The scripts run as subprocesses against a real app on a real port.
"""

from __future__ import annotations

import shutil

from fakeapp import FakeApp
from helpers import run_script, write_yaml
from test_no_silent_green import PROFILE, case_yaml, plan, run, travel_reply, write_state


def test_a_copied_run_is_gated_on_the_budgets_it_was_planned_under(tmp_path):
    state = write_state(tmp_path / "app", {"c-00000001": case_yaml("c-00000001")})
    write_yaml(state / "profile.yaml", PROFILE + "budgets:\n  max_p95_latency_s: 0.000001\n")
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(travel_reply) as app:
        out = run(state, plan_file, app)
    here = run_script("gate", out, "--json")
    assert here.rc == 1 and any("p95 latency" in r for r in here.json["reasons"]), here.stdout
    copy = tmp_path / "downloaded" / out.name
    shutil.copytree(out, copy)
    there = run_script("gate", copy, "--json")
    assert there.rc == 1 and any("p95 latency" in r for r in there.json["reasons"]), there.stdout
    source = there.json["budget_sources"]["max_p95_latency_s"]["source"]
    assert source.startswith("the run's manifest.yaml manifest_extra.budgets.max_p95_latency_s"), source
    # a flag still wins; --state-dir names the profile to read
    assert run_script("gate", copy, "--json", "--max-p95-latency-s", "4").rc == 0
    assert run_script("gate", copy, "--json", "--state-dir", state).json["budget_sources"][
        "max_p95_latency_s"]["source"].endswith("budgets.max_p95_latency_s")
