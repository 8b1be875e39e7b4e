"""stats.py on two holdout runs names their cases only as the runner's comparison.json does (the holdout
seal trial).

The optimize loop compares a candidate's holdout run with the champion's; the runner's comparison.json
(`--baseline-verdicts`) seals each holdout id as `<holdout #i>`, but `stats.py base.jsonl cand.jsonl` on
the same two runs' verdicts_for_stats.jsonl printed the real ids of the sealed cases the candidate fixed
(`"fixed_by_candidate_ids": ["h-sealed-tokyo"]`): which holdout case failed, readable by the agent the
seal is for. stats.py now seals them with the runner's own rule (assay.rundir.routing_files.seal_pairs).
"""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply
from helpers import run_script
from test_holdout_unmeasured import holdout_run, make_state

SEALED = ("h-sealed-tokyo", "h-sealed-lima", "h-open-rome", "h-open-oslo")


def weather(lose_tokyo: bool):
    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = req.json["message"]
        body = {"answer": f"It is sunny in {msg.rstrip('?').split(' in ')[-1]}", "route": "weather"}
        if lose_tokyo and "Tokyo" in msg:
            body["route"] = "chat"   # a misroute: the sealed Tokyo case fails in the first run only
        return Reply(200, body)
    return handler


def test_stats_on_two_holdout_runs_seals_the_ids_as_comparison_json_does(tmp_path):
    state = make_state(tmp_path)
    with FakeApp(weather(lose_tokyo=True)) as app:
        base = holdout_run(state, "holdout-20261205T000000Z", app.url)
    with FakeApp(weather(lose_tokyo=False)) as app:
        cand = holdout_run(state, "holdout-20261205T000100Z", app.url,
                           "--baseline-verdicts", base / "verdicts_for_stats.jsonl")
    runner = json.loads((cand / "comparison.json").read_text())
    assert runner["fixed_by_candidate"] == 1 and runner["fixed_by_candidate_ids"][0].startswith("<holdout #"), runner

    r = run_script("stats", base / "verdicts_for_stats.jsonl", cand / "verdicts_for_stats.jsonl")
    assert r.rc == 0, r.stdout + r.stderr
    for cid in SEALED:
        assert cid not in r.stdout + r.stderr, (cid, r.stdout)
    doc = json.loads(r.stdout)
    assert doc["fixed_by_candidate"] == 1
    assert doc["fixed_by_candidate_ids"] == runner["fixed_by_candidate_ids"], (doc, runner)

    # the other way round (the candidate broke it), and a holdout run against a file outside any run dir
    back = run_script("stats", cand / "verdicts_for_stats.jsonl", base / "verdicts_for_stats.jsonl")
    assert back.rc == 0 and json.loads(back.stdout)["broken_by_candidate"] == 1
    assert not any(cid in back.stdout for cid in SEALED), back.stdout
    loose = tmp_path / "loose.jsonl"
    loose.write_text((base / "verdicts_for_stats.jsonl").read_text())
    mixed = run_script("stats", loose, cand / "verdicts_for_stats.jsonl")
    assert mixed.rc == 0 and not any(cid in mixed.stdout for cid in SEALED), mixed.stdout
