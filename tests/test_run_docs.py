"""docs/runner-contract.md is held to the code: the run-dir tree, the exit codes, the layer table."""

from __future__ import annotations

import re

from helpers import ROOT

from assay.core.vocab import EXIT_MEANINGS, LAYER_ORDER
from assay.rundir.artifacts import CASE_ARTIFACTS, RUN_ARTIFACTS, render_tree
from assay.run.engine import EXIT_MESSAGES, exit_code_for

DOC = (ROOT / "docs" / "runner-contract.md").read_text(encoding="utf-8")


def section(title_prefix: str) -> str:
    m = re.search(rf"^## {re.escape(title_prefix)}.*?$(.*?)(?=^## |\Z)", DOC, re.S | re.M)
    assert m, title_prefix
    return m.group(1)


def test_run_dir_tree_matches_the_artifact_table():
    blocks = re.findall(r"```\n(.*?)\n```", section("8."), re.S)
    assert blocks and blocks[0] == render_tree()
    for a in RUN_ARTIFACTS + CASE_ARTIFACTS:
        assert a.path in blocks[0]


def test_exit_code_table_matches_the_code():
    rows = re.findall(r"^\| (\d) \| (.*?) \|", section("13."), re.M)
    assert [int(code) for code, _ in rows] == sorted(EXIT_MEANINGS)
    assert set(EXIT_MESSAGES) == {4, 5, 6, 7}
    # precedence 6, then 4/5, then 7
    assert exit_code_for("aborted_canary", ["x"], 3) == 6
    assert exit_code_for("aborted_infra", [], 3) == 5
    assert exit_code_for("aborted_canary", [], 3) == 4
    assert exit_code_for("ok", [], 3) == 7
    assert exit_code_for("ok", [], 0) == 0


def test_layer_table_lists_every_layer_in_order():
    rows = re.findall(r"^\| (\w+) \| ", section("5."), re.M)
    layers = [r for r in rows if r in LAYER_ORDER]
    assert layers == list(LAYER_ORDER)


def test_every_pinned_section_is_still_there():
    for heading in ("### 10.1 `verdict.json`", "### 10.2 `verdicts.jsonl`", "### 10.3 `results.json`",
                    "### 10.4 The runner lock (pinned)", "### 10.5 `run.log`"):
        assert heading in DOC


def test_verdict_trace_block_is_documented_as_the_schema_pins_it():
    import json
    schema = json.loads((ROOT / "scripts" / "assay" / "schemas" / "verdict.schema.json").read_text())
    block = schema["properties"]["trace"]
    v101 = section("10.")
    for key in block["required"]:
        assert f'"{key}"' in v101, key
    for status in block["properties"]["status"]["enum"]:
        assert f"`{status}`" in v101, status
    assert "`infra_reason`" in v101 and "never null" in v101


def test_traces_section_matches_the_trace_source():
    import inspect

    from assay.core.vocab import TRACE_DEPENDENT_LAYERS
    from assay.traces import otlp_file as traces
    text = section("14. Traces")
    assert f"disabled_layers: [{', '.join(TRACE_DEPENDENT_LAYERS)}]" in text
    defaults = inspect.signature(traces.OtlpFileSource).parameters
    assert f"default {defaults['quiescence_ms'].default:g}" in text
    assert f"default {defaults['max_wait_s'].default:g}" in text
    for needle in ("rotated", "inode", "quiescence_ms", "max_wait_s", "TracesData", "traceparent-echo",
                   "response-field:<path>", "32-hex", "the runner's span is the root's parent", "mapping_shim",
                   "exit 3", "`unscored`", "`n/a`"):
        assert needle in text, needle


def test_scorer_rules_section_quotes_the_constants():
    from assay.core.regex_guard import DEFAULT_TIMEOUT_S
    from assay.score.answer import _TRAILING_FLAGS
    from assay.score.routing import NO_ROUTE_LABEL
    from assay.stats.paired import POWER, compare
    text = section("15. Scorer rules")
    assert f"with power {POWER:g}" in text and "exact one-sided sign test" in text
    one_flip = compare([{"case_id": f"c{i}", "verdict": "fail" if i == 0 else "pass"} for i in range(42)],
                       [{"case_id": f"c{i}", "verdict": "pass"} for i in range(42)])
    flat = " ".join(text.split())
    assert f"\"{one_flip['mde_sentence']}\"" in flat
    tiny = compare([{"case_id": f"c{i}", "verdict": "fail"} for i in range(4)],
                   [{"case_id": f"c{i}", "verdict": "pass"} for i in range(4)])
    assert f"\"{tiny['mde_sentence']}\"" in flat
    four = compare([{"case_id": f"c{i}", "verdict": "fail" if i < 4 else "pass"} for i in range(42)],
                   [{"case_id": f"c{i}", "verdict": "pass"} for i in range(42)])
    assert f"\"{four['mde_sentence']}\"" in flat and four["verdict_label"] == "improved, not proven"
    two_way = compare([{"case_id": f"c{i}", "verdict": "fail" if i < 21 else "pass"} for i in range(52)],
                      [{"case_id": f"c{i}", "verdict": "pass" if i < 7 or 21 <= i < 51 else "fail"} for i in range(52)])
    assert f"\"{two_way['mde_sentence']}\"" in flat
    assert f"({DEFAULT_TIMEOUT_S:g} s)" in text
    assert f"`{NO_ROUTE_LABEL}`" in text
    assert "`aiLmsux`, `gy`" in text and "aiLmsuxgy" in _TRAILING_FLAGS.pattern
    for needle in ("maximum matching", "`columns`", "HTTP 4xx", "never evidence", "whole tokens", "worker process"):
        assert needle in text, needle


def test_adapter_contract_traces_section_agrees_with_the_runner():
    doc = (ROOT / "references" / "adapter-contract.md").read_text(encoding="utf-8")
    text = " ".join(doc.split("## `traces`", 1)[1].split("\n## ", 1)[0].split())
    assert "read `unscorable`" not in text.split("(A layer the capability matrix")[0]
    for needle in ('"traces not collected: <reason>"', "`loops` reads `n/a`", "mapping_shim` is not executed",
                   "pre-flight exit 3", "32-hex W3C trace id", "the runner's span is the root's parent"):
        assert needle in text, needle
