"""One case's part in the gate (wave 4 §1): does this results row close the gate, and why.

The run's close reasons (`gate_reasons`), the JUnit output and the pytest items each ask this one
function; none decides a case's outcome its own way. A gating, non-canary case closes the gate when:

- it failed (`fail`);
- it is `unscored` because a check it asserts never ran (`unscored`), or the judge disagreed with
  itself (`judge_unstable`);
- it was not sent because the adapter, the state dir or the plan lacks what it needs (`skipped`);
- `--replay` could not answer it, or rescore could not replay it (`not_run`): a case that was not
  measured, never infrastructure noise under the infra bar;
- it is a simulated user that never reached its goal (`max_turns_reached`, `goal_not_reached`): the
  app never got the user there or the simulator never sent its stop token; either way not measured,
  and no noise to hide under the infra bar.

A canary is never gating (the runner writes `gating: false` on it), yet a canary that failed closes
the gate (`canary`): it stopped the run (exit 4), and the run's reasons name it (`canary_failures`).

Anything else (a pass, a gating: false case, a canary that did not fail, infra under the bar, a skip
the suite chose) leaves the gate to the run-level rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.vocab import SIM_MAX_TURNS_REACHED, is_judge_unstable
from ..core.writer import clip
from ..replay.miss import REPLAY_MISS, RESCORE_NOT_REPLAYED
from ..score.hollow import HOLLOW_CASE_REASON, adapter_gap_key, only_chosen_unscored, unmeasured_by_mode
from .rundir import LazyHoldoutIds, case_verdict, read_jsonl_file

FAIL, UNSCORED, JUDGE_UNSTABLE, SKIPPED, NOT_RUN, CANARY, GOAL_NOT_REACHED = (
    "fail", "unscored", "judge_unstable", "skipped", "not_run", "canary", "goal_not_reached")


@dataclass(frozen=True)
class CaseGate:
    closes: bool
    kind: str | None = None     # FAIL, UNSCORED, JUDGE_UNSTABLE, SKIPPED, NOT_RUN, CANARY, GOAL_NOT_REACHED
    why: str | None = None      # the case's own reason (unscored_reason, skip_reason, infra_reason)
    key: str | None = None      # SKIPPED: what it lacks (`the adapter lacks invocation.conversation`)


OPEN = CaseGate(False)


def is_gating(row: object) -> bool:
    return isinstance(row, dict) and not row.get("canary") and row.get("gating", True) is not False


def unscored_closes(row: dict, doc: dict) -> bool:
    """An unscored gating case that closes the gate: a check it asserts never ran (not a hollow
    case, not one whose only unscored layers are ones this run chose not to check). A case hollow
    because the run's own mode could not measure what it asserts (score.hollow.unmeasured_by_mode)
    closes: no linter error refuses it, so it is no case that asserts nothing."""
    if row.get("verdict") != "unscored" or not is_gating(row):
        return False
    layers = doc.get("layers") if isinstance(doc.get("layers"), dict) else {}
    if doc.get("unscored_reason") == HOLLOW_CASE_REASON and unmeasured_by_mode(layers):
        return True
    return not (doc.get("unscored_reason") == HOLLOW_CASE_REASON
                or (layers and only_chosen_unscored(layers) and not doc.get("stop_reason")))


def is_replay_miss(doc: dict) -> bool:
    """--replay could not answer the case, or rescore could not replay it: the case was not measured."""
    why = str(doc.get("infra_reason") or "")
    return why.startswith(REPLAY_MISS) or RESCORE_NOT_REPLAYED in why


def case_gate(run_dir: Path, row: object, doc: dict | None = None) -> CaseGate:
    """Whether this results.json row closes the gate (`doc`: its verdict.json when the caller has it)."""
    if isinstance(row, dict) and row.get("canary") and row.get("verdict") == "fail":
        return CaseGate(True, CANARY, "a failed canary stops the run and closes the gate")
    if not is_gating(row):
        return OPEN
    verdict = row.get("verdict")
    if verdict == "pass":
        return OPEN
    if verdict == "fail":
        return CaseGate(True, FAIL, None)
    if verdict not in ("unscored", "skipped", "infra_error"):
        return OPEN
    if doc is None:
        doc = case_verdict(run_dir, str(row.get("case_id"))) or {}
    if verdict == "unscored":
        if is_judge_unstable(doc):
            return CaseGate(True, JUDGE_UNSTABLE, (((doc.get("layers") or {}).get("judged") or {}).get("reason")))
        if unscored_closes(row, doc):
            layers = doc.get("layers") if isinstance(doc.get("layers"), dict) else {}
            hollow = doc.get("unscored_reason") == HOLLOW_CASE_REASON
            return CaseGate(True, UNSCORED, (hollow and unmeasured_by_mode(layers)) or doc.get("unscored_reason"))
        return OPEN
    if verdict == "skipped":
        why = doc.get("skip_reason")
        key = adapter_gap_key(why)
        return CaseGate(True, SKIPPED, why, key) if key is not None else OPEN
    if is_replay_miss(doc):
        return CaseGate(True, NOT_RUN, doc.get("infra_reason"))
    if str(doc.get("infra_reason") or "").startswith(SIM_MAX_TURNS_REACHED):
        return CaseGate(True, GOAL_NOT_REACHED, doc.get("infra_reason"))
    return OPEN


@dataclass
class Closing:
    """The gating cases of one kind that close the gate: how many, the first `limit` named (never a
    holdout id: the seal) as `id (why)`, and the adapter keys they lack (SKIPPED)."""
    count: int = 0
    named: list[str] | None = None
    keys: list[str] | None = None
    sealed: int = 0             # how many of `count` are holdout cases (counted, never named)

    def tail(self, sep: str = "; ") -> str:
        """`: a (why); b (why) and N more` for a reason's end (and how many are holdout, unnamed)."""
        held = f" ({self.sealed} of them holdout, aggregate only: ids sealed)" if self.sealed else ""
        if not self.named:
            return held
        more = self.count - len(self.named) - self.sealed
        return held + ": " + sep.join(self.named) + (f" and {more} more" if more > 0 else "")


def closing_cases(run_dir: Path, results: dict, kind: str, *, limit: int, no_why: str = "",
                  ellipsis: str = "…") -> Closing:
    """Every results row whose `case_gate` closes the gate as `kind` (the run's reasons name them
    from here, never their own test of a case; the rows are walked once for every kind, see
    `closing_rows`)."""
    rows = gate_rows(run_dir, results)
    sealed = LazyHoldoutIds(run_dir, rows)
    out = Closing(0, [], [])
    for row, verdict in closing_rows(run_dir, rows):
        if verdict.kind != kind:
            continue
        out.count += 1
        if verdict.key is not None and verdict.key not in out.keys:
            out.keys.append(verdict.key)
        cid = str(row.get("case_id"))
        if cid in sealed:
            out.sealed += 1
        elif len(out.named) < limit:
            why = " ".join(str(verdict.why or no_why).split())
            out.named.append(f"{cid} ({clip(why, 300, ellipsis=ellipsis)})")
    return out


_HELD: list[tuple] = []     # [(results' rows, run_dir, those rows with the holdout rows after them)]


def gate_rows(run_dir: Path, results: dict) -> list:
    """The rows a case's part in the gate is asked of: results.json's `cases`, and in a run with a
    holdout aggregate the holdout rows verdicts.jsonl keeps (results.json leaves them out, sealed),
    so a holdout case that was not measured, asserted a check that never ran or was skipped for an
    adapter gap closes the gate as any case does; its id is counted, never printed (`Closing`)."""
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    summary = results.get("summary") if isinstance(results.get("summary"), dict) else {}
    held = summary.get("holdout")
    if not isinstance(held, dict) or not held.get("n") or any(isinstance(r, dict) and r.get("holdout") for r in rows):
        return rows
    last = _HELD[0] if _HELD else None
    if last is not None and last[0] is rows and last[1] == run_dir:
        return last[2]
    extra = [r for r in read_jsonl_file(Path(run_dir) / "verdicts.jsonl")
             if isinstance(r, dict) and r.get("holdout") and not r.get("canary")]
    _HELD[:] = [(rows, run_dir, rows + extra)]
    return _HELD[0][2]


_WALKED: list[tuple] = []   # [(rows, run_dir, len(rows), their closing rows)]: the walk of the last rows asked


def closing_rows(run_dir: Path, rows: list) -> list[tuple[dict, CaseGate]]:
    """(row, its case_gate) of every row that closes the gate, in order. The gate asks for several
    kinds of one results document: its rows are walked once (kept while the same list is asked
    about, until `forget`; `report.gate.evaluate` forgets at its start and end, so a walk never
    outlives the decision it was made for)."""
    last = _WALKED[0] if _WALKED else None
    if last is not None and last[0] is rows and last[1] == run_dir and last[2] == len(rows):
        return last[3]
    found = [(row, gate) for row in rows if (gate := case_gate(run_dir, row)).closes]
    _WALKED[:] = [(rows, run_dir, len(rows), found)]
    return found


def forget() -> None:
    """Drop the kept walk (and the rows it holds)."""
    _WALKED.clear()
    _HELD.clear()
