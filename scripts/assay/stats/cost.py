"""Cost and latency of a run, from what the runner stored: trajectory.json's model calls and
verdict.json's latency. Never from the app again, never guessed.

Tokens: each model call's `input_tokens` / `output_tokens` (the GenAI usage attributes the
runner normalized into trajectory.json; a conversation counts every sent turn's
`turns/<n>/trajectory.json`). With k > 1 a single-turn case's repeats each store their own
trace (`repeats/<n>/trajectory.json`): its tokens, calls and cost are every repeat's (the
totals are the run's whole spend), and its `cost` is the mean cost of one answer (the
repeats' sum over its repeats with a trace), the figure the gate's budget compares. The
judge's cost of a case is one answer's too (its calls over the repeats it judged: judge_cost),
so the budget's app + judge per case is one unit at any k. A
conversation's repeats store no trace, nor did a run dir written before each repeat's was
stored: such a case is read at its deciding repeat, and `totals.k_note` says which was read
and why. Price: the prices file (`<state>/prices.yaml`):

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
from .cost_fold import PRICES_FILE, ChangeFold, CostFold
from .judge_cost import judge_model_of, judge_row, judged_repeats, token_count as _num
from .latency import repeat_latencies


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


# how a k > 1 case's repeats are read (row `trace_scope`; None at k = 1)
EVERY_REPEAT, CONVERSATION, NOT_STORED = "every_repeat", "conversation", "not_stored"


def _answer_traces(case: casestore.CaseRecord, verdict: dict) -> tuple[list[list[dict]], str | None, int]:
    """(the trajectories of each answer the case's cost reads, how its repeats were read, how many of its
    repeats stored no trace). A single-turn case at k > 1: each repeat's own `repeats/<n>/trajectory.json`
    (a repeat with none, e.g. its trace never arrived, is no answer: its cost is unknown). A conversation's
    repeats store no trace, nor did a run dir written before each repeat's was (its `repeats[]` carry no
    `trace_collected`): the deciding repeat's, as at k = 1."""
    reps = verdict.get("repeats")
    reps = [r for r in reps if isinstance(r, dict)] if isinstance(reps, list) else []
    scope = None
    if len(reps) > 1:
        if verdict.get("multi_turn"):
            scope = CONVERSATION
        elif all("trace_collected" in r for r in reps):
            docs = [_bytes_json(case.read(f"repeats/{r.get('n')}/trajectory.json")) if r.get("trace_collected")
                    else None for r in reps]
            answers = [[d] for d in docs if isinstance(d, dict)]
            return answers, EVERY_REPEAT, len(reps) - len(answers)
        else:
            scope = NOT_STORED
    own = _trajectories(case)
    return ([own] if own else []), scope, 0


def _calls(trajs: list[dict]) -> list[dict]:
    return [c for t in trajs for c in (t.get("llm_calls") if isinstance(t.get("llm_calls"), list) else [])
            if isinstance(c, dict)]


def _model_ms(calls: list[dict]) -> float:
    return round(sum(c["duration_ms"] for c in calls if isinstance(c.get("duration_ms"), (int, float))), 3)


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
    priced apart from the app's (judge_row): at k > 1 its `cost` one answer's too, `spend` every
    judged repeat's."""
    if not isinstance(case, casestore.CaseRecord) and isinstance(case, (str, os.PathLike)):
        cdir = Path(case)
        verdict = verdict if verdict is not None else _object(cdir / "verdict.json")
        case = casestore.dir_record(cdir, verdict)
    verdict = verdict if verdict is not None else case.verdict
    answers, scope, untraced = _answer_traces(case, verdict) if read_traces else ([], None, 0)
    per_answer = [_calls(a) for a in answers]
    calls = [c for a in per_answer for c in a]
    latency = verdict.get("latency_ms")
    row: dict[str, Any] = {
        "case_id": verdict.get("case_id", case.case_id), "verdict": verdict.get("verdict"),
        "holdout": bool(verdict.get("holdout")), "traced": bool(answers),
        "latency_ms": latency if isinstance(latency, (int, float)) else None,
        "latencies_ms": repeat_latencies(verdict),
        # the answers (repeats) whose traces were read, those of its repeats that stored none, and how
        "answers": len(answers), "answers_without_trace": untraced, "trace_scope": scope,
        "model_calls": len(calls), "input_tokens": 0, "output_tokens": 0, "model_latency_ms": 0,
        "model_latencies_ms": [0] * len(answers),   # one per answer: each a sample of the run's p50/p95
        "calls_without_usage": 0, "calls_partial_usage": 0,
        # spans the trajectory reader found model-like and could not read as a model call (its
        # `unread_model_spans`, assay.traces.conventions.model_like): their calls' cost is unknown
        "unread_model_spans": sum(len(u) for a in answers for t in a
                                  if isinstance(u := t.get("unread_model_spans"), list)),
        "unpriced_models": [], "cost": None, "spend": None,
        "judge": judge_row(verdict, prices, judge_model,
                           judged_repeats(verdict, lambda: _bytes_json(case.read("judge.json")))),
    }
    if calls:   # (a case with no model call, most of a trace-less run's: the zeros above, at a comparison's pace)
        row.update({
            "input_tokens": sum(_num(c.get("input_tokens")) for c in calls),
            "output_tokens": sum(_num(c.get("output_tokens")) for c in calls),
            "model_latency_ms": _model_ms(calls), "model_latencies_ms": [_model_ms(a) for a in per_answer],
            "calls_without_usage": sum(1 for c in calls if "input_tokens" not in c and "output_tokens" not in c),
            "calls_partial_usage": sum(1 for c in calls if ("input_tokens" in c) != ("output_tokens" in c))})
    if not answers or prices is None:
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
    # a model call without token usage, or with one side of it only, or one the trace holds and the reader
    # could not read, has an unknown cost: never 0 (in any repeat: the case's cost is then unknown).
    # `spend`: every answer's; `cost`: one answer's, their mean
    if not (unpriced or row["calls_without_usage"] or row["calls_partial_usage"] or row["unread_model_spans"]):
        row["spend"] = round(cost, 8)
        row["cost"] = round(cost / len(answers), 8)
    return row


def case_light(verdict: dict, read_traces: bool) -> tuple | None:
    """(verdict, holdout, latency_ms, latencies_ms) of a case, from its verdict record, whose case_cost
    row has nothing else: its run read no trace and no judge call is recorded (its tokens, calls and
    cost: none); None when the row is needed (CostFold.add folds it; add_light these four). It reads
    the record's judge_usage, latency_ms, verdict, holdout and repeats (compare.light_record's keys)."""
    usage = verdict.get("judge_usage")
    if read_traces or (usage and isinstance(usage, dict)):
        return None
    latency = verdict.get("latency_ms")
    return (verdict.get("verdict"), bool(verdict.get("holdout")),
            latency if isinstance(latency, (int, float)) else None, repeat_latencies(verdict))


def reads_traces(manifest: dict) -> bool:
    """Whether a run's cases are looked at for a trace (not when its manifest says none was collected)."""
    return (manifest.get("traces") or {}).get("collected") is not False


def case_reader(manifest: dict, prices: dict | None) -> Any:
    """`row(record, verdict=None)`: a case's case_cost row as run_cost makes it for this run."""
    read_traces, judge_model = reads_traces(manifest), judge_model_of(manifest)
    return lambda case, verdict=None: case_cost(case, prices, verdict, read_traces=read_traces, judge_model=judge_model)


def run_cost(run_dir: Path, prices: dict | None, *, prices_note: str | None = None,
             manifest: dict | None = None, records: Iterable[dict] | None = None, per_case: bool = True) -> dict:
    """The run's cost and latency from its case dirs (CostFold's totals). `manifest` and `records`
    (the finished cases' verdict.json, any order) are passed by the runner, which holds them
    already; without them both are read from the run dir. `per_case=False` (results.json's block,
    which reads only the totals): no `cases` list, and no row is held."""
    run_dir = Path(run_dir)
    store = casestore.open_store(run_dir)
    if store.layout == "none":
        raise AssayError(f"{run_dir}: not a run directory (no cases.jsonl, no cases/); pass "
                         "<state>/reports/<run-id>", 2)
    manifest = manifest if manifest is not None else _object(run_dir / "manifest.yaml")
    fold, listed = CostFold(), []
    for row in _read_rows(store, manifest, prices, records):
        if fold.add(row) and per_case and not row["holdout"]:
            listed.append(row)
    out = fold.result(run_dir, manifest, prices, prices_note)
    listed.sort(key=lambda r: str(r["case_id"]))
    out["cases"] = [{k: v for k, v in r.items() if k != "holdout"} for r in listed] if per_case else None
    return out


def _read_rows(store: casestore.CaseStore, manifest: dict, prices: dict | None,
               records: Iterable[dict] | None) -> Iterable[dict]:
    """Each case's row, read from the store (its verdict alone when the run collected no trace);
    `records`: the runner's verdicts, which it holds already."""
    read_traces = reads_traces(manifest)
    if records is None:
        pairs = (((rec, None) for rec in store.records()) if read_traces else
                 ((casestore.CaseRecord(cid, v, {}), None) for cid, v in store.verdicts()))
    else:
        pairs = (((store.load(r["case_id"]) if read_traces else None) or casestore.CaseRecord(r["case_id"], r, {}), r)
                 for r in records)
    row = case_reader(manifest, prices)
    return (row(case, verdict) for case, verdict in pairs)


def compare_to_baseline(current: dict, baseline: dict) -> dict:
    """Cost and latency change split by verdict change (unchanged / fixed / broken / other)."""
    base = {r["case_id"]: r for r in baseline["cases"]}
    fold = ChangeFold()
    for r in current["cases"]:
        b = base.get(r["case_id"])
        if b is not None:
            fold.add(b, r)
    return {"baseline_run_id": baseline["run_id"], "by_verdict_change": fold.groups(),
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
        if "answers" in j:   # k > 1: mean_per_case is one answer's, over this many judged answers (repeats)
            block["judge"]["answers"] = j["answers"]
    if not cap["enabled"]:
        return block
    n = t["traced_answers"]   # per case figures are one answer's (at k = 1, or a case read at one repeat: the case's)
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
