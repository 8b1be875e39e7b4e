"""The tokenless CI gate: read results.json (the runner's one count definition), decide open or
closed, and say why on one screen. No model is ever in this path, and nothing here recounts.

`evaluate(run_dir, ...)` returns a GateResult; `summary_lines(result)` is the one-screen text.
Close reasons are checked in the reference order (scripts-facts, gate.py): malformed counts,
status, exit code, gating failures, holdout > total, infra rate, incomplete traces, missing artifacts,
nothing measured, hollow layers (asserted, never scored), unscored gating cases (a check that
never ran), canaries (with --require-canaries), verify.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..core.casestore import read_case_json
from ..core.commands import SCRIPTS_DIR
from ..core.explain import describe_response
from ..core.ids import is_safe_case_id
from ..score.hollow import (ADAPTER_KEY_OF_LAYER, HOLLOW_CASE_REASON, adapter_gap_key, hollow_layer_line,
                            only_chosen_unscored, where_to_look)
from ..stats.counts import cases_phrase
from .rundir import RunResultsView, case_verdict, holdout_ids, load_results, throughput_line, try_json

VERIFY_TIMEOUT_S = 120
REQUIRED_INTS = ("n", "passes", "failures", "gating_failures")
OPTIONAL_INTS = ("unscored", "skipped", "scorer_errors", "repeated_5xx")
MAX_NAMED = 5


@dataclass
class GateResult(RunResultsView):
    run_dir: Path
    results: dict
    reasons: list[str] = field(default_factory=list)
    verified: bool = False          # --verify ran
    verify_clean: bool | None = None
    verify_detail: str | None = None
    budget_lines: list[str] = field(default_factory=list)
    trust_head: list[str] = field(default_factory=list)   # printed right under the verdict line
    trust_info: list[str] = field(default_factory=list)
    budgets: dict = field(default_factory=dict)   # {key: {value, source}} the gate checked
    lines: list[str] = field(default_factory=list)
    # --baseline (assay.compare.gate_rule): {base_run_id, lines, buckets {case_id: bucket}, summary, markdown}
    comparison: dict | None = None
    in_progress: str | None = None  # the runner still holds the lock: what it has finished so far

    @property
    def open(self) -> bool:
        return not self.reasons


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _rate(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def malformed_counts(summary: dict) -> list[str]:
    bad = [k for k in REQUIRED_INTS if not _is_count(summary.get(k))]
    bad += [k for k in OPTIONAL_INTS if k in summary and not _is_count(summary.get(k))]
    return bad


def failing_cases(results: dict) -> list[dict]:
    """Gating failures named in results.cases (holdout cases are never there: the seal)."""
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    return [r for r in rows if isinstance(r, dict) and r.get("verdict") == "fail"
            and r.get("gating", True) is not False and not r.get("canary")]


def _gating_reason(results: dict, summary: dict, explained: dict | None = None) -> str | None:
    """`explained` ({case_id: why}, from --baseline): failures the comparison attributes to an edited
    case or a judge flip; they are not counted here (the comparison's lines name them)."""
    explained = explained or {}
    failing = [r for r in failing_cases(results) if r.get("case_id") not in explained]
    total = summary["gating_failures"] - (len(failing_cases(results)) - len(failing))
    if total <= 0:
        return None
    named = []
    for row in failing[:MAX_NAMED]:
        layers = row.get("failed_layers") or [k for k, v in (row.get("layers") or {}).items() if v == "fail"]
        title = f' "{row["title"]}"' if isinstance(row.get("title"), str) and row["title"] else ""
        turn = f"turn {row['failed_turn']}: " if isinstance(row.get("failed_turn"), int) else ""
        named.append(f"{row.get('case_id')}{title} ({turn}{', '.join(layers) or 'no layer named'})")
    more = len(failing) - len(named)
    text = f"{total} gating failure(s)"
    if named:
        text += ": " + ", ".join(named) + (f" and {more} more" if more > 0 else "")
    holdout = summary.get("holdout")
    h = holdout.get("gating_failures") if isinstance(holdout, dict) else None
    if _is_count(h) and h:
        text += f" ({h} of them holdout, aggregate only: ids sealed)"
    return text


def canary_failures(run_dir: Path, results: dict) -> list[str]:
    """What each failed canary got (status + redacted body excerpt); 401/403 named as authentication."""
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    failed = [r for r in rows if isinstance(r, dict) and r.get("canary") and r.get("verdict") == "fail"]
    if not failed:
        return []
    manifest = try_json(run_dir / "manifest.yaml")  # the runner writes JSON text (valid YAML)
    auth = manifest.get("auth") if isinstance(manifest, dict) else None
    out = []
    for row in failed[:MAX_NAMED]:
        cid = str(row.get("case_id"))
        response = read_case_json(run_dir, cid, "response.json") if is_safe_case_id(cid) else None
        layers = ", ".join(row.get("failed_layers") or []) or "no layer named"
        out.append(f"canary {cid} failed on {layers}: got {describe_response(response, auth)}")
    return out


def hollow_reasons(summary: dict) -> list[str]:
    """One close reason per hollow layer (asserted by some case, scored in none: wave 2 §1)."""
    block = summary.get("hollow_layers")
    if not isinstance(block, dict):
        return []
    return [hollow_layer_line(layer, info if isinstance(info, dict) else {}) for layer, info in block.items()]


def unscored_closes(row: dict, doc: dict) -> bool:
    """An unscored gating case that closes the gate: a check it asserts never ran (not a hollow
    case, not one whose only unscored layers are ones this run chose not to check)."""
    if row.get("verdict") != "unscored" or row.get("canary") or row.get("gating", True) is False:
        return False
    layers = doc.get("layers") if isinstance(doc.get("layers"), dict) else {}
    return not (doc.get("unscored_reason") == HOLLOW_CASE_REASON
                or (layers and only_chosen_unscored(layers) and not doc.get("stop_reason")))


def unscored_gating_reason(run_dir: Path, results: dict) -> str | None:
    """Close on gating cases that rolled up `unscored` because a check they assert never ran
    (wave 2 §1: PASS means every asserted check was evaluated and held). A hollow case (nothing
    asserted beyond liveness) asserts no check and is left to the linter; holdout ids are counted,
    never printed."""
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    sealed = holdout_ids(run_dir, rows)
    named, count = [], 0
    for row in rows:
        if not isinstance(row, dict) or row.get("verdict") != "unscored":
            continue
        cid = str(row.get("case_id"))
        doc = case_verdict(run_dir, cid) or {}
        why = doc.get("unscored_reason")
        if not unscored_closes(row, doc):
            continue  # nothing asserted that this run checks (the linter and "nothing measured" speak)
        count += 1
        if cid not in sealed and len(named) < MAX_NAMED:
            why = " ".join(str(why or "no layer was scored").split())
            named.append(f"{cid} ({why if len(why) <= 300 else why[:299] + '…'})")
    if not count:
        return None
    text = (f"{count} gating case(s) asserted a check that never ran (unscored, not a pass; fix the "
            f"adapter key, the case or the judge it names)")
    if named:
        text += ": " + "; ".join(named) + (f" and {count - len(named)} more" if count > len(named) else "")
    return text


def incomplete_reason(run_dir: Path, results: dict, summary: dict, max_infra_rate: float) -> str | None:
    """Close when cases whose trace never completed (infra_incomplete: their trace-fed checks never
    ran), together with the infra errors, are above --max-infra-rate: `infra_rate` counts
    infra_error only, so without this a run could hide any number of them behind a PASS."""
    incomplete, errors, n, skipped = (summary.get(k, 0) for k in ("infra_incomplete", "infra_errors", "n", "skipped"))
    if not all(_is_count(v) for v in (incomplete, errors, n, skipped)) or not incomplete:
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


def skipped_closes(run_dir: Path, row: object) -> tuple[str | None, str | None]:
    """(the adapter key it lacks, the skip reason) when this results row is a gating case the
    runner did not send for want of that key: it closes the gate. (None, None) otherwise."""
    if not isinstance(row, dict) or row.get("verdict") != "skipped" or row.get("canary") \
            or row.get("gating", True) is False:
        return None, None
    why = (case_verdict(run_dir, str(row.get("case_id"))) or {}).get("skip_reason")
    key = adapter_gap_key(why)
    return (key, why) if key is not None else (None, None)


def skipped_gating_reason(run_dir: Path, results: dict) -> str | None:
    """Close on gating cases the runner did not send because the adapter lacks what they need
    (no invocation.conversation for a conversation, no identity_map entry): skipped is not a pass.
    A skip the suite chose (safety, a layer switched off in the profile) leaves the gate alone."""
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    sealed = holdout_ids(run_dir, rows)
    named, keys, count = [], [], 0
    for row in rows:
        key, why = skipped_closes(run_dir, row)
        if key is None:
            continue
        cid = str(row.get("case_id"))
        count += 1
        keys += [key] if key not in keys else []
        if cid not in sealed and len(named) < MAX_NAMED:
            named.append(f"{cid} ({' '.join(str(why).split())[:300]})")
    if not count:
        return None
    return (f"{count} gating case(s) were not sent because the adapter lacks {' and '.join(keys)} (skipped, "
            "not a pass; declare it, or mark the case gating: false)"
            + (": " + "; ".join(named) + (f" and {count - len(named)} more" if count > len(named) else "")
               if named else ""))


def infra_cases_named(run_dir: Path, results: dict, verdict: str) -> list[str]:
    """`id (infra_reason)` for up to MAX_NAMED non-canary, non-holdout cases with this infra verdict."""
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    sealed = holdout_ids(run_dir, rows)
    named = []
    for row in rows:
        if isinstance(row, dict) and row.get("verdict") == verdict and not row.get("canary") \
                and str(row.get("case_id")) not in sealed and len(named) < MAX_NAMED:
            doc = case_verdict(run_dir, str(row.get("case_id"))) or {}
            why = " ".join(str(doc.get("infra_reason") or "no reason recorded").split())
            named.append(f"{row.get('case_id')} ({why if len(why) <= 300 else why[:299] + '…'})")
    return named


def canary_reason(summary: dict, mode: str | None) -> str | None:
    """--require-canaries: open only if 0 < passed == n."""
    block = summary.get("canaries")
    if block is None:
        return "--require-canaries: this run has no canary" + (" (a holdout run never does)" if mode == "holdout" else "")
    if not isinstance(block, dict) or not _is_count(block.get("n")) or not _is_count(block.get("passed")):
        return "--require-canaries: summary.canaries is malformed (need integer n and passed)"
    n, passed = block["n"], block["passed"]
    if n == 0:
        return "--require-canaries: this run has no canary" + (" (a holdout run never does)" if mode == "holdout" else "")
    if passed != n:
        return f"--require-canaries: {passed}/{n} canaries passed; the harness is not verified"
    return None


def run_verify(run_dir: Path) -> tuple[bool, str | None]:
    """(clean, detail) from `run_cases.py --verify <dir>` in a subprocess."""
    runner = SCRIPTS_DIR / "run_cases.py"
    if not runner.is_file():
        return False, (f"cannot verify: {runner.name} is missing from {SCRIPTS_DIR} "
                       f"(pass --no-verify to gate without the completeness check)")
    try:
        proc = subprocess.run([sys.executable, str(runner), "--verify", str(run_dir)],
                              capture_output=True, text=True, timeout=VERIFY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, f"run_cases.py --verify did not finish within {VERIFY_TIMEOUT_S} s"
    if proc.returncode == 0:
        return True, None
    try:
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        doc = {}
    missing = doc.get("missing_artifacts") if isinstance(doc, dict) else None
    if isinstance(missing, list) and missing:
        shown = ", ".join(str(m) for m in missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        return False, f"run_cases.py --verify exit {proc.returncode}: missing or inconsistent: {shown}"
    err = doc.get("error") if isinstance(doc, dict) else None
    return False, f"run_cases.py --verify exit {proc.returncode}: {err or proc.stderr.strip()[-300:] or 'no detail'}"


def evaluate(run_dir: Path, *, max_infra_rate: float = 0.05, require_canaries: bool = False,
             verify: bool = True, budgets: dict | None = None, explained: dict | None = None) -> GateResult:
    run_dir = Path(run_dir)
    results = load_results(run_dir)
    summary = results["summary"]
    res = GateResult(run_dir=run_dir, results=results)
    reasons = res.reasons
    bad = malformed_counts(summary)
    if bad:
        reasons.append("malformed count(s) in results.json summary: " + ", ".join(bad)
                       + " (must be non-negative integers)")
    if summary.get("status") == "running":
        from .interrupted import interrupted_view
        recount, why = interrupted_view(run_dir, results)
        if recount is not None:  # the runner is gone: quote what finished, not a stale batch
            results["summary"] = summary = recount
        reasons.append(why)
        if recount is None:  # the runner is alive: nothing is final, so say only that (D5)
            from .rundir import progress_phrase
            res.in_progress = progress_phrase(run_dir)[0]
            res.lines = [f"{res.run_id}: IN PROGRESS (not gated: a run that is still running never opens the gate)",
                         f"  {res.in_progress} (from cases/*/verdict.json; results.json is refreshed in batches)",
                         f"  gate closed: {why}"]
            return res
    elif summary.get("status") != "ok":
        reasons.append(f"run status is {summary.get('status')!r}, not 'ok'")
    reasons.extend(canary_failures(run_dir, results))
    if results.get("exit_code") not in (0, None):
        reasons.append(f"runner exit code {results.get('exit_code')} (not 0)")
    gating = _gating_reason(results, summary, explained) if not bad and summary["gating_failures"] > 0 else None
    if gating:
        reasons.append(gating)
    holdout = summary.get("holdout")
    if not bad and isinstance(holdout, dict) and _is_count(holdout.get("gating_failures")) \
            and holdout["gating_failures"] > summary["gating_failures"]:
        reasons.append(f"holdout gating failures ({holdout['gating_failures']}) exceed the total "
                       f"({summary['gating_failures']}): the counts are inconsistent")
    infra = _rate(summary.get("infra_rate"))
    if infra is not None and infra > max_infra_rate:
        named = [] if bad else infra_cases_named(run_dir, results, "infra_error")
        reasons.append(f"infra rate {infra * 100:.1f}% is above {max_infra_rate * 100:.1f}%"
                       + (": " + "; ".join(named) if named else ""))
    elif infra is None and "infra_rate" in summary:
        reasons.append("infra_rate in results.json is not a number")
    incomplete = None if bad else incomplete_reason(run_dir, results, summary, max_infra_rate)
    if incomplete:
        reasons.append(incomplete)
    missing = summary.get("missing_artifacts")
    if missing:
        reasons.append("missing artifacts: " + ", ".join(str(m) for m in (missing if isinstance(missing, list) else [missing])[:10]))
    if not bad and summary["passes"] + summary["failures"] == 0:
        reasons.append("nothing was measured (0 passes + 0 failures), which is not a pass")
    reasons.extend(hollow_reasons(summary))
    from .gate_trust import trust_checks
    res.trust_head, res.trust_info, trusted = trust_checks(run_dir, results)
    reasons.extend(trusted)
    unscored_conv = conversations_reason(summary)
    if unscored_conv:
        reasons.append(unscored_conv)
    unscored_gating = unscored_gating_reason(run_dir, results)
    if unscored_gating:
        reasons.append(unscored_gating)
    skipped_gating = None if bad else skipped_gating_reason(run_dir, results)
    if skipped_gating:
        reasons.append(skipped_gating)
    if require_canaries:
        why = canary_reason(summary, results.get("mode"))
        if why:
            reasons.append(why)
    if verify:
        res.verified = True
        res.verify_clean, res.verify_detail = run_verify(run_dir)
        if not res.verify_clean:
            reasons.append(res.verify_detail or "run_cases.py --verify failed")
    if budgets is not None:
        # opt-in cost / latency budgets (history/budgets.py: the flags, else <state>/profile.yaml;
        # stats/cost.py: the numbers): over budget, or not checkable, closes
        from ..history.budgets import resolve_budgets
        from ..stats.cost import PRICES_FILE, budget_lines, load_prices, run_cost, state_dir_of_run
        state = Path(budgets["state_dir"]) if budgets.get("state_dir") else state_dir_of_run(run_dir)
        res.budgets = resolve_budgets(budgets, state)["budgets"]
        if res.budgets:
            prices_path = Path(budgets.get("prices") or state / PRICES_FILE)
            prices = load_prices(prices_path) if prices_path.is_file() or budgets.get("prices") else None
            cost = run_cost(run_dir, prices, prices_note=None if prices else f"no {prices_path}")
            close, res.budget_lines = budget_lines(
                cost, max_cost_per_case=(res.budgets.get("max_cost_per_case") or {}).get("value"),
                max_p95_latency_s=(res.budgets.get("max_p95_latency_s") or {}).get("value"),
                sources={k: b["source"] for k, b in res.budgets.items()})
            reasons.extend(close)
    res.lines = summary_lines(res)
    return res


def _num(value: object) -> str:
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else "n/a"


def _pct(value: object) -> str:
    r = _rate(value)
    return f"{r * 100:.1f}%" if r is not None else "n/a"


def repeated_5xx_cases(res: GateResult) -> list[str]:
    """`id (status xattempts)` for each non-holdout infra case whose verdict.json has repeated_5xx."""
    named = []
    for row in res.results.get("cases") or []:
        if not isinstance(row, dict) or row.get("verdict") not in ("infra_error", "infra_incomplete"):
            continue
        doc = case_verdict(res.run_dir, str(row.get("case_id")))
        rep = doc.get("repeated_5xx") if doc else None
        if isinstance(rep, dict):
            named.append(f"{row['case_id']} ({rep.get('status')} x{rep.get('attempts')})")
    return named


def _incomplete_traces(s: dict) -> str:
    """' + 2 of 3 traces incomplete (66.7%)' beside the infra rate (which counts infra_error only)."""
    incomplete, n, skipped = s.get("infra_incomplete"), s.get("n"), s.get("skipped", 0)
    if not (_is_count(incomplete) and incomplete and _is_count(n) and _is_count(skipped)) or n <= skipped:
        return ""
    return f" + {incomplete} of {n - skipped} traces incomplete ({incomplete / (n - skipped) * 100:.1f}%)"


def _infra_counts(s: dict) -> str:
    """', 1 infra_error, 2 infra_incomplete' when any (so the counts on the line add up), else ''."""
    parts = [f"{s[k]} {k.rstrip('s') if k == 'infra_errors' else k}" for k in ("infra_errors", "infra_incomplete")
             if _is_count(s.get(k)) and s[k]]
    return "".join(", " + p for p in parts)


def summary_lines(res: GateResult) -> list[str]:
    s, results = res.summary, res.results
    nongating = 0
    if _is_count(s.get("failures")) and _is_count(s.get("gating_failures")):
        nongating = s["failures"] - s["gating_failures"]
    head = f"{res.run_id}: {'PASS' if res.open else 'FAIL'}"
    if nongating > 0:
        head += f" ({nongating} failure(s) on gating:false cases, not counted)"
    canaries = s.get("canaries") if isinstance(s.get("canaries"), dict) else {}
    lines = [head, *res.trust_head, *((res.comparison or {}).get("lines") or []),
             f"  {cases_phrase(s.get('n'), canaries.get('n'))}: {_num(s.get('passes'))} pass, {_num(s.get('failures'))} fail "
             f"({_num(s.get('gating_failures'))} gating), {_num(s.get('unscored', 0))} unscored, "
             f"{_num(s.get('skipped', 0))} skipped" + _infra_counts(s),
             f"  infra {_pct(s.get('infra_rate'))}{_incomplete_traces(s)}, crash {_pct(s.get('crash_rate'))}, "
             f"scorer errors {_num(s.get('scorer_errors', 0))}"
             + (f", rate-limited retries {_num(s.get('rate_limited_retries'))} (throttled, not failures)"
                if s.get("rate_limited_retries") else "")]
    throttled = throughput_line(res.run_dir)
    if throttled:
        lines.append("  " + throttled)
    lines += res.trust_info
    lines += kind_lines(s)
    rep = s.get("repeated_5xx")
    if _is_count(rep) and rep:
        if results.get("mode") == "holdout":
            tail = "the cases are holdout and sealed: do not open them; re-run only when the app is fixed"
        else:
            named = repeated_5xx_cases(res)
            tail = "open their response.json before re-running or raising --max-infra-rate"
            if named:
                tail += ": " + ", ".join(named[:MAX_NAMED])
        lines.append(f"  {rep} infra case(s) got the same 5xx on every attempt: possibly the app's own "
                     f"error, not the provider -- {tail}")
    lines.append(canary_line(res))
    holdout = s.get("holdout")
    if isinstance(holdout, dict) and _is_count(holdout.get("n")) and holdout["n"] > 0:
        p, f = holdout.get("passes"), holdout.get("failures")
        scored = p + f if _is_count(p) and _is_count(f) else holdout["n"]
        lines.append(f"  holdout (aggregate only): {_num(p)}/{scored} pass")
    unscorable = s.get("unscorable_layers")
    if isinstance(unscorable, dict) and unscorable:
        parts = []
        for layer, info in unscorable.items():
            info = info if isinstance(info, dict) else {}
            parts.append(f"{layer} ({_num(info.get('cases'))} cases: {info.get('blocked_by') or 'disabled'})")
        lines.append("  NOT scored this run: " + "; ".join(parts))
    unjudged = s.get("unjudged")
    if isinstance(unjudged, dict) and unjudged:
        lines.append("  judged layers: " + "; ".join(f"{why} x{_num(n)}" for why, n in unjudged.items()))
    lines.append(gate_rule_line(results))
    lines += judged_lines(s.get("judged"))
    if not res.verified:
        lines.append("  not verified: --no-verify skipped the completeness check (run_cases.py --verify)")
    lines += [f"  budget: {line}" for line in res.budget_lines]
    lines += [f"  gate closed: {why}" for why in res.reasons]
    return lines


def _kind_rate(block: dict) -> str:
    p, f = block.get("passes"), block.get("failures")
    if not (_is_count(p) and _is_count(f)):
        return "n/a"
    return f"{p}/{p + f} pass" + (f" ({p / (p + f) * 100:.1f}%)" if p + f else "")


def conversations_reason(summary: dict) -> str | None:
    """Conversations were sent and none was scored (pass or fail): a check that never ran, so the
    gate closes (e.g. a server-id adapter whose session_from never finds the id)."""
    conv = (summary.get("by_kind") or {}).get("conversation") if isinstance(summary.get("by_kind"), dict) else None
    if not isinstance(conv, dict) or not all(_is_count(conv.get(k)) for k in ("n", "skipped", "passes", "failures")):
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
    if not why and _is_count(conv.get("infra_errors")) and _is_count(conv.get("infra_incomplete")):
        infra = conv["infra_errors"] + conv["infra_incomplete"]
        if infra:  # the infra lines name them with their reasons; the session may be fine
            why = f"{infra} ended infra_error/infra_incomplete"
            look = "the reasons on the infra line(s) above"
    return (f"none of {sent} sent conversation(s) was scored (a check that never ran)"
            + (f": most common reason: {why}" if why else "") + f"; check {look}")


def kind_lines(summary: dict) -> list[str]:
    """Conversations apart from single-turn cases (summary.by_kind), and the memory: user warning."""
    kinds = summary.get("by_kind")
    if not isinstance(kinds, dict) or not isinstance(kinds.get("conversation"), dict):
        return []
    conv, single = kinds["conversation"], kinds.get("single_turn") if isinstance(kinds.get("single_turn"), dict) else {}
    line = f"  conversations: {_kind_rate(conv)} of {_num(conv.get('n'))}"
    failed = conv.get("failed_turns")
    if isinstance(failed, dict) and failed:
        line += " (failed at " + ", ".join(f"turn {t} x{n}" for t, n in failed.items()) + ")"
    if _is_count(conv.get("skipped")) and conv["skipped"]:
        line += f", {conv['skipped']} skipped"
    line += f"; single-turn: {_kind_rate(single)} of {_num(single.get('n'))}"
    out = [line]
    mu = conv.get("memory_user")
    if _is_count(mu) and mu:
        out.append(f"  warning: {mu} conversation(s) ran against an app declaring memory: user -- what one case "
                   "said can leak into another (contamination); read their verdicts with that in mind")
    return out


def _counts(block: dict) -> str:
    return ", ".join(f"{_num(block.get(v))} {v}" for v in ("pass", "fail", "unscored", "infra_error")
                     if block.get(v))


def judged_lines(judged: object) -> list[str]:
    """The judge's lines: what gated (calibrated rubric versions) and what did not (provisional), and why."""
    if not isinstance(judged, dict) or not _is_count(judged.get("cases")) or not judged["cases"]:
        return []
    cal = judged.get("calibrated") if isinstance(judged.get("calibrated"), dict) else {}
    prov = judged.get("provisional") if isinstance(judged.get("provisional"), dict) else {}
    n_cal = sum(v for v in cal.values() if _is_count(v))
    n_prov = sum(v for v in prov.values() if _is_count(v))
    out = []
    if n_cal:
        out.append(f"  judged (calibrated, gating): {n_cal} case(s): {_counts(cal)}")
    if n_prov:
        why = judged.get("provisional_why") if isinstance(judged.get("provisional_why"), dict) else {}
        reasons = "; ".join(f"{r} x{_num(n)}" for r, n in list(why.items())[:MAX_NAMED])
        out.append(f"  judged (provisional, never gating): {n_prov} case(s): {_counts(prov)} -- {reasons}")
    usage = judged.get("usage")
    if isinstance(usage, dict) and _is_count(usage.get("calls")) and usage["calls"]:
        if usage.get("calls_without_usage") == usage["calls"]:
            line = f"  judge usage: {usage['calls']} call(s); the judge reported no token usage"
        else:
            line = (f"  judge usage: {usage['calls']} call(s), {_num(usage.get('input_tokens'))} input + "
                    f"{_num(usage.get('output_tokens'))} output tokens")
            if usage.get("calls_without_usage"):
                line += f" ({usage['calls_without_usage']} call(s) reported no usage)"
        out.append(line)
    return out


# What each gate type means (the plan's `gate`, from the mode). Every type closes on the same
# reasons: there is no lenient gate. The type says what an OPEN gate is worth.
GATE_RULES = {
    "soft": "closes on the same reasons as a hard gate; open means no failure among these cases at k=1, "
            "not a release decision",
    "hard": "every gating case passed all k repeats (pass^k) over the full split; open is the release signal",
    "decision": "closes on the same reasons as a hard gate; the holdout aggregate decides keep or revert, "
                "never what to change next",
}


def gate_rule_line(results: dict) -> str:
    gate, mode, k = results.get("gate"), results.get("mode"), results.get("k")
    rule = GATE_RULES.get(str(gate))
    if rule is None:
        return f"  gate rule: {gate!r} is not soft, hard or decision; the close reasons above apply as listed"
    return f"  {gate} gate ({mode}, k={k}): {rule}"


def canary_line(res: GateResult) -> str:
    block = res.summary.get("canaries")
    if not isinstance(block, dict) or not _is_count(block.get("n")):
        return "  canaries n/a (no canaries block in results.json)"
    n, passed = block["n"], block.get("passed")
    line = f"  canaries {_num(passed)}/{n} pass"
    verify_ok = res.verify_clean is not False  # clean, or not run (--no-verify)
    if res.summary.get("status") == "ok" and verify_ok and _is_count(passed) and passed < n:
        failed = block.get("failed") if _is_count(block.get("failed")) else 0
        unverified = n - passed - failed
        if unverified > 0:
            line += (f"; {unverified} NOT VERIFIED (infra, unscored or skipped: the harness was not "
                     f"verified by it; not a canary failure)")
            named = unverified_canaries(res)
            if named:
                line += ": " + "; ".join(named)
    return line


def unverified_canaries(res: GateResult) -> list[str]:
    """`id (verdict: reason)` for each canary that got no pass/fail, so NOT VERIFIED says why."""
    named = []
    for row in res.results.get("cases") or []:
        if not (isinstance(row, dict) and row.get("canary")) or row.get("verdict") in ("pass", "fail"):
            continue
        doc = case_verdict(res.run_dir, str(row.get("case_id"))) or {}
        why = doc.get("infra_reason") or doc.get("unscored_reason") or doc.get("skip_reason") or "no reason recorded"
        why = " ".join(str(why).split())
        named.append(f"{row.get('case_id')} ({row.get('verdict')}: {why if len(why) <= 200 else why[:199] + '…'})")
        if len(named) >= MAX_NAMED:
            break
    return named


def to_json(res: GateResult) -> dict:
    s = res.summary
    keys = ("n", "attempted", "passes", "failures", "gating_failures", "unscored", "skipped",
            "infra_errors", "infra_incomplete", "infra_rate", "crash_rate", "scorer_errors", "repeated_5xx", "status")
    out = {k: s.get(k) for k in keys}
    out.update({"run_id": res.run_id, "run_dir": str(res.run_dir), "mode": res.results.get("mode"),
                "exit_code": res.results.get("exit_code"), "canaries": s.get("canaries"),
                "holdout": s.get("holdout"), "by_kind": s.get("by_kind"),
                "verified": res.verified, "verify_clean": res.verify_clean,
                "gate": "open" if res.open else "closed", "reasons": list(res.reasons),
                "budgets": list(res.budget_lines), "budget_sources": dict(res.budgets),
                "gate_rule": res.results.get("gate"),
                "counts": cases_phrase(s.get("n"), (s.get("canaries") or {}).get("n")
                                       if isinstance(s.get("canaries"), dict) else None)})
    if res.comparison:
        out["comparison"] = res.comparison.get("summary")
    return out
