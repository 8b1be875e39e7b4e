"""The shipped JSON Schemas and the one validator every reader uses."""

import jsonschema
import pytest

from assay.core.errors import AssayError
from assay.schemas import load_schema, schema_names, validate


def test_every_shipped_schema_is_a_valid_schema():
    names = schema_names()
    for expected in ("adapter", "profile", "case", "dataset", "converted", "plan", "verdict", "results", "manifest"):
        assert expected in names
    for name in names:
        schema = load_schema(name)
        jsonschema.validators.validator_for(schema).check_schema(schema)


PLAN = {
    "plan_version": 1, "run_id": "smoke-20260101T000000Z", "mode": "smoke", "k": 1, "gate": "soft",
    "selecting_split": "smoke", "paths": {"state_dir": "."}, "adapter": {}, "capability_matrix": {},
    "cases": [{"id": "c-1", "split": ["smoke"]}],
}


def test_a_valid_document_passes():
    validate(PLAN, "plan", source="p.json")


def test_violation_names_file_key_and_message():
    with pytest.raises(AssayError) as e:
        validate(dict(PLAN, scoring={"bogus": 1}), "plan", source="p.json")
    assert e.value.code == 2
    assert "p.json: scoring: unknown key(s) 'bogus'" in e.value.message


def test_unknown_key_is_pointed_at_its_own_line():
    lines = {("execution",): 4, ("execution", "retries"): 6}
    with pytest.raises(AssayError) as e:
        validate(dict(PLAN, execution={"retries": 2}), "plan", source="x.yaml",
                 line_of=lambda p: lines.get(tuple(p)))
    msg = e.value.message
    assert "x.yaml:6: execution: unknown key(s) 'retries'" in msg
    assert "Fix the YAML" in msg
    assert e.value.fields["violations"][0]["line"] == 6


def test_a_yaml_exponent_read_as_text_says_how_to_write_it():
    """YAML 1.1 reads `1e-3` (no dot) as a string: the type error says so and how to write the number."""
    from assay.schemas import iter_errors
    errs = {e["key"]: e["message"] for e in iter_errors({"budgets": {"max_cost_per_case": "1e-3"}}, "profile")}
    msg = errs["budgets.max_cost_per_case"]
    assert "is not of type 'number'" in msg and "YAML reads 1e-3 as text" in msg and "1.0e-3" in msg, msg
    errs = {e["key"]: e["message"] for e in iter_errors({"budgets": {"max_cost_per_case": "cheap"}}, "profile")}
    assert "YAML reads" not in errs["budgets.max_cost_per_case"]   # other text: the plain message
