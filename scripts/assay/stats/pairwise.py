"""`summary.judged.pairwise`: per pairwise rubric pin, how the candidate's answers fared against the
baseline's -- win / tie / loss (both orders agreeing), judge_unstable (the verdict flipped with the
order), unscored -- and the paired statistics over wins and losses (ties carry no direction), with
the same exact functions as the pass/fail comparison (assay.stats.paired)."""

from __future__ import annotations

from typing import Any

from ..core.vocab import JUDGE_UNSTABLE

COUNTED = ("win", "tie", "loss", JUDGE_UNSTABLE, "unscored")


def pairwise_summary(records: list[dict]) -> dict[str, Any] | None:
    """{pin: {win, tie, loss, judge_unstable, unscored, provisional, baseline_run_ids, paired}} or None."""
    fold = PairwiseFold()
    for i, r in enumerate(records):
        fold.add(i, r)
    return fold.result()


class PairwiseFold:
    """pairwise_summary() one record at a time, in any order (`index`: its position, so
    `baseline_run_ids` lists the runs in the order first seen)."""

    def __init__(self) -> None:
        self.blocks: dict[str, dict[str, Any]] = {}
        self.bases: dict[str, list[list]] = {}   # pin -> [[first index, baseline run id], ...]

    def add(self, index: int, r: Any) -> None:
        entry = (r.get("layers") or {}).get("judged") if isinstance(r.get("layers"), dict) else None
        if r.get("canary") or not isinstance(entry, dict) or not isinstance(entry.get("rubrics"), list):
            return
        for x in entry["rubrics"]:
            if not isinstance(x, dict) or x.get("kind") != "pairwise":
                continue
            pin = str(x.get("pin"))
            block = self.blocks.setdefault(pin, {**{k: 0 for k in COUNTED}, "provisional": False})
            seen = self.bases.setdefault(pin, [])
            outcome = x.get("outcome") if x.get("outcome") in COUNTED else "unscored"
            block[outcome] += 1
            block["provisional"] = block["provisional"] or bool(x.get("provisional"))
            base = x.get("baseline_run_id")
            if base:
                slot = next((pair for pair in seen if pair[1] == base), None)
                if slot is None:
                    seen.append([index, base])
                elif index < slot[0]:
                    slot[0] = index

    def result(self) -> dict[str, Any] | None:
        out: dict[str, dict[str, Any]] = {}
        for pin, counts in self.blocks.items():
            block = dict(counts)
            block["baseline_run_ids"] = [base for _i, base in sorted(self.bases.get(pin) or [], key=lambda p: p[0])]
            w, lo = block["win"], block["loss"]
            # the exact tests (and stats.power/binomial under them) only for a run with pairwise
            # rubrics: every run folds its records here, most have none (bench/startup.py)
            from .paired import mcnemar_exact_two_sided, posterior_better, sign_test_one_sided
            block["paired"] = {"n": w + block["tie"] + lo, "discordant": w + lo,
                               "posterior_better": round(posterior_better(w, lo), 6),
                               "sign_test_p": round(sign_test_one_sided(w, lo), 6),
                               "mcnemar_p": round(mcnemar_exact_two_sided(w, lo), 6)}
            out[pin] = block
        return out or None


def pairwise_lines(judged: Any) -> list[str]:
    """The gate's and report's lines: `pairwise <pin> vs <run>: 3 win, 1 tie, 0 loss, 1 judge_unstable ...`."""
    blocks = judged.get("pairwise") if isinstance(judged, dict) and isinstance(judged.get("pairwise"), dict) else {}
    lines = []
    for pin, b in sorted(blocks.items()):
        if not isinstance(b, dict):
            continue
        gates = " (provisional, never gating)" if b.get("provisional") else " (calibrated, gating)"
        if not b.get("baseline_run_ids"):
            lines.append(f"  pairwise {pin}: not compared, no baseline run (run_cases.py --baseline RUN|auto): "
                         f"{b.get('unscored', 0)} case(s) unscored{gates}")
            continue
        vs = ", ".join(str(x) for x in b["baseline_run_ids"])
        p = b.get("paired") if isinstance(b.get("paired"), dict) else {}
        line = (f"  pairwise {pin} vs {vs}: {b.get('win', 0)} win, {b.get('tie', 0)} tie, {b.get('loss', 0)} loss"
                + (f", {b[JUDGE_UNSTABLE]} judge_unstable (flipped with the order)" if b.get(JUDGE_UNSTABLE) else "")
                + (f", {b['unscored']} unscored" if b.get("unscored") else ""))
        if p.get("discordant"):
            line += (f"; P(candidate better) {p.get('posterior_better')}, one-sided sign test p "
                     f"{p.get('sign_test_p')}, McNemar p {p.get('mcnemar_p')}")
        lines.append(line + gates)
    return lines
