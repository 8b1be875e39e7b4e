"""The case record's artifacts: what a case, each repeat and each turn hold (core.casestore).

Every artifact goes through `CaseFiles.put`, which keeps its bytes (redacted) in memory: the
case's one journal line carries them all, and the verdict's `artifact_sha256` records exactly
those bytes. Nothing is written here: the line, appended whole, is the commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..core import writer
from ..core.vocab import LAYER_ORDER


def case_json(value: Any) -> str:
    """Case-dir JSON: sorted keys, one line (the C encoder; indenting costs ~0.4 ms a case), redacted."""
    return writer.dumps(value, indent=None) + "\n"


class CaseFiles:
    """The artifacts of one case so far: `prefix + name` -> their bytes (redacted, as the journal holds them)."""

    def __init__(self) -> None:
        self.written: dict[str, bytes] = {}

    def put(self, directory: Path, name: str, text: str, prefix: str = "") -> None:
        self.written[prefix + name] = writer.redact_bytes(writer.encode(text))

    def put_repeats(self, case: Mapping[str, Any], cdir: Path, repeats: list[dict], chosen: dict, k: int) -> None:
        """repeats/<n>/ for every repeat (k > 1), then the case-level files of the chosen repeat."""
        multi = "turns" in chosen
        if k > 1:
            for r in repeats:
                rdir = cdir / "repeats" / str(r["n"])
                self.put(rdir, "request.json", case_json(r["request"]), prefix=f"repeats/{r['n']}/")
                self.put(rdir, "response.json", case_json(r["response"]), prefix=f"repeats/{r['n']}/")
                if r.get("trajectory") is not None and not multi:   # every repeat's trace: rescore scores each
                    self.put(rdir, "trajectory.json", case_json(r["trajectory"]), prefix=f"repeats/{r['n']}/")
                    self.put(rdir, "trace.json", case_json(r["raw_spans"]), prefix=f"repeats/{r['n']}/")
                self.put(rdir, "verdict.json", case_json(repeat_verdict(case, r)), prefix=f"repeats/{r['n']}/")
                if multi:
                    self.put_turns(case, r, rdir, f"repeats/{r['n']}/", traces=False)
        if multi:
            self.put_turns(case, chosen, cdir, "", traces=True)
            self.put(cdir, "expect.json", case_json(chosen["expect"]))
        self.put(cdir, "request.json", case_json(chosen["request"]))
        self.put(cdir, "response.json", case_json(chosen["response"]))
        self.put(cdir, "answer.txt", chosen["answer_text"] or "")
        if ((chosen["expect"] if multi else case.get("expect")) or {}).get("result"):
            actual = chosen["actual"] or {"missing": True, "reason": chosen["actual_reason"]}
            self.put(cdir, "actual.json", case_json(actual))
        if chosen["trajectory"] is not None:
            self.put(cdir, "trajectory.json", case_json(chosen["trajectory"]))
            self.put(cdir, "trace.json", case_json(chosen["raw_spans"]))

    def put_turns(self, case: Mapping[str, Any], rep: dict, base_dir: Path, prefix: str, *, traces: bool) -> None:
        """turns/<n>/ for every sent turn of one repeat (trace files only at the case level)."""
        for t in rep["turns"]:
            n = t["n"]
            tdir = base_dir / "turns" / str(n)
            tp = f"{prefix}turns/{n}/"
            self.put(tdir, "request.json", case_json(t["request"]), prefix=tp)
            self.put(tdir, "response.json", case_json(t["response"]), prefix=tp)
            self.put(tdir, "expect.json", case_json(t["spec"].expect), prefix=tp)
            self.put(tdir, "answer.txt", t["answer_text"] or "", prefix=tp)
            if traces and t["trajectory"] is not None:
                self.put(tdir, "trajectory.json", case_json(t["trajectory"]), prefix=tp)
                self.put(tdir, "trace.json", case_json(t["raw_spans"]), prefix=tp)
            self.put(tdir, "verdict.json", case_json(turn_verdict(case, rep["n"], t, traces)), prefix=tp)


def judge_doc(chosen: dict, judged: list[dict], k: int) -> dict:
    """judge.json: the chosen repeat's judging (else the last judged one's), with every repeat's when k > 1."""
    doc = dict(chosen.get("judge_doc") or judged[-1]["judge_doc"])
    if k > 1:
        doc["repeats"] = [{"n": r["n"], "rubrics": r["judge_doc"]["rubrics"], "usage": r["judge_doc"]["usage"],
                           "answer_sha256": r["judge_doc"]["answer_sha256"]} for r in judged]
    return doc


def turn_verdict(case: Mapping[str, Any], repeat: int, t: dict, traces: bool) -> dict:
    """turns/<n>/verdict.json: {case_id, repeat, turn, checkpoint, verdict, layers, trace, infra_reason}."""
    return {"case_id": case["id"], "repeat": repeat, "turn": t["n"], "checkpoint": t["spec"].checkpoint,
            "verdict": t["verdict"], "layers": {name: t["layers"][name] for name in LAYER_ORDER},
            "trace": t["trace"], "trace_collected": traces and t["trajectory"] is not None,
            "infra_reason": t["infra_reason"]}


def repeat_verdict(case: Mapping[str, Any], r: dict) -> dict:
    """repeats/<n>/verdict.json."""
    doc = {"case_id": case["id"], "n": r["n"], "verdict": r["verdict"], "attempts": len(r["outcomes"]),
           "infra_reason": r["infra_reason"], "trace_status": r["trace_status"], "trace": r.get("trace"),
           "trace_collected": "turns" not in r and r.get("trajectory") is not None,
           "layers": {name: r["layers"][name] for name in LAYER_ORDER}}
    if "turns" in r:
        doc.update(turns_sent=r["turns_sent"], turns_total=r["turns_total"], failed_turn=r["failed_turn"],
                   stop_reason=r["stop_reason"])
    return doc
