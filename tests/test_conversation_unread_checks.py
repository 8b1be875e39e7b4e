"""A conversation whose case file writes a check where the runner never reads it (a misspelt
checkpoint key, an expect on the last turn, a key in both input.every_turn and an expect) is
skipped with the reason, never a pass without that check. validate_cases.py calls each an ERROR;
a plan made with make_plan.py --allow-invalid still reaches the runner. run_cases.py and gate.py
as subprocesses against a real app on a loopback port."""

from __future__ import annotations

import pytest

from fakeapp import FakeApp, state  # noqa: F401 (fixture)
from helpers import run_script
from rundir_util import cases_view
from test_run_conversation import MemoryApp, convo, rd, run

pytestmark = pytest.mark.slow

# each check would fail on the app's answers: "INV-9" is never said
NEVER = {"answer": {"must_contain": ["INV-9"]}}
OPEN = {"user": "which invoice is open?"}
UNREAD = {
    "c-typo": (convo("c-typo", dict(OPEN, expects=NEVER), "refund that one"),
               "unsupported input: input.turns[0].expects is not a turn key (user, expect), so it is never read"),
    "c-last": (convo("c-last", OPEN, {"user": "refund that one", "expect": NEVER}),
               "unsupported input: input.turns[1].expect is on the last turn, where it is never read"),
    "c-both": (convo("c-both", dict(OPEN, expect={"answer": {"must_contain": ["INV-2"]}}), "refund that one",
                     every=NEVER),
               "unsupported input: input.every_turn and input.turns[0].expect both set ['answer']: one would "
               "replace the other"),
    "c-top": (convo("c-top", OPEN, "refund that one", every={"answer": {"must_contain": ["INV-9", "refunded"]}}),
              "unsupported input: input.every_turn and expect both set ['answer']"),
}


def test_a_check_the_runner_would_not_read_skips_the_conversation(state):
    good = convo("c-good", OPEN, "refund that one")
    with FakeApp(MemoryApp("client-id")) as app:
        r, out = run(state, app.url, [good] + [c for c, _ in UNREAD.values()], conversation={"style": "client-id"})
        sent = [p.json["message"] for p in app.posts()]
    assert r.rc == 0, r.stdout + r.stderr
    assert sent == ["which invoice is open?", "refund that one"], sent   # only c-good was sent
    assert rd(cases_view(out) / "c-good" / "verdict.json")["verdict"] == "pass"
    for cid, (_, why) in UNREAD.items():
        v = rd(cases_view(out) / cid / "verdict.json")
        assert v["verdict"] == "skipped", (cid, v)
        assert v["skip_reason"].startswith(why) and "validate_cases.py names the fix" in v["skip_reason"], (cid, v)
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout
    assert "4 gating case(s) were not sent because the case's input is not one the runner can send" in g.stdout
    assert run_script("run_cases", "--verify", out).rc == 0
