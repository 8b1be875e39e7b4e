"""Every place that prints an excerpt of a third party's reply (the judge's, the simulator's, the
app's) redacts, then cuts (`core.writer.clip`): a key that straddles the cut leaves none of its
characters behind. Cutting first left the key's first characters, which no later redaction knows."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply
from rundir_util import make_run

KEY = "sk-judge-0123456789abcdefghijklmnopqrstuv"   # 40 characters


def leaked(text: str, secret: str = KEY) -> list[str]:
    """Every 6-character piece of the secret found in `text`."""
    return [secret[i:i + 6] for i in range(len(secret) - 5) if secret[i:i + 6] in text]


@pytest.fixture
def secret():
    from assay.core import writer
    writer.register_secrets([KEY])
    yield KEY
    writer.register_secrets([])


@pytest.mark.parametrize("at", [150, 165, 175])   # the key starts 34, 19, 9 characters before the cut
def test_the_judge_probe_redacts_a_key_echoed_across_the_cut(at):
    from assay.core.errors import AssayError
    from assay.judge.probe import probe_config
    body = "x" * at + f"invalid api key {KEY} for this org"
    with FakeApp(lambda req: Reply(401, body)) as app:
        cfg = {"provider": "openai", "base_url": app.url, "model": "m", "api_key": KEY, "timeout_s": 60,
               "max_tokens": 16}
        with pytest.raises(AssayError) as err:
            probe_config(cfg, "$JUDGE_KEY")
    msg = str(err.value)
    assert "HTTP 401" in msg and leaked(msg) == [], msg


def test_the_simulators_unparsable_reply(secret):
    from assay.simulate.prompt import parse_turn
    turn, why = parse_turn("{" + "y" * 100 + KEY)
    assert turn is None and leaked(why) == [], why


def test_report_excerpts_and_labels(secret, tmp_path):
    from assay.calibrate.labelset import _clip, _whole
    from assay.report.clusters import _clip as cluster_clip
    from assay.report.sections import describe_layer
    long = "z" * 390 + KEY
    assert leaked(cluster_clip("w" * 150 + KEY) or "") == []
    assert leaked(describe_layer("answer", {"verdict": "fail", "note": long})) == []
    assert leaked(_clip("q" * 19_990 + KEY)) == []
    assert leaked(_whole("q" * 19_990 + KEY)) == []     # the answer: whole, the page cuts it (after redaction)


def test_gate_junit_and_draft_report_answers(secret, tmp_path):
    """The gate's JUnit failure body, the draft report's failure excerpt and the judged node reasons
    over a run whose answer (and the judge's reason) hold the key across their cuts."""
    from assay.report.gate import evaluate
    from assay.report.gate_outputs import failure_text
    from assay.report.judged import _failing_nodes
    answer = "a" * 790 + KEY
    run = make_run(tmp_path / "reports", [{"id": "c-1", "verdict": "fail", "answer": answer}])
    judge = {"rubrics": [{"rubric_id": "r", "verdict": "fail", "nodes": [
        {"node_id": "n1", "verdict": "fail", "reason": "r" * 150 + KEY}]}]}
    (run / "cases" / "c-1" / "judge.json").write_text(json.dumps(judge), encoding="utf-8")
    res = evaluate(run, verify=False)
    text = failure_text(res, {"case_id": "c-1"}, "failed")
    assert "actual: aaa" in text and leaked(text) == [], text
    assert "n1 fail: rrr" in _failing_nodes(run, "c-1") and leaked(_failing_nodes(run, "c-1")) == []
    from assay.report.facts import load_facts
    from assay.report.sections import failure_excerpts
    lines = "\n".join(failure_excerpts(load_facts(run), lambda s: s))
    assert "aaaa" in lines and leaked(lines) == [], lines
