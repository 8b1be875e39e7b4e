"""Which judge's verdicts a labelling sitting showed, on which criteria, so a calibration is written
only for that judge and that text.

`score_agreement.py --write` binds the sidecar to the judge configured when it runs. If judge.yaml
changed between the runs that were labelled and --write (another model, another endpoint, another
command), the sidecar said the new judge agrees with people on evidence about the old one, and its
rubrics gated on a judge nobody measured. So `label.py` keeps, beside the annotations it asks to be
saved (`<state>/annotations/.<batch>.judge.json`, hidden: never read as annotations), what each
run's manifest recorded of its judge; --write compares every batch it reads that has one with the
judge configured now, and refuses on a difference, naming it. The same for the rubric text: the record
keeps each labelled node's criterion as the judge was shown it, and --write refuses a pin whose
rubric file now words a labelled node otherwise (edited without a version bump after the labels).
A batch without the record (labelled before this, or on a page made for another state dir) is not
checked, and --write says so; so are lines with no `batch` at all (written by hand or by another
tool): `(no batch: N line(s))`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.errors import AssayError

FIELDS = ("provider", "model", "base_url", "command")


def record_path(state: Path, batch: str) -> Path:
    """The record beside the annotations; ValueError for a batch that is not one file name (an
    annotation line's `batch` is anyone's text: never a path out of <state>/annotations/)."""
    if not isinstance(batch, str) or "/" in batch or "\\" in batch or "\0" in batch:
        raise ValueError(f"batch {batch!r} is not a file name")
    return Path(state) / "annotations" / f".{batch}.judge.json"


def view(judge: Any) -> dict[str, Any] | None:
    """What makes a run's judge that judge, from its manifest's `judge` block (or a config's
    manifest view): each member's provider, model, endpoint and command, and the prompt version."""
    if not isinstance(judge, Mapping) or judge.get("enabled") is False:
        return None
    members = judge.get("judges") if isinstance(judge.get("judges"), list) else [judge]
    return {"judges": [{k: m.get(k) for k in FIELDS} for m in members if isinstance(m, Mapping)],
            "prompt_version": judge.get("prompt_version")}


def record(state: Path, batch: str, run_dirs: Iterable[Path], items: Iterable[Mapping[str, Any]] = ()) -> Path | None:
    """Keep the judge of each labelled run and the criteria its items were judged on (label.py);
    None when no run was judged."""
    from ..core.jsonio import read_json
    from ..core.writer import write_json
    runs, identities = {}, {}
    for run in run_dirs:
        try:
            manifest = read_json(Path(run) / "manifest.yaml")
        except (OSError, ValueError):
            continue
        seen = view(manifest.get("judge")) if isinstance(manifest, dict) else None
        if seen is not None:
            runs[str(manifest.get("run_id") or Path(run).name)] = seen
            if isinstance(manifest["judge"].get("identity"), dict):   # a run recorded before it: the fields only
                identities[str(manifest.get("run_id") or Path(run).name)] = manifest["judge"]["identity"]
    if not runs:
        return None
    path = record_path(state, batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    criteria: dict[str, dict[str, str]] = {}
    for it in items:
        if isinstance(it.get("rubric_id"), str) and isinstance(it.get("node_id"), str) and it.get("criterion"):
            criteria.setdefault(it["rubric_id"], {})[it["node_id"]] = " ".join(str(it["criterion"]).split())
    # the items the page asked, with the judge's verdict it showed: a line of this batch on anything else
    # (a case, node or answer the page never showed, or another judge_label) is not that sitting's label
    shown = sorted({(str(it.get("rubric_id")), str(it.get("node_id") or ""), str(it.get("case_id")),
                     str(it.get("answer_sha256") or ""), str(it.get("judge_label"))) for it in items})
    write_json(path, {"batch": batch, "runs": runs, "identities": identities, "criteria": criteria,
                      "items": [list(i) for i in shown]})
    return path


def _words(v: Mapping[str, Any]) -> str:
    return ", ".join(" ".join(f"{k} {m.get(k)!r}" for k in FIELDS if m.get(k) is not None) for m in v["judges"]) \
        + f", prompt v{v.get('prompt_version')}"


def check(state: Path, batches: Iterable[str | None], config_view: Mapping[str, Any],
          rubrics_by_pin: Mapping[str, Mapping[str, Any]] | None = None,
          identity: Mapping[str, Any] | None = None, lines: Iterable[Any] = ()) -> list[str]:
    """AssayError(2) when a batch's labelled runs were judged by another judge than `config_view`
    (the judge configured now, as the manifest records it) or, when the run recorded its judge's
    identity (assay.judge.binding: a command's scripts by content, structured output), than `identity`;
    or a labelled node's criterion is worded otherwise in `rubrics_by_pin` (the rubric files now); or one of
    the annotation `lines` of a batch is on an item its page never showed, or gives another judge_label than
    the page showed (the record's `items`; a record written before them is not checked for this); the
    batches not checked otherwise."""
    from ..core.jsonio import read_json
    from ..judge.binding import bound_to_text, describe, identity_changes, identity_sha256
    now = view(dict(config_view, enabled=True))
    batches = list(batches)
    loose = sum(1 for b in batches if not b)   # lines written by hand or by another tool: no page, no record
    unchecked = [f"(no batch: {loose} line(s))"] if loose else []
    for batch in sorted({b for b in batches if b}):
        try:
            doc = read_json(record_path(state, batch))
        except (OSError, ValueError):
            unchecked.append(batch)
            continue
        for run_id, was in (doc.get("runs") or {}).items() if isinstance(doc, dict) else ():
            if isinstance(was, dict) and now is not None and was != now:
                raise AssayError(
                    f"--write: batch {batch} labelled verdicts of run {run_id}'s judge ({_words(was)}), and "
                    f"judge/judge.yaml now configures another ({_words(now)}): agreement measured on one judge "
                    "is not another's; run the suite with this judge and label that run (label.py), or restore "
                    "judge.yaml to the judge you labelled, then --write", 2, file="judge/judge.yaml", batch=batch)
        for run_id, was in (doc.get("identities") or {}).items() if isinstance(doc, dict) else ():
            if isinstance(was, dict) and identity is not None and identity_sha256(was) != identity_sha256(identity):
                if bound_to_text(was, identity):   # run before values were bound: its judge's values unknown
                    if batch not in unchecked:
                        unchecked.append(batch)
                    continue
                raise AssayError(
                    f"--write: batch {batch} labelled verdicts of run {run_id}'s judge ({describe(was)}), and the "
                    f"judge configured now is another ({'; '.join(identity_changes(was, identity))}): agreement "
                    "measured on one judge is not another's; run the suite with this judge and label that run "
                    "(label.py), or restore judge.yaml and the judge's scripts to the judge you labelled, then --write",
                    2, file="judge/judge.yaml", batch=batch)
        _check_items(batch, doc, [a for a in lines if getattr(a, "batch", None) == batch])
        for pin, nodes in (doc.get("criteria") or {}).items() if isinstance(doc, dict) else ():
            rubric = (rubrics_by_pin or {}).get(pin)
            if rubric is None or not isinstance(nodes, dict):
                continue   # no rubric file at that version: --write notes it and the pin stays provisional
            now_text = {n.get("id"): " ".join(str(n.get("criterion") or "").split()) for n in rubric.get("nodes") or []}
            for node, text in sorted(nodes.items()):
                if now_text.get(node) != text:
                    raise AssayError(
                        f"--write: batch {batch} labelled {pin} node {node} judged on the criterion {text!r}, and "
                        f"its rubric file now " + (f"words it {now_text[node]!r}" if node in now_text else
                                                   "has no such node") + ": the labels are about the old text; "
                        f"bump the rubric's version (a new pin) and label it, or restore the text, then --write",
                        2, file=f"rubrics/{pin.rsplit('-v', 1)[0]}.md", batch=batch)
    return unchecked


def _check_items(batch: str, doc: Any, lines: list[Any]) -> None:
    """AssayError(2) naming the first line of `batch` that is not on an item its page showed (case, rubric
    pin, node, answer), or whose judge_label is not the verdict the page showed for it."""
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        return   # recorded before the page's items were kept
    shown: dict[tuple, set] = {}
    for i in doc["items"]:
        if isinstance(i, list) and len(i) == 5:
            shown.setdefault(tuple(i[:4]), set()).add(i[4])
            shown.setdefault(tuple(i[:3]), set()).add(i[4])   # a line without answer_sha256: any answer of it
    for a in lines:
        key = (a.pin, a.node_id or "", a.case_id) + ((a.answer_sha256,) if a.answer_sha256 else ())
        if key not in shown:
            raise AssayError(
                f"--write: {a.source}: batch {batch} has a label on case {a.case_id} ({a.pin}"
                + (f" node {a.node_id}" if a.node_id else "") + ") that its labelling page never showed (no such "
                "case, node or answer among the page's items): it is not that sitting's label; delete the line, "
                "or label the item on a page made for it (label.py), then --write", 2, file=a.file,
                line=a.source, case_id=a.case_id, batch=batch)
        if a.judge_label not in shown[key]:
            raise AssayError(
                f"--write: {a.source}: batch {batch} says the judge said {a.judge_label!r} on case {a.case_id} "
                f"({a.pin}" + (f" node {a.node_id}" if a.node_id else "") + f"), and its labelling page showed "
                f"{' or '.join(map(repr, sorted(shown[key])))}: the pair would measure a verdict the judge never gave; re-export the batch from "
                "its page, or delete the line, then --write", 2, file=a.file, line=a.source, case_id=a.case_id,
                batch=batch)
