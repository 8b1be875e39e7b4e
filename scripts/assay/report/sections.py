"""Report sections built from the run-level files: failure excerpts, routing, reliability,
comparison. Each returns Markdown lines; none ever prints a holdout id (RunFacts drops them).
"""

from __future__ import annotations

import json

from ..core import casestore
from ..core.jsonio import loads
from ..core.explain import AUTH_STATUSES
from ..core.vocab import AGENT_LAYERS, LAYER_ORDER
from ..core.writer import clip
from ..stats.paired import mde_sentence, verdict_label
from .facts import RunFacts, case_link, read_case_file
from .failwords import check_label, judged_failures, judged_words
from .mdtext import code, count, esc, fenced, num, pct, plural

MAX_EXCERPTS = 10
MAX_ANSWER_CHARS = 800
TRUNCATED = " …[truncated]"
# Which expect.json keys a failed layer is judged against (expected side of an excerpt).
EXPECT_KEYS = {
    "http": ("http",), "routing": ("route", "route_acceptable", "clarify_ok"), "trajectory": ("tools",),
    "tool_selection": ("args",), "answer": ("answer", "format"), "execution": ("result",),
    "authz": ("authz",), "state": ("state",), "loops": (),
}


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=True)


def describe_layer(name: str, layer: dict, judged: list[dict] | None = None) -> str:
    """One line saying why a layer failed, in the layer's own terms (never a JSON dump if avoidable).
    `judged`: the case's failed criteria (failwords.judged_failures), for the judged layer."""
    if name == "judged" and layer.get("verdict") == "fail":
        return judged_words(layer, judged or [])
    checks = layer.get("checks")
    if isinstance(checks, list) and checks:
        bad = [c for c in checks if isinstance(c, dict) and c.get("status") == "fail"] or \
              [c for c in checks if isinstance(c, dict)]
        parts = []
        for c in bad:
            text = check_label(c)
            if c.get("entry") is not None:
                text += f" {_compact(c.get('entry'))}"
            text += f" -> {c.get('status')}"
            why = c.get("reason") or c.get("detail")
            parts.append(text + (f" ({why})" if why else ""))
        return "; ".join(parts)
    for key in ("failures", "findings"):
        items = layer.get(key)
        if isinstance(items, list) and items:
            texts = [i if isinstance(i, str) else (i.get("message") if isinstance(i, dict) else None) for i in items]
            texts = [t for t in texts if t]
            if texts:
                return "; ".join(texts)
    if name == "routing" and "observed" in layer:
        return (f"expected {_compact(layer.get('expected'))}, observed {_compact(layer.get('observed'))}"
                f" (from {layer.get('observed_from') or 'unknown'})")
    if name == "execution" and ("expected" in layer or "actual" in layer):
        return f"expected {_compact(layer.get('expected'))}, actual {_compact(layer.get('actual'))}"
    if name == "http" and "status" in layer:
        text = f"expected {layer.get('expected_status') or 'any 2xx'}, got {layer.get('status')}"
        if layer.get("status") == 403 and not layer.get("expected_status"):
            # a refusal the case asked for (expect.authz.expect_refusal) fails here without expect.http
            text += (" (a refusal this case expects, under expect.authz.expect_refusal: declare expect.http.status 403;"
                     " else an authentication problem: check invocation.auth and the env var it reads)")
        elif layer.get("status") in AUTH_STATUSES:  # a wrong key is not the app's regression
            text += " (an authentication problem: check invocation.auth and the env var it reads)"
        return text
    if name in AGENT_LAYERS and isinstance(layer.get("reason"), str) and layer["reason"]:
        return clip(layer["reason"], 402, ellipsis=" …")   # the agent layers say it in words
    detail = {k: v for k, v in layer.items() if k != "verdict"}
    text = _compact(detail) if detail else "failed (no detail recorded)"
    return clip(text, 402, ellipsis=" …")


def failure_sentence(name: str, layer: dict, judged: list[dict] | None = None) -> str:
    """A failed layer's reason as one sentence, for a row a person scans: each failing check as
    `<label> <entry>: <why>` (`restart_service.timeout_s: expected 300, got 300000`, `must_contain
    "refund": not found in the answer`); any other layer in describe_layer's words."""
    checks = layer.get("checks")
    bad = [c for c in checks if isinstance(c, dict) and c.get("status") == "fail"] if isinstance(checks, list) else []
    if not bad:
        return describe_layer(name, layer, judged)
    parts = []
    for c in bad:
        entry = f" {_compact(c.get('entry'))}" if c.get("entry") is not None else ""
        why = c.get("reason") or c.get("detail") or "failed"
        parts.append(f"{check_label(c)}{entry}" + ("" if why == "tool_not_called" else f": {why}"))
    return "; ".join(parts)


def first_failure(doc: dict) -> dict | None:
    """The first failing layer of a case's verdict (the layers' decision order), its sentence and
    its first failing check's names (`check`, `tool`, `arg`) and, for a conversation, the turn it
    failed at (`turn`, as the gate's reason says it: "turn 2: trajectory"); for an unscored, infra or
    skipped case, why it was not scored. None for a passing case."""
    layers = doc.get("layers") if isinstance(doc.get("layers"), dict) else {}
    turn = doc.get("failed_turn")   # the rule of results.json's rows (rundir.derived.results_row), the gate's
    turn = turn if doc.get("multi_turn") and isinstance(turn, int) and not isinstance(turn, bool) and turn else None
    for name in list(LAYER_ORDER) + sorted(set(layers) - set(LAYER_ORDER)):
        entry = layers.get(name)
        if isinstance(entry, dict) and entry.get("verdict") in ("fail", "error"):
            checks = entry.get("checks") if isinstance(entry.get("checks"), list) else []
            bad = next((c for c in checks if isinstance(c, dict) and c.get("status") == "fail"), None)
            return {"layer": name, "verdict": entry["verdict"], "sentence": failure_sentence(name, entry)
                    if entry["verdict"] == "fail" else str(entry.get("reason") or "the scorer raised an error"),
                    "check": {k: str(bad[k]) for k in ("check", "tool", "arg") if bad.get(k) is not None} if bad else None,
                    "turn": turn}
    why = doc.get("unscored_reason") or doc.get("infra_reason") or doc.get("skip_reason")
    if doc.get("verdict") in ("pass", None) or not why:
        return None
    return {"layer": None, "verdict": doc.get("verdict"), "sentence": str(why), "check": None, "turn": turn}


CASE_FILES = ("verdict.json", "expect.json", "request.json", "response.json", "answer.txt", "actual.json",
              "trajectory.json")


def case_files_line(facts: RunFacts, case_id: str) -> str:
    """Where the case's evidence is: links to an older run's case files, else the artifacts its
    record in cases.jsonl holds (the viewer, view.py, opens them)."""
    store = casestore.open_store(facts.run_dir)
    rec = store.load(case_id)
    names = [n for n in CASE_FILES if rec is not None and n in rec.names()]
    if store.layout != "dirs":
        return ("Evidence: " + " · ".join(code(n) for n in names) + " in its record in `cases.jsonl` "
                "(`view.py` shows them)") if names else "Evidence: its record in `cases.jsonl`"
    return "Files: " + " · ".join(f"[{n}](cases/{case_id}/{n})" for n in names) if names else \
        f"Files: `cases/{case_id}/`"


def failure_excerpts(facts: RunFacts, redactor) -> list[str]:
    failing = [r for r in facts.rows if r.get("verdict") == "fail"]
    if not failing:
        return []
    out = ["## Failure excerpts", "",
           f"Expected vs actual for {plural(len(failing), 'failing case')}"
           + (f" (first {MAX_EXCERPTS})" if len(failing) > MAX_EXCERPTS else "")
           + ", from each case's `expect.json`, `verdict.json` and `answer.txt`.", ""]
    for row in failing[:MAX_EXCERPTS]:
        cid = row["case_id"]
        doc = facts.verdicts.get(cid, {})
        layers = doc.get("layers") or {}
        failed = _failed_layers(facts, row)
        tags = []
        if row.get("canary"):
            tags.append("canary")
        if row.get("gating") is False:
            tags.append("gating: false, does not close the gate")
        for key in ("unit", "category"):
            if doc.get(key):
                tags.append(f"{key} {esc(doc[key])}")
        title = f" ({esc(doc['title'])})" if doc.get("title") else ""
        out += [f"### {case_link(cid, facts.run_dir)}{title}: failed {', '.join(failed) or 'no layer named'}", ""]
        if tags:
            out += ["*" + "; ".join(tags) + "*", ""]
        out += [case_files_line(facts, cid), ""]
        expect = _json_or_none(read_case_file(facts.run_dir, cid, "expect.json"))
        expected = {}
        for layer in failed:
            for key in EXPECT_KEYS.get(layer, (layer,)):
                if isinstance(expect, dict) and key in expect:
                    expected[key] = expect[key]
        block = []
        if doc.get("input_text"):
            block.append(("input", " ".join(str(doc["input_text"]).split())))
        if expected:
            block.append(("expected", _compact(expected)))
        for layer in failed:
            block.append((layer, describe_layer(layer, layers.get(layer) or {},
                                                judged_failures(facts.run_dir, cid) if layer == "judged" else None)))
        answer = read_case_file(facts.run_dir, cid, "answer.txt")
        if answer is not None:
            clipped = clip(redactor(answer), MAX_ANSWER_CHARS + len(TRUNCATED), ellipsis=TRUNCATED)
            block.append(("actual", " ".join(clipped.split()) or "(empty answer)"))
        width = max(len(k) for k, _ in block) + 1
        out += [fenced(redactor("\n".join(f"{k + ':':<{width}} {v}" for k, v in block))), ""]
        if doc.get("multi_turn") and isinstance(doc.get("turns"), list):
            out += conversation_excerpt(facts, cid, doc, redactor)
    if len(failing) > MAX_EXCERPTS:   # each still named with what failed
        rest = [f"{code(r['case_id'])} (failed {', '.join(_failed_layers(facts, r)) or 'no layer named'})"
                for r in failing[MAX_EXCERPTS:]]
        out += [f"Not excerpted: {', '.join(rest)}.", ""]
    return out


def _failed_layers(facts: RunFacts, row: dict) -> list[str]:
    """The case's failed layers in layer order (its verdict record's, else its verdicts.jsonl row's)."""
    layers = facts.verdicts.get(row["case_id"], {}).get("layers") or {}
    return [name for name in LAYER_ORDER if (layers.get(name) or {}).get("verdict") == "fail"] or \
        [k for k, v in (row.get("layers") or {}).items() if v == "fail"]


def conversation_excerpt(facts: RunFacts, cid: str, doc: dict, redactor) -> list[str]:
    """Every sent turn of a failing conversation, user -> answer, the failing turn marked."""
    failed_turn = doc.get("failed_turn")
    lines = []
    for t in doc["turns"]:
        if not isinstance(t, dict):
            continue
        n = t.get("n")
        answer = read_case_file(facts.run_dir, cid, f"turns/{n}/answer.txt")
        answer = clip(redactor(" ".join((answer or "").split()) or "(empty answer)"), MAX_ANSWER_CHARS + len(TRUNCATED),
                      ellipsis=TRUNCATED)
        mark = "  <-- FAILED HERE" if n == failed_turn else ""
        lines.append(f"turn {n} [{t.get('verdict')}]{mark}")
        lines.append(f"  user:   {' '.join(str(t.get('user') or '').split())}")
        lines.append(f"  answer: {answer}")
    total = doc.get("turns_total")
    why = str(doc.get("stop_reason") or "")
    why = why.split(": ", 1)[1] if why.startswith("turn ") and ": " in why else why
    head = (f"Conversation: {len(lines) // 3} of {total} turn(s) sent"
            + (f"; it failed at turn {failed_turn} ({why})" if failed_turn else "") + ".")
    return [esc(redactor(head)), "", fenced(redactor("\n".join(lines))), ""]


def _json_or_none(text: str | None):
    try:
        return loads(text) if text is not None else None
    except ValueError:
        return None


def routing_section(facts: RunFacts) -> list[str]:
    out = ["## Routing", ""]
    scored = [(cid, (d.get("layers") or {}).get("routing") or {}) for cid, d in facts.verdicts.items()
              if not d.get("canary")]
    scored = [(cid, layer) for cid, layer in scored if layer.get("verdict") in ("pass", "fail")]
    from_status = [cid for cid, layer in scored if layer.get("observed_from") == "status"]
    all_status = bool(scored) and len(from_status) == len(scored)
    if all_status:
        out += ["**Status-derived routing.** Every scored case's route came from the HTTP status "
                "(the adapter's `route_from_status`), so this section measures whether the status mapped "
                "to the expected label (answered vs refused). It says nothing about which route target "
                "handled the request, and the number below is not routing accuracy.", ""]
    elif from_status:
        out += [f"**{len(from_status)} of {len(scored)} scored cases' routes are status-derived** "
                "(`route_from_status`): for those, the routing verdict says only whether the HTTP status "
                "mapped to the expected label (answered vs refused), not which route target handled the "
                "request.", ""]
    rr = facts.routing
    if rr is None:
        out += ["No `routing_report.json`: no non-canary case's routing was scorable in this run.", ""]
        return out
    label = "Status-mapping agreement" if all_status else "Routing accuracy"
    out.append(f"{label}: **{pct(rr.get('accuracy'))}** over n={num(rr.get('n'))} "
               f"(macro F1 {num(rr.get('macro_f1'), 2)}, micro F1 {num(rr.get('micro_f1'), 2)}).")
    if rr.get("warning"):
        out += ["", f"> {esc(rr['warning'])}"]
    if rr.get("conversations_note"):
        out += ["", esc(rr["conversations_note"]) + "."]
    alts = rr.get("accepted_alternates")
    if alts:
        n_alts = alts if isinstance(alts, int) else len(alts)
        out += ["", f"{plural(n_alts, 'pass')} came through an accepted alternate route "
                "(counted in accuracy, left out of the matrix)."]
    out.append("")
    out += confusion_table(rr.get("confusion_matrix"))
    out += per_target_table(rr.get("per_target"))
    spurious = rr.get("spurious_labels")
    if spurious:
        items = spurious.items() if isinstance(spurious, dict) else ((s, None) for s in spurious)
        shown = ", ".join(code(k) + (f" ({v})" if isinstance(v, int) else "") for k, v in items)
        out += [f"**Spurious labels** (routes the app chose that no case asks for; each is a finding): {shown}.", ""]
    else:
        out += ["Spurious labels: none.", ""]
    oos = rr.get("oos")
    if isinstance(oos, dict):
        out += [f"Out-of-scope route: precision {num(oos.get('precision'), 2)}, recall {num(oos.get('recall'), 2)}, "
                f"support {num(oos.get('support'))}" + (f". {esc(oos['note'])}" if oos.get("note") else "."), ""]
    return out


def confusion_table(matrix: object) -> list[str]:
    if not isinstance(matrix, dict) or not matrix:
        return []
    labels = sorted(set(matrix) | {o for row in matrix.values() if isinstance(row, dict) for o in row})
    head = "| expected ↓ · observed → | " + " | ".join(code(l) for l in labels) + " |"
    rows = [head, "|:---|" + "---:|" * len(labels)]
    for exp in labels:
        row = matrix.get(exp) if isinstance(matrix.get(exp), dict) else {}
        cells = []
        for obs in labels:
            n = count(row.get(obs))
            cells.append(f"**{n}**" if exp == obs and n else (f"*{n}*" if n else "·"))
        rows.append(f"| {code(exp)} | " + " | ".join(cells) + " |")
    return ["Confusion matrix (rows: expected route; columns: observed; **bold** = correct, *italic* = confused):", ""] + rows + [""]


def per_target_table(per_target: object) -> list[str]:
    if not isinstance(per_target, dict) or not per_target:
        return []
    rows = ["| route | precision | recall | F1 | support |", "|:---|---:|---:|---:|---:|"]
    for label in sorted(per_target):
        m = per_target[label] if isinstance(per_target[label], dict) else {}
        rows.append(f"| {code(label)} | {num(m.get('precision'), 2)} | {num(m.get('recall'), 2)} | "
                    f"{num(m.get('f1'), 2)} | {num(m.get('support'))} |")
    return rows + [""]


def reliability_section(facts: RunFacts) -> list[str]:
    k = facts.results.get("k")
    out = ["## Reliability", ""]
    rel = facts.reliability
    if rel is None:
        if isinstance(k, int) and k > 1:
            return out + [f"k={k} but there is no `reliability.json` (no case's repeats all scored pass/fail).", ""]
        return out + ["k=1: each case ran once, so there is no pass@k / pass^k measurement in this run.", ""]
    gap = rel.get("flakiness_gap")
    out.append(f"k={num(rel.get('k'))} over {num(rel.get('n_cases'))} cases: pass@k **{num(rel.get('pass_at_k'), 3)}**, "
               f"pass^k **{num(rel.get('pass_hat_k'), 3)}**, gap {num(gap, 3)} (passes at least once vs every time).")
    if rel.get("flakiness_note"):
        out += ["", esc(rel["flakiness_note"])]
    if facts.results.get("mode") == "regression" and isinstance(k, int) and k < 3:
        out += ["", f"Note: k={k} is below the regression default of 3."]
    excluded = [e if isinstance(e, str) else (e or {}).get("case_id") for e in rel.get("excluded_cases") or []]
    shown = [code(e) for e in excluded if isinstance(e, str) and e not in facts.sealed]
    hidden = len(excluded) - len(shown)
    if excluded:
        out += ["", f"Excluded ({len(excluded)} cases whose repeats were not all pass/fail): "
                + (", ".join(shown) or "") + (f"{' and ' if shown else ''}{hidden} holdout (sealed)" if hidden else "") + "."]
    else:
        out += ["", "Excluded cases: none."]
    return out + [""]


def comparison_words(cmp: dict) -> str:
    words = cmp.get("verdict_words")
    delta, mde = cmp.get("delta"), cmp.get("min_detectable_effect_at_this_n")
    if words not in ("improved", "worsened", "within noise"):
        if isinstance(delta, (int, float)) and isinstance(mde, (int, float)) and abs(delta) >= mde and delta:
            words = "improved" if delta > 0 else "worsened"
        else:
            words = "within noise"
    sentence = cmp.get("mde_sentence")
    if not isinstance(sentence, str) or not sentence:
        n = cmp.get("n")
        sentence = (mde_sentence(n, mde, 0.05) if isinstance(n, int) and not isinstance(n, bool)
                    and isinstance(mde, (int, float)) and not isinstance(mde, bool)
                    else f"n={num(n)}: the detectable effect is unknown")
    return f"{esc(verdict_label({**cmp, 'verdict_words': words}))} ({esc(sentence)})"


def comparison_section(facts: RunFacts) -> list[str]:
    out = ["## Compared with the baseline", ""]
    cmp = facts.comparison
    if cmp is None:
        return out + ["No `comparison.json`: this run was not given `--baseline-verdicts` "
                      "(`reports/baseline.json` names the pinned baseline).", ""]
    warning = cmp.get("case_attrition_warning")
    if warning:
        out += [f"> **{esc(warning)}** Read this before the verdict: the paired diff covers only cases "
                "present in both runs.", ""]
    out.append(f"**{comparison_words(cmp)}**: pass rate {pct(cmp.get('baseline_pass_rate'))} → "
               f"{pct(cmp.get('candidate_pass_rate'))} on the paired cases; "
               f"{num(cmp.get('fixed_by_candidate'))} fixed, {num(cmp.get('broken_by_candidate'))} broken.")
    only_b, only_c = count(cmp.get("cases_only_in_baseline")), count(cmp.get("cases_only_in_candidate"))
    if only_b or only_c:
        out += ["", f"Unpaired: {only_b} only in the baseline, {only_c} only in this run."]
    for key in ("sub_mde_keep", "gate_note", "advice"):
        if cmp.get(key):
            out += ["", esc(cmp[key])]
    return out + [""]
