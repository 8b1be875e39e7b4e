"""One pair: what changed in a case between the base and the candidate run, and its bucket.

- `layers_changed`: every layer whose verdict string differs (verdicts.jsonl rows).
- `answer`: changed after normalization (diffs.normalize_answer), with a word diff.
- `trajectory`: the tool sequence with arguments, with the first difference.
- `judge_flips`: a judged layer whose verdict (or, provisional, the judge's own verdict) went
  pass <-> fail while the answer and the judge's material (the tool calls, arguments and
  results) stayed the same. A pair is `judge_flip` when it has one.
- `turns` (conversations): turn by turn (verdict, answer, trajectory), naming the first turn
  that differs.
- `repeats` (k > 1 on either side): each side's repeat verdicts; the folded verdict is compared.
"""

from __future__ import annotations

from typing import Any

from ..core.vocab import LAYER_ORDER
from .buckets import SCORED, bucket_of
from .diffs import (diff_first_line, expectation_diff, normalize_answer, results_equal, tool_calls, trajectory_diff,
                    trajectory_first_line, word_diff)
from .sides import Side

JUDGED_LAYERS = ("judged",)


def _layers(row: dict | None, memo: dict | None = None) -> dict[str, str]:
    """The row's layer verdicts as strings; with `memo` (one comparison's), each map the rows share
    (one object for every equal row: compare.sides) is made once, keyed by that object, kept alive."""
    layers = (row or {}).get("layers")
    if not isinstance(layers, dict):
        return {}
    if memo is None:
        return {k: str(v) for k, v in layers.items()}
    key = ("layers", id(layers))
    held = memo.get(key)
    if held is None or held[0] is not layers:
        held = memo[key] = (layers, {k: str(v) for k, v in layers.items()})
    return held[1]


def layers_changed(base: dict[str, str], cand: dict[str, str]) -> list[dict[str, str]]:
    if base == cand:
        return []
    names = [n for n in LAYER_ORDER if n in base or n in cand]
    names += sorted((set(base) | set(cand)) - set(names))
    return [{"layer": n, "base": base.get(n, "absent"), "candidate": cand.get(n, "absent")}
            for n in names if base.get(n) != cand.get(n)]


def failing_layers(layers: dict[str, str]) -> list[str]:
    return [n for n, v in layers.items() if v == "fail"]


def case_status(base: Side, cand: Side, cid: str) -> tuple[bool | None, str | None]:
    """(changed, note): True/False when both runs recorded case_sha256, else None (unknown)."""
    b, c = base.case_hash.get(cid), cand.case_hash.get(cid)
    if b and c:
        return b != c, None
    lb, lc = base.legacy_hash.get(cid), cand.legacy_hash.get(cid)
    which = "either run" if not b and not c else "the base run" if not b else "the candidate run"
    note = f"case version unknown: {which} predates case hashes (case_sha256)"
    if lb and lc and lb != lc:
        note += "; its converted case differs (the older hash also covers bookkeeping such as split and review)"
    return None, note


def _judge_verdict(entry: Any) -> str | None:
    """The judge's own verdict on a judged layer: the layer verdict, or provisional_verdict."""
    if not isinstance(entry, dict):
        return None
    if entry.get("verdict") in SCORED:
        return entry["verdict"]
    return entry.get("provisional_verdict") if entry.get("provisional_verdict") in SCORED else None


def _answer(side: Side, cid: str, *turn: str) -> str | None:
    return normalize_answer(side.text(cid, *turn, "answer.txt"))


def answer_block(base_text: str | None, cand_text: str | None) -> dict[str, Any]:
    if base_text is None or cand_text is None:
        return {"changed": None if base_text is None and cand_text is None else True,
                "base": base_text, "candidate": cand_text,
                "reason": "no answer on " + ("either side" if base_text is None and cand_text is None
                                             else "the base" if base_text is None else "the candidate")}
    if base_text == cand_text:
        return {"changed": False}
    diff = word_diff(base_text, cand_text)
    return {"changed": True, "base": base_text, "candidate": cand_text, "diff": diff,
            "first_line": diff_first_line(diff)}


def judge_flips(bdoc: dict, cdoc: dict, answer: dict, calls: tuple) -> list[dict[str, Any]]:
    bdoc, cdoc = bdoc.get("layers") or {}, cdoc.get("layers") or {}
    out = []
    for layer in JUDGED_LAYERS:
        bv, cv = _judge_verdict(bdoc.get(layer)), _judge_verdict(cdoc.get(layer))
        if bv is None or cv is None or bv == cv:
            continue
        same_material = (answer.get("changed") is False and trajectory_diff(*calls).get("changed") is False
                         and results_equal(*calls) is True)
        if same_material:
            out.append({"layer": layer, "base": bv, "candidate": cv,
                        "provisional": bool((cdoc.get(layer) or {}).get("provisional")
                                            or (bdoc.get(layer) or {}).get("provisional"))})
    return out


def _rubric_verdicts(layer: Any) -> dict[str, str]:
    """{pin: verdict} of a judged layer's provisional rubrics that were scored pass or fail."""
    rubrics = layer.get("rubrics") if isinstance(layer, dict) else None
    return {str(r["pin"]): r["verdict"] for r in rubrics or () if isinstance(r, dict) and r.get("provisional")
            and r.get("pin") and r.get("verdict") in SCORED}


def provisional_changes(bdoc: dict, cdoc: dict) -> list[dict[str, Any]]:
    """Provisional (not yet calibrated, never gating) rubrics whose verdict changed, rubric by rubric,
    whatever the material: a regression only a rubric sees must be named, even while it cannot gate
    (wave 4 §1). A layer whose other rubric is unscored (a pairwise one with no baseline) still says
    what each scored rubric did."""
    bl, cl = bdoc.get("layers") or {}, cdoc.get("layers") or {}
    out = []
    for layer in JUDGED_LAYERS:
        if not (isinstance(cl.get(layer), dict) and cl[layer].get("provisional")):
            continue
        before, after = _rubric_verdicts(bl.get(layer)), _rubric_verdicts(cl.get(layer))
        for base, cand in (("pass", "fail"), ("fail", "pass")):
            pins = sorted(p for p, v in after.items() if v == cand and before.get(p) == base)
            if pins:
                out.append({"layer": layer, "base": base, "candidate": cand, "pins": pins})
    return out


def turns_block(base: Side, cand: Side, cid: str, bdoc: dict, cdoc: dict) -> dict[str, Any] | None:
    bt, ct = bdoc.get("turns"), cdoc.get("turns")
    if not isinstance(bt, list) and not isinstance(ct, list):
        return None
    bt = {t.get("n"): t for t in bt or [] if isinstance(t, dict)}
    ct = {t.get("n"): t for t in ct or [] if isinstance(t, dict)}
    rows, first = [], None
    for n in sorted(set(bt) | set(ct), key=lambda x: x if isinstance(x, int) else 0):
        b, c = bt.get(n), ct.get(n)
        rel = ("turns", str(n))
        ans = answer_block(_answer(base, cid, *rel), _answer(cand, cid, *rel)) if b and c else {"changed": True}
        traj = (trajectory_diff(tool_calls(base.json(cid, *rel, "trajectory.json")),
                                tool_calls(cand.json(cid, *rel, "trajectory.json"))) if b and c
                else {"changed": True})
        row = {"n": n, "base": (b or {}).get("verdict", "not sent"), "candidate": (c or {}).get("verdict", "not sent"),
               "answer_changed": ans.get("changed"), "trajectory_changed": traj.get("changed")}
        if ans.get("first_line"):
            row["answer_first_line"] = ans["first_line"]
        if traj.get("first_difference"):
            row["trajectory_first_line"] = trajectory_first_line(traj)
        differs = row["base"] != row["candidate"] or ans.get("changed") is True or traj.get("changed") is True
        row["differs"] = differs
        if differs and first is None:
            first = n
        rows.append(row)
    return {"first_differing_turn": first, "turns": rows}


def repeats_block(base: Side, cand: Side, bdoc: dict, cdoc: dict) -> dict[str, Any] | None:
    if (base.k or 1) == 1 and (cand.k or 1) == 1:
        return None

    def seq(doc: dict) -> list[str] | None:
        reps = doc.get("repeats")
        return [str(r.get("verdict")) for r in reps if isinstance(r, dict)] if isinstance(reps, list) else None
    return {"base": seq(bdoc), "candidate": seq(cdoc)}


def _shared(memo: dict | None, key: Any, value: Any) -> Any:
    """`value`, or the equal one already in this comparison's `memo` (a 100,000-pair document holds
    one `{"changed": false}`, not 100,000). The document is read, never mutated, by its readers."""
    if memo is None:
        return value
    try:
        return memo.setdefault(key, value)
    except TypeError:   # an unhashable part of the key: not shared
        return value


def _share_value(memo: dict | None, value: Any, limit: int = 8) -> Any:
    """`_shared` for a small dict or list part of a pair (at most `limit` entries), keyed by its
    repr: type-exact (True and 1, 1 and 1.0, "1" and 1 never meet), C-fast."""
    if memo is None or not isinstance(value, (dict, list)) or len(value) > limit:
        return value
    return _shared(memo, (type(value), repr(value)), value)


def compare_pair(base: Side, cand: Side, cid: str, memo: dict | None = None) -> dict[str, Any]:
    """One pair's entry of compare.json. `memo` (one per comparison): equal small parts of the
    pairs (a verdict pair, an unchanged answer, an empty list) are one shared object."""
    pair = _compare_pair(base, cand, cid, memo)
    if memo is not None:
        for key in ("verdict", "failing_layers", "layers_changed"):   # parts no redaction rewrites
            if key in pair:
                pair[key] = _share_value(memo, pair[key])
        for key in ("answer", "trajectory"):   # shared only when there is no text in it to redact
            value = pair.get(key)
            if isinstance(value, dict) and value.get("changed") is not True and \
                    not any(value.get(side) for side in ("base", "candidate", "first_line", "diff")):
                pair[key] = _share_value(memo, value)
    return pair


def _compare_pair(base: Side, cand: Side, cid: str, memo: dict | None) -> dict[str, Any]:
    brow, crow = base.rows.get(cid), cand.rows.get(cid)
    bv = brow.get("verdict") if brow else None
    cv = crow.get("verdict") if crow else None
    row = crow or brow or {}
    pair: dict[str, Any] = {"case_id": cid, "verdict": {"base": bv, "candidate": cv},
                            "gating": row.get("gating", True) is not False, "canary": bool(row.get("canary"))}
    bdoc = base.pair_doc(cid) if brow else {}
    cdoc = cand.pair_doc(cid) if crow else {}
    title = (cdoc if crow else bdoc).get("title")
    if isinstance(title, str) and title:
        pair["title"] = title
    if brow is None or crow is None:
        pair["bucket"] = bucket_of(bv, cv, case_changed=None, judge_only=False)
        return pair
    changed, note = case_status(base, cand, cid)
    pair["case"] = "unknown" if changed is None else "changed" if changed else "same"
    if note:
        pair["case_note"] = note
    if changed:
        pair["expectation"] = expectation_diff(base.json(cid, "expect.json"), cand.json(cid, "expect.json"))
    bl, cl = _layers(brow, memo), _layers(crow, memo)
    pair["layers_changed"] = layers_changed(bl, cl)
    pair["failing_layers"] = {"base": failing_layers(bl), "candidate": failing_layers(cl)}
    answer = answer_block(_answer(base, cid), _answer(cand, cid))
    pair["answer"] = answer
    calls = (tool_calls(base.json(cid, "trajectory.json")), tool_calls(cand.json(cid, "trajectory.json")))
    traj = trajectory_diff(*calls)
    if traj.get("changed"):
        traj["first_line"] = trajectory_first_line(traj)
    pair["trajectory"] = traj
    flips = judge_flips(bdoc, cdoc, answer, calls)
    pair["judge_flip"] = bool(flips)
    if flips:
        pair["judge_flips"] = flips
    turns = turns_block(base, cand, cid, bdoc, cdoc)
    if turns is not None:
        pair["turns"] = turns
    repeats = repeats_block(base, cand, bdoc, cdoc)
    if repeats is not None:
        pair["repeats"] = repeats
    provisional = provisional_changes(bdoc, cdoc)
    if provisional:
        pair["judge_only"] = provisional
    flipped = {f["layer"] for f in flips if not f["provisional"]}
    judge_only = bool(flipped) and {c["layer"] for c in pair["layers_changed"]} <= flipped
    pair["bucket"] = bucket_of(bv, cv, case_changed=changed, judge_only=judge_only)
    return pair


def first_diff_line(pair: dict[str, Any]) -> str | None:
    """The first line of what changed, for the gate and the report: the answer's first change, else
    the trajectory's, else the first differing turn."""
    turns = pair.get("turns") or {}
    n = turns.get("first_differing_turn")
    if n is not None:
        row = next((t for t in turns.get("turns") or [] if t.get("n") == n), {})
        detail = row.get("answer_first_line") or row.get("trajectory_first_line")
        return f"turn {n}: " + (detail or f"{row.get('base')} -> {row.get('candidate')}")
    return (pair.get("answer") or {}).get("first_line") or (pair.get("trajectory") or {}).get("first_line")
