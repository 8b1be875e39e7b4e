"""The gate's close rules: each function reads results.json (and, where it must name cases, their
verdict.json) and says why the gate closes, or nothing. `gate.evaluate` checks them in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.writer import clip
from ..core.case_read import read_case_json
from ..core.explain import describe_response
from ..core.ids import is_safe_case_id
from ..score.hollow import ADAPTER_KEY_OF_LAYER, FIX_OF_GAP, absence_only_line
from ..score.hollow_hints import hollow_layer_line, where_to_look
from .gate_case import GOAL_NOT_REACHED, NOT_RUN, SKIPPED, UNSCORED, closing_cases
from .gate_judge import MAX_NAMED  # one definition: cases named on a line
from .rundir import LazyHoldoutIds, case_verdict, try_json_head

REQUIRED_INTS = ("n", "passes", "failures", "gating_failures")
OPTIONAL_INTS = ("unscored", "skipped", "scorer_errors", "repeated_5xx")


def is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def rate_of(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def malformed_counts(summary: dict) -> list[str]:
    bad = [k for k in REQUIRED_INTS if not is_count(summary.get(k))]
    bad += [k for k in OPTIONAL_INTS if k in summary and not is_count(summary.get(k))]
    return bad


def failing_cases(results: dict) -> list[dict]:
    """Gating failures named in results.cases (holdout cases are never there: the seal)."""
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    return [r for r in rows if isinstance(r, dict) and r.get("verdict") == "fail"
            and r.get("gating", True) is not False and not r.get("canary")]


def status_words(run_dir: Path, case_id: object) -> str | None:
    """What the app answered when a case's `http` layer failed, from its verdict.json: "HTTP 404",
    "HTTP 200, expected [404]" (a cli or agent app: "exit code 3, expected 0", when the exit code
    failed it); None when that layer passed or recorded no status. A failing-case line says it: "(http)" alone hid a 500 or a 404."""
    doc = case_verdict(run_dir, str(case_id))
    http = (doc.get("layers") or {}).get("http") if isinstance(doc, dict) and isinstance(doc.get("layers"), dict) else None
    if not isinstance(http, dict) or http.get("verdict") != "fail":
        return None
    if isinstance(http.get("status"), int):
        expected = http.get("expected_status")
        return f"HTTP {http['status']}" + (f", expected {expected}" if expected else "")
    expected = http.get("expected_exit_code", 0)
    if isinstance(http.get("exit_code"), int) and http["exit_code"] != expected:   # else its reason failed it
        return f"exit code {http['exit_code']}, expected {expected}"
    return None


TITLE_CLIP = 80   # a title in a reason: one line's worth (the id beside it is always whole)


def reason_title(title: str) -> str:
    """A case title as a reason quotes it: on one line, at most TITLE_CLIP characters ("…" marks a cut;
    redacted first, as every cut is). A 2,700-character title filled the gate's screen and the viewer's
    gate box; the whole title stays in the case's verdict.json and on its page."""
    return clip(" ".join(title.split()), TITLE_CLIP, ellipsis="…")


def gating_reason(run_dir: Path, results: dict, summary: dict, notes: dict | None = None) -> str | None:
    """Every gating failure closes the gate, whatever a comparison calls it. `notes` ({case_id:
    words}, from --baseline) is said beside a case: "edited since the baseline", "judge flip". A
    failed `http` layer says the status the app answered ("c-1 (http; HTTP 500)")."""
    notes = notes or {}
    total = summary["gating_failures"]
    if total <= 0:
        return None
    failing = failing_cases(results)
    named = []
    for row in failing[:MAX_NAMED]:
        layers = row.get("failed_layers") or [k for k, v in (row.get("layers") or {}).items() if v == "fail"]
        title = f' "{reason_title(row["title"])}"' if isinstance(row.get("title"), str) and row["title"].strip() else ""
        turn = f"turn {row['failed_turn']}: " if isinstance(row.get("failed_turn"), int) else ""
        status = status_words(run_dir, row.get("case_id")) if "http" in layers else None
        note = "".join(f"; {w}" for w in (status, notes.get(row.get("case_id"))) if w)
        named.append(f"{row.get('case_id')}{title} ({turn}{', '.join(layers) or 'no layer named'}{note})")
    more = len(failing) - len(named)
    text = f"{total} gating failure(s)"
    if named:
        text += ": " + ", ".join(named) + (f" and {more} more" if more > 0 else "")
    holdout = summary.get("holdout")
    h = holdout.get("gating_failures") if isinstance(holdout, dict) else None
    if is_count(h) and h:
        text += f" ({h} of them holdout, aggregate only: ids sealed)"
    return text


def no_gating_case_reason(run_dir: Path, results: dict, summary: dict) -> str | None:
    """Close on a run whose every non-canary case is `gating: false`: such a case never closes the
    gate, so the gate could close on no failure at all; open would say "nothing gated failed" of a
    run that gated nothing (the plan's split held only cases marked `gating: false`). A run with no
    non-canary case at all closes as "nothing measured" instead."""
    from .gate_case import gate_rows, is_gating
    n = summary.get("n")
    if not is_count(n) or n == 0:
        return None
    rows = [r for r in gate_rows(run_dir, results) if isinstance(r, dict) and not r.get("canary")]
    if not rows or any(is_gating(r) for r in rows):
        return None
    split = results.get("selecting_split")
    where = f" (split {split!r})" if isinstance(split, str) else ""
    return (f"no gating case in this run: all {len(rows)} case(s){where} are gating: false, so no failure could "
            "close this gate (an open gate would say nothing of them); let the reviewed cases gate (drop "
            "`gating: false` from their YAML) or plan a split that holds gating cases")


def replay_miss_reason(run_dir: Path, results: dict) -> str | None:
    """Close on gating cases --replay (or rescore) could not answer: not measured, so never a pass,
    and never infrastructure noise hidden under --max-infra-rate. Holdout ids are counted only."""
    return _not_measured(run_dir, results, NOT_RUN,
                         "gating case(s) were not measured: the replay could not answer them (a replay miss, or a "
                         "conversation rescore cannot replay, is a case that did not run, not a pass; record again, "
                         "or run them live: --changed-since, or run_cases.py)")


def goal_not_reached_reason(run_dir: Path, results: dict) -> str | None:
    """Close on gating simulated users that ended max_turns_reached: whether the app never got the user
    to the goal or the simulator never said so, the case was not measured, and it is no infrastructure
    noise to hide under --max-infra-rate (an app that never reaches any goal read PASS in a big suite)."""
    return _not_measured(run_dir, results, GOAL_NOT_REACHED,
                         "gating simulated user(s) never reached the goal (max_turns user turns sent, stop_when "
                         "never held: the app never got the user there, or the simulator never sent its stop "
                         "token; read the case's turns/, then fix the app, or the case's goal/stop_when/max_turns)")


def _not_measured(run_dir: Path, results: dict, kind: str, words: str) -> str | None:
    """"<N> <words>: <each case named>" over the gating cases `case_gate` closes as `kind`, or None."""
    cases = closing_cases(run_dir, results, kind, limit=MAX_NAMED)
    return f"{cases.count} {words}" + cases.tail() if cases.count else None


def replayed_phrase(run_dir: Path) -> str | None:
    """`REPLAYED from ...: the app was not called` for a run_cases.py --replay run, `RESCORED from run
    ...` for a rescore.py run, else None, so neither ever reads as a live one."""
    manifest = try_json_head(run_dir / "manifest.yaml")
    src = manifest.get("replayed_from") if isinstance(manifest, dict) else None
    extra = manifest.get("manifest_extra") if isinstance(manifest, dict) else None
    rescored = extra.get("rescored_from") if isinstance(extra, dict) else None
    if not isinstance(src, dict) and isinstance(rescored, dict):
        return f"RESCORED from run {rescored.get('run_id')}: its stored answers scored again, the app was not called"
    if not isinstance(src, dict):
        return None
    from ..replay.source import replayed_words
    return replayed_words(manifest)


def canary_failures(run_dir: Path, results: dict) -> list[str]:
    """What each failed canary got (status + redacted body excerpt); 401/403 named as authentication."""
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    failed = [r for r in rows if isinstance(r, dict) and r.get("canary") and r.get("verdict") == "fail"]
    if not failed:
        return []
    manifest = try_json_head(run_dir / "manifest.yaml")  # the runner writes JSON text (valid YAML)
    auth = manifest.get("auth") if isinstance(manifest, dict) else None
    out = []
    for row in failed[:MAX_NAMED]:
        cid = str(row.get("case_id"))
        response = read_case_json(run_dir, cid, "response.json") if is_safe_case_id(cid) else None
        layers = ", ".join(row.get("failed_layers") or []) or "no layer named"
        out.append(f"canary {cid} failed on {layers}: got {describe_response(response, auth)}")
    return out


def hollow_reasons(summary: dict, invocation_mode: Any = None) -> list[str]:
    """One close reason per hollow layer (asserted by some case, scored in none: wave 2 §1), and one when
    every passing case passed on absences only (score.hollow.absence_only_line)."""
    block = summary.get("hollow_layers")
    lines = [hollow_layer_line(layer, info if isinstance(info, dict) else {}, invocation_mode)
             for layer, info in (block.items() if isinstance(block, dict) else ())]
    absence = absence_only_line(summary.get("passes_on_presence"))
    return lines + ([absence] if absence else [])


def unscored_gating_reason(run_dir: Path, results: dict) -> str | None:
    """Close on gating cases that rolled up `unscored` because a check they assert never ran
    (wave 2 §1: PASS means every asserted check was evaluated and held). A hollow case (nothing
    asserted beyond liveness) asserts no check and is left to the linter; a judge that disagreed
    with itself has its own line (judge_unstable_reason); holdout ids are counted, never printed."""
    cases = closing_cases(run_dir, results, UNSCORED, limit=MAX_NAMED, no_why="no layer was scored")
    if not cases.count:
        return None
    return (f"{cases.count} gating case(s) asserted a check that never ran (unscored, not a pass; fix the "
            f"adapter key, the case or the judge it names)" + cases.tail())


def incomplete_reason(run_dir: Path, results: dict, summary: dict, max_infra_rate: float) -> str | None:
    """Close when cases whose trace never completed (infra_incomplete: their trace-fed checks never
    ran), together with the infra errors, are above --max-infra-rate: `infra_rate` counts
    infra_error only, so without this a run could hide any number of them behind a PASS."""
    incomplete, errors, n, skipped = (summary.get(k, 0) for k in ("infra_incomplete", "infra_errors", "n", "skipped"))
    if not all(is_count(v) for v in (incomplete, errors, n, skipped)) or not incomplete:
        return None
    sent = n - skipped
    rate = (incomplete + errors) / sent if sent > 0 else 1.0
    if rate <= max_infra_rate:
        return None
    named = infra_cases_named(run_dir, results, "infra_incomplete")
    text = (f"{incomplete} case(s) infra_incomplete (their trace never completed, so the checks it feeds "
            f"never ran): with the infra errors {rate * 100:.1f}% of the cases sent, above "
            f"{max_infra_rate * 100:.1f}%; check the adapter's traces (location, correlation, completeness)")
    return text + (": " + "; ".join(named) if named else "")


def skipped_gating_reason(run_dir: Path, results: dict) -> str | None:
    """Close on gating cases the runner did not send because the adapter lacks what they need
    (no invocation.conversation for a conversation, no identity_map entry): skipped is not a pass.
    A skip the suite chose (safety, a layer switched off in the profile) leaves the gate alone."""
    cases = closing_cases(run_dir, results, SKIPPED, limit=MAX_NAMED, ellipsis="")
    if not cases.count:
        return None
    fixes = list(dict.fromkeys(FIX_OF_GAP.get(k, "declare it") for k in cases.keys))
    return (f"{cases.count} gating case(s) were not sent because {' and '.join(cases.keys)} "
            f"(skipped, not a pass; {'; '.join(fixes)}, or mark the case gating: false)" + cases.tail())


def infra_cases_named(run_dir: Path, results: dict, verdict: str, skip: frozenset[str] = frozenset()) -> list[str]:
    """`id (infra_reason)` for up to MAX_NAMED non-canary, non-holdout cases with this infra verdict
    (`skip`: ids left out, e.g. the ones that close the gate on their own)."""
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    sealed = LazyHoldoutIds(run_dir, rows)
    named = []
    for row in rows:
        if isinstance(row, dict) and row.get("verdict") == verdict and not row.get("canary") \
                and str(row.get("case_id")) not in skip \
                and str(row.get("case_id")) not in sealed and len(named) < MAX_NAMED:
            doc = case_verdict(run_dir, str(row.get("case_id"))) or {}
            why = " ".join(str(doc.get("infra_reason") or "no reason recorded").split())
            named.append(f"{row.get('case_id')} ({clip(why, 300, ellipsis='…')})")
    return named


def canary_reason(summary: dict, mode: str | None) -> str | None:
    """--require-canaries: open only if 0 < passed == n."""
    block = summary.get("canaries")
    if block is None:
        return "--require-canaries: this run has no canary" + (" (a holdout run never does)" if mode == "holdout" else "")
    if not isinstance(block, dict) or not is_count(block.get("n")) or not is_count(block.get("passed")):
        return "--require-canaries: summary.canaries is malformed (need integer n and passed)"
    n, passed = block["n"], block["passed"]
    if n == 0:
        return "--require-canaries: this run has no canary" + (" (a holdout run never does)" if mode == "holdout" else "")
    if passed != n:
        return f"--require-canaries: {passed}/{n} canaries passed; the harness is not verified"
    return None


def run_verify(run_dir: Path) -> tuple[bool, str | None]:
    """(clean, detail) of the completeness check `run_cases.py --verify <dir>` runs (the same
    function, called in this process: a gate needs no second interpreter to re-check a run; its
    answer for these same bytes under this same code is taken when a reader kept it: rundir.checked)."""
    from ..rundir.checked import check
    answer = _checked(check, run_dir)
    return answer if isinstance(answer, tuple) else verify_answer(answer)


def kept_verify(run_dir: Path, small: bool = True) -> tuple[bool, str | None] | None:
    """run_verify's answer when a reader kept the check's answer for these bytes (rundir.checked), or
    (`small`) the check itself on a run dir too small to keep one (it costs less than the digest), else
    None: a big run's check is not run (the viewer's decision), nor any run's without `small`."""
    from ..rundir.checked import known, known_or_small
    answer = _checked(known_or_small if small else known, run_dir)
    return answer if isinstance(answer, tuple) or answer is None else verify_answer(answer)


def _checked(how, run_dir: Path) -> Any:
    """`how(run_dir)` (the check's problems, or None), or (False, why) when the check could not run:
    a bug in the check never reads as a clean run, nor as a traceback."""
    from ..rundir.completeness import RunDirError
    try:
        return how(run_dir)
    except RunDirError as exc:
        return False, f"run_cases.py --verify exit 2: --verify: {exc}"
    except Exception as exc:  # noqa: BLE001
        return False, f"the completeness check (run_cases.py --verify) failed: {type(exc).__name__}: {exc}"


def verify_answer(problems: list[str]) -> tuple[bool, str | None]:
    if not problems:
        return True, None
    shown = ", ".join(str(m) for m in problems[:10]) + (f" and {len(problems) - 10} more" if len(problems) > 10 else "")
    return False, f"run_cases.py --verify exit 6: missing or inconsistent: {shown}"


def conversations_reason(summary: dict) -> str | None:
    """Conversations were sent and none was scored (pass or fail): a check that never ran, so the
    gate closes (e.g. a server-id adapter whose session_from never finds the id)."""
    conv = (summary.get("by_kind") or {}).get("conversation") if isinstance(summary.get("by_kind"), dict) else None
    if not isinstance(conv, dict) or not all(is_count(conv.get(k)) for k in ("n", "skipped", "passes", "failures")):
        return None
    sent = conv["n"] - conv["skipped"]
    if sent <= 0 or conv["passes"] + conv["failures"] > 0:
        return None
    why = conv.get("top_unscored_reason")
    # A reason that names a layer ("answer: no answer at ...") points at that layer's key; the
    # session's own reasons ("turn 1: no session id ...") at invocation.conversation.
    layer = str(why).split(":", 1)[0] if why else ""
    look = (where_to_look(layer) if layer in ADAPTER_KEY_OF_LAYER
            else "the adapter's invocation.conversation (style, session_from)")
    if not why and is_count(conv.get("infra_errors")) and is_count(conv.get("infra_incomplete")):
        infra = conv["infra_errors"] + conv["infra_incomplete"]
        if infra:  # the infra lines name them with their reasons; the session may be fine
            why = f"{infra} ended infra_error/infra_incomplete"
            look = "the reasons on the infra line(s) above"
    return (f"none of {sent} sent conversation(s) was scored (a check that never ran)"
            + (f": most common reason: {why}" if why else "") + f"; check {look}")
