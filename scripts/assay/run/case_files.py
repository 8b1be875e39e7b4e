"""The case record's artifacts: what a case, each repeat and each turn hold (core.casestore).

Every artifact goes through `CaseFiles.put`, which keeps its bytes (redacted) in memory: the
case's one journal line carries them all, and the verdict's `artifact_sha256` records exactly
those bytes. Nothing is written here: the line, appended whole, is the commit.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core import writer
from ..core.vocab import LAYER_ORDER


def case_json(value: Any) -> str:
    """Case-dir JSON: sorted keys, one line (the C encoder; indenting costs ~0.4 ms a case), redacted."""
    return writer.dumps(value, indent=None) + "\n"


class CaseFiles:
    """The artifacts of one case so far: name in the record -> their bytes (redacted, as the journal holds them)."""

    def __init__(self) -> None:
        self.written: dict[str, bytes] = {}

    def put(self, name: str, text: str) -> None:
        """One artifact by its name in the record (`request.json`, `turns/2/answer.txt`)."""
        self.written[name] = writer.redact_bytes(writer.encode(text))

    def put_repeats(self, case: Mapping[str, Any], repeats: list[dict], chosen: dict, k: int) -> None:
        """repeats/<n>/ for every repeat (k > 1), then the case-level files of the chosen repeat."""
        multi = "turns" in chosen
        if k > 1:
            for r in repeats:
                self.put(f"repeats/{r['n']}/request.json", case_json(r["request"]))
                self.put(f"repeats/{r['n']}/response.json", case_json(r["response"]))
                if r.get("trajectory") is not None and not multi:   # every repeat's trace: rescore scores each
                    self.put(f"repeats/{r['n']}/trajectory.json", case_json(r["trajectory"]))
                    self.put(f"repeats/{r['n']}/trace.json", case_json(r["raw_spans"]))
                if r.get("workdir") is not None and not multi:   # agent mode: what the agent left in its workdir
                    self.put(f"repeats/{r['n']}/workdir.json", case_json(r["workdir"]))
                self.put(f"repeats/{r['n']}/verdict.json", case_json(repeat_verdict(case, r)))
                if multi:
                    self.put_turns(case, r, f"repeats/{r['n']}/", traces=False)
        if multi:
            self.put_turns(case, chosen, "", traces=True)
            self.put("expect.json", case_json(chosen["expect"]))
        if "simulator" in chosen:   # how the simulated user ended, its identity and seed, the last call
            self.put("simulator.json", case_json(chosen["simulator"]))
        self.put("request.json", case_json(chosen["request"]))
        self.put("response.json", case_json(chosen["response"]))
        self.put("answer.txt", chosen["answer_text"] or "")
        if ((chosen["expect"] if multi else case.get("expect")) or {}).get("result"):
            actual = chosen["actual"] or {"missing": True, "reason": chosen["actual_reason"]}
            self.put("actual.json", case_json(actual))
        if chosen["trajectory"] is not None:
            self.put("trajectory.json", case_json(chosen["trajectory"]))
            self.put("trace.json", case_json(chosen["raw_spans"]))
        if chosen.get("workdir") is not None and not multi:
            self.put("workdir.json", case_json(chosen["workdir"]))

    def put_turns(self, case: Mapping[str, Any], rep: dict, prefix: str, *, traces: bool) -> None:
        """turns/<n>/ for every sent turn of one repeat (trace files only at the case level)."""
        for t in rep["turns"]:
            n = t["n"]
            tp = f"{prefix}turns/{n}/"
            self.put(tp + "request.json", case_json(t["request"]))
            self.put(tp + "response.json", case_json(t["response"]))
            self.put(tp + "expect.json", case_json(t["spec"].expect))
            self.put(tp + "answer.txt", t["answer_text"] or "")
            if "simulator" in t:   # the simulator's raw call(s) that wrote this turn's user message
                self.put(tp + "simulator.json", case_json(t["simulator"]))
            if traces and t["trajectory"] is not None:
                self.put(tp + "trajectory.json", case_json(t["trajectory"]))
                self.put(tp + "trace.json", case_json(t["raw_spans"]))
            if traces and t.get("judge_doc") is not None:   # the deciding repeat's judge calls, per turn
                self.put(tp + "judge.json", case_json(t["judge_doc"]))
            self.put(tp + "verdict.json", case_json(turn_verdict(case, rep["n"], t, traces)))


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
           **workdir_flag(r),
           "layers": {name: r["layers"][name] for name in LAYER_ORDER}}
    if "turns" in r:
        doc.update(turns_sent=r["turns_sent"], turns_total=r["turns_total"], failed_turn=r["failed_turn"],
                   stop_reason=r["stop_reason"])
    return doc


def workdir_flag(r: Mapping[str, Any]) -> dict:
    """`workdir_measured: true` on an agent case (or repeat) whose workdir.json is stored; absent
    otherwise (every other mode's record is unchanged)."""
    return {"workdir_measured": True} if "turns" not in r and r.get("workdir") is not None else {}
