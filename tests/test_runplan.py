"""The plan read once (core.runplan): the streamed read gives the same plan, hash and errors as
parsing the whole text; cases stay compact and are parsed on demand; the object is frozen."""

from __future__ import annotations

import dataclasses
import json

import pytest

from assay.core.errors import AssayError
from assay.core.jsonio import sha256_json
from assay.core.runplan import CaseTable, RunPlan, read_plan_text
from assay.plan.validate import effective_execution, effective_scoring, run_plan
from assay.run.preflight import load_plan
from fakeapp import case, make_plan, make_state


@pytest.fixture
def plan_dict(tmp_path):
    state = make_state(tmp_path)
    cases = [case("c-1", "héllo ☃", identity={"token_env": "TOK_A"}), case("c-2"),
             case("c-3", split=("smoke", "canary"))]
    return make_plan(state, cases, scoring={"float_tolerance": 0.5})


def test_the_streamed_read_is_the_whole_parse(plan_dict, tmp_path):
    for text in (json.dumps(plan_dict, indent=2), json.dumps(plan_dict, sort_keys=True, ensure_ascii=False)):
        path = tmp_path / "plan.json"
        path.write_text(text, encoding="utf-8")
        assert read_plan_text(text) is not None                # the streamed path, not the fallback
        plan = load_plan(str(path))
        assert isinstance(plan, RunPlan)
        assert plan.sha256 == sha256_json(plan_dict)          # what --resume and the shard merge compare
        assert list(plan.cases) == plan_dict["cases"]
        assert dict(plan.execution) == effective_execution(plan_dict)
        assert dict(plan.scoring) == effective_scoring(plan_dict)
        assert (plan.run_id, plan.k, plan.mode, plan.dataset_version) == (plan_dict["run_id"], 1, "smoke", 1)
        assert plan["adapter"] == plan_dict["adapter"] and plan.get("nope") is None


def test_the_case_table_answers_without_parsing(plan_dict):
    table = CaseTable.of(plan_dict["cases"])
    assert len(table) == 3 and table.ids == ["c-1", "c-2", "c-3"]
    assert [table.canary(i) for i in range(3)] == [False, False, True]
    assert [table.sha256(i) for i in range(3)] == [sha256_json(c) for c in plan_dict["cases"]]
    assert table.index_of("c-2") == 1 and table.index_of("c-9") is None
    assert table.env_names == {"TOK_A"}
    assert table.heads()[2] == {"id": "c-3", "split": ["smoke", "canary"]}
    first = table[0]
    first["id"] = "changed"            # a parsed case is the caller's copy: the table never changes
    assert table[0]["id"] == "c-1" and table[-1]["id"] == "c-3"
    with pytest.raises(TypeError):
        table.append({"id": "c-4"})


def test_the_plan_is_frozen(plan_dict):
    plan = run_plan(plan_dict)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.top = {}
    with pytest.raises(TypeError):
        plan.top["k"] = 2
    assert run_plan(plan) is plan


@pytest.mark.parametrize("text", [
    '[1, 2]', '{"a": 1, "a": 2}', '{"cases": [], "cases": []}', '{"a": 1} trailing', '{"a": "\\ud800"}',
    '{"a": NaN}', '{"a": 1', '', '{} trailing', '{ }{}', '{}\n,',
])
def test_anything_unusual_goes_to_the_whole_parse(text):
    assert read_plan_text(text) is None


@pytest.mark.parametrize("text, words", [
    ('{"run_id": 1} x', "not readable JSON"),
    ('{} x', "not readable JSON"),
    ('{"a": 1, "cases": [{"id": "c", "split": ["smoke"]}, NaN]}', "not readable JSON"),
    ('{"cases": [{"id": 3, "split": ["smoke"]}]}', "does not match its schema"),
])
def test_a_bad_plan_is_the_same_exit_2(tmp_path, text, words):
    path = tmp_path / "plan.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AssayError) as err:
        load_plan(str(path))
    assert err.value.code == 2 and words in err.value.message and str(path) in err.value.message
