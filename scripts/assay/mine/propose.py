"""Observed requests -> candidate cases: deduplicated, sampled, redacted, never gating.

`mine(span_paths, state_dir, sample=None, seed=0, holdout_share=0.0)` writes one case per
distinct user request under `<state>/datasets/mined/` and returns the summary. The user's
message is the input; the observed route (`expect.route`), tools (`expect.tools.subset`, in
call order as `order` with `in_order`), scalar arguments (`expect.args`) and the ids and
amounts the answer states (`expect.answer.must_contain`) are proposed as expectations, each
one what the app *did*, for a person to confirm: every case is `gating: false`,
`review: pending`, `source: trace:<trace_id>`, `origin: real-trace:<trace_id>`, and holds
the observed answer in `notes`. Distinct means not a near-duplicate (assay.suite.dedupe's
ROUGE-L rule, 0.7) of an existing case or of a candidate already kept. Every string taken
from a trace goes through assay.mine.redact first. An expectation on a layer the profile's
capability_matrix disables is not proposed (the case's notes name the profile key); a request
that showed nothing else is not written at all (`grades_nothing`: the case could never fail).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from ..core import writer
from ..core.errors import AssayError
from ..suite.convert import case_files, convert_state_dir
from ..core.vocab import MATRIX_KEY_OF_LAYER, matrix_enabled
from ..lint.graded import layers_in_expect
from ..suite.dedupe import NEAR_DUPLICATE, case_text, rouge_l, tokens
from .redact import KINDS, redact, redact_arg
from .spans import Observed, listen_requests, read_requests

MINED_DIR = "datasets/mined"
# Facts an answer states that a right answer must state again: record ids and amounts.
FACT = re.compile(r"\b[A-Z]{2,}-\d{2,}\b|\b\d+\.\d{2}\b(?: [A-Z]{3})?")


def _args(tools: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in tools:
        args = t.get("arguments")
        if t["arguments_captured"] and isinstance(args, dict) and t["name"] not in out:
            scalars = {k: v for k, v in args.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
            if scalars:
                out[t["name"]] = scalars
    return out


def disabled_keys(expect: dict[str, Any], matrix: dict[str, Any]) -> dict[str, str]:
    """{expect key: `capability_matrix.<key>` (and its blocked_by)} for each proposed expectation whose
    layer the profile disables: the runner would never score it, so it is not proposed."""
    out = {}
    for key, value in expect.items():
        for layer in layers_in_expect({key: value}):
            enabled, blocked_by = matrix_enabled(matrix, layer)
            if not enabled:
                mkey = MATRIX_KEY_OF_LAYER.get(layer) or layer
                why = f"capability_matrix.{mkey}"
                if blocked_by and blocked_by != f"capability_matrix.{mkey}.enabled is false":
                    why += f", blocked_by: {blocked_by}"
                out[key] = why
    return out


def propose(obs: Observed, counts: Counter, split: list[str], route_known: bool,
            matrix: dict[str, Any] | None = None) -> dict[str, Any]:
    """The candidate case for one observed request (see the module's docstring)."""
    return propose_case(obs, counts, split, route_known, matrix)[0]


def propose_case(obs: Observed, counts: Counter, split: list[str], route_known: bool,
                 matrix: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """(the case, {expect key: the profile key} of each expectation left out: its layer is disabled)."""
    text = redact(obs.user_text or "", counts)[0]
    answer = redact(obs.answer, counts)[0] if obs.answer else None
    expect: dict[str, Any] = {}
    if obs.route and route_known:
        expect["route"] = obs.route
    names = [t["name"] for t in obs.tools]
    if names:
        expect["tools"] = {"subset": sorted(set(names))}
        if not any(o != names for o in obs.other_orders):   # an order production did not keep is not proposed
            expect["tools"].update({"order": names, "order_mode": "in_order"})
    args, withheld = {}, []
    for tool, values in _args(obs.tools).items():
        for key, value in values.items():
            shown = redact_arg(key, value, counts)
            if shown != value:   # a redacted value (<email>, <token>) would never match: not proposed
                withheld.append(f"{tool}.{key}")
            else:
                args.setdefault(tool, {})[key] = value
    if args:
        expect["args"] = args
    facts = [] if obs.failed else [f for f in dict.fromkeys(FACT.findall(answer or "")) if f not in text and "<" not in f]
    if facts:
        expect["answer"] = {"must_contain": facts[:4]}
    off = disabled_keys(expect, matrix or {})
    for key in off:
        del expect[key]
    notes = [f"Proposed from trace {obs.trace_id}: every expectation is what the app did, not what it should do; "
             "check each before accepting the case."]
    if off:
        notes.append("Not proposed, on a layer profile.yaml disables (never scored): " + "; ".join(
            f"expect.{k} ({why})" for k, why in off.items()) + ".")
    if answer:
        notes.append(f"Observed answer: {answer[:400]}")
    if withheld:
        notes.append(f"Argument(s) {', '.join(withheld)} held personal data or a secret, redacted here, so no "
                     "expectation is proposed for them (the redacted text would never match what the app sends); "
                     "write the value the case should expect by hand if it matters.")
    if obs.failed:
        failed = redact(", ".join(dict.fromkeys(obs.failed)), counts)[0]   # a span name may hold the URL it asked
        notes.append(f"The request failed in production ({failed} reported an error): "
                     "what a failing app did is proposed (no fact from its answer); write what a working app "
                     "should do, or drop the case.")
    if any(o != names for o in obs.other_orders):
        notes.append("The same request called its tools in another order in another trace ("
                     f"{' > '.join(next(o for o in obs.other_orders if o != names)) or 'no tool'}), so no order is "
                     "proposed.")
    if obs.earlier_user_turns:
        notes.append(f"Asked mid-conversation ({obs.earlier_user_turns} earlier user message(s)): the answer may "
                     "depend on them; write input.turns if so.")
    case: dict[str, Any] = {
        "id": "c-" + hashlib.sha256(obs.trace_id.encode()).hexdigest()[:8],
        "title": text[:80], "unit": obs.route or "app", "split": split, "category": "happy", "test_type": "MFT",
        "template_id": None, "origin": f"real-trace:{obs.trace_id}", "source": f"trace:{obs.trace_id}",
        "review": {"status": "pending", "note": "mined from a production trace; category guessed"},
        "gating": False, "notes": " ".join(notes),
        "input": {"messages": [{"role": "user", "content": text}], "session": "fresh"},
        "expect": expect,
    }
    return case, off


def mine(span_paths: list[str], state_dir: str, *, sample: int | None = None, seed: int = 0,
         holdout_share: float = 0.0, listen: dict[str, Any] | None = None) -> dict[str, Any]:
    """`listen`: {address, seconds, capture, announce} receives OTLP/HTTP exports instead of
    (or besides) reading files."""
    from ..core.strict_yaml import load
    state = Path(state_dir)
    if not (state / "profile.yaml").is_file() or not (state / "adapter.yaml").is_file():
        raise AssayError(f"{state}: not a state dir (adapter.yaml and profile.yaml are needed; the discover skill "
                         "writes them)", 2)
    has_cases = (state / "datasets").is_dir() and bool(case_files(state))
    conv = convert_state_dir(state) if has_cases else None
    existing = [tokens(case_text(c)) for c in (conv["cases"] if conv else [])]
    # A trace mined before (its case kept, moved or edited by a person) is never proposed again.
    seen = {str(c.get(k)).split(":", 1)[1]: c.get("id") for c in (conv["cases"] if conv else [])
            for k in ("source", "origin") if str(c.get(k) or "").startswith(("trace:", "real-trace:"))}
    profile, _ = load(state / "profile.yaml", "profile.yaml")
    profile = profile if isinstance(profile, dict) else {}
    routes = set(profile.get("routing_contract") or [])
    observed, stats = read_requests(span_paths) if span_paths else ([], {"traces": 0, "without_user_text": 0})
    if listen:
        heard, more = listen_requests(listen["address"], listen["seconds"], listen.get("capture"),
                                      listen.get("announce"))
        observed += heard
        stats = {k: stats.get(k, 0) + more.get(k, 0) for k in {*stats, *more}}
    counts: Counter = Counter()
    kept: list[Observed] = []
    kept_tokens: list[list[str]] = []
    dupes: list[dict[str, str]] = []
    already: list[dict[str, str]] = []
    for obs in observed:
        if not obs.user_text:
            continue
        if obs.trace_id in seen:
            already.append({"trace_id": obs.trace_id, "case": str(seen[obs.trace_id])})
            continue
        toks = tokens(redact(obs.user_text)[0])
        hit = next((i for i, other in enumerate(existing + kept_tokens) if rouge_l(toks, other) >= NEAR_DUPLICATE), None)
        if hit is not None:
            if hit >= len(existing):
                kept[hit - len(existing)].other_orders.append([t["name"] for t in obs.tools])
            dupes.append({"trace_id": obs.trace_id, "duplicate_of": "an existing case" if hit < len(existing)
                          else f"trace {kept[hit - len(existing)].trace_id}"})
            continue
        kept.append(obs)
        kept_tokens.append(toks)
    rng = random.Random(seed)
    chosen = kept if sample is None or sample >= len(kept) else sorted(rng.sample(kept, sample),
                                                                       key=lambda o: (o.start_ns, o.trace_id))
    n_holdout = round(len(chosen) * holdout_share)
    holdout_ids = {o.trace_id for o in rng.sample(chosen, n_holdout)} if n_holdout else set()
    matrix = profile.get("capability_matrix") if isinstance(profile.get("capability_matrix"), dict) else {}
    written, grades_nothing = [], []
    for obs in chosen:
        split = ["holdout"] if obs.trace_id in holdout_ids else ["full"]
        case, off = propose_case(obs, counts, split, not routes or obs.route in routes, matrix)
        if not case["expect"]:
            fallback = {"answer": {"must_not_contain": [r"/\A\s*\Z/"]}}
            off.update(disabled_keys(fallback, matrix))
            if off:   # every expectation on a layer the profile disables: the case could never fail
                grades_nothing.append({"trace_id": obs.trace_id, "case": case["id"], "why": (
                    "every expectation observed (" + ", ".join(f"expect.{k}" for k in off) + ") is on a layer "
                    "profile.yaml disables (" + "; ".join(dict.fromkeys(off.values())) + "), so the case would "
                    "grade nothing (the linter's no_graded_layer, which stops make_plan.py); not written: enable "
                    "the layer once what blocks it is resolved and mine again, or write the case by hand")})
                continue
            case["expect"] = fallback
            case["notes"] += " Nothing observable to propose (no route, tool or fact): a non-empty answer only."
        rel = f"{MINED_DIR}/{case['id']}.yaml"
        if (state / rel).exists():   # a person's file, whatever it now says: never overwritten
            already.append({"trace_id": obs.trace_id, "case": case["id"], "file": rel})
            continue
        text = yaml.safe_dump(case, sort_keys=False, allow_unicode=True, width=100)
        (state / MINED_DIR).mkdir(parents=True, exist_ok=True)
        writer.write_text(state / rel, _final_scan(text))
        written.append(rel)
    manifest = _update_manifest(state, conv, written) if written else None
    return {"spans_files": len(span_paths), "dataset_version": manifest,
            "exports_received": stats.get("exports_received"), "traces": stats["traces"],
            "without_user_text": stats["without_user_text"], "distinct": len(kept), "duplicates": dupes, "already_mined": already,
            "sampled": len(chosen), "holdout": len(holdout_ids), "written": written, "grades_nothing": grades_nothing,
            "redacted": {k: counts.get(k, 0) for k in KINDS},
            "next": _next(stats, written, grades_nothing)}


def _next(stats: dict[str, Any], written: list[str], grades_nothing: list[dict[str, str]] = ()) -> str:
    """What to do now; when no trace carried the user's message, or every request's expectations sit
    on layers the profile disables, why nothing was proposed."""
    if grades_nothing and not written:
        return (f"nothing proposed: each of the {len(grades_nothing)} request(s) showed only what profile.yaml's "
                "capability_matrix does not score (grades_nothing names the keys); enable those layers once what "
                "blocks them is resolved, then mine again")
    if written or not stats["traces"] or stats["without_user_text"] < stats["traces"]:
        return "review each case under datasets/mined/ (accept with review.by, set gating), then validate_cases.py"
    return (f"nothing proposed: none of the {stats['traces']} trace(s) carried the user's message where mine_traces "
            "reads it (an LLM span's gen_ai.input.messages, OpenInference llm.input_messages.<i>, or OpenLLMetry "
            "gen_ai.prompt.<i> on traceloop spans); turn message content capture on in the app's instrumentation "
            "(e.g. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true) and mine new traces")


def _update_manifest(state: Path, conv: dict[str, Any] | None, written: list[str]) -> dict[str, int] | None:
    """Keep datasets/dataset.yaml true: its counts over the suite with the new cases, dataset_version + 1."""
    from ..lint.suite_rules import split_counts, unit_counts
    from ..suite.yaml_edit import set_top_level
    manifest = conv.get("manifest") if conv else None
    path = state / "datasets" / "dataset.yaml"
    if not manifest or not path.is_file():
        return None
    cases = convert_state_dir(state)["cases"]
    text = path.read_text(encoding="utf-8")
    old = int(manifest.get("dataset_version", 1))
    text = set_top_level(text, "dataset_version", old + 1, label="datasets/dataset.yaml")
    if "cases" in manifest:
        text = set_top_level(text, "cases", len(cases), label="datasets/dataset.yaml")
    if isinstance(manifest.get("splits"), dict):
        counts = split_counts(cases)
        text = set_top_level(text, "splits", {k: counts.get(k, 0) for k in manifest["splits"]},
                             label="datasets/dataset.yaml")
    grid = (manifest.get("coverage_grid") or {}).get("by_unit")
    if isinstance(grid, dict):
        by_unit = {u: {k: unit_counts(cases, u)[k] for k in (v or {}) if k in ("total", "MFT", "INV", "DIR")}
                   for u, v in grid.items()}
        text = set_top_level(text, "coverage_grid", {**manifest["coverage_grid"], "by_unit": by_unit},
                             label="datasets/dataset.yaml")
    writer.write_text(path, text)
    return {"from": old, "to": old + 1}


def _final_scan(text: str) -> str:
    """The YAML as written holds no e-mail address (belt and braces over the field redaction)."""
    from .redact import EMAIL
    return EMAIL.sub("<email>", text)


def check_args(sample: int | None, holdout_share: float) -> None:
    if sample is not None and sample < 1:
        raise AssayError(f"--sample {sample} must be 1 or more", 2)
    if not 0 <= holdout_share <= 1:
        raise AssayError(f"--holdout-share {holdout_share:g} must be between 0 and 1 (e.g. 0.2)", 2)
