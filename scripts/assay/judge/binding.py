"""What a calibration is bound to: the judge that was measured against people, and the text of
each rubric it was measured on (wave 3 §5). Read side and write side share these functions.

The sidecar (`judge/calibration.json`, written by score_agreement.py --write) records
`judge: {identity, sha256}` and per rubric pin `rubric_sha256` and `node_sha256`. At plan and run
time a calibrated pin gates only when the judge configured now has the same identity and the
rubric file the same content; anything else makes it provisional again, with a why_provisional
that says what changed. A sidecar written before this binding (no `judge`, no hashes) cannot
prove it applies to this judge or this text: its pins are provisional until score_agreement.py
--write is re-run over the same annotations (seconds; nothing is relabelled).

The identity is the list of judges (one, or every member of an ensemble) and how their verdicts
combine (`single`, `majority`, `unanimous`): an ensemble is calibrated as configured.

A judge whose `base_url`, `model` or `served_model` names a `${VAR}` is the judge the variable's
VALUE names, not its text: the identity carries `resolved: {vars, sha256}`, a short digest of those
keys' resolved values (a base_url without its user, query and fragment), never the values. A key or a
header is never part of it (references/calibration.md, "Variables in judge.yaml").
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from ..core.jsonio import read_json
from .floors import DEFAULT_FLOORS, unmet_floors, unmet_node_floors  # noqa: F401 (DEFAULT_FLOORS re-exported)
from .bound_values import resolved_binding, resolved_words
from .config import aggregate_of, members
from .command_files import command_files
from .prompt import PROMPT_VERSION

CALIBRATION_SCHEMA = "assay.calibration/1"
JUDGE_CALIBRATION = "judge/calibration.json"
REWRITE = "re-run score_agreement.py <annotations> --write judge/calibration.json (nothing is relabelled)"


def _sha(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _file_sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _one_judge(config: Mapping[str, Any], state: Path | None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What makes one judge this judge: provider and model (and where it is served, by the values of
    the variables those name), or the command and the content of the files it runs from the state dir
    (assay.judge.command_files: scripts, `python -m` modules, the commands of a `bash -c` string or of a
    shell script it runs, and the Python modules those import, each keyed by the argument as written or its path under the state
    dir). Keys, timeouts and concurrency do not."""
    provider = config.get("provider")
    if provider == "command":
        argv = [str(a) for a in config.get("command") or []]
        found = command_files(argv, Path(state), env)[0] if state is not None else {}
        files = {key: _file_sha(path) for key, path in found.items()}
        return {"provider": provider, "command": argv, "command_files": files}
    one = {"provider": provider, "model": config.get("model"), "base_url": config.get("base_url"),
           "structured_output": bool(config.get("structured_output", True))}
    if config.get("served_model"):   # the model behind a deployment name or alias: another one is another judge
        one["served_model"] = config["served_model"]
    resolved = resolved_binding(config, env)
    if resolved is not None:   # absent when no ${VAR} is named: the identity (and every sidecar) as before
        one["resolved"] = resolved
    return one


def judge_identity(config: Mapping[str, Any], state: Path | None,
                   env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The identity of the configured judge (judge.yaml with defaults filled, `${VAR}` as written, plus
    a digest of the values `env` gives the ones in base_url/model/served_model): every judge of an
    ensemble, in order, and how their verdicts combine. `repeats` is not part of it: asking more often
    only finds the nodes where the same judge disagrees with itself."""
    return {"judges": [_one_judge(m, state, env) for m in members(dict(config))],
            "combine": aggregate_of(dict(config)), "prompt_version": PROMPT_VERSION}


def without_values(identity: Mapping[str, Any]) -> dict[str, Any]:
    """The identity as it was before variables' values were bound (each judge's `resolved` dropped)."""
    return dict(identity, judges=[{k: v for k, v in dict(j).items() if k != "resolved"} if isinstance(j, Mapping)
                                  else j for j in identity.get("judges") or []])


def bound_to_text(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The variables whose values `new` binds and `old` (a sidecar or labelled run from before values
    were bound) did not, when that is the only difference; [] otherwise."""
    olds = [j for j in old.get("judges") or [] if isinstance(j, Mapping)]
    if any("resolved" in j for j in olds) or identity_sha256(without_values(new)) != identity_sha256(old):
        return []
    return sorted({n for j in new.get("judges") or [] if isinstance(j, Mapping)
                   for n in (j.get("resolved") or {}).get("vars") or []})


def identity_sha256(identity: Mapping[str, Any]) -> str:
    return _sha(identity)


def describe(identity: Mapping[str, Any] | None) -> str:
    """`openai gpt-4o at https://api.openai.com/v1, prompt v1` for a message."""
    if not isinstance(identity, Mapping):
        return "an unrecorded judge"
    parts = []
    for j in identity.get("judges") or []:
        if not isinstance(j, Mapping):
            continue
        if j.get("provider") == "command":
            parts.append("command " + " ".join(str(a) for a in j.get("command") or []))
        else:
            parts.append(f"{j.get('provider')} {j.get('model')} at {j.get('base_url')}")
    combine = identity.get("combine")
    judges = " + ".join(parts) or "no judge"
    if combine not in (None, "single"):
        judges = f"{combine} of [{judges}]"
    return f"{judges}, prompt v{identity.get('prompt_version')}"


def identity_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Which parts of the identity differ, in words (a sidecar's judge, or a labelled run's, against now)."""
    out = []
    if old.get("prompt_version") != new.get("prompt_version"):
        out.append(f"prompt version {old.get('prompt_version')} -> {new.get('prompt_version')}")
    if old.get("combine") != new.get("combine") or len(old.get("judges") or []) != len(new.get("judges") or []):
        out.append("the set of judges")
    for a, b in zip(old.get("judges") or [], new.get("judges") or []):
        a, b = dict(a or {}), dict(b or {})
        for key in sorted(set(a) | set(b)):
            if a.get(key) == b.get(key):
                continue
            if key == "command_files" and a.get("command") != b.get("command"):
                continue  # another command: its files are another judge's, said by the argv change
            if key == "resolved":
                out.append(resolved_words(a.get(key), b.get(key)))
            elif key == "command_files" and isinstance(a.get(key), dict) and isinstance(b.get(key), dict):
                edited = [f for f in sorted(set(a[key]) | set(b[key])) if a[key].get(f) != b[key].get(f)]
                out.append("the content of " + ", ".join(  # a file bound since, not necessarily edited
                    f + ("" if f in a[key] else " (not bound when it was calibrated)") for f in edited))
            else:
                out.append(f"{key} {a.get(key)!r} -> {b.get(key)!r}")
    return out or ["the judge identity"]


def rubric_content(rubric: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a rubric the judge sees (the Markdown body is for people and is not sent)."""
    content = {"rubric_id": rubric.get("rubric_id"), "version": rubric.get("version"),
               "nodes": [{"id": n.get("id"), "criterion": n.get("criterion"),
                          "reference_guided": bool(n.get("reference_guided"))} for n in rubric.get("nodes") or []]}
    if rubric.get("kind", "pointwise") != "pointwise":   # a pointwise rubric's hash is what it always was
        content["kind"] = rubric["kind"]
    return content


def rubric_sha256(rubric: Mapping[str, Any]) -> str:
    return _sha(rubric_content(rubric))


def node_sha256(rubric: Mapping[str, Any]) -> dict[str, str]:
    return {n["id"]: _sha(n) for n in rubric_content(rubric)["nodes"]}


def binding_fields(sidecar_rubrics: dict[str, dict], rubrics_by_pin: Mapping[str, Mapping[str, Any]],
                   identity: Mapping[str, Any]) -> dict[str, Any]:
    """The write side: the sidecar's `judge` block, and `rubric_sha256`/`node_sha256` (or a note) added
    to each rubric entry in place."""
    for pin, entry in sidecar_rubrics.items():
        rubric = rubrics_by_pin.get(pin)
        entry["rubric_sha256"] = rubric_sha256(rubric) if rubric else None
        entry["node_sha256"] = node_sha256(rubric) if rubric else None
        if rubric is None:
            entry.setdefault("notes", []).append(
                f"no rubrics/<id>.md at this version when --write ran: {pin} is not bound to a text, so it "
                "stays provisional")
    return {"identity": dict(identity), "sha256": identity_sha256(identity)}


# ---------------------------------------------------------------- the read side
def load_calibration(raw_path: Any, state: Path) -> tuple[dict | None, str | None]:
    """(sidecar, None) or (None, why every rubric is provisional); `raw_path` is plan.paths.judge_calibration."""
    if not raw_path:
        return None, "no judge/calibration.json when the plan was made (score_agreement.py --write creates it)"
    p = Path(raw_path)
    p = p if p.is_absolute() else state / p
    try:
        doc = read_json(p)
    except (OSError, ValueError) as exc:
        return None, f"judge/calibration.json unreadable ({type(exc).__name__})"
    if not isinstance(doc, dict) or doc.get("schema") != CALIBRATION_SCHEMA or not isinstance(doc.get("rubrics"), dict):
        return None, f"judge/calibration.json is not {CALIBRATION_SCHEMA} (schema and a rubrics object)"
    return doc, None


def binding_problem(sidecar: Mapping[str, Any], entry: Mapping[str, Any], pin: str,
                    identity: Mapping[str, Any], rubric: Mapping[str, Any] | None) -> str | None:
    """Why a pin the sidecar calls calibrated does not apply to this judge and this rubric text, or None."""
    judge = sidecar.get("judge")
    if not isinstance(judge, Mapping) or not isinstance(judge.get("sha256"), str):
        return (f"{pin} provisional again: judge/calibration.json records no judge identity (written before "
                f"calibrations were bound to a judge), so it cannot show it applies to this judge; {REWRITE}")
    if judge["sha256"] != identity_sha256(identity):
        old = judge.get("identity") if isinstance(judge.get("identity"), Mapping) else {}
        text = bound_to_text(old, identity) if judge["sha256"] == identity_sha256(old) else []
        if text:
            names = ", ".join("${" + n + "}" for n in text)
            return (f"{pin} provisional again: judge/calibration.json is bound to the text {names} in judge.yaml, "
                    f"not to the value (written before calibrations were bound to the values of variables), so it "
                    f"cannot show it was measured on the judge {names} names now; with {names} set as when you "
                    f"labelled, {REWRITE}")
        return (f"{pin} provisional again: calibrated with {describe(old)}; the judge is now {describe(identity)} "
                f"({'; '.join(identity_changes(old, identity))}): label this judge's verdicts and score_agreement.py --write")
    want = entry.get("rubric_sha256")
    if not isinstance(want, str):
        return f"{pin} provisional again: judge/calibration.json records no content hash for it; {REWRITE}"
    if rubric is None or want == rubric_sha256(rubric):
        return None
    old_nodes = entry.get("node_sha256") if isinstance(entry.get("node_sha256"), Mapping) else {}
    new_nodes = node_sha256(rubric)
    edited = [n for n in new_nodes if n in old_nodes and old_nodes[n] != new_nodes[n]]
    added = [n for n in new_nodes if n not in old_nodes]
    removed = [n for n in old_nodes if n not in new_nodes]
    what = "; ".join(x for x in (f"edited node(s) {', '.join(edited)}" if edited else "",
                                 f"added {', '.join(added)}" if added else "",
                                 f"removed {', '.join(removed)}" if removed else "") if x) or "its text"
    return (f"{pin} provisional again: {rubric.get('source') or 'its rubric file'} changed since it was calibrated "
            f"({what}) without a new version: bump `version` (a new pin) and label it")


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def self_contradiction(sidecar: Mapping[str, Any], entry: Mapping[str, Any], pin: str) -> str | None:
    """Why an entry that says `calibrated: true` is not, by its own numbers: its 2x2 (tp, fn, fp, tn)
    does not meet the floors the sidecar records (the defaults where it records none), nor does a
    node's own 2x2 (`by_node`, unmet_node_floors; a sidecar written before it was kept has none), its `pairs` is
    not that 2x2's sum, or its `blocking` names a floor unmet. score_agreement.py never writes such an
    entry; a hand edit (`calibrated: false` -> `true`) does, and must not make a judge gate."""
    cells = [_count(entry.get(k)) for k in ("tp", "fn", "fp", "tn")]
    recorded = sidecar.get("floors") if isinstance(sidecar.get("floors"), Mapping) else {}
    floors = {k: (recorded[k] if isinstance(recorded.get(k), (int, float)) and not isinstance(recorded.get(k), bool)
                  else d) for k, d in DEFAULT_FLOORS.items()}
    if None in cells:
        unmet = ["no 2x2 counts (tp, fn, fp, tn)"]
    else:
        tp, fn, fp, tn = cells
        unmet = unmet_floors(tp, fn, fp, tn, floors) + unmet_node_floors(entry.get("by_node"), floors)
        if entry.get("pairs") is not None and entry.get("pairs") != tp + fn + fp + tn:
            unmet.append(f"pairs {entry.get('pairs')!r} is not tp + fn + fp + tn = {tp + fn + fp + tn}")
    blocking = entry.get("blocking")
    if isinstance(blocking, list):
        unmet += [str(b) for b in blocking if str(b) not in unmet]
    if not unmet:
        return None
    return (f"{pin} not calibrated: judge/calibration.json says calibrated, but its own numbers do not support it "
            f"({'; '.join(unmet)}): score_agreement.py never writes that (was the file edited by hand?); "
            f"re-run score_agreement.py <annotations> --write judge/calibration.json")


def calibration_of(sidecar: dict | None, why_none: str | None, pin: str, *,
                   identity: Mapping[str, Any] | None = None,
                   rubric: Mapping[str, Any] | None = None) -> tuple[bool, str | None]:
    """(calibrated, why provisional) for one rubric pin. With `identity` (the configured judge) the
    calibration must be bound to it and to `rubric`'s text; without one (no judge configured) the
    sidecar's word is taken, which only ever makes a pin gate (and so a check that never ran)."""
    if sidecar is None:
        return False, f"{pin} not calibrated: {why_none}"
    entry = sidecar["rubrics"].get(pin)
    if not isinstance(entry, dict):
        return False, f"{pin} has no entry in judge/calibration.json (label it, then score_agreement.py --write)"
    if entry.get("calibrated") is True:
        problem = self_contradiction(sidecar, entry, pin)
        if problem is None and identity is not None:
            problem = binding_problem(sidecar, entry, pin, identity, rubric)
        return (False, problem) if problem else (True, None)
    unlock = entry.get("unlock")
    blocking = entry.get("blocking")
    detail = unlock if isinstance(unlock, str) and unlock else (
        "; ".join(str(b) for b in blocking) if isinstance(blocking, list) and blocking else "below the floors")
    return False, f"{pin} not calibrated: {detail}"


def provisional_again(judge_block: Mapping[str, Any] | None, state: Path) -> list[str]:
    """make_plan's warnings: each pinned rubric the sidecar calls calibrated that is not bound to
    the judge configured now or to its current text (why_provisional, as the run will record it)."""
    if not isinstance(judge_block, Mapping) or not isinstance(judge_block.get("config"), Mapping):
        return []
    path = Path(state) / JUDGE_CALIBRATION
    sidecar, _ = load_calibration(JUDGE_CALIBRATION if path.is_file() else None, Path(state))
    if sidecar is None:
        return []
    identity = _plan_identity(judge_identity(judge_block["config"], Path(state), os.environ), sidecar)
    out = []
    for pin, rubric in sorted((judge_block.get("rubrics") or {}).items()):
        entry = sidecar["rubrics"].get(pin)
        if isinstance(entry, dict) and entry.get("calibrated") is True:
            calibrated, why = calibration_of(sidecar, None, pin, identity=identity, rubric=rubric)
            if not calibrated and why:
                out.append(f"judge: {why}")
    return out


def _plan_identity(identity: dict[str, Any], sidecar: Mapping[str, Any]) -> dict[str, Any]:
    """make_plan's view of the judge: a variable unset where the plan is made (the run resolves it, and
    its check says) is taken as the sidecar's, so the plan does not warn about a value it cannot see."""
    judge = sidecar.get("judge") if isinstance(sidecar.get("judge"), Mapping) else {}
    old = (judge.get("identity") or {}).get("judges") if isinstance(judge.get("identity"), Mapping) else None
    judges = []
    for i, one in enumerate(identity["judges"]):
        was = old[i] if isinstance(old, list) and i < len(old) and isinstance(old[i], Mapping) else {}
        if isinstance(one.get("resolved"), Mapping) and one["resolved"].get("sha256") is None and "resolved" in was:
            one = dict(one, resolved=was["resolved"])
        judges.append(one)
    return dict(identity, judges=judges)


def lowered_floors(sidecar: Mapping[str, Any] | None, pin: str) -> dict[str, Any] | None:
    """For a pin the sidecar calibrated: the floors it was calibrated at that are below the defaults
    (with its pairs and per-class counts), or None when every floor was the default or higher. Gate
    and report print it: a calibration over 8 pairs must not read like one over 100."""
    if not isinstance(sidecar, Mapping) or not isinstance(sidecar.get("floors"), Mapping):
        return None
    entry = (sidecar.get("rubrics") or {}).get(pin)
    if not isinstance(entry, Mapping) or entry.get("calibrated") is not True:
        return None
    used = sidecar["floors"]
    below = {k: {"used": used[k], "default": d} for k, d in DEFAULT_FLOORS.items()
             if isinstance(used.get(k), (int, float)) and not isinstance(used.get(k), bool) and used[k] < d}
    if not below:
        return None
    return {"floors": below, "pairs": entry.get("pairs"), "human_fail": entry.get("human_fail"),
            "human_pass": entry.get("human_pass")}


def lowered_floors_words(pin: str, low: Mapping[str, Any]) -> str:
    """`refund-eta-v1 calibrated over 2 pairs (1 fail, 1 pass) at lowered floors: min_pairs 2 < 100, ...`"""
    order = [k for k in DEFAULT_FLOORS if k in low["floors"]] + [k for k in low["floors"] if k not in DEFAULT_FLOORS]
    floors = ", ".join(f"{k} {low['floors'][k]['used']:g} < {low['floors'][k]['default']:g}" for k in order)
    return (f"{pin} calibrated over {low.get('pairs')} pairs ({low.get('human_fail')} human fail, "
            f"{low.get('human_pass')} human pass) at floors below the defaults: {floors}")
