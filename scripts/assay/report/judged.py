"""The report's judged section and the JUnit judged note: which judged verdicts gated
(calibrated rubric versions) and which did not (provisional), and why. Holdout cases never
appear (the caller passes non-holdout verdicts only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.case_read import read_case_json
from ..core.vocab import JUDGE_UNSTABLE
from ..core.writer import clip
from .mdtext import count, esc, plural

MAX_ROWS = 50


def judged_note(layer: Any) -> str | None:
    """One line for a case's judged layer, or None when the judge did not judge it."""
    if not isinstance(layer, dict) or not isinstance(layer.get("rubrics"), list):
        return None
    pins = ", ".join(str(r.get("pin")) for r in layer["rubrics"] if isinstance(r, dict))
    parts = []
    if any(isinstance(r, dict) and not r.get("provisional") for r in layer["rubrics"]):
        parts.append(f"{layer.get('verdict')} (calibrated, gates)")
    if any(isinstance(r, dict) and r.get("provisional") for r in layer["rubrics"]):
        whys = sorted({str(r.get("why_provisional")) for r in layer["rubrics"]
                       if isinstance(r, dict) and r.get("provisional")})
        parts.append(f"{layer.get('provisional_verdict')} (provisional, never gates: {'; '.join(whys)})")
    return f"judged {pins}: " + "; ".join(parts)


def _failing_nodes(run_dir: Path | None, cid: str) -> str:
    """`node: reason` of the nodes the judge failed, from the case's judge.json."""
    if run_dir is None:
        return ""
    doc = read_case_json(run_dir, cid, "judge.json")
    out = []
    for res in doc.get("rubrics") or [] if isinstance(doc, dict) else []:
        for node in (res.get("nodes") or []) if isinstance(res, dict) else []:
            if isinstance(node, dict) and node.get("verdict") in ("fail", "unknown", JUDGE_UNSTABLE):
                out.append(f"{node.get('node_id')} {node.get('verdict')}: {clip(node.get('reason') or '', 160)}")
    return "; ".join(out)


def judged_section(summary: dict, verdicts: dict[str, dict], manifest: dict | None,
                   run_dir: Path | None = None) -> list[str]:
    judged = summary.get("judged") if isinstance(summary.get("judged"), dict) else {}
    if not count(judged.get("cases")):
        return []
    usage = judged.get("usage") if isinstance(judged.get("usage"), dict) else {}
    cfg = (manifest or {}).get("judge") if isinstance((manifest or {}).get("judge"), dict) else {}
    who = " ".join(str(x) for x in (cfg.get("provider"), cfg.get("model") or " ".join(cfg.get("command") or []))
                   if x)
    cal = judged.get("calibrated") if isinstance(judged.get("calibrated"), dict) else {}
    prov = judged.get("provisional") if isinstance(judged.get("provisional"), dict) else {}
    calls, without = count(usage.get("calls")), count(usage.get("calls_without_usage"))
    if calls and without == calls:
        cost = "the judge reported no token usage"
    else:
        cost = (f"{count(usage.get('input_tokens'))} input + {count(usage.get('output_tokens'))} output tokens"
                + (f" ({without} call(s) reported no usage)" if without else ""))
    lines = ["## Judged (rubrics)", "",
             f"{plural(count(judged.get('cases')), 'case')} judged by `{esc(who or 'the judge')}`: "
             f"{plural(calls, 'call')}, {cost}.",
             f"Calibrated rubric versions gate ({_counts(cal)}); provisional ones are shown and never counted "
             f"({_counts(prov)}).", ""]
    why = judged.get("provisional_why") if isinstance(judged.get("provisional_why"), dict) else {}
    for reason, n in why.items():
        lines.append(f"- provisional: {esc(str(reason))} ×{count(n)}")
    if why:
        lines.append("")
    lines += instability_lines(judged)
    from ..stats.pairwise import pairwise_lines
    pairwise = [f"- {esc(line.strip())}" for line in pairwise_lines(judged)]
    if pairwise:   # win / tie / loss against the baseline, asked in both orders (judge_unstable: flipped)
        lines += pairwise + [""]
    rows = []
    for cid, doc in verdicts.items():
        layer = (doc.get("layers") or {}).get("judged") if isinstance(doc, dict) else None
        if not isinstance(layer, dict) or not isinstance(layer.get("rubrics"), list):
            continue
        pins = ", ".join(str(r.get("pin")) for r in layer["rubrics"] if isinstance(r, dict))
        gating = [r for r in layer["rubrics"] if isinstance(r, dict) and not r.get("provisional")]
        shown = str(layer.get("verdict")) if gating else f"{layer.get('provisional_verdict')} (provisional)"
        if layer.get("judge_unstable") is True:
            shown = f"{JUDGE_UNSTABLE} (unscored)"
        why = _failing_nodes(run_dir, cid) if len(rows) < MAX_ROWS else ""
        rows.append(f"| {esc(cid)} | {esc(shown)} | {'yes' if gating else 'no'} | {esc(pins)} | {esc(why)} |")
    if rows:
        lines += ["| case | judged | gates | rubric versions | nodes not passed |", "|---|---|---|---|---|"] + rows[:MAX_ROWS]
        if len(rows) > MAX_ROWS:
            lines.append(f"| … | {len(rows) - MAX_ROWS} more in the case directories (`judge.json`) | | | |")
        lines.append("")
    return lines


def instability_lines(judged: dict) -> list[str]:
    """The judge's instability per rubric version (judge.yaml `repeats`): how many node verdicts the
    judge gave differently when asked again, and the case count left unscored by it."""
    inst = judged.get("instability") if isinstance(judged.get("instability"), dict) else {}
    rows = []
    for pin, slot in inst.items():
        if not isinstance(slot, dict) or not count(slot.get("judged_nodes")):
            continue
        rate = slot.get("rate")
        pct = f"{rate * 100:.1f} %" if isinstance(rate, (int, float)) else "—"
        rows.append(f"| {esc(str(pin))} | {count(slot.get('judged_nodes'))} | {count(slot.get('unstable_nodes'))} | {pct} |")
    if not rows or not any(count(s.get("unstable_nodes")) for s in inst.values() if isinstance(s, dict)):
        return []
    return ([f"Judge instability: {plural(count(judged.get('unstable_cases')), 'case')} unscored because the "
             "judge answered differently when asked again (`judge_unstable`; not app failures).", "",
             "| rubric version | node verdicts | unstable | instability rate |", "|---|---|---|---|"]
            + rows + [""])


def _counts(block: dict) -> str:
    shown = [f"{count(block.get(v))} {v}" for v in ("pass", "fail", "unscored", "infra_error", JUDGE_UNSTABLE)
             if count(block.get(v))]
    return ", ".join(shown) or "none"
