"""Pure parts of conversations: the per-layer merge equals the roll-up over every turn, the
conversation verdict, the cookie jar, the unset <session>, the turn expects, pre-flight checks."""

from __future__ import annotations

import itertools

import pytest

import helpers  # noqa: F401 (puts scripts/ on sys.path)
from assay.core.errors import AssayError
from assay.core.vocab import LAYER_STATUSES
from assay.invoke import templates
from assay.invoke.conversation import CookieJar, conversation_config, turn_specs
from assay.score.rollup import case_verdict, conversation_verdict, merge_turn_layers


def test_merge_then_rollup_equals_the_rollup_over_all_turns():
    for a, b, c, d in itertools.product(LAYER_STATUSES, repeat=4):
        turns = [(1, {"http": {"verdict": "pass"}, "answer": {"verdict": a}, "routing": {"verdict": b}}),
                 (2, {"http": {"verdict": "pass"}, "answer": {"verdict": c}, "routing": {"verdict": d}})]
        # the roll-up over every turn's layers (graded layers kept apart per turn; http is the
        # same liveness layer on both turns and passes on both)
        union = {"http": {"verdict": "pass"}}
        union.update({f"{name}@t{n}": v for n, layers in turns for name, v in layers.items() if name != "http"})
        assert case_verdict(merge_turn_layers(turns), skipped=False) == case_verdict(union, skipped=False), (a, b, c, d)


def test_merge_names_the_deciding_turn():
    merged = merge_turn_layers([(1, {"answer": {"verdict": "pass"}}), (2, {"answer": {"verdict": "fail", "x": 1}})])
    assert merged["answer"] == {"verdict": "fail", "x": 1, "turn": 2}


def test_a_conversation_stopped_early_without_a_failure_is_never_pass():
    layers = {"http": {"verdict": "pass"}, "routing": {"verdict": "pass"}}
    assert conversation_verdict(layers, turns_sent=1, turns_total=3, failed_turn=None) == "unscored"
    assert conversation_verdict(layers, turns_sent=3, turns_total=3, failed_turn=None) == "pass"


def test_cookie_jar_keeps_every_cookie_and_deletes_on_max_age_0():
    jar = CookieJar()
    jar.update(["sid=abc; Path=/; HttpOnly", "theme=dark"])
    assert jar.header() == "sid=abc; theme=dark"
    jar.update(["theme=; Max-Age=0", "sid=def"], now=0)
    assert jar.header() == "sid=def"
    jar.update(["sid=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT"], now=10)
    assert jar.header() is None


def test_an_unset_session_entry_is_dropped_not_null():
    body = {"message": "<user turn>", "session": "<session>", "note": "s=<session>", "ids": ["<session>", 1]}
    got = templates.fill(body, {"<user turn>": "hi", "<session>": templates.UNSET})
    assert got == {"message": "hi", "note": "s=", "ids": [1]}
    assert templates.fill(body, {"<user turn>": "hi", "<session>": 7})["session"] == 7


def test_turn_expects_checkpoints_and_every_turn():
    case = {"input": {"turns": [{"user": "a", "expect": {"route": "x"}}, {"user": "b"}, {"user": "c"}],
                      "every_turn": {"answer": {"must_not_contain": ["oops"]}}},
            "expect": {"route": "y"}}
    specs = turn_specs(case)
    assert [(s.n, s.user, s.checkpoint) for s in specs] == [(1, "a", True), (2, "b", False), (3, "c", False)]
    assert specs[0].expect == {"route": "x", "answer": {"must_not_contain": ["oops"]}}
    assert specs[1].expect == {"answer": {"must_not_contain": ["oops"]}}
    assert specs[2].expect["route"] == "y"


@pytest.mark.parametrize("block,key", [
    ({"style": "sticky"}, "invocation.conversation.style"),
    ({"style": "server-id"}, "invocation.conversation.session_from"),
    ({"style": "server-id", "session_from": {"body": "a", "header": "b"}}, "invocation.conversation.session_from"),
    ({"style": "client-id", "session_from": {"body": "a"}}, "invocation.conversation.session_from"),
    ({"style": "client-id", "turn_delay_s": -1}, "invocation.conversation.turn_delay_s"),
    ({"style": "client-id", "memory": "forever"}, "invocation.conversation.memory"),
    ({"style": "client-id", "memroy": "user"}, "invocation.conversation.memroy"),
])
def test_preflight_names_the_bad_key(block, key):
    with pytest.raises(AssayError) as exc:
        conversation_config({"mode": "http", "conversation": block}, {"m": "<uuid> <session>"})
    assert exc.value.code == 3 and exc.value.fields["key"] == key


def test_cookie_and_header_styles_need_http():
    with pytest.raises(AssayError, match="needs invocation.mode http"):
        conversation_config({"mode": "function", "conversation": {"style": "cookie"}}, {})
    with pytest.raises(AssayError, match="needs invocation.mode http"):
        conversation_config({"mode": "function", "conversation": {"style": "server-id",
                                                                  "session_from": {"header": "X"}}}, "<session>")


def test_cost_counts_every_turn_of_a_conversation(tmp_path):
    import json
    from assay.stats.cost import case_cost
    cdir = tmp_path / "c-1"
    call = {"model": "m", "input_tokens": 10, "output_tokens": 2, "duration_ms": 1.0}
    for n in (1, 2):
        (cdir / "turns" / str(n)).mkdir(parents=True)
        (cdir / "turns" / str(n) / "trajectory.json").write_text(json.dumps({"llm_calls": [call]}))
    (cdir / "trajectory.json").write_text(json.dumps({"llm_calls": [call]}))   # the deciding turn's copy
    (cdir / "verdict.json").write_text(json.dumps({"case_id": "c-1", "verdict": "pass", "latency_ms": 5}))
    row = case_cost(cdir, {"per_token": {"m": {"input": 1.0, "output": 1.0}}})
    assert (row["model_calls"], row["input_tokens"], row["cost"]) == (2, 20, 24.0)
