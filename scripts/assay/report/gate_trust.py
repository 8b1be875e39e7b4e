"""Gate close reasons about whether the run can be trusted at all (issue 24 §A): a plan made with
`--allow-invalid`, a shard's slice gated as if it were the run, a merged run whose shard was run
again after the merge, a holdout past its look budget, called tools the adapter does not declare, a
declared route path or first result source no answer held, a record id shape no authz case showed,
text checks not scored because the <answer> leaf was an object or a list or the user's turn read
back word for word (score.answer_leaf), and
cases scored on part of their trace (spans that arrived after it was read as complete).

Each function reads the run dir (manifest, results summary, the state dir's holdout ledger) and
returns what the gate prints; gate.py only strings them together. Pure reads, no recounting.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path
from typing import Any

from ..score.answer_leaf import echo_close, not_text_close
from .gate_judge import MAX_NAMED
from .rundir import try_json_head

MAX_LISTED = 10


def _manifest(run_dir: Path) -> dict:
    doc = try_json_head(Path(run_dir) / "manifest.yaml")  # JSON text (valid YAML); its top-level keys
    return doc if isinstance(doc, dict) else {}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# ---------------------------------------------------------------- --allow-invalid
def allow_invalid(run_dir: Path) -> tuple[list[str], str | None]:
    """(the gate's first lines, the close reason) for a plan make_plan built with --allow-invalid
    over linter ERRORs; ([], None) otherwise. The lines list the findings it overrode."""
    validation = (_manifest(run_dir).get("manifest_extra") or {}).get("validation")
    if not isinstance(validation, dict) or not validation.get("allow_invalid") or not validation.get("errors"):
        return [], None
    n = validation["errors"] if _count(validation["errors"]) else "some"
    codes = ", ".join(str(c) for c in validation.get("error_codes") or []) or "codes not recorded"
    head = (f"  PLANNED WITH --allow-invalid: make_plan.py overrode {n} linter ERROR(s) ({codes}); "
            "these cases can pass without checking what they mean to:")
    found = [str(f) for f in validation.get("overridden") or []]
    lines = [head] + [f"    {f}" for f in found[:MAX_LISTED]]
    if _count(n) and n > len(found[:MAX_LISTED]):
        lines.append(f"    ... and {n - len(found[:MAX_LISTED])} more (validate_cases.py lists them all)")
    named = [m.group(1) for m in map(_FINDING.search, found) if m]   # `c-1 [code]`, `[code]` (suite-wide)
    more = (n if _count(n) else len(named)) - len(named[:MAX_NAMED])
    shown = ", ".join(named[:MAX_NAMED]) + (f" and {more} more" if named and more > 0 else "")
    reason = (f"the plan was made with --allow-invalid over {n} linter ERROR(s) ({codes})"
              + (f": {shown}; fix" if shown else ": fix")
              + " them and re-plan without the flag; a gate over cases the linter rejects is not a pass")
    return lines, reason


# a located finding (assay.plan.lint_gate.located): `datasets/x.yaml:14: c-1 [code] message`
_FINDING = re.compile(r": ((?:\S+ )?\[\w+\])")


# ---------------------------------------------------------------- shards
def shard_reason(run_dir: Path, manifest: dict | None = None) -> str | None:
    """A shard's own run dir (run_cases.py --shard) is a slice of the plan, not a run: never open.
    `manifest`: the run's manifest.yaml top-level keys when the caller holds them already (a
    comparison's sides: not walked again)."""
    shard = (_manifest(run_dir) if manifest is None else manifest).get("shard")
    if not (isinstance(shard, dict) and _count(shard.get("index")) and _count(shard.get("count"))):
        return None
    return (f"this is shard {shard['index']}/{shard['count']}'s run dir, a slice of the plan, not a run: merge "
            "every shard (merge_runs.py --plan PLAN --out <run dir> <shard dirs>) and gate the merged run")


def rerun_shard_reason(run_dir: Path) -> str | None:
    """A merged run (merge_runs.py: run.log ends with `finalize` naming `merged_from`) with a shard dir
    of its run id beside it that holds another run of that shard than the one merged (run again after
    the merge, or running now): the merge is no longer that run id's result, so it never opens."""
    from ..plan.shards import parse_shard_dir_name
    run_dir = Path(run_dir)
    merged = _merged_from(run_dir)
    if merged is None:
        return None
    for child in sorted(run_dir.parent.glob(glob.escape(run_dir.name) + ".shard-*")):
        parsed = parse_shard_dir_name(child.name)
        if not parsed or parsed[0] != run_dir.name or not child.is_dir():
            continue
        started = _manifest(child).get("started_at")
        took = merged.get(parsed[1])
        if took is not None and started == took:
            continue
        was = f"the merge took the run started {took}" if took else "the merge took no such shard"
        return (f"shard {parsed[1]}'s run dir {child.name} beside this merged run holds another run of it (started "
                f"{started or 'not yet recorded'}; {was}): the shard was run again after the merge, or is running "
                "now, so this merged run is no longer its result; merge every shard again (merge_runs.py --plan "
                f"PLAN --out {run_dir} <shard dirs>) and gate that")
    return None


def shard_manifests_read(run_dir: Path) -> list[Path]:
    """The shard dirs' manifest.yaml files beside a merged run that rerun_shard_reason reads (none for
    a run that is not a merge): part of what its decision depends on outside the run dir."""
    run_dir = Path(run_dir)
    if _merged_from(run_dir) is None:
        return []
    return [child / "manifest.yaml" for child in sorted(run_dir.parent.glob(glob.escape(run_dir.name) + ".shard-*"))]


def _merged_from(run_dir: Path) -> dict | None:
    """{shard index: started_at} of the shard runs a merge took (run.log's last line), else None."""
    import json
    from .run_files import file_tail
    tail = file_tail(run_dir / "run.log")   # only the log's tail: its last line is the merge's finalize
    lines = tail.splitlines() if tail is not None else []
    try:
        last = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    rows = last.get("merged_from") if isinstance(last, dict) and last.get("event") == "finalize" else None
    if not isinstance(rows, list):
        return None
    return {r["shard"]: r.get("started_at") for r in rows if isinstance(r, dict) and _count(r.get("shard"))}


# ---------------------------------------------------------------- holdout look budget
def holdout_budget_reason(run_dir: Path, results: dict) -> str | None:
    """A holdout run whose look is past the budget (LOOK_BUDGET looks per sealed holdout) has
    stopped being a holdout: the decision gate closes, naming the ledger count and the reseal."""
    manifest = _manifest(run_dir)
    if (manifest.get("selecting_split") or results.get("selecting_split")) != "holdout":
        return None
    from ..stats.cost import state_dir_of_run
    from ..plan.modes import HOLDOUT_LEDGER
    from ..suite.holdout import LOOK_BUDGET, read_ledger
    state = state_dir_of_run(run_dir)
    ledger = state / HOLDOUT_LEDGER
    try:
        rows = read_ledger(ledger)
    except Exception as exc:  # an unreadable ledger cannot show the look was within budget
        return f"the holdout ledger {ledger} is unreadable ({exc}); the look budget cannot be checked"
    run_id = results.get("run_id") or Path(run_dir).name
    look = next((i for i, row in enumerate(rows, 1) if row.get("run_id") == run_id), None)
    if look is None:
        return (f"this holdout run is not in the ledger {HOLDOUT_LEDGER} ({len(rows)} look(s) there): its look "
                "cannot be shown to be within the budget; holdout runs are recorded by run_cases.py")
    if look <= LOOK_BUDGET:
        return None
    return (f"holdout look {look} of a budget of {LOOK_BUDGET} ({len(rows)} look(s) in {HOLDOUT_LEDGER}): past the "
            "budget the holdout has been tuned against and no longer decides; run `holdout.py reseal "
            f"{state}` for a fresh holdout, then run it again")


# ---------------------------------------------------------------- tools the adapter does not declare
def undeclared_tools(summary: dict) -> tuple[list[str], str | None]:
    """(info lines, close reason) for `summary.undeclared_tools`."""
    block = summary.get("undeclared_tools")
    if not isinstance(block, dict) or not isinstance(block.get("tools"), dict) or not block["tools"]:
        return [], None
    named = ", ".join(f"{name} x{n}" for name, n in list(block["tools"].items())[:MAX_LISTED])
    checked = block.get("checked_cases") if _count(block.get("checked_cases")) else 0
    text = (f"{block.get('cases')} case(s) called tool(s) the adapter's tools list does not declare: {named}; "
            "declare them in adapter.yaml tools (a renamed tool defeats a forbidden list)")
    if not checked:
        return [f"  {text}"], None
    return [], (text.replace("; declare", f" ({checked} with tool or authz checks, now unscored); declare", 1))


# ---------------------------------------------------------------- spans that came after their case was scored
def late_spans_reason(results: dict) -> str | None:
    """results.json `late_spans` (the runner's end-of-run look at every trace it read as complete):
    those cases' trace layers were decided on part of the trace, so a pass there proves nothing."""
    block = results.get("late_spans")
    if block is None:
        return None
    rows = block.get("cases") if isinstance(block, dict) and isinstance(block.get("cases"), list) else None
    if not rows:
        return "results.json late_spans is malformed (no list of cases): the run cannot be trusted"
    named = [f"{r.get('case_id') or 'a holdout case'} ({r.get('spans_scored')} of {r.get('spans_seen')} spans)"
             for r in rows[:MAX_NAMED] if isinstance(r, dict)]
    more = f" and {len(rows) - MAX_NAMED} more" if len(rows) > MAX_NAMED else ""
    return (f"{len(rows)} case(s) were scored on part of their trace: more of its spans arrived after it was "
            f"read as complete, so a tool call in them (a forbidden tool, a loop, the arguments) went unchecked: "
            f"{', '.join(named)}{more}; {block.get('fix') or 'fix the trace completeness settings'}, then re-run")


# ---------------------------------------------------------------- a declared source absent in every answer
def _hollow_source(summary: dict, key: str) -> tuple[dict, int] | None:
    """(summary[key], how many fell back) when answers were read for a declared source (the route path,
    the first result source) and not one held it: a hollow source, not a fallback. The one rule."""
    block = summary.get(key)
    if not isinstance(block, dict) or not _count(block.get("read")) or not block["read"] or block.get("found"):
        return None
    return block, block.get("fell_back") if _count(block.get("fell_back")) else 0


def _partly_absent(summary: dict, key: str) -> dict | None:
    """summary[key] when some answers held the declared source and others fell back to a later one."""
    block = summary.get(key)
    return block if isinstance(block, dict) and block.get("found") and block.get("fell_back") else None


def route_source_reason(summary: dict) -> str | None:
    """A declared route_from_response path that no answer held (summary.route_from_response) is a
    hollow source, not a fallback: every route came from elsewhere, or from nowhere."""
    hollow = _hollow_source(summary, "route_from_response")
    if hollow is None:
        return None
    block, fell = hollow
    return (f"route_from_response {block.get('path')!r} was absent in all {block['read']} answer(s) read for "
            f"routing (a hollow route source{f'; {fell} fell back to the trace' if fell else ''}): fix the path "
            "in adapter.yaml (routes are never inferred) or remove it to route from the trace")


def route_source_line(summary: dict) -> str | None:
    """Some answers lacked the declared path and their route came from elsewhere: say how many."""
    block = _partly_absent(summary, "route_from_response")
    if block is None:
        return None
    return (f"  routing: route_from_response {block.get('path')!r} absent in {block['read'] - block['found']} of "
            f"{block['read']} answer(s); {block['fell_back']} routed from the trace or status map instead "
            "(verdict.json layers.routing.note)")


def route_disagree_line(summary: dict) -> str | None:
    """Answers whose route field and trace named different agents (the response's was scored): say how many."""
    block = summary.get("route_from_response")
    if not isinstance(block, dict) or not block.get("trace_disagrees"):
        return None
    return (f"  routing: the trace named another agent than route_from_response {block.get('path')!r} in "
            f"{block['trace_disagrees']} of {block.get('read')} answer(s); the response's route was scored "
            "(verdict.json layers.routing.trace_route)")


# ---------------------------------------------------------------- a first result source absent in every answer
def result_source_reason(summary: dict) -> str | None:
    """The first of several declared result sources (summary.result_source) that no answer held is a
    hollow source, not a fallback: every value came from a later, weaker source (the answer's words),
    or from nowhere."""
    hollow = _hollow_source(summary, "result_source")
    if hollow is None:
        return None
    block, fell = hollow
    return (f"{block.get('source')} {block.get('path')!r} was absent in all {block['read']} answer(s) read for "
            f"execution (a hollow result source{f'; {fell} fell back to result_pattern or another later source' if fell else ''}): "
            "fix the path in adapter.yaml, or remove it so the run reads the source you mean")


def result_source_line(summary: dict) -> str | None:
    """Some answers lacked the first result source and their value came from a later one: say how many."""
    block = _partly_absent(summary, "result_source")
    if block is None:
        return None
    return (f"  execution: {block.get('source')} {block.get('path')!r} absent in {block['read'] - block['found']} "
            f"of {block['read']} answer(s); {block['fell_back']} read from a later source instead "
            "(verdict.json layers.execution.first_source)")


# ---------------------------------------------------------------- a record id shape no case showed
def record_id_shape_reason(summary: dict) -> str | None:
    """summary.record_id_shape: the authz id checks looked for the app's id shape (the profile's
    record_id_pattern, else the case ids' default shape) and no case's tool calls, results, answer or
    response held one: a pattern the app never writes, so every id check could only pass."""
    block = summary.get("record_id_shape")
    if not isinstance(block, dict) or not _count(block.get("cases")) or not block["cases"] or block.get("seen"):
        return None
    return (f"no record id of the shape '{block.get('shape')}' appeared in the tool calls, tool results, answers "
            f"or responses of any of the {block['cases']} case(s) with record-id checks (authz), so those checks "
            "could only pass: set profile.yaml record_id_pattern to the ids the app writes and write the cases' "
            "ids that way, or add a case where the caller reads a record of their own (allowed_record_ids)")


# ---------------------------------------------------------------- a plan older than its suite, run anyway
def stale_plan_line(run_dir: Path) -> str | None:
    """manifest.yaml `stale_plan` (run_cases.py --stale-plan over a plan whose suite changed since
    make_plan.py wrote it): the run answers for the suite as it was; said on every gate, not only on
    the runner's stderr (a CI script that passed the flag once would gate on old cases unseen)."""
    words = _manifest(run_dir).get("stale_plan")
    if not isinstance(words, str) or not words:
        return None
    shown = words if len(words) <= 400 else words[:399] + "…"
    return (f"  plan: run with --stale-plan, so its verdicts answer for the suite as it was when planned, not as it "
            f"is: {shown}")


# ---------------------------------------------------------------- a 2xx without the answer
def answer_absent_line(summary: dict) -> str | None:
    """summary.answer_absent: gating cases that asserted nothing about the answer got a 2xx holding no
    answer at the adapter's <answer> path (an error sent as 200, `{"error": ..., "route": ...}`): they
    were decided on their other layers alone; said, never silent (not a close: the case asked nothing of
    the answer)."""
    block = summary.get("answer_absent")
    if not isinstance(block, dict) or not _count(block.get("cases")) or not block["cases"]:
        return None
    first = block.get("first_case")
    return (f"  answer: {block['cases']} gating case(s) got a 2xx with no answer at the adapter's <answer> path"
            + (f" (first: {first})" if isinstance(first, str) else "") + " and assert nothing about the answer, so "
            "only their other layers decided them: an error sent as 200? open the case's response.json; check "
            "adapter.yaml invocation.response_body, or add an answer check to the case")


# ---------------------------------------------------------------- refusals by status for an identity never let in
def unproven_refusals_reason(summary: dict) -> str | None:
    """summary.unproven_refusals: refusal cases that passed on an HTTP 4xx alone for an identity the app
    answered no 2xx in this run. An app's authentication layer refuses a credential it does not know
    with a 403 too (a typo'd identity, an expired token): nothing about what that user may see was
    tested, and every such refusal case would pass on an app that leaks to that user."""
    block = summary.get("unproven_refusals")
    if not isinstance(block, dict) or not _count(block.get("cases")) or not block["cases"]:
        return None
    first = block.get("first_case")
    return (f"{block['cases']} refusal case(s) passed on an HTTP 4xx alone for {block.get('identities')} identity(ies) "
            "the app answered no 2xx to in this run" + (f" (first: {first})" if isinstance(first, str) else "")
            + ": the app may have refused the credential, not the request (a 403 for an unknown user, an expired "
            "token), so nothing about what that user may see was tested; add a case the identity is allowed "
            "(its own record: expect.http.status 200) so the run shows its credential works, or check adapter.yaml "
            "invocation.identity_map and the variables it names")


# ---------------------------------------------------------------- calibration floors
def lowered_floor_lines(run_dir: Path) -> list[str]:
    """One line per gating rubric version calibrated at floors below score_agreement.py's defaults
    (the runner records them in manifest judge.rubrics[pin].calibrated_below_defaults): a calibration
    over 8 pairs is said as such, never shown as a plain "calibrated, gating"."""
    from ..judge.binding import lowered_floors_words
    judge = _manifest(run_dir).get("judge")
    rubrics = judge.get("rubrics") if isinstance(judge, dict) and isinstance(judge.get("rubrics"), dict) else {}
    out = []
    for pin, entry in sorted(rubrics.items()):
        low = entry.get("calibrated_below_defaults") if isinstance(entry, dict) else None
        if isinstance(low, dict) and isinstance(low.get("floors"), dict) and low["floors"]:
            out.append(f"  judge: {lowered_floors_words(pin, low)}; its verdicts gate at those floors only")
    return out


# ---------------------------------------------------------------- the model that answered the judge's calls
def _configured_judge(run_dir: Path) -> str:
    judge = _manifest(run_dir).get("judge")
    judge = judge if isinstance(judge, dict) else {}
    if isinstance(judge.get("judges"), list):
        return "configured judges"
    return f"configured {judge.get('served_model') or judge.get('model') or 'judge model'}"


def other_model_check(run_dir: Path, summary: dict) -> tuple[list[str], str | None]:
    """(info lines, close reason) for summary.judged.other_model (assay.judge.served): replies that
    named a model that is not the judge configured nor a dated snapshot of it. Closed when one of
    them judged a calibrated rubric version: the calibration measured the configured judge."""
    judged = summary.get("judged") if isinstance(summary.get("judged"), dict) else {}
    block, seen = judged.get("other_model"), judged.get("served_models")
    info = []
    if isinstance(seen, dict) and len(seen) > 1 and "configured judges" != _configured_judge(run_dir):
        info.append("  judge: the replies named " + ", ".join(f"{m} x{n}" for m, n in list(seen.items())[:MAX_LISTED])
                    + " (judge.json served_model): the model serving the judge changed during the run")
    if not isinstance(block, dict) or not _count(block.get("cases")) or not block["cases"]:
        return info, None
    want = _configured_judge(run_dir)
    models = block.get("models") if isinstance(block.get("models"), dict) else {}
    text = (f"the judge's replies in {block['cases']} case(s) were served by "
            + (", ".join(f"{m} ({n} call(s))" for m, n in list(models.items())[:MAX_LISTED]) or "another model")
            + f", not the {want} or a dated snapshot of it")
    calibrated = block.get("calibrated_cases")
    if calibrated == 0:
        return info + [f"  judge: {text} (provisional verdicts, not gating; calibrate against the model that "
                       "answers)"], None
    return info, (f"{text}: {calibrated if _count(calibrated) else 'some'} of those case(s) carry calibrated "
                  f"verdicts, and the calibration measured the {want}, not the model that answered; point judge.yaml "
                  "base_url at a provider that serves it, or, when model is a deployment name or a proxy alias, set "
                  "judge.yaml served_model to the model it serves (part of the judge's identity: its rubrics are provisional "
                  "until calibrated again against that model), then re-run")


def trust_checks(run_dir: Path, results: dict) -> tuple[list[str], list[str], list[str]]:
    """(lines the gate prints first, info lines, close reasons) of every check in this module."""
    summary = results.get("summary") if isinstance(results.get("summary"), dict) else {}
    head, reasons = allow_invalid(run_dir)
    info, tools_reason = undeclared_tools(summary)
    info += [line for line in (stale_plan_line(run_dir), route_source_line(summary), route_disagree_line(summary),
                               result_source_line(summary), answer_absent_line(summary)) if line]
    info += lowered_floor_lines(run_dir)
    served, other_reason = other_model_check(run_dir, summary)
    info += served
    close = [r for r in (reasons, shard_reason(run_dir), rerun_shard_reason(run_dir),
                         holdout_budget_reason(run_dir, results), tools_reason,
                         route_source_reason(summary), result_source_reason(summary), record_id_shape_reason(summary),
                         unproven_refusals_reason(summary), not_text_close(summary.get("answer_not_text")),
                         echo_close(summary.get("answer_echo")),
                         late_spans_reason(results), other_reason)
             if r]
    return head, info, close
