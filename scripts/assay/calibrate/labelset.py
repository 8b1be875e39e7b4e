"""What a labelling sitting shows: one item per (judged case, rubric pin, node, answer) of one
or several runs, holdout cases never included, chosen to oversample the judge's fails (under a limit),
in an order that does not tell the judge's verdict, with canaries mixed in.

Items come from each judged case's `judge.json` (in its case record, core.casestore).
Every item carries `answer_sha256`, the sha256 of the whole answer (the page shows its first
MAX_TEXT characters and the rest when the person asks), and the export writes it on each line: a label is tied to the material it was given on. An item already
labelled on the same answer is not asked again; up to `canaries` of those are shown once
more as canaries (the earlier label is the expected one, hidden from the page): a missed
canary voids the whole exported batch in score_agreement.py. An item labelled on a
different answer (the app's answer changed since) is asked again as a fresh item, never as
a canary: its old label says nothing about this answer. A label without `answer_sha256`
(written before the page recorded it) is on unknown material: not asked again, never a
canary (`labelled_on_unknown_answer`). A label given before the rest of a long answer was shown
(`saw_whole_answer: false`) is not a label on the whole answer: the item is asked again
(`labelled_without_whole_answer` counts those lines). An item reviewers labelled differently is
neither asked again nor a canary (`people_disagree`): there is no one earlier label to expect.

A pairwise rubric's item shows both answers (the baseline run's is read from its run dir and must
hash to the `baseline_answer_sha256` the judge recorded); a conversation's rubric shows the turn it
judged with the earlier turns as context (scope turn) or the whole conversation (scope transcript),
from the case record's `turns/<n>/` artifacts. An item whose material the run dirs no longer hold is not asked
(`material_missing`).

Which items: the judge's verdict strata (fail, pass, unknown) are each shuffled with `seed`,
then dealt in the repeating pattern fail, pass, fail, unknown, pass (a stratum that runs
out is skipped), so a `limit` keeps fails about twice as often as their share until they run
out. Order: the items kept are shuffled again, from an order of their ids, so an item's place
never tells the person the judge's verdict; canaries are spread evenly through the queue.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

from ..core import case_read, casestore
from ..core.errors import AssayError
from ..core.vocab import JUDGE_UNSTABLE
from ..core.writer import clip
from ..core.ids import RUN_NAME_RULE, is_safe_case_id, is_safe_run_name
from ..report.rundir import holdout_ids, load_results
from .annotations import PIN_RE, read_annotations
from .people import one_label_per_item

PATTERN = ("fail", "pass", "fail", "unknown", "pass")
MAX_TEXT = 20_000


def _clip(text: str) -> str:
    text = clip(text, len(text) + 1)   # redact, then cut (the writer's redaction cannot see a cut secret)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT} more characters)"


def _whole(text: str) -> str:
    """The answer judged, whole (redacted, never cut): the page shows its first MAX_TEXT characters and the
    rest when asked, so every character answer_sha256 covers is one the person can read."""
    return clip(text, len(text) + 1)


def _pretty(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def case_material(case: casestore.CaseRecord, verdict: Any = None) -> dict[str, Any]:
    """Input, answer and tool results of one case (its record, core.casestore) as the labeller reads them.

    The input is the user's words the runner copied into verdict.json (`input_text`),
    else the recorded request body."""
    verdict = verdict if isinstance(verdict, dict) else {}
    body: Any = verdict.get("input_text")
    if not isinstance(body, str) or not body:
        request = _doc(case.read("request.json")) or {}
        body = request.get("body") if isinstance(request, dict) else None
        if body is None and isinstance(request, dict):
            body = request.get("stdin") or request.get("argv") or request.get("args")
    answer = (case.read("answer.txt") or b"").decode("utf-8", "replace")
    answer_sha = hashlib.sha256(answer.encode("utf-8")).hexdigest()
    tools = []
    trajectory = _doc(case.read("trajectory.json"))
    if isinstance(trajectory, dict):
        for call in trajectory.get("tool_calls") or []:
            if isinstance(call, dict):
                tools.append({"name": str(call.get("name")), "arguments": _clip(_pretty(call.get("arguments"))),
                              "result": _clip(_pretty(call.get("result"))),
                              "error": None if call.get("error") is None else str(call.get("error"))})
    title = verdict.get("title")
    return {"input": _clip(_pretty(body)), "answer": _whole(answer), "answer_sha256": answer_sha, "tools": tools,
            "title": title if isinstance(title, str) else ""}


def _doc(data: bytes | None) -> Any:
    try:
        return json.loads(data) if data is not None else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _judge_items(case_id: str, doc: Any, where: Path) -> list[dict[str, Any]]:
    if not isinstance(doc, dict) or not isinstance(doc.get("rubrics"), list):
        raise AssayError(f"{where}: `rubrics` is missing or not a list; this is not a judge.json the runner "
                         "wrote (re-run, or rescore the run)", 2, file=str(where))
    items = []
    for ri, rubric in enumerate(doc["rubrics"]):
        pin = rubric.get("pin") if isinstance(rubric, dict) else None
        if not isinstance(pin, str) or not PIN_RE.match(pin):
            raise AssayError(f"{where}: rubrics[{ri}].pin {pin!r} is not a rubric pin (<rubric_id>-v<version>)", 2,
                             file=str(where))
        view = _view(rubric)
        for ni, node in enumerate(rubric.get("nodes") or []):
            if not isinstance(node, dict) or not isinstance(node.get("node_id"), str):
                raise AssayError(f"{where}: rubrics[{ri}].nodes[{ni}] has no string node_id", 2, file=str(where))
            verdict = node.get("verdict")
            if verdict == JUDGE_UNSTABLE:
                continue  # the judge gave no one verdict to agree or disagree with
            if verdict not in ("pass", "fail", "unknown"):
                raise AssayError(f"{where}: rubrics[{ri}].nodes[{ni}].verdict {verdict!r} is not pass, fail or "
                                 "unknown", 2, file=str(where))
            evidence = node.get("evidence") or []
            items.append({
                "case_id": case_id, "rubric_id": pin, "node_id": node["node_id"],
                "criterion": str(node.get("criterion") or ""), "judge_label": verdict,
                "evidence": [str(e) for e in evidence] if isinstance(evidence, list) else [str(evidence)],
                "reason": str(node.get("reason") or ""),
                "provisional": bool(rubric.get("provisional", True)), "view": view,
            })
    return items


def _view(rubric: dict[str, Any]) -> dict[str, Any] | None:
    """What material a rubric judged, beyond the case's answer: a conversation turn (scope turn: that
    turn, earlier turns as context; transcript: the whole conversation) or a pairwise baseline."""
    if rubric.get("kind") == "pairwise":
        return {"kind": "pairwise", "baseline_run_id": rubric.get("baseline_run_id"),
                "baseline_answer_sha256": rubric.get("baseline_answer_sha256")}
    turn = rubric.get("turn")
    if isinstance(turn, int) and not isinstance(turn, bool) and turn >= 1:
        return {"kind": "transcript" if rubric.get("scope") == "transcript" else "turn", "turn": turn}
    return None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_TURN_LINE = re.compile(r"^\[turn (\d+)\] (.*)$", re.M)


def _turn_users(verdict: Any) -> dict[int, str]:
    """Each turn's user message: a simulated user's from verdict.json `turns[].user`, a scripted one's from
    its `input_text` lines (`[turn n] ...`); a turn missing from both shows its request body."""
    verdict = verdict if isinstance(verdict, dict) else {}
    out = {int(n): text for n, text in _TURN_LINE.findall(verdict.get("input_text") or "")}
    for t in verdict.get("turns") or []:
        if isinstance(t, dict) and isinstance(t.get("n"), int) and isinstance(t.get("user"), str):
            out[t["n"]] = t["user"]
    return out


class _TurnRecord:
    """One turn's artifacts of a conversation's record (`turns/<n>/<name>`), read like a case's."""

    def __init__(self, case: casestore.CaseRecord, turn: int) -> None:
        self.case, self.prefix = case, f"turns/{turn}/"

    def read(self, name: str) -> bytes | None:
        return self.case.read(self.prefix + name)


def view_material(run: Path, case: casestore.CaseRecord, verdict: Any, base: dict[str, Any],
                  view: dict[str, Any]) -> dict[str, Any] | None:
    """The material of a pairwise or conversation-turn item: what the judge was shown, or None when the
    run dir no longer holds it (the item is then not asked: a label must be on what the judge saw).
    `answer_sha256` is the sha256 of the answer shown; for a pairwise item, of the pair: the run's
    answer's sha256 and the baseline's, joined by a newline."""
    if view["kind"] == "pairwise":
        rid, want = view.get("baseline_run_id"), view.get("baseline_answer_sha256")
        if not is_safe_run_name(rid) or not is_safe_case_id(case.case_id):
            return None
        try:
            baseline = case_read.read_case_text(run.parent / rid, case.case_id, "answer.txt")
        except (OSError, ValueError):
            return None
        if baseline is None:
            return None
        if _sha256(baseline) != want:
            return None      # the baseline run's answer is not the one the judge compared
        return dict(base, baseline=_whole(baseline), baseline_run_id=rid,
                    answer_sha256=_sha256(base["answer_sha256"] + "\n" + want))
    turns = []
    users = _turn_users(verdict)
    for t in range(1, view["turn"] + 1):
        turn = _TurnRecord(case, t)
        if turn.read("answer.txt") is None:
            return None
        m = case_material(turn)
        turns.append(dict(m, input=users.get(t) or m["input"]))
    if view["kind"] == "transcript":
        whole = "\n\n".join(f"[turn {t}] user: {m['input']}\n[turn {t}] answer: {m['answer']}"
                              for t, m in enumerate(turns, 1))
        return dict(base, input="(the whole conversation: every answer in it is the answer judged)", answer=whole,
                    answer_sha256=_sha256(whole), tools=[tool for m in turns for tool in m["tools"]],
                    scope=f"the whole conversation ({len(turns)} turns)")
    last = turns[-1]
    return dict(base, input=last["input"], answer=last["answer"], answer_sha256=last["answer_sha256"],
                tools=last["tools"], scope=f"turn {view['turn']} of the conversation",
                earlier=[{"turn": t, "user": m["input"], "answer": _clip(m["answer"])}     # context, not judged
                         for t, m in enumerate(turns[:-1], 1)])


def default_annotation_files(run_dir: Path) -> list[Path]:
    """<state>/annotations/*.jsonl when the run dir sits at <state>/reports/<run-id>."""
    ann = run_dir.resolve().parent.parent / "annotations"
    if run_dir.resolve().parent.name == "reports" and ann.is_dir():
        return sorted(ann.glob("*.jsonl"))
    return []


def stratified(items: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    strata = {v: [i for i in items if i["judge_label"] == v] for v in ("fail", "pass", "unknown")}
    for v in strata:
        rng.shuffle(strata[v])
    out: list[dict[str, Any]] = []
    while any(strata.values()):
        for v in PATTERN:
            if strata[v]:
                out.append(strata[v].pop())
    return out


def _ident_key(item: dict[str, Any]) -> tuple:
    return (item["case_id"], item["rubric_id"], item["node_id"] or "", item["answer_sha256"])


def unanchored(queue: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The order the page asks in: the items chosen, shuffled by `seed` from an order of their ids, so
    where an item stands says nothing of the judge's verdict (dealt fail, pass, fail, unknown, pass,
    item 1, 3, ... were the judge's fails: a person who saw the pattern labelled with the judge's
    answer in mind). The stratified deal only chooses which items a --limit keeps."""
    out = sorted(queue, key=_ident_key)
    random.Random(seed + 2).shuffle(out)
    return out


def spread(queue: list[dict[str, Any]], canaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Canaries at evenly spaced positions (never first, so a sitting starts on real work)."""
    out = list(queue)
    n = len(canaries)
    for k, c in enumerate(canaries):
        pos = min(len(out), (k + 1) * (len(queue) + n) // (n + 1))
        out.insert(max(1, pos) if out else 0, c)
    return out


def _run_items(run: Path) -> tuple[str, list[dict[str, Any]], dict[str, dict[str, Any]], int, int, int]:
    """(run id, items, materials by material key, judged cases, holdout skipped, items whose material the
    run dir no longer holds) of one run."""
    results = load_results(run)
    run_id = results.get("run_id") or run.name
    if not is_safe_run_name(run_id):   # it names the batch, and the batch names files under <state>/annotations/
        raise AssayError(f"{run / 'results.json'}: run_id {clip(str(run_id), 120)!r} is not a run id ({RUN_NAME_RULE}); "
                         "this is not a results.json the runner wrote: label a run dir as the runner left it", 2,
                         path=str(run / "results.json"), key="run_id")
    sealed = holdout_ids(run)
    store = casestore.open_store(run)
    judged, holdout_skipped, unshown = 0, 0, 0
    items: list[dict[str, Any]] = []
    materials: dict[str, dict[str, Any]] = {}
    for cid, verdict in sorted(store.verdicts()):
        if not is_safe_case_id(cid) or not verdict.get("judged") and store.layout != "dirs":
            continue
        if cid in sealed or verdict.get("holdout"):
            if store.layout != "dirs" or store.holds(cid, "judge.json"):
                holdout_skipped += 1          # never read: holdout details stay sealed
            continue
        case = store.load(cid)
        raw = case.read("judge.json") if case is not None else None
        if raw is None:
            continue
        where = Path(store.where(cid, "judge.json"))
        doc = _doc(raw)
        if doc is None:
            raise AssayError(f"{where}: not JSON; this is not a judge.json the runner wrote (re-run, or rescore "
                             "the run)", 2, file=str(where))
        judged += 1
        material = case_material(case, verdict)
        for item in _judge_items(cid, doc, where):
            view = item.pop("view")
            shown = material if view is None else view_material(run, case, verdict, material, view)
            if shown is None:
                unshown += 1
                continue
            key = material_key(cid, shown["answer_sha256"])
            materials[key] = shown
            items.append(dict(item, answer_sha256=shown["answer_sha256"], material=key, run_id=run_id))
    return run_id, items, materials, judged, holdout_skipped, unshown


def material_key(case_id: str, answer_sha256: str) -> str:
    """The page's key for what one item shows: a case's answer (two runs with the same answer share it)."""
    return f"{case_id}@{answer_sha256[:16]}"


def build_items(run_dirs: str | Path | list, *, annotation_files: list[Path] | None = None, canaries: int = 3,
                seed: int = 0, limit: int | None = None) -> dict[str, Any]:
    """The items of one or several runs. The same (rubric, node, case) on the same answer in two runs is
    one item (the later run's, in argument order): labelling it twice would count one material twice."""
    runs = [Path(r) for r in (run_dirs if isinstance(run_dirs, list) else [run_dirs])]
    judged, holdout_skipped, unshown, run_ids = 0, 0, 0, []
    by_key: dict[tuple, dict[str, Any]] = {}
    materials: dict[str, dict[str, Any]] = {}
    for run in runs:
        run_id, run_items, run_materials, n, skipped, missing = _run_items(run)
        run_ids.append(run_id)
        judged, holdout_skipped, unshown = judged + n, holdout_skipped + skipped, unshown + missing
        materials.update(run_materials)
        for item in run_items:
            key = (item["rubric_id"], item["node_id"], item["case_id"], item["answer_sha256"])
            by_key.pop(key, None)
            by_key[key] = item
    items = list(by_key.values())
    same_answer = judged - len({(i["case_id"], i["answer_sha256"]) for i in items}) if len(runs) > 1 else 0
    if not items:
        where = runs[0] if len(runs) == 1 else ", ".join(map(str, runs))
        raise AssayError(f"{where}: no judged non-holdout case (no cases/<id>/judge.json outside the holdout); "
                         "run a mode that judges (regression, or --judge) with a judge configured", 2,
                         holdout_excluded=holdout_skipped)
    files = default_annotation_files(runs[0]) if annotation_files is None else annotation_files
    earlier: dict[tuple, Any] = {}          # (rubric, node, case, answer) -> the last label on it
    labelled_items: set[tuple] = set()      # (rubric, node, case) labelled on some answer
    unknown_items: set[tuple] = set()       # ... on unknown material (older files)
    # what people said of each item, as score_agreement counts it (calibrate.people): each reviewer's last
    # line; a label given before the rest of a long answer was shown is asked again; an item reviewers
    # disagree on is neither asked again nor a canary (no one label to expect)
    kept, folded = one_label_per_item([a for a in (read_annotations(files) if files else []) if not a.canary])
    partial = len(folded["without_whole_answer"])
    disputed = {(d["rubric_id"], d["node_id"], d["case_id"], d["answer_sha256"] or "")
                for d in folded["people_disagree"]}
    for a in kept:
        earlier[a.key] = a
        labelled_items.add(a.item)
        if a.answer_sha256 is None:
            unknown_items.add(a.item)
    for key in disputed:
        labelled_items.add(key[:3])
        if not key[3]:
            unknown_items.add(key[:3])
    fresh, seen, changed, unknown, people_disagree = [], [], 0, 0, 0
    for item in items:
        ident = (item["rubric_id"], item["node_id"], item["case_id"])
        old = earlier.get((*ident, item["answer_sha256"]))
        if (*ident, item["answer_sha256"]) in disputed:
            people_disagree += 1              # labelled, by people who disagree: settled by them, not asked
        elif old is not None:
            seen.append(dict(item, expected=old.label))
        elif ident in unknown_items:
            unknown += 1                      # labelled on material nobody recorded: neither asked nor a canary
        elif ident in labelled_items:
            changed += 1                      # labelled on another answer: this answer is a new pair
            fresh.append(dict(item, expected=None, relabel=True))
        else:
            fresh.append(dict(item, expected=None))
    rng = random.Random(seed + 1)
    chosen = rng.sample(seen, min(canaries, len(seen))) if canaries > 0 else []
    queue = stratified(fresh, seed)
    if limit is not None:
        queue = queue[:limit]
    queue = unanchored(queue, seed)
    for c in chosen:
        c["canary"] = True
    ordered = spread(queue, chosen)
    by_judge = {v: sum(1 for i in queue if i["judge_label"] == v) for v in ("fail", "pass", "unknown")}
    shown = {i["material"] for i in ordered}
    return {
        "run_id": run_ids[0] if len(run_ids) == 1 else f"{run_ids[-1]}+{len(run_ids) - 1}",
        "run_ids": run_ids,
        "items": ordered,
        "materials": {key: m for key, m in materials.items() if key in shown},
        "stats": {"runs": len(runs), "judged_cases": judged, "holdout_excluded": holdout_skipped,
                  "items": len(ordered), "to_label": len(queue), "already_labelled": len(seen),
                  "answer_changed": changed, "same_answer_in_another_run": same_answer,
                  "labelled_on_unknown_answer": unknown, "canaries": len(chosen),
                  "labelled_without_whole_answer": partial, "people_disagree": people_disagree,
                  "material_missing": unshown,
                  "by_judge_verdict": by_judge, "annotation_files_read": [str(f) for f in files]},
    }
