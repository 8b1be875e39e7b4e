"""A record_id_pattern (and case ids) the app never writes: every authz id check could only pass.

The app leaks another user's invoice in a JSON field (`INV-2001`), but the profile's pattern and the
case's ids say `inv_2001`: no id check can see it. No case of the run showed a token of the declared
shape, so the gate closes naming the shape; the same app with the pattern it writes gates on the
leak, and a clean app with that pattern stays open (the check never closes a run that saw its ids).
"""

from __future__ import annotations

from fakeapp import FakeApp, Reply, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script


def _handler(leak: bool):
    def handle(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = (req.json or {}).get("message", "")
        if "mine" in msg:
            return Reply(200, {"message": "Your invoice INV-1001 is 120.00 USD.", "record": {"id": "INV-1001"}})
        record = {"id": "INV-2001", "owner": "bob"} if leak else {}
        return Reply(200, {"message": "Here is the record." if leak else "I can't find that invoice.",
                           "record": record})
    return handle


def _gate(tmp_path, *, leak: bool, pattern: str, forbidden: str, own: str):
    state = make_state(tmp_path)
    with FakeApp(_handler(leak)) as app:
        cases = [case("c-other", "raw INV-2001", expect={"authz": {"forbidden_record_ids": [forbidden]}}),
                 case("c-mine", "show mine", expect={"authz": {"allowed_record_ids": [own]}})]
        plan = write_plan(state, make_plan(state, cases, app_url=app.url, scoring={"id_pattern": pattern}))
        out = state / "reports" / "smoke-20261129T101500Z"
        r = run_runner("--plan", plan, "--out", out)
        assert r.rc == 0, r.stderr
    g = run_script("gate", out)
    return g.rc, g.stdout + g.stderr


def test_a_pattern_the_app_never_writes_closes_the_gate(tmp_path):
    rc, text = _gate(tmp_path, leak=True, pattern=r"inv_\d+", forbidden="inv_2001", own="inv_1001")
    assert rc == 1, text
    assert "no record id of the shape 'inv_\\d+' appeared" in text and "2 case(s) with record-id checks" in text
    assert "record_id_pattern" in text


def test_the_pattern_the_app_writes_catches_the_leak(tmp_path):
    rc, text = _gate(tmp_path, leak=True, pattern=r"INV-\d{4}", forbidden="INV-2001", own="INV-1001")
    assert rc == 1 and "c-other (authz)" in text, text
    assert "no record id of the shape" not in text


def test_a_clean_app_with_the_right_pattern_stays_open(tmp_path):
    rc, text = _gate(tmp_path, leak=False, pattern=r"INV-\d{4}", forbidden="INV-2001", own="INV-1001")
    assert rc == 0, text
