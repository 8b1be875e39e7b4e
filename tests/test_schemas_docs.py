"""The user docs, the JSON Schemas and the linter are held together here.

- every ```yaml <kind>``` example block in the docs parses with the strict loader and
  validates against its schema (case examples also lint with no ERROR);
- every schema field is documented exactly once (a table row whose first cell is its path);
- every validator code is documented exactly once, with the severity the code has.
"""

from __future__ import annotations

import copy
import re

import pytest

from helpers import ROOT

from assay.core.errors import AssayError
from assay.lint.engine import lint_suite
from assay.lint.expect_rules import ANSWER_KEYS, AUTHZ_KEYS, EXPECT_KEYS, RESULT_KEYS, TOOLS_KEYS
from assay.lint.case_rules import INPUT_KEYS
from assay.lint.findings import CODES
from assay.schemas import iter_errors, load_schema, schema_names, validate
from assay.core.strict_yaml import loads

CASE_DOC = ROOT / "skills" / "generate" / "references" / "case-format.md"
ADAPTER_DOC = ROOT / "references" / "adapter-contract.md"
PROFILE_DOC = ROOT / "references" / "profile-schema.md"
BLOCK = re.compile(r"^```yaml ([a-z-]+)\n(.*?)^```", re.M | re.S)
ROW = re.compile(r"^\| `([^`]+)` \|", re.M)

BASE_CASE = {
    "id": "c-base0001", "unit": "billing", "split": ["full"], "category": "happy", "test_type": "MFT",
    "template_id": None, "review": {"status": "accepted", "by": "Dana Whitfield"},
    "input": {"messages": [{"role": "user", "content": "hello"}]},
}
BASE_ADAPTER = {
    "adapter_version": 1,
    "invocation": {"mode": "http", "base_url": "${X}", "endpoint": "POST /chat", "request_body": '{"m": "<user turn>"}'},
}


def blocks(path):
    out = [(kind, body) for kind, body in BLOCK.findall(path.read_text(encoding="utf-8"))]
    assert out, f"no tagged yaml examples in {path}"
    return out


def parse(body, label):
    value, _ = loads(body, label)
    return value


def schema_paths(schema, prefix="", depth=0, max_depth=3):
    out = []
    for key, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}.{key}" if prefix else key
        out.append(path)
        if depth + 1 < max_depth and isinstance(sub, dict):
            if "properties" in sub:
                out += schema_paths(sub, path, depth + 1, max_depth)
            items = sub.get("items")
            if sub.get("type") == "array" and isinstance(items, dict) and "properties" in items:
                out += schema_paths(items, path + "[]", depth + 1, max_depth)
    return out


def documented(path):
    return ROW.findall(path.read_text(encoding="utf-8"))


def test_every_schema_is_valid_and_loadable():
    for name in ("adapter", "profile", "case", "dataset", "converted", "plan"):
        assert name in schema_names()
        iter_errors({}, name)  # compiles the validator and runs it (check_schema: tests/test_schemas_core.py)


@pytest.mark.parametrize("doc, schema", [(ADAPTER_DOC, "adapter"), (PROFILE_DOC, "profile")])
def test_every_field_documented_exactly_once(doc, schema):
    rows = documented(doc)
    for path in schema_paths(load_schema(schema)):
        assert rows.count(path) == 1, f"{schema} field {path!r} documented {rows.count(path)} times in {doc.name}"


def test_case_fields_documented_exactly_once():
    rows = documented(CASE_DOC)
    fields = list(load_schema("case")["properties"]) + ["review.status", "review.by", "review.at", "review.note"]
    fields += [f"input.{k}" for k in INPUT_KEYS] + [f"expect.{k}" for k in EXPECT_KEYS]
    fields += [f"expect.answer.{k}" for k in ANSWER_KEYS] + [f"expect.tools.{k}" for k in TOOLS_KEYS]
    fields += [f"expect.result.{k}" for k in RESULT_KEYS] + [f"expect.authz.{k}" for k in AUTHZ_KEYS]
    fields += [f"dataset.{k}" for k in load_schema("dataset")["properties"]]
    for field in fields:
        assert rows.count(field) == 1, f"case field {field!r} documented {rows.count(field)} times"


def test_every_validator_code_documented_once_with_its_severity():
    text = CASE_DOC.read_text(encoding="utf-8")
    for code, severity in CODES.items():
        rows = re.findall(rf"^\| `{code}` \| (ERROR|WARN) \|", text, re.M)
        assert rows == [severity], f"code {code} rows {rows} (want one {severity} row)"


def test_case_doc_examples_validate_and_lint_clean():
    cases = []
    for i, (kind, body) in enumerate(blocks(CASE_DOC)):
        value = parse(body, f"case-format.md block {i}")
        if kind == "case":
            validate(value, "case", source=f"case-format.md block {i}")
            cases.append(value)
        elif kind == "expect":
            case = copy.deepcopy(BASE_CASE)
            case["id"] = f"c-expect{i:03d}"
            case["expect"] = value
            validate(case, "case", source=f"case-format.md block {i}")
            cases.append(case)
        elif kind == "dataset":
            validate(value, "dataset", source=f"case-format.md block {i}")
        else:
            pytest.fail(f"unknown example kind {kind!r} in case-format.md")
    assert len(cases) >= 6
    report = lint_suite({"cases": cases, "sources": {}, "unnamed_sources": [], "scoring": None, "label": "doc"},
                        matrix={})
    errors = [f for f in report["findings"] if f["severity"] == "ERROR"]
    assert errors == []


@pytest.mark.parametrize("doc", [ADAPTER_DOC, PROFILE_DOC])
def test_adapter_and_profile_examples_validate(doc):
    seen = set()
    for i, (kind, body) in enumerate(blocks(doc)):
        value = parse(body, f"{doc.name} block {i}")
        label = f"{doc.name} block {i}"
        if kind in ("adapter", "profile"):
            validate(value, kind, source=label)
        elif kind == "invocation":
            validate({**BASE_ADAPTER, "invocation": value}, "adapter", source=label)
        elif kind == "adapter-part":
            validate({**BASE_ADAPTER, **value}, "adapter", source=label)
        else:
            pytest.fail(f"unknown example kind {kind!r} in {doc.name}")
        seen.add(kind)
    assert seen & {"adapter", "profile"}


def test_schema_rejects_what_docs_say_is_closed():
    with pytest.raises(AssayError) as err:
        validate({**BASE_ADAPTER, "invocation": {**BASE_ADAPTER["invocation"], "sesion": "x"}}, "adapter",
                 source="adapter.yaml")
    assert "invocation" in err.value.message and "sesion" in err.value.message
    bad_mode = {**BASE_ADAPTER, "invocation": {"mode": "function"}}
    assert any("entrypoint" in e["message"] for e in iter_errors(bad_mode, "adapter"))
    assert iter_errors({"capability_matrix": {"answer_quality": {"enabled": "yes"}}}, "profile")
    assert iter_errors({"capability_matrix": {"answr_quality": {}}}, "profile")
    assert not iter_errors({"capability_matrix": {"answer": {"enabled": True}}}, "profile")  # linter warns instead


def _undocumented(schema, path=""):
    missing = []
    for key, sub in (schema.get("properties") or {}).items():
        here = f"{path}.{key}" if path else key
        if not isinstance(sub, dict):
            continue
        if "description" not in sub and "$ref" not in sub:
            missing.append(here)
        missing += _undocumented(sub, here)
        for child in (sub.get("items"), sub.get("additionalProperties")):
            if isinstance(child, dict):
                missing += _undocumented(child, here + ".*")
        for alt in sub.get("oneOf", []):
            missing += _undocumented(alt, here)
    return missing


@pytest.mark.parametrize("name", ["adapter", "profile", "case", "dataset", "converted"])
def test_every_schema_field_has_a_description(name):
    assert _undocumented(load_schema(name)) == []


@pytest.mark.parametrize("doc", [CASE_DOC, ADAPTER_DOC, PROFILE_DOC])
def test_relative_links_and_plugin_paths_resolve(doc):
    text = doc.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)\)", text)
    for link in links:
        if "://" not in link:
            assert (doc.parent / link).is_file(), f"{doc.name}: broken link {link}"
    for path in re.findall(r"\$\{CLAUDE_PLUGIN_ROOT\}/([\w./-]+)", text):
        assert (ROOT / path).exists(), f"{doc.name}: {path} does not exist"
