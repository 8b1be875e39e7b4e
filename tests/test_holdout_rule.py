"""One definition of the holdout split rule (`core.vocab.is_holdout`, re-exported by
`suite.holdout`): every surface that keeps a holdout case sealed (run.log, the trace block, the
replay shim, the shard merge's names, the run records, the plan summary) asks it, never its own copy."""

from __future__ import annotations

import re
from pathlib import Path

from assay.core.vocab import is_holdout
from assay.suite import holdout

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
WRITTEN_OUT = re.compile(r"""["']holdout["']\s+in\s+\(?\s*(split\b|\w+\.get\(\s*["']split["'])""")


def test_the_split_rule():
    assert is_holdout({"split": ["holdout"]}) and not is_holdout({"split": ["smoke", "full"]})
    assert not is_holdout({"split": None}) and not is_holdout({})
    assert holdout.is_holdout is is_holdout


def test_no_module_writes_the_holdout_split_rule_out():
    found = [f"{p.relative_to(SCRIPTS)}:{n}: {line.strip()}"
             for p in sorted(SCRIPTS.rglob("*.py")) if p.name != "vocab.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if WRITTEN_OUT.search(line)]
    assert found == [], "ask assay.core.vocab.is_holdout instead:\n" + "\n".join(found)
