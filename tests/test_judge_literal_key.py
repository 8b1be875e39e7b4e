"""A key written out in judge/judge.yaml or simulator/simulator.yaml (`api_key: sk-...`, a credential
header) was accepted and copied into the converted suite and the plan: secrets are ${VAR} references
only, as in adapter.yaml. convert_suite.py as a subprocess on a copy of the example helpdesk state dir."""

from __future__ import annotations

import pytest

from helpdesk_util import copy_state
from helpers import run_script

SECRET = "sk-ant-literal-0123456789abcdef"


@pytest.mark.parametrize("rel, text, key, line", [
    ("judge/judge.yaml", f"provider: anthropic\nmodel: claude-test\napi_key: {SECRET}\n", "api_key", 3),
    ("judge/judge.yaml", f"provider: openai\nmodel: gpt-test\nheaders:\n  x-api-key: {SECRET}\n", "headers.x-api-key", 4),
    ("judge/judge.yaml", "judges:\n  - provider: anthropic\n    model: claude-test\n    api_key: ${MY_KEY}\n"
                         f"  - provider: openai\n    model: gpt-test\n    api_key: {SECRET}\naggregate: unanimous\n",
     "judges.1.api_key", 7),
    ("simulator/simulator.yaml", f"provider: anthropic\nmodel: claude-test\napi_key: {SECRET}\n", "api_key", 3),
], ids=["api_key", "header", "ensemble-member", "simulator"])
def test_a_literal_key_in_a_model_config_is_refused_and_never_written(tmp_path, rel, text, key, line):
    state = copy_state(tmp_path)
    (state / rel).parent.mkdir(exist_ok=True)
    (state / rel).write_text(text, encoding="utf-8")
    out = state / "work" / "converted.json"
    r = run_script("convert_suite", state, "-o", out, "--split-dir", state / "work")
    assert r.rc == 2, r.stdout + r.stderr
    assert f"{rel}:{line}: {key} holds a literal value" in r.stdout + r.stderr, r.stdout + r.stderr
    assert SECRET not in r.stdout + r.stderr
    assert not out.exists() or SECRET not in out.read_text(encoding="utf-8")


def test_a_key_by_reference_is_accepted(tmp_path):
    state = copy_state(tmp_path)
    (state / "judge" / "judge.yaml").write_text("provider: anthropic\nmodel: claude-test\napi_key: ${MY_KEY}\n",
                                               encoding="utf-8")
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work")
    assert r.rc == 0, r.stdout + r.stderr
