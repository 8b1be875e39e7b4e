"""references/python-api.md: every example block runs as written (in order, one session) against
the example app on a free port, from a temp dir holding a copy of its state dir; and the API
returns exactly the documents the scripts print."""

from __future__ import annotations

import json
import re

import pytest

from helpdesk_util import copy_state, helpdesk
from helpers import ROOT, run_script

DOC = ROOT / "references" / "python-api.md"


def example_blocks() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Examples\n", 1)[1].split("\n## ", 1)[0]
    blocks = []
    for m in re.finditer(r"^### (.+?)\n(.*?)^```python\n(.*?)^```", section, re.M | re.S):
        blocks.append((m.group(1).strip(), m.group(3)))
    return blocks


def test_the_doc_has_one_example_per_function():
    names = [name for name, _ in example_blocks()]
    assert names[:4] == ["plan", "run", "gate", "compare"]


@pytest.mark.slow
def test_every_example_runs_as_written(tmp_path, monkeypatch, capsys):
    state = copy_state(tmp_path)
    with helpdesk(state, broken=True) as env:
        for key in ("HELPDESK_BASE_URL", "HELPDESK_OTLP_FILE"):
            monkeypatch.setenv(key, env[key])
        monkeypatch.chdir(tmp_path)
        namespace: dict = {}
        for name, code in example_blocks():
            exec(compile(code, f"{DOC.name} ({name})", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    assert "closed: 11 gating failure(s)" in printed  # the broken app: the gate says why
    assert namespace["comparison"]["candidate"]["run_id"] == namespace["again"]["run_id"]
    by_compare = run_script("compare_runs", namespace["done"]["out"], namespace["again"]["out"])
    assert by_compare.rc == 0 and by_compare.json == namespace["comparison"]
    # the two runs given the other way round: said (newly failing and newly passing would read backwards)
    from assay import api
    swapped = api.compare(namespace["again"]["out"], namespace["done"]["out"])
    assert any(n.startswith(f"the base run {namespace['again']['run_id']} started after the candidate "
                            f"{namespace['done']['run_id']}") for n in swapped["notes"]), swapped["notes"]
    assert not any("started after the candidate" in n for n in namespace["comparison"]["notes"])
    # and in the headline itself: a script that reads only headline and counts is told too
    assert swapped["headline"].endswith("the base run started after the candidate: are the arguments swapped? (notes)")
    assert "swapped" not in namespace["comparison"]["headline"]
    assert "--mode targeted needs --tag" in printed
    # the same documents the scripts print: gate.py --json on the same run dir
    decision = namespace["decision"]
    by_script = run_script("gate", namespace["done"]["out"], "--json")
    assert by_script.rc == 1 and by_script.json == decision
    # two runs, each its own run dir under the state dir's reports/
    outs = {namespace["done"]["out"], namespace["again"]["out"]}
    assert len(outs) == 2 and all(json.loads((state / "reports" / p.rsplit("/", 1)[1] / "results.json").read_text())
                                  ["summary"]["status"] == "ok" for p in outs)


def test_refusals_are_command_errors_with_the_scripts_document(tmp_path):
    from assay import api
    with pytest.raises(api.CommandError) as missing:
        api.run(tmp_path / "nope.json")
    assert missing.value.code == 2 and "cannot read the run dir from the plan" in missing.value.doc["error"]
    with pytest.raises(api.CommandError) as not_a_run:
        api.gate(tmp_path)
    by_script = run_script("gate", tmp_path, "--json")
    assert not_a_run.value.code == by_script.rc == 2 and not_a_run.value.doc == by_script.json
