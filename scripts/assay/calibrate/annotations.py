"""Reading annotation JSONL files: one human label per line, checked line by line.

A line (wave2 §6): {case_id, rubric_id (the pin, e.g. "refund-eta-v1"), node_id?,
label: pass|fail, judge_label: pass|fail|unknown, reviewer, ts, critique?}. A paired line (one with `judge_label`) names its `reviewer`:
a label nobody gave is not people's agreement (exit 2 naming file:line).
The labelling page adds `batch` (one id per export) and, on canary lines, `canary: true`
with `expected_label` (an earlier label of the same item), and on every line
`answer_sha256`: the sha256 of the whole answer the label was given on (the material), so a later
page re-asks the item when the answer changed and never uses it as a canary then; and, on a line
whose answer is longer than the page's first screen shows, `saw_whole_answer` (false: labelled
before the rest was shown -- not counted, calibrate.people.one_label_per_item). A line without
`judge_label` is a human-only label: read, counted as unpaired, never in the 2x2.

A label pairs with the material it was given: the same case and node labelled on two different
answers (two runs, two repeats) are two pairs, and the same answer labelled twice is one (last
wins). A line without `answer_sha256` (files written before the page recorded it) is on unknown
material: it counts as it always did, one pair per (rubric, node, case), unless the same item also
has a label on a known answer, which may be the same one -- then the unknown-material line is not
counted (people.known_material_first; docs/runner-contract.md, "Annotations").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import AssayError

PIN_RE = re.compile(r"^(?P<rubric>[A-Za-z0-9][A-Za-z0-9._-]*)-v(?P<version>[1-9][0-9]*)$")
HUMAN_LABELS = ("pass", "fail")
JUDGE_LABELS = ("pass", "fail", "unknown")


@dataclass(frozen=True)
class Annotation:
    case_id: str
    pin: str
    node_id: str | None
    label: str
    judge_label: str | None
    reviewer: str | None
    ts: str | None
    batch: str | None
    canary: bool
    expected_label: str | None
    source: str        # "file:line", for messages
    answer_sha256: str | None = None  # the answer the label was given on; None: unknown (older files)
    saw_whole_answer: bool | None = None  # False: labelled before the rest of a long answer was shown

    @property
    def file(self) -> str:
        """The file the line was read from (`source` without its line number)."""
        return self.source.rsplit(":", 1)[0]

    @property
    def item(self) -> tuple[str, str, str]:
        """The labelled item, whatever answer it was labelled on: (rubric, node, case)."""
        return (self.pin, self.node_id or "", self.case_id)

    @property
    def key(self) -> tuple[str, str, str, str]:
        """One pair per (rubric, node, case, answer): last line per key wins; "" is unknown material."""
        return (*self.item, self.answer_sha256 or "")


def _bad(where: str, message: str, fix: str) -> AssayError:
    return AssayError(f"{where}: {message}; {fix}", 2, where=where)


KEYS = ("case_id", "rubric_id", "node_id", "label", "judge_label", "reviewer", "ts", "critique", "batch",
        "canary", "expected_label", "answer_sha256", "saw_whole_answer")
SHA_RE = re.compile(r"^[0-9a-f]{64}$")


def parse_line(obj: Any, where: str) -> Annotation:
    if not isinstance(obj, dict):
        raise _bad(where, f"an annotation line must be a JSON object, got {type(obj).__name__}",
                   "write one object per line")
    unknown = [k for k in obj if k not in KEYS]
    if unknown:  # a typo (`judge_lable`, `node`) would silently unpair the label or widen it to the rubric
        from ..core.suggest import did_you_mean
        hint = "".join(f" ({k!r}{did_you_mean(k, list(KEYS))})" for k in unknown if did_you_mean(k, list(KEYS)))
        raise _bad(where, f"unknown key(s) {', '.join(map(repr, unknown))}{hint}",
                   f"an annotation line has only {', '.join(KEYS)}")
    case_id = obj.get("case_id")
    if not isinstance(case_id, str) or not case_id:
        raise _bad(where, "case_id is missing or not a string", 'add "case_id": "<the case id>"')
    pin = obj.get("rubric_id")
    if not isinstance(pin, str) or not PIN_RE.match(pin):
        raise _bad(where, f"rubric_id {pin!r} (case {case_id}) is not a rubric pin",
                   'write "<rubric_id>-v<version>", e.g. "refund-eta-v1"')
    node = obj.get("node_id")
    if node is not None and (not isinstance(node, str) or not node):
        raise _bad(where, f"node_id {node!r} (case {case_id}) is not a non-empty string",
                   "write the rubric node's id or leave node_id out")
    label = obj.get("label")
    if label not in HUMAN_LABELS:
        raise _bad(where, f"label {label!r} (case {case_id}) is not pass or fail",
                   'a human label is "pass" or "fail" (a skipped item is simply not written)')
    judge = obj.get("judge_label")
    if judge is not None and judge not in JUDGE_LABELS:
        raise _bad(where, f"judge_label {judge!r} (case {case_id}) is not pass, fail or unknown",
                   "copy the judge's node verdict from cases/<id>/judge.json")
    for key in ("reviewer", "ts", "critique", "batch"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise _bad(where, f"{key} (case {case_id}) must be a string", f"write {key} as a string or leave it out")
    canary = obj.get("canary", False)
    if not isinstance(canary, bool):
        raise _bad(where, f"canary (case {case_id}) must be true or false", "write a JSON boolean")
    expected = obj.get("expected_label")
    if canary and expected not in HUMAN_LABELS:
        raise _bad(where, f"canary line (case {case_id}) has expected_label {expected!r}",
                   'a canary line carries the earlier label as "expected_label": "pass" or "fail"')
    sha = obj.get("answer_sha256")
    if sha is not None and not (isinstance(sha, str) and SHA_RE.match(sha)):
        raise _bad(where, f"answer_sha256 {sha!r} (case {case_id}) is not a sha256 hex digest",
                   "leave it as the labelling page exported it, or leave it out")
    whole = obj.get("saw_whole_answer")
    if whole is not None and not isinstance(whole, bool):
        raise _bad(where, f"saw_whole_answer {whole!r} (case {case_id}) must be true or false",
                   "leave it as the labelling page exported it, or leave it out")
    if judge is not None and not (obj.get("reviewer") or "").strip():
        # a pair is a person agreeing or not with the judge: a line naming no person is nobody's word
        raise _bad(where, f"no reviewer on the label of case {case_id} ({pin}): a label counts as people's "
                          "agreement with the judge only when it names the person who gave it",
                   'add "reviewer": "<the labeller\'s name>" to each line a person labelled (label.py\'s page '
                   "writes it on export), or delete the line")
    return Annotation(case_id=case_id, pin=pin, node_id=node, label=label, judge_label=judge,
                      reviewer=obj.get("reviewer"), ts=obj.get("ts"), batch=obj.get("batch"),
                      canary=canary, expected_label=expected if canary else None, source=where,
                      answer_sha256=sha, saw_whole_answer=whole)


def read_annotation_file(path: str | Path) -> list[Annotation]:
    path = Path(path)
    if not path.is_file():
        raise AssayError(f"{path}: annotation file not found (pass JSONL files, e.g. "
                         "<state>/annotations/*.jsonl)", 2, file=str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise AssayError(f"{path}: not UTF-8 ({err.reason} at byte {err.start}); save it as UTF-8", 2,
                         file=str(path)) from None
    out: list[Annotation] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except RecursionError:
            raise _bad(where, "nested too deeply to be an annotation",
                       "each line is one JSON object (the labelling page's export is already in this shape)") from None
        except ValueError as err:
            raise _bad(where, f"not JSON ({err.msg} at column {err.colno})",
                       "each line is one JSON object (the labelling page's export is already in this shape)") from None
        out.append(parse_line(obj, where))
    return out


def read_annotations(paths: list[str | Path]) -> list[Annotation]:
    """Every line of every file, in argument order then line order (the order 'last wins' uses).
    A directory stands for its *.jsonl files in name order."""
    rows: list[Annotation] = []
    for p in paths:
        p = Path(p)
        _not_a_run_dir(p)
        if p.is_dir():
            files = sorted(p.glob("*.jsonl"))
            if not files:
                raise AssayError(f"{p}: a directory with no .jsonl file; pass annotation files or "
                                 "<state>/annotations/", 2, file=str(p))
            for f in files:
                rows.extend(read_annotation_file(f))
        else:
            rows.extend(read_annotation_file(p))
    return rows


def _not_a_run_dir(p: Path) -> None:
    """A run directory (or one of its files) holds the run's case records, not human labels: say so
    and where labels live, never "unknown key(s) 'verdict', ..." as if it were a bad annotation file."""
    run_dir = p if p.is_dir() else p.parent
    if not (run_dir / "manifest.yaml").is_file():
        return
    state = run_dir.parent.parent if run_dir.parent.name == "reports" else None
    where = f"{state / 'annotations'}/" if state is not None else "<state>/annotations/"
    raise AssayError(f"{p}: {'a run directory' if p.is_dir() else f'a file of the run directory {run_dir}'} "
                     f"(the run's case records, not labels); annotations live in {where} (exported from "
                     f"label.py's page): pass that directory or its .jsonl files", 2, file=str(p))
