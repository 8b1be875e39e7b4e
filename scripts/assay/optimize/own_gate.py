"""A candidate's run's own gate beside its champion's run's (`candidate.py keep`): both decisions are
assay.verdict's (what gate.py prints); a reason only the candidate's run closes for is a rejection,
a reason both close for is said (references/optimize-loop.md, step 3)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def reason_kind(reason: str) -> str:
    """The rule a gate reason is of, for "does the champion's run close for the same reason": its words
    before the first ": " (what follows names cases and details), each number masked. `3 gating failure(s):
    r-1 ...` and `5 gating failure(s): r-1 ..., r-2 ...` are one kind; so are two p95 latencies over one
    budget; `canary k-1 failed on answer` and `canary k-2 failed on answer` are two."""
    return re.sub(r"\d+(?:\.\d+)?", "#", reason.split(": ", 1)[0])


def gate_check(run_dir: str, base_dir: Path) -> dict[str, Any]:
    """The run's own gate, as assay.verdict decides it (the decision gate.py prints, its reasons in its
    words), beside its baseline (champion's) run's: `new_reasons` are the reasons the champion's run
    does not close for (kept, the release gate would close on them: no keep), `shared_reasons` the ones
    it closes for too (the gating failures the loop is there to fix, a budget both runs are over: the
    candidate did not close the gate, so the keep rule decides, and the output says the gate stays
    closed; a worse number under the same rule, e.g. a p95 further over the budget, is said there beside the
    champion's, not decided). No reason is computed here: both decisions are assay.verdict's, and gate.py's
    words never name a holdout case."""
    from ..verdict import decide
    mine, theirs = decide(Path(run_dir)), decide(Path(base_dir))
    kinds = {reason_kind(r) for r in theirs.reasons}
    return {"decision": "open" if mine.open else "closed", "champion_run_id": Path(base_dir).name,
            "champion_decision": "open" if theirs.open else "closed", "champion_reasons": list(theirs.reasons),
            "new_reasons": [r for r in mine.reasons if reason_kind(r) not in kinds],
            "shared_reasons": [r for r in mine.reasons if reason_kind(r) in kinds]}


def _champions(role: str, gate: dict[str, Any]) -> str:
    return f"the champion's {'holdout ' if role == 'holdout' else ''}run {gate['champion_run_id']}"


def closed_words(role: str, gate: dict[str, Any]) -> str:
    """Why a run whose gate closes where the champion's run's does not is no keep: gate.py's first such reason."""
    new = gate["new_reasons"]
    more = f" (and {len(new) - 1} more reason(s))" if len(new) > 1 else ""
    return (f"the {role} run's gate (gate.py) closes on {new[0]}{more}; {_champions(role, gate)} does not: kept, "
            "the release gate would close on it")


def stays_closed_note(role: str, gate: dict[str, Any]) -> str:
    """The gate stays closed for reasons the champion's run closes for too: the run's first, and the
    champion's of the same kind beside it (a number that got worse under the same rule shows there)."""
    first, more = gate["shared_reasons"][0], len(gate["shared_reasons"]) - 1
    theirs = next((r for r in gate["champion_reasons"] if reason_kind(r) == reason_kind(first)), "")
    return (f"the {role} run's gate (gate.py) stays closed, as {_champions(role, gate)}'s does: {first}"
            + (f" (and {more} more reason(s))" if more else "")
            + f" (the champion's run: {theirs}); the candidate did not close it, so the keep rule decided: show it")
