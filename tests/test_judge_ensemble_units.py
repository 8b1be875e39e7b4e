"""Pure parts of a judge you can trust: judge.yaml ensembles and repeats (and their errors, naming
file, line and key), the node fold (majority, unanimous, judge_unstable), the calibration identity
of an ensemble, which pins judge which conversation turn, and the conversation prompts."""

from __future__ import annotations

import pytest

from assay.core.errors import AssayError
from assay.core.vocab import JUDGE_UNSTABLE, is_judge_unstable
from assay.judge.binding import describe, judge_identity
from assay.judge.config import effective, load_judge_config, members
from assay.judge.fold import fold_node, judged_layer, sum_usage
from assay.judge.prompt import TRANSCRIPT_SCOPE, TURN_SCOPE, Material, Turn, build_prompt
from assay.judge.turns import transcript_material, turn_pins
from assay.judge.verdict import agree, checked_node, rubric_verdict

ANTH = "  - provider: anthropic\n    model: claude-x\n"
OAI = "  - provider: openai\n    model: gpt-x\n"


def load(tmp_path, text):
    (tmp_path / "judge").mkdir(exist_ok=True)
    (tmp_path / "judge" / "judge.yaml").write_text(text, encoding="utf-8")
    return load_judge_config(tmp_path)


def test_an_ensemble_reads_as_its_members_with_defaults(tmp_path):
    cfg = load(tmp_path, "judges:\n" + ANTH + OAI + ANTH + "aggregate: majority\nrepeats: 3\n")
    full = effective(cfg)
    assert [m["provider"] for m in members(full)] == ["anthropic", "openai", "anthropic"]
    assert members(full)[1]["base_url"] == "https://api.openai.com/v1" and full["max_concurrency"] == 4
    single = load(tmp_path, "provider: openai\nmodel: gpt-x\n")
    assert members(effective(single))[0]["model"] == "gpt-x"


@pytest.mark.parametrize("text, key, needle", [
    ("judges:\n" + ANTH + OAI + "aggregate: majority\n", "aggregate", "majority over 2 judges can tie"),
    ("judges:\n" + ANTH + OAI + "aggregate: unanimous\nmodel: x\n", "model", "move model into each judge"),
    ("judges:\n" + ANTH + "aggregate: unanimous\n", "judges", "2 or more judges"),
    ("judges:\n" + ANTH + OAI + ANTH, "aggregate", "say how the judges' verdicts combine"),
    ("provider: openai\nmodel: x\naggregate: majority\n", "aggregate", "there is no `judges:` list"),
    ("judges:\n" + ANTH + OAI + "    max_concurrency: 2\naggregate: unanimous\n", "judges[1].max_concurrency",
     "one pool"),
    ("repeats: 2\n", "provider", "give one judge"),
])
def test_ensemble_config_errors_name_file_line_and_key(tmp_path, text, key, needle):
    with pytest.raises(AssayError) as err:
        load(tmp_path, text)
    assert err.value.code == 2 and needle in err.value.message and err.value.message.startswith("judge/judge.yaml")
    assert err.value.fields.get("key") == key


@pytest.mark.parametrize("text, needle", [
    ("judges:\n" + ANTH + "    modle: y\n" + OAI + "aggregate: unanimous\n", "modle"),
    ("judges:\n" + ANTH + OAI + "aggregate: most\n", "aggregate"),
    ("provider: openai\nmodel: x\nrepeats: 0\n", "repeats"),
])
def test_ensemble_schema_errors(tmp_path, text, needle):
    with pytest.raises(AssayError) as err:
        load(tmp_path, text)
    assert err.value.code == 2 and needle in err.value.message


def asks(*rows):
    """(judge, ask, verdict) rows -> asks."""
    return [{"judge": j, "ask": a, "verdict": v, "evidence": [v], "reason": f"{v} by {j}", "infra": False}
            for j, a, v in rows]


def test_node_fold_majority_unanimous_and_unstable():
    two_to_one = asks((1, 1, "pass"), (2, 1, "pass"), (3, 1, "fail"))
    got = fold_node(two_to_one, "majority", 3)
    assert got["verdict"] == "pass" and got["reason"] == "majority of 3 judges (pass x2, fail): pass by 1"
    assert [j["verdict"] for j in got["judges"]] == ["pass", "pass", "fail"]
    assert fold_node(asks((1, 1, "pass"), (2, 1, "fail"), (3, 1, "unknown")), "majority", 3)["verdict"] == "unknown"
    split = fold_node(asks((1, 1, "pass"), (2, 1, "fail")), "unanimous", 2)
    assert split["verdict"] == "unknown" and "the judges disagree" in split["reason"]
    assert fold_node(asks((1, 1, "fail"), (2, 1, "fail")), "unanimous", 2)["verdict"] == "fail"
    # one judge of three disagreeing with itself: the node is unstable, whatever the majority says
    shaky = fold_node(asks((1, 1, "pass"), (1, 2, "pass"), (2, 1, "pass"), (2, 2, "pass"), (3, 1, "pass"),
                           (3, 2, "fail")), "majority", 3)
    assert shaky["verdict"] == JUDGE_UNSTABLE and "judge 3 answered pass, fail over 2 asks" in shaky["reason"]
    alone = fold_node(asks((1, 1, "fail"), (1, 2, "pass"), (1, 3, "pass")), "single", 1)
    assert alone["reason"] == "judge_unstable: the judge answered pass x2, fail over 3 asks"
    down = fold_node([dict(asks((1, 1, "pass"))[0], infra=True, reason="judge unavailable")], "single", 1)
    assert down["infra"] is True and down["verdict"] == "unknown"


def test_agree_and_the_rubric_and_layer_folds():
    assert agree(["pass", "pass"]) == "pass" and agree(["pass", "fail"]) == JUDGE_UNSTABLE and agree([]) == "unknown"
    assert rubric_verdict(["pass", JUDGE_UNSTABLE]) == JUDGE_UNSTABLE
    assert rubric_verdict(["fail", JUDGE_UNSTABLE]) == "fail"   # a stable fail of one node is a fail
    res = [{"pin": "r-v1", "verdict": JUDGE_UNSTABLE, "provisional": False, "infra": False, "why_provisional": None,
            "reason": "node a: judge_unstable: ...", "nodes": [{"verdict": JUDGE_UNSTABLE, "calls": [{}], "infra": False},
                                                              {"verdict": "pass", "calls": [{}], "infra": False}]}]
    layer = judged_layer(res, {})
    assert (layer["verdict"], layer["judge_unstable"]) == ("unscored", True)
    assert layer["rubrics"][0]["judged"] == 2 and layer["rubrics"][0]["unstable"] == 1
    assert is_judge_unstable({"layers": {"judged": layer}}) and not is_judge_unstable({"layers": {}})
    prov = judged_layer([dict(res[0], provisional=True, why_provisional="not calibrated")], {})
    assert prov["verdict"] == "unscored" and "judge_unstable" not in prov   # a provisional judge never decides
    assert prov["provisional_verdict"] == JUDGE_UNSTABLE
    assert sum_usage([{"calls": 1, "by_model": {"a": {"calls": 1}}}, {"calls": 2, "by_model": {"a": {"calls": 2}}}]) \
        == {"calls": 3, "by_model": {"a": {"calls": 3}}}


def test_an_ensembles_identity_names_every_member_and_how_they_combine(tmp_path):
    one = effective({"provider": "anthropic", "model": "claude-x"})
    many = effective({"judges": [{"provider": "anthropic", "model": "claude-x"},
                                 {"provider": "openai", "model": "gpt-x"}], "aggregate": "unanimous", "repeats": 3})
    single_id = judge_identity(one, tmp_path)
    assert single_id["combine"] == "single" and len(single_id["judges"]) == 1
    ens = judge_identity(many, tmp_path)
    assert ens["combine"] == "unanimous" and [j["model"] for j in ens["judges"]] == ["claude-x", "gpt-x"]
    assert "repeats" not in str(ens)   # asking more often does not make it another judge
    assert describe(ens).startswith("unanimous of [anthropic claude-x at https://api.anthropic.com + openai gpt-x")


def convo_case():
    return {"id": "c", "input": {"turns": [{"user": "a", "expect": {"answer": {"rubric": ["cp-v1"]}}},
                                           {"user": "b"}, {"user": "c", "expect": {"answer": {"rubric": ["ignored-v1"]}}}],
                                 "every_turn": {"answer": {"rubric": ["tone-v1"]}}},
            "expect": {"answer": {"rubric": ["whole-v1"]}}}


def test_which_pins_judge_which_turn():
    case = convo_case()
    assert turn_pins(case, 1, 3) == {TURN_SCOPE: ["tone-v1", "cp-v1"]}
    assert turn_pins(case, 2, 3) == {TURN_SCOPE: ["tone-v1"]}
    # the last turn: every_turn's pin on the turn, the case's own pin on the whole conversation
    assert turn_pins(case, 3, 3) == {TURN_SCOPE: ["tone-v1"], TRANSCRIPT_SCOPE: ["whole-v1"]}
    assert turn_pins({"input": {"turns": [{"user": "a"}, {"user": "b"}]}, "expect": {}}, 1, 2) == {}


def test_conversation_material_prompts_and_evidence():
    turns = [("which invoice?", "INV-2 is open", None), ("refund it", "Refunded INV-2", [{"name": "t", "result": 1}])]
    m = transcript_material(turns, scope=TURN_SCOPE)
    assert m.context == (Turn("which invoice?", "INV-2 is open"),) and m.answer == "Refunded INV-2"
    system, user = build_prompt({"pin": "r-v1"}, {"id": "n", "criterion": "c"}, m)
    assert "about a conversation" in system and "<untrusted-earlier-turns-" in user and "turn 2" in user
    # an earlier turn may support a verdict, never be the answer it is about
    node = {"verdict": "pass", "evidence": ["INV-2 is open"], "reason": "r"}
    assert checked_node(node, m)[0] == "unknown"
    assert checked_node(dict(node, evidence=["INV-2 is open", "Refunded INV-2"]), m)[0] == "pass"
    whole = transcript_material(turns)
    assert whole.scope == TRANSCRIPT_SCOPE and whole.tool_results == [{"name": "t", "result": 1}]
    assert checked_node(node, whole)[0] == "pass"   # every answer of the conversation is the answer
    _, wuser = build_prompt({"pin": "r-v1"}, {"id": "n", "criterion": "c"}, whole)
    assert "<untrusted-conversation-" in wuser and "Does the conversation meet the criterion?" in wuser
    # a single-turn case's prompt is what it was (calibrations bound to prompt v1 stay valid)
    s_system, s_user = build_prompt({"pin": "r-v1"}, {"id": "n", "criterion": "c"}, Material("q", "a"))
    assert "ONE answer" in s_system and "earlier" not in s_user and "conversation" not in s_user
