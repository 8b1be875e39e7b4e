"""docs/runner-contract.md is held to the code: the run-dir tree, the exit codes, the layer table."""

from __future__ import annotations

import re

from helpers import ROOT

from assay.core.vocab import EXIT_MEANINGS, LAYER_ORDER
from assay.run.artifacts import CASE_ARTIFACTS, RUN_ARTIFACTS, render_tree
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
    for heading in ("### 10.1 `cases/<id>/verdict.json`", "### 10.2 `verdicts.jsonl`", "### 10.3 `results.json`",
                    "### 10.4 The runner lock (pinned)", "### 10.5 `run.log`"):
        assert heading in DOC
