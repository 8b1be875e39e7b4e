"""The example's state dir (examples/helpdesk/.assay): it converts, validates with no
ERROR (and no WARN, even under --strict), matches the schemas, and covers every split,
category, test type and expect block the runner scores."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from helpers import ROOT, run_script

STATE = ROOT / "examples" / "helpdesk" / ".assay"
yaml = pytest.importorskip("yaml")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    work = tmp_path_factory.mktemp("work")
    res = run_script("convert_suite", STATE, "-o", work / "converted.json", "--split-dir", work / "split")
    assert res.rc == 0, res.stdout + res.stderr
    return work, json.loads((work / "converted.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cases(converted):
    return converted[1]["cases"]


def test_validates_with_no_error_and_no_warning_under_strict(converted):
    work, _ = converted
    split = work / "split"
    res = run_script("validate_cases", "--cases", work / "converted.json",
                     "--capabilities", split / "capabilities.json", "--adapter", split / "adapter.json",
                     "--manifest", split / "manifest.json", "--strict")
    report = res.json
    assert res.rc == 0, [f for f in report.get("findings", [])] or res.stdout
    assert report["error_count"] == 0 and report["warn_count"] == 0
    assert report["capabilities_checked"] is True


def test_files_match_their_schemas():
    from assay.schemas import validate
    for name, rel in (("adapter", "adapter.yaml"), ("profile", "profile.yaml"), ("dataset", "datasets/dataset.yaml")):
        validate(yaml.safe_load((STATE / rel).read_text(encoding="utf-8")), name, source=rel)
    for path in sorted((STATE / "datasets").glob("c-*.yaml")):
        validate(yaml.safe_load(path.read_text(encoding="utf-8")), "case", source=path.name)


def test_ids_are_opaque_and_name_their_files(converted, cases):
    assert 36 <= len(cases) <= 60
    for c in cases:
        assert re.fullmatch(r"c-[0-9a-f]{8}", c["id"])
        assert converted[1]["sources"][c["id"]] == f"datasets/{c['id']}.yaml"


def test_split_ratios(cases):
    n = len(cases)
    by = {s: [c for c in cases if s in c["split"]] for s in ("full", "smoke", "holdout", "canary")}
    assert len(by["smoke"]) >= 5 and 0.25 <= len(by["smoke"]) / n <= 0.40
    assert len(by["holdout"]) / n >= 0.20
    assert all(c["split"] == ["holdout"] for c in by["holdout"])  # exclusive
    assert len(by["canary"]) >= 2
    for c in by["canary"]:
        assert "smoke" in c["split"] and ("result" in c["expect"] or "answer" in c["expect"])
    assert all(c["split"] for c in cases)
    assert len(by["full"]) + len(by["holdout"]) == n


def test_every_category_and_test_type(cases):
    from assay.core.vocab import CATEGORIES, TEST_TYPES
    cats = Counter(c["category"] for c in cases)
    assert set(cats) == set(CATEGORIES)
    assert max(cats.values()) / len(cases) <= 0.40  # no category skew
    assert {c["test_type"] for c in cases} == set(TEST_TYPES)
    ids = {c["id"] for c in cases}
    for c in cases:
        if c["test_type"] in ("INV", "DIR"):
            assert c["metamorphic_parent"] in ids and c["metamorphic_parent"] != c["id"]


def _paths(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield f"{prefix}{k}"
            yield from _paths(v, f"{prefix}{k}.")


def test_every_expect_block_the_runner_scores(cases):
    expects = [c["expect"] for c in cases]
    keys = set().union(*(set(_paths(e)) for e in expects))
    for needed in ("http.status", "route", "route_acceptable", "clarify_ok", "tools.subset", "tools.order",
                   "tools.order_mode", "tools.forbidden", "args", "result.scalar", "result.rows",
                   "result.columns", "authz.allowed_record_ids", "authz.forbidden_record_ids",
                   "authz.forbidden_tools", "authz.expect_refusal", "answer.must_contain",
                   "answer.must_not_contain", "answer.rules", "answer.rubric", "format.json_schema"):
        assert needed in keys, needed
    arg_specs = [v for e in expects for tool in e.get("args", {}).values() for v in tool.values()]
    assert any(v in ("present", {"present": True}) for v in arg_specs)
    assert any(v == "from_tool_result" or (isinstance(v, dict) and "from_tool_result" in v) for v in arg_specs)
    assert any(v not in ("present", "from_tool_result") and not isinstance(v, dict) for v in arg_specs)  # literal
    entries = [m for e in expects for m in e.get("answer", {}).get("must_contain", [])]
    assert any(m.startswith("/") and m.endswith("/") for m in entries)  # a regex entry
    assert any(isinstance(e.get("result", {}).get("scalar"), str) for e in expects)


def test_gating_and_review(cases):
    profile = yaml.safe_load((STATE / "profile.yaml").read_text(encoding="utf-8"))
    reviewer = profile["roles"]["reviewer"]
    non_gating = [c for c in cases if c.get("gating") is False]
    assert non_gating
    for c in non_gating:
        assert c["category"] in ("oos", "adversarial-refusal")
        assert c["review"]["status"] == "quarantined"
    for c in cases:
        if c.get("gating", True):
            assert c["review"]["status"] == "accepted" and c["review"]["by"] == reviewer


def test_authz_ids_match_the_record_id_pattern(cases):
    pattern = re.compile(yaml.safe_load((STATE / "profile.yaml").read_text(encoding="utf-8"))["record_id_pattern"])
    ids = [i for c in cases for key in ("allowed_record_ids", "forbidden_record_ids")
           for i in c["expect"].get("authz", {}).get(key, [])]
    assert ids and all(pattern.fullmatch(i) for i in ids)


def test_identity_keys_are_mapped(converted, cases):
    mapped = set(converted[1]["adapter"]["invocation"]["identity_map"])
    for c in cases:
        assert set(c.get("identity", {})) <= mapped, c["id"]


def test_break_targets_are_gating_smoke_cases(cases):
    """The five planted regressions each hit a gating, non-canary smoke case, so `make demo BREAK=1` closes."""
    smoke = [c for c in cases if "smoke" in c["split"] and "canary" not in c["split"] and c.get("gating", True)]
    messages = {c["input"]["messages"][0]["content"]: c["expect"] for c in smoke if "messages" in c["input"]}
    # the memory bug (forgets the conversation after turn 1): smoke conversations whose turn 2 needs turn 1
    follow_ups = {c["input"]["turns"][1]["user"] for c in smoke if "turns" in c["input"]}
    assert {"Please refund 50 on that one.", "25 dollars, please.", "When is it due?",
            "That didn't help."} <= follow_ups
    assert messages["I was charged twice on invoice INV-1001, what was the amount?"]["route"] == "billing"
    assert "INV-2001" in messages["Show me invoice INV-2001"]["authz"]["forbidden_record_ids"]
    assert messages["What is the total of my open invoices?"]["result"]["scalar"] == 245.75
    assert "search_kb" in messages["My VPN keeps disconnecting"]["tools"]["subset"]


@pytest.mark.parametrize("mode,split", [("smoke", "smoke"), ("regression", "full"), ("holdout", "holdout")])
def test_make_plan_selects_each_split(converted, cases, tmp_path, mode, split):
    state = tmp_path / "state"
    state.mkdir()
    (state / "datasets").mkdir()
    res = run_script("make_plan", converted[0] / "converted.json", "--mode", mode, "--state-dir", state,
                     "-o", tmp_path / "plan.json")
    assert res.rc == 0, res.stdout + res.stderr
    assert res.json["cases"] == sum(split in c["split"] for c in cases)
