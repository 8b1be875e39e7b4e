"""The required-artifact table (contracts §5.7): the one place the run-dir tree is defined.

The runner writes exactly these files, and exactly these artifacts into each case record
(one line of `cases.jsonl`, core.casestore: the artifact names below are relative to the
case record, as they were to `cases/<id>/` in older run dirs); the completeness check and
`--verify` check exactly these; `docs/runner-contract.md` shows `render_tree()` verbatim (a
test holds the two together). Nothing else is ever written into a run directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..core.vocab import PASS, FAIL, SKIPPED


@dataclass(frozen=True)
class Artifact:
    path: str        # relative to the run dir (case artifacts: their name in the case record)
    when: str        # condition name, see RUN_CONDITIONS / CASE_CONDITIONS
    note: str        # the line shown in the docs tree


# Run-level files, in tree order.
RUN_ARTIFACTS: tuple[Artifact, ...] = (
    Artifact("manifest.yaml", "always", "pre-flight (JSON bytes are valid YAML)"),
    Artifact("results.json", "always", "pre-flight (running) -> refreshed in batches -> final"),
    Artifact("verdicts.jsonl", "always", "one row per finished case, plan order"),
    Artifact("verdicts_for_stats.jsonl", "always", "{case_id, verdict} rows whose verdict is pass|fail"),
    Artifact("routing_results.jsonl", "routing", "only when any non-canary case is routing-scorable"),
    Artifact("routing_report.json", "routing", "only when routing_results.jsonl exists"),
    Artifact("repeats.jsonl", "k>1", "only when k > 1"),
    Artifact("reliability.json", "k>1", "only when k > 1"),
    Artifact("comparison.json", "baseline", "only when --baseline-verdicts was passed"),
    Artifact("run.log", "always", "JSONL events: preflight, case_start, case_done, retry, abort, finalize"),
    Artifact("cases.jsonl", "always", "the case journal: one line per finished case, its record (below)"),
)

# Per-case artifacts (the keys of a case record's `files`, verdict.json being its `verdict`), in
# tree order. The record's line is appended whole: its newline is the commit.
CASE_ARTIFACTS: tuple[Artifact, ...] = (
    Artifact("request.json", "sent", "the request as recorded (secrets redacted); absent when skipped"),
    Artifact("response.json", "sent", "status, body, attempts, retry_count, latency; absent when skipped"),
    Artifact("expect.json", "always", "the case's expect block"),
    Artifact("answer.txt", "sent", "the text at the adapter's <answer> path (empty when none)"),
    Artifact("verdict.json", "always", "the record's `verdict`: the line's newline means the case is done"),
    Artifact("trajectory.json", "trace", "only when a trace was collected for this case"),
    Artifact("trace.json", "trace", "only when a trace was collected for this case"),
    Artifact("actual.json", "result", "only when expect.result is present and the case was sent"),
    Artifact("judge.json", "judged", "only when the run's judge judged the case: every call, verdicts, usage"),
    Artifact("simulator.json", "simulated", "only for a sent simulated user: how it ended, seed, simulator"),
    Artifact("workdir.json", "workdir", "agent mode: the workdir after the agent (diff, files, check)"),
)
REPEAT_ARTIFACTS: tuple[str, ...] = ("request.json", "response.json", "verdict.json")
# ... and that repeat's trace, when one was collected for it (a single-turn case), so that a
# rescore scores every repeat from its own trajectory, as the run did.
REPEAT_TRACE_ARTIFACTS: tuple[str, ...] = ("trajectory.json", "trace.json")
# ... and, in agent mode, what that repeat's agent left in its workdir (rescore scores files/check from it).
REPEAT_WORKDIR_ARTIFACT = "workdir.json"
# Per sent turn of a conversation (relative to turns/<n>/, n = 1..turns_sent); the same five
# under repeats/<r>/turns/<n>/ when k > 1 (no trace files there). All in the case's one record.
TURN_ARTIFACTS: tuple[Artifact, ...] = (
    Artifact("request.json", "always", "the turn's request (turn, attempt, sent_at; Cookie redacted)"),
    Artifact("response.json", "always", "the turn's response (turn; attempts = conversation attempts)"),
    Artifact("expect.json", "always", "the turn's checks, input.every_turn merged in"),
    Artifact("answer.txt", "always", "the turn's answer text (empty when none)"),
    Artifact("verdict.json", "always", "{turn, verdict, layers, trace}"),
    Artifact("trajectory.json", "trace", "only when this turn's trace was collected"),
    Artifact("trace.json", "trace", "only when this turn's trace was collected"),
    Artifact("judge.json", "judged", "only when a rubric judged this turn (case level, not under repeats/)"),
    Artifact("simulator.json", "simulated", "a simulated user's turn: the simulator's call(s) that wrote it"),
)
# The names above: a file of the run that nothing after the run may write over.
RUNNER_FILES: frozenset[str] = frozenset(a.path for a in RUN_ARTIFACTS)
# Written into the run dir by the skill AFTER the run (never by the runner): allowed, never required.
AFTER_RUN_FILES: tuple[str, ...] = ("report.md", "report.html", "compare.json", "compare.html")
GITIGNORE_NOTE = "only when data.may_contain_pii"
LOCK_NOTE = "the runner lock, beside the run dir (removed on a normal exit)"
NOT_STARTED_NOTE = "a run stopped at pre-flight: no run dir (§10.4a)"
CHECKED_NOTE = "a reader's kept completeness answer for the run's bytes (§12a; never the runner's)"
# cli runs only: outside the app repo (runner contract §17), never inside the run dir.
SCRATCH_LINES = (
    ("<scratch area>/cases/<case-id>/<n>/", "cli `cwd: scratch`: attempt n's working dir; removed after a"),
    ("", "passing case, kept after any other (manifest: invocation.scratch_area)"),
    ("<scratch area>/pgroups/<pgid>", "cli: a live process group (removed when it is gone)"),
    ("<scratch area>/pgroups/runner-<tag>", "cli: the running runner's tag (removed when it ends)"),
)


def run_conditions(manifest: Mapping[str, Any], records: Iterable[dict], *,
                   routing: bool | None = None) -> dict[str, bool]:
    """Which run-level conditions held, from the manifest and the finished records (`routing`: the
    records' part already folded, rundir.streamed.Finished.routing; the records are then not read)."""
    return {
        "always": True,
        "routing": (any(routing_scorable(r) for r in records if not r.get("canary")) if routing is None
                    else routing),
        "k>1": int(manifest.get("k") or 1) > 1,
        "baseline": bool(manifest.get("baseline_verdicts")),
    }


def routing_scorable(record: Mapping[str, Any]) -> bool:
    """A single-turn case feeds routing_results.jsonl when its routing layer scored (pass or fail);
    a conversation never does (its turns are not independent routing decisions)."""
    if record.get("multi_turn"):
        return False
    entry = (record.get("layers") or {}).get("routing")
    return isinstance(entry, dict) and entry.get("verdict") in (PASS, FAIL)


def case_conditions(record: Mapping[str, Any]) -> dict[str, bool]:
    sent = record.get("verdict") != SKIPPED and record.get("sent", True) is not False
    return {
        "always": True,
        "sent": sent,
        "trace": bool(record.get("trace_collected")),
        "result": sent and bool(record.get("has_result_expect")),
        "judged": sent and bool(record.get("judged")),
        "simulated": sent and bool(record.get("simulated")),
        "workdir": sent and bool(record.get("workdir_measured")),
    }


def required_case_files(record: Mapping[str, Any]) -> list[str]:
    """Every artifact a finished case's record must hold (its name in the record; relative to
    cases/<id>/ in an older run dir)."""
    cond = case_conditions(record)
    files = [a.path for a in CASE_ARTIFACTS if cond[a.when]]
    k = int(record.get("k") or 1)
    multi = cond["sent"] and bool(record.get("multi_turn"))
    simulated = cond["simulated"]
    if multi:
        files.extend(turn_files(record.get("turns") or [], "turns/", traces=True, simulated=simulated))
    if k > 1 and cond["sent"]:
        for r in record.get("repeats") or [{"n": n} for n in range(1, k + 1)]:
            n = r.get("n")
            files.extend(f"repeats/{n}/{name}" for name in REPEAT_ARTIFACTS)
            if r.get("trace_collected") and not multi:
                files.extend(f"repeats/{n}/{name}" for name in REPEAT_TRACE_ARTIFACTS)
            if r.get("workdir_measured") and not multi:
                files.append(f"repeats/{n}/{REPEAT_WORKDIR_ARTIFACT}")
            if multi:
                sent = int(r.get("turns_sent") or 0)
                files.extend(turn_files([{"n": t} for t in range(1, sent + 1)], f"repeats/{n}/turns/", traces=False,
                                        simulated=simulated))
    return files


def turn_files(turns: list, prefix: str, *, traces: bool, simulated: bool = False) -> list[str]:
    """The turn tree of one conversation: turns/<n>/ for n = 1..turns_sent, no gaps."""
    out = []
    for i, t in enumerate(turns, start=1):
        cond = {"always": True, "trace": traces and bool(t.get("trace_collected")),
                "judged": traces and bool(t.get("judged")),
                "simulated": simulated}
        out.extend(f"{prefix}{i}/{a.path}" for a in TURN_ARTIFACTS if cond[a.when])
    return out


def allowed_case_files(record: Mapping[str, Any]) -> set[str]:
    """Artifacts a case record may hold: the required ones (conditional ones are absent, not empty)."""
    return set(required_case_files(record))


def required_run_files(manifest: Mapping[str, Any], records: Iterable[dict], *,
                       routing: bool | None = None) -> list[str]:
    cond = run_conditions(manifest, records, routing=routing)
    return [a.path for a in RUN_ARTIFACTS if cond[a.when]]


def render_tree() -> str:
    """The run-dir tree exactly as docs/runner-contract.md shows it."""
    width = 32
    lines = [f"{'reports/.gitignore':<{width}}{GITIGNORE_NOTE}",
             f"{'reports/.<run-id>.lock':<{width}}{LOCK_NOTE}",
             f"reports/.<run-id>.not-started.json {NOT_STARTED_NOTE}",
             f"{'reports/.<run-id>.checked.json':<{width}}{CHECKED_NOTE}",
             "reports/<run-id>/"]
    for a in RUN_ARTIFACTS:
        lines.append(f"{'  ' + a.path:<{width}}{a.note}")
    lines.append(f"{'  <record of a case>':<{width}}a cases.jsonl line: {{case_id, verdict, files: {{name: text}}}}")
    for a in CASE_ARTIFACTS:
        lines.append(f"{'    ' + a.path:<{width}}{a.note}")
    lines.append(f"{'    turns/<t>/':<{width}}only for a sent conversation (t = 1..turns_sent, no gaps)")
    for a in TURN_ARTIFACTS:
        lines.append(f"{'      ' + a.path:<{width}}{a.note}")
    rep = "    repeats/<n>/" + " ".join(REPEAT_ARTIFACTS)
    lines.append(f"{rep}   only when k > 1 and the case was sent (n = 1..k)")
    rep_trace = "    repeats/<n>/" + " ".join(REPEAT_TRACE_ARTIFACTS)
    lines.append(f"{rep_trace:<{len(rep) + 3}}only when that repeat's trace was collected (single-turn)")
    rep_wd = "    repeats/<n>/" + REPEAT_WORKDIR_ARTIFACT
    lines.append(f"{rep_wd:<{len(rep) + 3}}agent mode: that repeat's workdir.json")
    lines.append(f"{'    repeats/<n>/turns/<t>/':<{width}}a conversation's turns in that repeat: the five files, no traces")
    for name in AFTER_RUN_FILES:
        lines.append(f"{'  ' + name:<{width}}written by the skill after the run, never by the runner (allowed)")
    for path, note in SCRATCH_LINES:
        lines.append(f"{path:<{width + 6}}{note}")
    return "\n".join(lines)
