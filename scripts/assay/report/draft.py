"""draft_report: every numeric section of report.md, derived only from the run's files.

The agent adds only the top-3 failure clusters, in the marked slot at the top
(CLUSTERS_BEGIN ... CLUSTERS_END). Counts are read from results.json, never recounted
(contracts §5.8): the pass rate is passes / (passes + failures). Holdout cases are
aggregate-only: RunFacts drops their rows, and `draft()` refuses to return text that
contains a sealed id (a defence in depth, not the mechanism).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import AssayError
from .cost_section import cost_section
from ..core.vocab import EXIT_MEANINGS, LAYER_ORDER
from ..stats.counts import cases_phrase
from .clusters import build_clusters, clusters_markdown
from .facts import RunFacts, load_facts
from .gate import GateResult
from .judged import judged_section
from .mdtext import code, count, esc, pct, plural
from .redact import pii_flag, redact
from .throughput import throughput_line
from .sections import comparison_section, failure_excerpts, reliability_section, routing_section
from .target import OPEN_WORD, TITLE, report_subject

CLUSTERS_BEGIN = "<!-- assay:clusters -->"
CLUSTERS_END = "<!-- /assay:clusters -->"
# Text an agent was asked to replace; md_to_html.py refuses a report.md that still holds it.
PLACEHOLDER_MARK = "TODO(agent)"
LAYER_COLUMNS = ("pass", "fail", "n/a", "unscorable", "unscored", "error", "infra_error", "infra_incomplete")


@dataclass
class Draft:
    markdown: str
    quotable: bool
    redactions: int
    may_contain_pii: bool | None
    excerpts: int


class _Redactor:
    def __init__(self, active: bool) -> None:
        self.active, self.count = active, 0

    def __call__(self, text: str) -> str:
        if not self.active:
            return text
        out, n = redact(text)
        self.count += n
        return out


def _facts_line(facts: RunFacts) -> str:
    r = facts.results
    parts = [f"mode {esc(r.get('mode'))}", f"gate {esc(r.get('gate'))}", f"k={esc(r.get('k'))}",
             f"dataset v{esc(r.get('dataset_version'))}", f"harness {esc(r.get('harness_version'))}",
             f"status {esc(facts.summary.get('status'))}", f"runner exit {esc(r.get('exit_code'))}"]
    if r.get("started_at"):
        parts.append(f"{_short_ts(r.get('started_at'))} → {_short_ts(r.get('finished_at'))}")
    return "*" + " · ".join(parts) + "*"


def _short_ts(value: object) -> str:
    """`2026-11-29T10:15:00.000000Z` -> `2026-11-29 10:15:00Z` (seconds are enough in a report)."""
    text = str(value or "?")
    m = re.match(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z?$", text)
    return f"{m.group(1)} {m.group(2)}Z" if m else esc(text)


def verdict_banner(facts: RunFacts, g: GateResult, gate_flags: str = "") -> list[str]:
    """PASS or FAIL at a glance: the one decision (`assay.verdict.decide`, as `gate.py RUN_DIR <gate_flags>`
    decides, handed in by draft_report.py), the gate type and what it means, every close reason, the
    gate's lines an open gate must not hide, and the gate.py flags the decision reflects."""
    from .gate_judge import provisional_fail_line
    from .gate_lines import counts_line, gate_rule_line, infra_under_bar_line

    word = OPEN_WORD if g.open else "FAIL · gate closed"
    rule = gate_rule_line(facts.results).strip()
    out = [f"> **{word}** · {esc(counts_line(facts.summary))}", ">"]
    # what gate.py prints beside an open gate and a report must not hide: unmeasured infra cases, a judge's fail
    notes = [line.strip() for line in [infra_under_bar_line(g) or ""] + provisional_fail_line(g.run_dir, g.results)
             if line.strip()]
    if notes:
        out += [f"> - {esc(line)}" for line in notes] + [">"]
    # the run's own trust lines first: --allow-invalid and what it overrode, undeclared tools
    out += [f"> {'' if line.startswith('  ') and not line.startswith('    ') else '- '}{esc(line.strip())}"
            for line in g.trust_head + g.trust_info] + ([">"] if g.trust_head or g.trust_info else [])
    out += [f"> - {esc(why)}" for why in g.reasons]
    if g.reasons:
        out.append(">")
    command = " ".join(["gate.py <run dir>"] + ([gate_flags] if gate_flags else []))
    how = (f"Decided as `{command}` decides" + ("" if gate_flags else " (its default flags)")
           + ("" if g.verified else ", without the completeness re-check"))
    out.append(f"> *{esc(rule)}. {how}; a gate given other flags may decide otherwise (draft the report with "
               "the flags your CI gate is given).*")
    return out + [""]


def headline(facts: RunFacts) -> str:
    """The key figures in one line, so the page says where the run stands before any detail."""
    s = facts.summary
    passes, failures = count(s.get("passes")), count(s.get("failures"))
    rate = f"**Pass rate {passes}/{passes + failures} ({pct(passes, passes + failures)})**" if passes + failures \
        else "**Pass rate: not measurable**"
    canaries = s.get("canaries") if isinstance(s.get("canaries"), dict) else {}
    parts = [rate, f"**{plural(count(s.get('gating_failures')), 'gating failure')}**",
             f"{count(s.get('skipped'))} skipped", f"{count(s.get('unscored'))} unscored",
             f"{count(s.get('infra_errors')) + count(s.get('infra_incomplete'))} infra"]
    if count(canaries.get("n")):
        parts.append(f"canaries {count(canaries.get('passed'))}/{count(canaries.get('n'))}")
    return " · ".join(parts)


def _not_quotable(facts: RunFacts) -> list[str] | None:
    s, code_ = facts.summary, facts.results.get("exit_code")
    if s.get("status") == "ok" and code_ in (0, 7, None):
        return None
    meaning = EXIT_MEANINGS.get(code_, "unknown exit code") if isinstance(code_, int) else "no exit code"
    if s.get("status") == "stopped_fail_fast" and code_ == 0:   # exit 0, yet not "complete": the rest never ran
        stopped = facts.results.get("stopped_early") if isinstance(facts.results.get("stopped_early"), dict) else {}
        meaning = f"stopped early by --fail-fast {stopped.get('fail_fast', '')}".rstrip() + "; not a whole run"
    out = ["> **Not quotable.** This run ended with status "
           f"`{esc(s.get('status'))}` (runner exit {esc(code_)}: {esc(meaning)}). "
           "Quote no pass rate from it and do not pin it as a baseline."]
    if code_ == 4 or s.get("status") == "aborted_canary":
        from .gate_reasons import canary_failures
        why = canary_failures(facts.run_dir, facts.results)
        out.append("> A canary failed, so the run stopped: " + ("; ".join(esc(w) for w in why) or
                   "see verdicts.jsonl") + ". Fix that (an HTTP 401/403 is authentication, anything else is "
                   "harness or app drift), then start a new run id.")
    missing = s.get("missing_artifacts")
    if missing:
        out.append("> Missing or inconsistent artifacts: " + ", ".join(code(m) for m in missing[:10]) + ".")
    return out + [""]


def counts_section(facts: RunFacts) -> list[str]:
    s = facts.summary
    n, passes, failures = count(s.get("n")), count(s.get("passes")), count(s.get("failures"))
    gating, skipped, unscored = count(s.get("gating_failures")), count(s.get("skipped")), count(s.get("unscored"))
    infra = count(s.get("infra_errors")) + count(s.get("infra_incomplete"))
    canaries = s.get("canaries") if isinstance(s.get("canaries"), dict) else {}
    c_n = count(canaries.get("n"))
    sentence = f"{cases_phrase(n, c_n)} ran; {failures} failed, {skipped} skipped"
    extras = [f"{unscored} unscored"] if unscored else []
    if infra:
        extras.append(f"{infra} got no answer (infra)")
    sentence += (", " + ", ".join(extras) if extras else "") + "."
    throttled = throughput_line(facts.run_dir)
    if throttled:
        sentence += " The app " + throttled.removeprefix("throttled by the app: ").join(("throttled the run (", ")."))
    holdout = s.get("holdout") if isinstance(s.get("holdout"), dict) else {}
    if count(holdout.get("n")):
        sentence += f" The {n} cases include {count(holdout.get('n'))} holdout (aggregate only, below)."
    out = ["## Counts", "", sentence, ""]
    denominator = passes + failures
    if denominator:
        out.append(f"**Pass rate {passes}/{denominator} = {pct(passes, denominator)}** (passes ÷ (passes + failures); "
                   "skipped, unscored and infra cases are in no denominator).")
    else:
        out.append("**Pass rate: not measurable**: 0 passes + 0 failures, so nothing was scored. That is not a pass.")
    out.append("")
    if gating == 0:
        out.append(f"**0 gating failures (n={n}).**")
    else:
        out.append(f"**{plural(gating, 'gating failure')}**: they close the gate.")
    soft = [r for r in facts.rows if r.get("verdict") == "fail" and r.get("gating") is False and not r.get("canary")]
    soft_n = failures - gating
    if soft_n > 0:
        ids = ", ".join(code(r["case_id"]) for r in soft)
        out.append(f"{plural(soft_n, 'failure')} on `gating: false` cases ({ids or 'holdout, sealed'}): reported here, "
                   "and they do not close the gate.")
    out.append("")
    out.append(f"- Unscored: {unscored} · Skipped: {skipped} · Infra: {count(s.get('infra_errors'))} errors, "
               f"{count(s.get('infra_incomplete'))} incomplete (infra rate {pct(s.get('infra_rate'))}, "
               f"crash rate {pct(s.get('crash_rate'))}) · Scorer errors: {count(s.get('scorer_errors'))}.")
    unscorable = s.get("unscorable_layers") if isinstance(s.get("unscorable_layers"), dict) else {}
    if unscorable:
        parts = [f"{code(layer)} on {count((info or {}).get('cases'))} cases ({esc((info or {}).get('blocked_by') or 'disabled')})"
                 for layer, info in unscorable.items()]
        out.append("- Unscorable layers: " + "; ".join(parts) + ".")
    else:
        out.append("- Unscorable layers: none.")
    if c_n:
        passed, failed = count(canaries.get("passed")), count(canaries.get("failed"))
        nv = c_n - passed - failed
        line = f"- Canaries (counted apart): {passed}/{c_n} passed"
        if nv > 0:
            line += f"; {nv} NOT VERIFIED (no verdict: the harness was not verified by it, which is not a canary failure)"
        out.append(line + ".")
    out += conversation_lines(s)
    rep = count(s.get("repeated_5xx"))
    if rep:
        out.append(f"- {plural(rep, 'infra case')} got the same 5xx on every attempt: possibly the app's own error, "
                   "not the provider (see `gate.py`'s line and the case's `response.json`).")
    return out + [""]


def layer_section(facts: RunFacts) -> list[str]:
    layers = facts.summary.get("layers") if isinstance(facts.summary.get("layers"), dict) else {}
    out = ["## Results by layer", "",
           "Non-canary cases. Pass rate per layer is pass ÷ (pass + fail); `n/a` means the case asserts nothing there.", "",
           "| layer | pass | fail | pass rate | n/a | unscorable | unscored | error | infra |",
           "|:---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    folded = []
    for name in list(LAYER_ORDER) + sorted(set(layers) - set(LAYER_ORDER)):
        row = layers.get(name) if isinstance(layers.get(name), dict) else {}
        if not any(count(v) for k, v in row.items() if k != "n/a"):
            folded.append(name)  # asserted by no case: one line below, not a row of zeros
            continue
        p, f = count(row.get("pass")), count(row.get("fail"))
        cells = [f"✅ {p}" if p else "0", f"❌ {f}" if f else "0", pct(p, p + f) if p + f else "–",
                 str(count(row.get("n/a"))), str(count(row.get("unscorable"))), str(count(row.get("unscored"))),
                 str(count(row.get("error"))), str(count(row.get("infra_error")) + count(row.get("infra_incomplete")))]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    if folded:
        out += ["", "Not asserted by any case (`n/a` in every case): " + ", ".join(code(n) for n in folded) + "."]
    return out + [""]


def holdout_section(facts: RunFacts) -> list[str]:
    h = facts.summary.get("holdout")
    if not isinstance(h, dict) or not count(h.get("n")):
        return []
    p, f = count(h.get("passes")), count(h.get("failures"))
    rate = f"Pass rate {p}/{p + f} = {pct(p, p + f)}." if p + f else "Pass rate: not measurable (nothing scored)."
    return ["## Holdout (aggregate only)", "",
            f"{plural(count(h.get('n')), 'holdout case')}: {p} pass, {f} fail ({count(h.get('gating_failures'))} gating), "
            f"{count(h.get('unscored'))} unscored, {count(h.get('skipped'))} skipped, "
            f"{count(h.get('infra_errors')) + count(h.get('infra_incomplete'))} infra. {rate}",
            "", "Holdout case ids and answers are sealed: this report never names or quotes them.", ""]


def not_measured_section(facts: RunFacts) -> list[str]:
    layers = facts.summary.get("layers") if isinstance(facts.summary.get("layers"), dict) else {}

    def asked(name: str) -> int:
        row = layers.get(name) if isinstance(layers.get(name), dict) else {}
        return sum(count(v) for k, v in row.items() if k != "n/a")

    unjudged = facts.summary.get("unjudged") if isinstance(facts.summary.get("unjudged"), dict) else {}
    why = "; ".join(f"{esc(reason)} ×{count(n)}" for reason, n in unjudged.items())
    judged = facts.summary.get("judged") if isinstance(facts.summary.get("judged"), dict) else {}
    out = ["## Not measured in this run", ""]
    if not count(judged.get("cases")):
        out += [f"- **Judged layer** (`expect.answer.rubric`, {plural(asked('judged'), 'case')}): not measured in this run"
                + (f" (runner: {why})." if why else "."),
                "- The judge runs when `judge/judge.yaml` exists: in regression and holdout runs, and in smoke or "
                "targeted runs made with `make_plan.py --judge`."]
    return out + [f"- **Business rules** (`expect.answer.rules`, {plural(asked('rules'), 'case')}): not measured in "
                  "this run.", "- No step scores business rules today.", ""]


def redaction_line(flag: bool | None, source: str, redactions: int, excerpts: int) -> list[str]:
    out = ["## Redaction", ""]
    if flag is False:
        out.append(f"`data.may_contain_pii` is false (from {source}): excerpts are quoted as the app returned them.")
    else:
        why = (f"`data.may_contain_pii` is true (from {source})" if flag
               else f"`data.may_contain_pii` was not found ({source}), so excerpts were redacted as if it were true")
        out.append(f"{why}: redaction pass, {plural(redactions, 'redaction')} over {plural(excerpts, 'excerpted case')} "
                   "(emails, phone numbers, long digit runs).")
    return out + [""]


def conversation_lines(s: dict) -> list[str]:
    """Conversations counted apart from single-turn cases (summary.by_kind), and the memory: user warning."""
    kinds = s.get("by_kind") if isinstance(s.get("by_kind"), dict) else {}
    conv, single = kinds.get("conversation"), kinds.get("single_turn")
    if not isinstance(conv, dict) or not isinstance(single, dict):
        return []

    def rate(block: dict) -> str:
        p, f = count(block.get("passes")), count(block.get("failures"))
        return f"{p}/{p + f} = {pct(p, p + f)}" if p + f else "not measurable (0 scored)"
    line = (f"- Conversations (each one case; turns are never pooled): pass rate {rate(conv)} of "
            f"{plural(count(conv.get('n')), 'conversation')}")
    failed = conv.get("failed_turns") if isinstance(conv.get("failed_turns"), dict) else {}
    if failed:
        line += " (stopped at " + ", ".join(f"turn {esc(t)}: {count(n)}" for t, n in failed.items()) + ")"
    out = [line + f"; single-turn cases: pass rate {rate(single)} of {count(single.get('n'))}."]
    mu = count(conv.get("memory_user"))
    if mu:
        out.append(f"- **Contamination warning:** the adapter declares `memory: user`, so the app may carry what one "
                   f"case said into another; {plural(mu, 'conversation')} ran under it.")
    return out


SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)


def draft(run_dir: Path, *, decision: GateResult, comparison: list[str] | None = None,
          gate_flags: str = "") -> Draft:
    """The report draft. A run file edited into a shape the runner never writes (a list where
    an object belongs, a string for a count) is exit 2 naming what `run_cases.py --verify`
    finds, never a traceback."""
    try:
        return _draft(run_dir, decision, comparison, gate_flags)
    except SHAPE_ERRORS as exc:
        from .gate_reasons import run_verify
        clean, detail = run_verify(Path(run_dir))
        why = detail if not clean else f"a run-level report or a case file holds a value of the wrong type ({type(exc).__name__}: {exc})"
        raise AssayError(f"{run_dir}: not drafted: a file is not in the shape the runner writes: {why}. "
                         "Restore it, or re-run (--resume redoes unfinished cases).", 2, path=str(run_dir)) from None


def _draft(run_dir: Path, decision: GateResult, comparison: list[str] | None = None, gate_flags: str = "") -> Draft:
    facts = load_facts(Path(run_dir))
    flag, source = pii_flag(facts.run_dir, facts.manifest, facts.run_id)
    redactor = _Redactor(flag is not False)
    s = facts.summary
    banner = _not_quotable(facts)
    gating, n = count(s.get("gating_failures")), count(s.get("n"))
    lines = [f"{TITLE}{esc(report_subject(facts))}", ""] + verdict_banner(facts, decision, gate_flags) + [_facts_line(facts), ""]
    if banner:
        lines += banner
    else:
        lines += [headline(facts), ""]
    if count(s.get("failures")) == 0:
        slot = [f"No failure clusters: 0 gating failures (n={n}), and no other case failed."]
    else:
        # the clusters quote the same cases as the excerpts: redacted alike, counted once (in the excerpts)
        doc = {"failing_cases": 0, "clusters": build_clusters(
            facts, lambda text: redact(text)[0] if redactor.active and text else text)}
        doc["failing_cases"] = len({cid for c in doc["clusters"] for cid in c["case_ids"]})
        slot = clusters_markdown(doc, run_dir=facts.run_dir)
        if not doc["clusters"]:
            slot = [f"{plural(count(s.get('failures')), 'failure')}, all on holdout cases: aggregate only, "
                    "never clustered by name."]
    lines += [CLUSTERS_BEGIN, "## Top failure clusters", ""] + slot + ["", CLUSTERS_END, ""]
    excerpts = failure_excerpts(facts, redactor)
    lines += excerpts
    lines += counts_section(facts)
    lines += layer_section(facts)
    lines += routing_section(facts)
    lines += reliability_section(facts)
    # --baseline: the comparison's own section (assay.compare.report_section), else comparison.json's
    lines += comparison if comparison is not None else comparison_section(facts)
    lines += holdout_section(facts)
    lines += judged_section(facts.summary, facts.verdicts, facts.manifest, facts.run_dir)
    lines += not_measured_section(facts)
    lines += cost_section(facts.run_dir)
    n_excerpts = sum(1 for line in excerpts if line.startswith("### "))
    lines += redaction_line(flag, source, redactor.count, n_excerpts)
    lines += ["---", "", "*Drafted by `draft_report.py` from `results.json`, `verdicts.jsonl`, the case directories "
              "and the run-level reports of this run directory; every number above is theirs.*", ""]
    text = "\n".join(lines)
    leaked = sorted(cid for cid in facts.sealed if re.search(rf"(?<![\w.-]){re.escape(cid)}(?![\w.-])", text))
    if leaked:  # a bug upstream; never write it
        raise AssayError(f"internal: the draft would name {len(leaked)} holdout case id(s); refusing to write it", 1)
    return Draft(markdown=text, quotable=banner is None, redactions=redactor.count, may_contain_pii=flag,
                 excerpts=n_excerpts)
