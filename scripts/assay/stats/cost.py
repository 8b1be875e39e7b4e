"""Cost and latency of a run, from what the runner stored: trajectory.json's model calls and
verdict.json's latency. Never from the app again, never guessed.

Tokens: each model call's `input_tokens` / `output_tokens` (the GenAI usage attributes the
runner normalized into trajectory.json; a conversation counts every sent turn's
`turns/<n>/trajectory.json`). The runner keeps one trace per case, the deciding repeat's:
with k > 1 the totals are of that repeat, and `totals.k_note` says the run's spend was
about k times them. Price: the
prices file (`<state>/prices.yaml`):

    currency: USD
    per: 1000000            # the prices below are per this many tokens
    models:
      gpt-4.1-mini: {input: 0.40, output: 1.60}

A model the file does not name is listed in `unpriced_models` and its case has no cost
(null, never 0); run totals then say `complete: false`. Latency: end to end per case
(the runner's measured latency) and in model calls (the sum of their span durations).
Holdout cases count in the totals but are never listed.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterable

from ..core import casestore
from ..core.jsonio import loads
from ..core.errors import AssayError
from .judge_cost import judge_model_of, judge_row, judge_totals, token_count as _num
from .latency import repeat_latencies, stats as _stats


PRICES_FILE = "prices.yaml"

PRICES_KEYS = ("currency", "per", "models")
DEFAULT_PER = 1_000_000  # prices are per million tokens unless `per` says otherwise


def load_prices(path: Path, label: str | None = None) -> dict:
    from ..core.strict_yaml import load

    label = label or str(path)
    if not Path(path).is_file():
        raise AssayError(f"{label}: prices file not found; write one (see `score_cost.py --help`) or drop --prices", 2)
    doc, lines = load(Path(path), label)
    if not isinstance(doc, dict):
        raise AssayError(f"{label}: must be a mapping with `currency`, `per` and `models`", 2, file=label)
    unknown = sorted(set(doc) - set(PRICES_KEYS), key=str)
    if unknown:
        from ..core.suggest import did_you_mean
        key = unknown[0]
        line = lines.line_of((key,))
        hint = did_you_mean(str(key), PRICES_KEYS) or next(  # `per_tokens`, `models_list`: the key it starts with
            (f"; did you mean {k!r}?" for k in PRICES_KEYS if str(key).lower().startswith(k + "_")), "")
        raise AssayError(f"{label}{f':{line}' if line else ''}: unknown key {key!r}{hint}" + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
                         + f"; the keys are currency (default USD), per (the tokens each price is for; per defaults "
                         f"to {DEFAULT_PER}) and models", 2, file=label, line=line, key=str(key))
    currency, per, models = doc.get("currency", "USD"), doc.get("per", DEFAULT_PER), doc.get("models")
    if not isinstance(currency, str) or not currency:
        raise AssayError(f"{label}: `currency` must be a name such as USD", 2, file=label)
    if not isinstance(per, int) or isinstance(per, bool) or per <= 0:
        raise AssayError(f"{label}: `per` must be a positive whole number of tokens (e.g. 1000000)", 2, file=label)
    if not isinstance(models, dict) or not models:
        raise AssayError(f"{label}: `models` must map each model name to {{input: <price>, output: <price>}}",
                         2, file=label)
    out = {}
    for name, prices in models.items():
        where = f"{label}:{lines.get(('models', name), '?')}"
        if not isinstance(prices, dict) or set(prices) != {"input", "output"}:
            raise AssayError(f"{where}: models.{name} must be {{input: <price>, output: <price>}}", 2, file=label)
        for side in ("input", "output"):
            v = prices[side]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                raise AssayError(f"{where}: models.{name}.{side} must be a price >= 0 per {per} tokens", 2, file=label)
        out[str(name)] = {"input": float(prices["input"]) / per, "output": float(prices["output"]) / per}
    return {"currency": currency, "per": per, "per_token": out, "file": label}


def _json(path: Path) -> Any:
    try:
        return loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None


def _object(path: Path) -> dict:
    """A run file that must be a JSON object: {} when absent or unreadable, exit 2 naming it when
    it was edited into something else ("x", [], 1e400)."""
    doc = _json(path)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise AssayError(f"{path}: not a JSON object (it holds {type(doc).__name__}); the runner writes an "
                         "object here: restore the file or re-run the case (run_cases.py --resume)", 2, file=str(path))
    return doc


def _trajectories(case: casestore.CaseRecord) -> list[dict]:
    # a conversation: every sent turn's trajectory (turns/<n>/; the case-level one is the deciding turn's)
    turns = sorted((n for n in case.names() if n.startswith("turns/") and n.endswith("/trajectory.json")
                    and n.split("/")[1].isdigit()), key=lambda n: int(n.split("/")[1]))
    docs = [_bytes_json(case.read(n)) for n in turns] or [_bytes_json(case.read("trajectory.json"))]
    return [d for d in docs if isinstance(d, dict)]


def _bytes_json(data: bytes | None) -> Any:
    try:
        return loads(data.decode("utf-8")) if data is not None else None
    except (ValueError, RecursionError):
        return None


def case_cost(case: Any, prices: dict | None, verdict: dict | None = None, *, read_traces: bool = True,
              judge_model: str | None = None) -> dict:
    """One case's row. `case`: a casestore.CaseRecord (or an older run's case dir path); `verdict`
    is its verdict when the caller holds it already (the runner at finalize); `read_traces=False`
    skips looking for trajectories (a run that collected none). `judge` is the case's judge calls,
    priced apart from the app's (judge_row)."""
    if isinstance(case, (str, os.PathLike)):
        cdir = Path(case)
        verdict = verdict if verdict is not None else _object(cdir / "verdict.json")
        case = casestore.dir_record(cdir, verdict)
    verdict = verdict if verdict is not None else case.verdict
    trajs = _trajectories(case) if read_traces else []
    calls = [c for t in trajs for c in (t.get("llm_calls") if isinstance(t.get("llm_calls"), list) else [])
             if isinstance(c, dict)]
    row: dict[str, Any] = {
        "case_id": verdict.get("case_id", case.case_id), "verdict": verdict.get("verdict"),
        "holdout": bool(verdict.get("holdout")), "traced": bool(trajs),
        "latency_ms": verdict.get("latency_ms") if isinstance(verdict.get("latency_ms"), (int, float)) else None,
        "latencies_ms": repeat_latencies(verdict),
        "model_calls": len(calls),
        "input_tokens": sum(_num(c.get("input_tokens")) for c in calls),
        "output_tokens": sum(_num(c.get("output_tokens")) for c in calls),
        "model_latency_ms": round(sum(c["duration_ms"] for c in calls if isinstance(c.get("duration_ms"), (int, float))), 3),
        "calls_without_usage": sum(1 for c in calls if "input_tokens" not in c and "output_tokens" not in c),
        "calls_partial_usage": sum(1 for c in calls if ("input_tokens" in c) != ("output_tokens" in c)),
        "unpriced_models": [], "cost": None, "judge": judge_row(verdict, prices, judge_model),
    }
    if not trajs or prices is None:
        return row
    cost, unpriced = 0.0, set()
    for c in calls:
        model = c.get("model")
        p = prices["per_token"].get(model) if isinstance(model, str) else None
        if p is None:
            unpriced.add(str(model) if model else "(no model name)")
            continue
        cost += _num(c.get("input_tokens")) * p["input"] + _num(c.get("output_tokens")) * p["output"]
    row["unpriced_models"] = sorted(unpriced)
    # a model call without token usage, or with one side of it only, has an unknown cost: never 0
    row["cost"] = None if unpriced or row["calls_without_usage"] or row["calls_partial_usage"] else round(cost, 8)
    return row


def _capability(manifest: dict) -> dict:
    matrix = (manifest.get("capability_matrix") or {}).get("cost_latency") or {}
    traces = manifest.get("traces") or {}
    if matrix.get("enabled") is False:
        return {"enabled": False, "blocked_by": matrix.get("blocked_by") or "disabled in profile.yaml"}
    if "cost_latency" in (traces.get("disabled_layers") or []) or traces.get("collected") is False:
        return {"enabled": False, "blocked_by": "no traces collected (adapter traces.source); tokens and model "
                                                 "latency come only from a trace"}
    return {"enabled": True, "blocked_by": None}


def case_reader(manifest: dict, prices: dict | None) -> Any:
    """`row(record, verdict=None)`: a case's case_cost row as run_cost makes it for this run."""
    read_traces, judge_model = (manifest.get("traces") or {}).get("collected") is not False, judge_model_of(manifest)
    return lambda case, verdict=None: case_cost(case, prices, verdict, read_traces=read_traces, judge_model=judge_model)


def run_cost(run_dir: Path, prices: dict | None, *, prices_note: str | None = None,
             manifest: dict | None = None, records: Iterable[dict] | None = None, per_case: bool = True,
             rows: Iterable[dict] | None = None) -> dict:
    """The run's cost and latency from its case dirs. `manifest` and `records` (the finished
    cases' verdict.json, any order) are passed by the runner, which holds them already; `rows`
    (case_reader's, every case's) by a reader that read the cases itself; else all are read here.
    `per_case=False` (results.json's block): no `cases` list, and an untraced case the judge never
    called is kept as its id and latency only, so 100,000 cases do not hold 100,000 rows."""
    run_dir = Path(run_dir)
    manifest = manifest if manifest is not None else _object(run_dir / "manifest.yaml")
    if rows is None:
        store = casestore.open_store(run_dir)
        if store.layout == "none":
            raise AssayError(f"{run_dir}: not a run directory (no cases.jsonl, no cases/); pass "
                             "<state>/reports/<run-id>", 2)
        rows = _read_rows(store, manifest, prices, records)
    made, rows, light = rows, [], []   # light: (case id, latency, holdout) of a case no total but latency reads
    for row in made:
        if row["verdict"] == "skipped":
            continue
        if per_case or row["traced"] or row["judge"]["calls"]:
            rows.append(row)
        else:
            light.append((str(row["case_id"]), row["latencies_ms"], row["holdout"]))
    rows.sort(key=lambda r: str(r["case_id"]))
    latencies = sorted([(str(r["case_id"]), r["latencies_ms"]) for r in rows] + [(c, ms) for c, ms, _h in light],
                       key=lambda pair: pair[0]) if light else [(None, r["latencies_ms"]) for r in rows]
    traced = [r for r in rows if r["traced"]]
    k = manifest.get("k") if isinstance(manifest.get("k"), int) else 1
    unpriced = sorted({m for r in rows for m in r["unpriced_models"]})
    priced = [r["cost"] for r in traced if r["cost"] is not None]
    no_usage, partial = (sum(r[k] for r in traced) for k in ("calls_without_usage", "calls_partial_usage"))
    calls = sum(r["model_calls"] for r in traced)
    no_call = sum(1 for r in traced if not r["model_calls"])   # priced at 0: said beside the budget
    capability = _capability(manifest)
    if capability["enabled"] and not traced:
        capability = {"enabled": False, "blocked_by": "traces were configured but no case has a trajectory.json"}
    totals = {
        "cases": len(rows) + len(light), "traced_cases": len(traced),
        "input_tokens": sum(r["input_tokens"] for r in traced),
        "output_tokens": sum(r["output_tokens"] for r in traced),
        "model_calls": sum(r["model_calls"] for r in traced),
        "cost": None,
        "complete": bool(prices is not None and traced and len(priced) == len(traced) and calls and not no_usage
                         and not partial),
        "unpriced_cases": (len(traced) - len(priced)) if prices is not None else None,
        "calls_without_usage": no_usage, "calls_partial_usage": partial, "cases_without_model_call": no_call,
        # why the total is not the run's cost, in words (None when it is): wave 4 §1
        "incomplete_reason": _incomplete_reason(traced, unpriced, no_usage, calls,
                                                (prices or {}).get("per_token") or {}, partial),
        "latency_ms": _stats([ms for _c, samples in latencies for ms in samples]),   # every repeat's
        "model_latency_ms": _stats([r["model_latency_ms"] for r in traced]),
        "k": k,
        "k_note": (f"k={k}: only the deciding repeat's trace is stored per case, so these tokens and costs "
                   f"are of one repeat; the run spent about {k} times as much") if k > 1 else None,
    }
    if prices is not None:
        # an incomplete total would read as the run's cost: give only what was priced, apart
        totals["cost"] = _stats(priced) if totals["complete"] else {
            "n": len(priced), "total": None, "mean": None, "p50": None, "p95": None,
            "priced_cases_total": round(sum(priced), 8) if priced else None}
    totals["judge"] = judge_totals(rows, prices, n_cases=len(rows) + len(light))
    return {
        "run_id": run_dir.name, "capability": capability,
        "currency": prices["currency"] if prices else None,
        "prices": prices["file"] if prices else None, "prices_note": prices_note,
        "unpriced_models": unpriced, "totals": totals,
        "cases": [{k: v for k, v in r.items() if k != "holdout"} for r in rows if not r["holdout"]]
        if per_case else None,
        "holdout_cases_in_totals": sum(1 for r in rows if r["holdout"]) + sum(1 for _c, _ms, h in light if h),
        "timeout_s": (manifest.get("invocation") or {}).get("timeout_s"),   # a case's latency stops there
    }


def _read_rows(store: casestore.CaseStore, manifest: dict, prices: dict | None,
               records: Iterable[dict] | None) -> Iterable[dict]:
    """Each case's row, read from the store (its verdict alone when the run collected no trace);
    `records`: the runner's verdicts, which it holds already."""
    read_traces = (manifest.get("traces") or {}).get("collected") is not False
    if records is None:
        pairs = (((rec, None) for rec in store.records()) if read_traces else
                 ((casestore.CaseRecord(cid, v, {}), None) for cid, v in store.verdicts()))
    else:
        pairs = (((store.load(r["case_id"]) if read_traces else None) or casestore.CaseRecord(r["case_id"], r, {}), r)
                 for r in records)
    row = case_reader(manifest, prices)
    return (row(case, verdict) for case, verdict in pairs)


def _near_price(model: str, priced: Iterable[str]) -> str:
    """` (prices.yaml names 'gpt-4.1-mini'; ...)` for an unpriced model one name in the file is close to: a
    provider's dated id (`gen_ai.response.model` is read first), another case or spelling."""
    from ..core.suggest import closest
    priced = list(priced)
    hit = next((p for p in priced if p.lower() == model.lower() or model.startswith(p + "-")), None) or closest(model, priced)
    return (f" (prices.yaml names {hit!r}; a model is priced only under the exact name its spans report: "
            f"add {model!r} to models)") if hit else ""


def _incomplete_reason(traced: list[dict], unpriced: list[str], no_usage: int, calls: int,
                       priced: dict | None = None, partial: int = 0) -> str | None:
    if not traced:
        return None
    parts = []
    if no_usage:
        parts.append(f"{no_usage} of {calls} model call(s) reported no token usage (their cost is unknown, not 0)")
    if partial:   # an output side dropped from the span is not 0 output tokens
        parts.append(f"{partial} of {calls} model call(s) reported input or output tokens but not both (the missing "
                     "side's cost is unknown, not 0)")
    if unpriced:
        parts.append(f"model(s) {', '.join(unpriced)} not in {PRICES_FILE}: not priced at 0"
                     + "".join(_near_price(m, priced or {}) for m in unpriced))
    if not calls:
        parts.append(f"no model call in any of the {len(traced)} trace(s): the instrumentation wrote no LLM span, "
                     "so the app's cost is unknown, not 0")
    return "; ".join(parts) or None


def compare_to_baseline(current: dict, baseline: dict) -> dict:
    """Cost and latency change split by verdict change (unchanged / fixed / broken / other)."""
    base = {r["case_id"]: r for r in baseline["cases"]}
    groups: dict[str, dict] = {g: {"cases": 0, "cost_delta": 0.0, "cost_unknown": 0, "latency_delta_ms": 0.0}
                               for g in ("unchanged", "fixed", "broken", "other")}
    for r in current["cases"]:
        b = base.get(r["case_id"])
        if b is None:
            continue
        if r["verdict"] == b["verdict"]:
            g = "unchanged"
        elif (b["verdict"], r["verdict"]) == ("fail", "pass"):
            g = "fixed"
        elif (b["verdict"], r["verdict"]) == ("pass", "fail"):
            g = "broken"
        else:
            g = "other"
        slot = groups[g]
        slot["cases"] += 1
        if r["cost"] is None or b["cost"] is None:
            slot["cost_unknown"] += 1
        else:
            slot["cost_delta"] += r["cost"] - b["cost"]
        if r["latency_ms"] is not None and b["latency_ms"] is not None:
            slot["latency_delta_ms"] += r["latency_ms"] - b["latency_ms"]
    for slot in groups.values():
        slot["cost_delta"] = round(slot["cost_delta"], 8)
        slot["latency_delta_ms"] = round(slot["latency_delta_ms"], 3)
    return {"baseline_run_id": baseline["run_id"], "by_verdict_change": groups,
            "note": "read `unchanged` first: it is the cost of the change itself, not of a fix or a regression"}


def state_dir_of_run(run_dir: Path) -> Path:
    """The state dir a run dir lives in: the parent of its nearest `reports` ancestor (the runner
    writes only under <state>/reports/, shards and merges included); the grandparent otherwise."""
    run_dir = Path(run_dir).resolve()
    for parent in run_dir.parents:
        if parent.name == "reports":
            return parent.parent
    return run_dir.parent.parent


def default_prices_path(run_dir: Path) -> Path:
    """`<state>/prices.yaml` of the state dir the run dir lives in."""
    return state_dir_of_run(run_dir) / PRICES_FILE


def _pair(stats: dict | None) -> dict | None:
    return {"p50": stats["p50"], "p95": stats["p95"]} if stats and stats.get("n") else None


def _per_case(total: int, n: int) -> float | None:
    return round(total / n, 3) if n else None


def results_summary(run_dir: Path, manifest: dict, records: list[dict], state_dir: Path | None) -> dict:
    """results.json's `cost_latency` block: run_cost over the finished cases (the same rules as
    score_cost.py), priced with `<state>/prices.yaml` when it exists and reads. Trace-fed numbers
    are null, never 0, when the capability is blocked; the cost is null unless every traced case
    was priced (`reason` says why). Paths are relative to the state dir: results.json holds none
    of this machine's."""
    prices, reason = None, None
    path = Path(state_dir) / PRICES_FILE if state_dir is not None else None
    if path is None or not path.is_file():
        reason = f"no {PRICES_FILE} in the state dir (the format: score_cost.py --help)"
    elif not Path(os.path.realpath(path)).is_relative_to(Path(os.path.realpath(state_dir))):
        reason = f"{PRICES_FILE} is a symlink that leaves the state dir: not read (copy the file in instead)"
    else:
        try:
            prices = load_prices(path, PRICES_FILE)
        except AssayError as exc:
            reason = exc.message
    cost = run_cost(run_dir, prices, prices_note=reason, manifest=manifest, records=records, per_case=False)
    t, cap = cost["totals"], cost["capability"]
    block: dict[str, Any] = {
        "enabled": cap["enabled"], "blocked_by": cap["blocked_by"],
        "cases": t["cases"], "traced_cases": t["traced_cases"],
        "latency_ms": _pair(t["latency_ms"]),
        "model_calls": None, "input_tokens": None, "output_tokens": None, "model_latency_ms": None,
        "cost": None, "k_note": t["k_note"],
    }
    j = t["judge"]
    if j["calls"]:
        why = reason if prices is None else (None if j["complete"] else j["incomplete_reason"])
        block["judge"] = {"calls": j["calls"], "input_tokens": j["input_tokens"], "output_tokens": j["output_tokens"],
                          "currency": cost["currency"], "complete": bool(j["complete"] and prices is not None),
                          "total": j["cost"], "mean_per_case": j["mean_per_case"],
                          "unpriced_models": j["unpriced_models"], "reason": why}
    if not cap["enabled"]:
        return block
    n = t["traced_cases"]
    block.update({
        "model_calls": t["model_calls"],
        "input_tokens": {"total": t["input_tokens"], "mean_per_case": _per_case(t["input_tokens"], n)},
        "output_tokens": {"total": t["output_tokens"], "mean_per_case": _per_case(t["output_tokens"], n)},
        "model_latency_ms": _pair(t["model_latency_ms"]),
    })
    money = {"currency": cost["currency"], "prices": PRICES_FILE if prices else None, "complete": t["complete"],
             "total": None, "mean_per_case": None, "unpriced_models": cost["unpriced_models"], "reason": reason}
    if prices is not None and t["complete"]:
        money.update(total=t["cost"]["total"], mean_per_case=t["cost"]["mean"])
    elif prices is not None:
        money["reason"] = t.get("incomplete_reason") or (
            f"{t['unpriced_cases']} traced case(s) use a model {PRICES_FILE} does not name "
            f"({', '.join(cost['unpriced_models']) or 'no model name'}): not priced at 0")
    block["cost"] = money
    return block
