"""Failure clusters: failing non-holdout cases grouped by (layer, normalized reason) (wave 2 §6).

`cluster_failures(run_dir)` returns the JSON `cluster_failures.py` prints; `clusters_markdown`
renders it for the report's clusters slot (draft_report fills the slot from it when no agent
wrote one). A case that fails on two layers is in two clusters (one per failing layer), so
cluster counts can add up to more than the failing cases; `failing_cases` is the distinct count.

The reason is normalized so that the same mistake on different data falls together: numbers
become `<n>`, long hex runs `<hex>`, quoted free text stays only where it is a label (a route,
a tool name, a check name). Holdout cases never appear (RunFacts drops them); their failures
are counted in `holdout_failures` only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.jsonio import loads
from ..core.vocab import FAIL, LAYER_ORDER
from ..core.writer import clip
from .facts import RunFacts, case_link, load_facts, read_case_file
from .mdtext import code, count, esc, fenced, plural
from .redact import pii_flag, redact
from .failwords import check_label, judged_failures, judged_words
from .sections import EXPECT_KEYS, describe_layer

EXEMPLARS = 2
MAX_REASON_CHARS = 160
MAX_TEXT_CHARS = 300

_HEX = re.compile(r"\b[0-9a-f]{8,}\b", re.I)
_NUM = re.compile(r"(?<![A-Za-z_])-?\d+(?:\.\d+)?")


def normalize(text: str) -> str:
    """Collapse the data out of a reason: numbers -> <n>, hex ids -> <hex>, whitespace to one space."""
    text = _HEX.sub("<hex>", str(text))
    text = _NUM.sub("<n>", text)
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def failure_reason(layer: str, entry: Mapping[str, Any], judged: list[dict] | None = None) -> str:
    """The normalized reason a layer failed, in the layer's own terms. Pure. `judged`: the case's
    failed criteria (failwords.judged_failures): a judged cluster is one failed criterion."""
    if layer == "judged" and entry.get("verdict") == FAIL:
        if judged:
            return normalize("; ".join(f"{f['pin']} {f['node_id']}: {f['criterion']}" for f in judged))
        return normalize(judged_words(entry, []))
    if layer == "routing" and "observed" in entry:
        return f"expected {entry.get('expected')!s}, observed {entry.get('observed')!s}"
    if layer == "http" and "status" in entry:
        return f"expected {entry.get('expected_status') or 'any 2xx'}, got HTTP {entry.get('status')}"
    checks = entry.get("checks")
    if isinstance(checks, list) and checks:
        failed = [c for c in checks if isinstance(c, Mapping) and c.get("status") == FAIL]
        if failed:
            return normalize("; ".join(f"{check_label(c)}: {c.get('reason') or 'failed'}" for c in failed))
    diff = entry.get("diff")
    if layer == "execution" and isinstance(diff, Mapping):
        return normalize(str(diff.get("summary") or "wrong result"))
    for key in ("failures", "findings"):
        items = entry.get(key)
        if isinstance(items, list) and items:
            texts = [i if isinstance(i, str) else (i.get("message") if isinstance(i, Mapping) else None) for i in items]
            texts = [t for t in texts if t]
            if texts:
                return normalize("; ".join(texts))
    if entry.get("reason"):
        return normalize(str(entry["reason"]))
    return normalize(describe_layer(layer, dict(entry)))


def _clip(text: str | None) -> str | None:
    if text is None:
        return None
    return clip(" ".join(text.split()), MAX_TEXT_CHARS + 2, ellipsis=" …")


def _expected(run_dir: Path, case_id: str, layer: str) -> Any:
    try:
        expect = loads(read_case_file(run_dir, case_id, "expect.json") or "null")
    except ValueError:
        return None
    if not isinstance(expect, dict):
        return None
    picked = {k: expect[k] for k in EXPECT_KEYS.get(layer, (layer,)) if k in expect}
    return picked or None


def build_clusters(facts: RunFacts, scrub: Callable[[str], str] = lambda t: t) -> list[dict[str, Any]]:
    """Clusters over the run's failing non-holdout, non-canary cases; largest first, then layer order."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for row in facts.rows:
        if row.get("verdict") != FAIL or row.get("canary"):
            continue
        cid = row["case_id"]
        doc = facts.verdicts.get(cid) or {}
        layers = doc.get("layers") or {}
        for layer in [n for n in layers if (layers.get(n) or {}).get("verdict") == FAIL] or \
                [k for k, v in (row.get("layers") or {}).items() if v == FAIL]:
            entry = layers.get(layer) if isinstance(layers.get(layer), dict) else {}
            judged = judged_failures(facts.run_dir, cid) if layer == "judged" else None
            reason = failure_reason(layer, entry, judged)
            group = groups.setdefault((layer, reason), {"layer": layer, "reason": reason, "count": 0,
                                                        "gating": 0, "case_ids": [], "exemplars": []})
            group["count"] += 1
            group["gating"] += 1 if row.get("gating", True) is not False else 0
            group["case_ids"].append(cid)
            if len(group["exemplars"]) < EXEMPLARS:
                answer = read_case_file(facts.run_dir, cid, "answer.txt")
                group["exemplars"].append({
                    "case_id": cid, "title": doc.get("title"),
                    "input": scrub(_clip(doc.get("input_text")) or "") or None,
                    "expected": _expected(facts.run_dir, cid, layer),
                    "detail": scrub(describe_layer(layer, dict(entry), judged)),
                    "answer": scrub(_clip(answer) or "") or None,
                })
    order = {name: i for i, name in enumerate(LAYER_ORDER)}
    return sorted(groups.values(), key=lambda g: (-g["count"], order.get(g["layer"], len(order)), g["reason"]))


def cluster_failures(run_dir: Path) -> dict[str, Any]:
    """The cluster_failures.py document for one finished run."""
    facts = load_facts(Path(run_dir))
    flag, _ = pii_flag(facts.run_dir, facts.manifest, facts.run_id)

    def scrub(text: str) -> str:
        return redact(text)[0] if flag is not False and text else text

    clusters = build_clusters(facts, scrub)
    failing = sorted({cid for c in clusters for cid in c["case_ids"]})
    holdout = facts.summary.get("holdout") if isinstance(facts.summary.get("holdout"), dict) else {}
    doc = {"run_id": facts.run_id, "run_dir": str(facts.run_dir), "status": facts.summary.get("status"),
           "failing_cases": len(failing), "holdout_failures": count(holdout.get("failures")),
           "redacted": flag is not False, "clusters": clusters}
    unfinished = unfinished_run(facts)
    if unfinished:
        doc["incomplete"] = unfinished
    return doc


def unfinished_run(facts: RunFacts) -> str | None:
    """Why the clusters do not cover the suite, for a run that ended other than `ok` (aborted by
    infra or a canary, stopped by --fail-fast, incomplete artifacts): its failures are only those of
    the cases that finished, so "0 failing cases" there is no news that nothing fails."""
    from ..core.vocab import EXIT_MEANINGS
    from ..stats.counts import cases_phrase

    s, code_ = facts.summary, facts.results.get("exit_code")
    if s.get("status") == "ok" and code_ in (0, 7, None):
        return None
    meaning = EXIT_MEANINGS.get(code_, "unknown exit code") if isinstance(code_, int) else "no exit code"
    planned = (facts.manifest or {}).get("cases")
    canaries = s.get("canaries") if isinstance(s.get("canaries"), dict) else {}
    done = cases_phrase(count(s.get("n")), count(canaries.get("n"))) + " finished"
    if isinstance(planned, list):
        n_can = sum(1 for c in planned if isinstance(c, dict) and c.get("set") == "canary")
        done += f" of {cases_phrase(len(planned) - n_can, n_can)} planned"
    return (f"the run ended with status {s.get('status')!r} (runner exit {code_}: {meaning}); {done}, "
            "so these clusters cover only the cases that finished, not the suite: fix what stopped it and "
            "cluster a run that ends 'ok'")


def clusters_markdown(doc: Mapping[str, Any], top: int = 3, run_dir: Path | None = None) -> list[str]:
    """The report's clusters slot, drafted from cluster_failures (an agent may rewrite it)."""
    clusters = list(doc.get("clusters") or [])
    if not clusters:
        return ["No non-holdout case failed."]
    out = [f"{plural(count(doc.get('failing_cases')), 'failing case')} in {plural(len(clusters), 'cluster')} "
           "by (layer, reason), drafted by `cluster_failures.py` (largest first"
           + (f"; the top {top} are shown" if len(clusters) > top else "") + "):", ""]
    for i, c in enumerate(clusters[:top], 1):
        ids = ", ".join(case_link(cid, run_dir) for cid in c["case_ids"])
        out += [f"**{i}. {esc(c['layer'])}**: {code(c['reason'])} ({plural(c['count'], 'case')}: {ids})", ""]
        for ex in c["exemplars"]:
            rows = [("input", ex.get("input"))]
            if ex.get("expected") is not None:
                rows.append(("expected", json.dumps(ex["expected"], ensure_ascii=False, sort_keys=True)))
            rows += [(c["layer"], ex.get("detail")), ("actual", ex.get("answer"))]
            rows = [(k, v) for k, v in rows if v]
            width = max(len(k) for k, _ in rows) + 1
            title = f" ({esc(ex['title'])})" if ex.get("title") else ""
            out += [f"{case_link(ex['case_id'], run_dir)}{title}:", "",
                    fenced("\n".join(f"{k + ':':<{width}} {v}" for k, v in rows)), ""]
    rest = len(clusters) - top
    if rest > 0:
        out += [f"{plural(rest, 'more cluster')}: `cluster_failures.py` on this run directory lists them all.", ""]
    return out
