"""The counts table folded one record at a time (`summarize` is this fold over a list).

`Tally.add(index, record)` takes a finished record in any order, `index` its plan position;
`Tally.summary(...)` is exactly `summarize(records in plan order, ...)` at any moment, without
holding the records: what the runner needs to refresh results.json at 100,000 cases in flat
memory. Every figure that depends on order (the first `blocked_by` of an unscorable layer, a
tie between most common reasons, the order baseline run ids were first seen) keeps the plan
index of its candidate, so the fold is order-free. The rules themselves live in counts.py
(the table of what counts where), score/hollow.py and stats/pairwise.py.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.vocab import (FAIL, INFRA_ERROR, INFRA_INCOMPLETE, JUDGE_UNSTABLE, PASS, SIM_HARNESS_OUTCOMES, SKIPPED,
                          UNSCORED)
from ..score.answer_leaf import NotTextFold
from ..score.hollow import AbsenceFold, HollowFold, layer_verdicts
from ..score.layershape import LayerShape
from .layer_table import LayerTable
from .pairwise import PairwiseFold

_BASIC = ("n", "attempted", "passes", "failures", "gating_failures", "unscored", "skipped", "infra_errors",
          "infra_incomplete")
_BY_VERDICT = {PASS: "passes", FAIL: "failures", UNSCORED: "unscored", SKIPPED: "skipped",
               INFRA_ERROR: "infra_errors", INFRA_INCOMPLETE: "infra_incomplete"}
JUDGED_VERDICTS = ("pass", "fail", "unscored", "infra_error", JUDGE_UNSTABLE)


def _rate(num: int, den: int) -> float:
    return round(num / den, 6) if den > 0 else 0.0


class _Basic:
    __slots__ = _BASIC

    def __init__(self) -> None:
        for k in _BASIC:
            setattr(self, k, 0)

    def add(self, r: Mapping[str, Any]) -> None:
        v = r.get("verdict")
        self.n += 1
        if v != SKIPPED:
            self.attempted += 1
        key = _BY_VERDICT.get(v) if isinstance(v, str) else None
        if key is not None:
            setattr(self, key, getattr(self, key) + 1)
            if v == FAIL and r.get("gating", True) is not False:
                self.gating_failures += 1

    def doc(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in _BASIC}

    def kind_block(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in _BASIC if k != "attempted"}
        decided = self.passes + self.failures
        out["pass_rate"] = _rate(self.passes, decided) if decided else None
        return out


def _first(slot: dict, key: Any, index: int, value: Any) -> None:
    """Keep, per key, the value of the lowest plan index offered."""
    got = slot.get(key)
    if got is None or index < got[0]:
        slot[key] = (index, value)


def _count_first(slot: dict, key: Any, index: int) -> None:
    """{key: [count, lowest plan index]}: the most common key, ties to the first in plan order."""
    got = slot.get(key)
    if got is None:
        slot[key] = [1, index]
    else:
        got[0] += 1
        got[1] = min(got[1], index)


def _top(slot: dict) -> Any:
    return min(slot, key=lambda k: (-slot[k][0], slot[k][1])) if slot else None


class Tally:
    """summarize() folded per record (see the module docstring)."""

    def __init__(self) -> None:
        self.main, self.holdout = _Basic(), _Basic()
        self.attempted_all = self.crashes = self.repeated_5xx = self.rate_limited_retries = self.scorer_errors = 0
        self.canaries = {"n": 0, "passed": 0, "failed": 0, "not_verified": 0}
        self.table = LayerTable()   # summary.layers, unscorable_layers, unjudged
        self.hollow, self.absence, self.not_text = HollowFold(), AbsenceFold(), NotTextFold()
        self.single, self.conv, self.sims = _Basic(), _Basic(), _Basic()
        self.failed_turns: dict[str, int] = {}
        self.memory_user = 0
        self.conv_reasons: dict[str, list] = {}
        self.outcomes: dict[str, int] = {}
        self.judged_cal, self.judged_prov = {v: 0 for v in JUDGED_VERDICTS}, {v: 0 for v in JUDGED_VERDICTS}
        self.judged_why: dict[str, int] = {}
        self.usage = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "calls_without_usage": 0}
        # the models the judge's replies named (assay.judge.served): every case, canaries and holdout in
        self.served: dict[str, int] = {}
        self.other = {"cases": 0, "calibrated_cases": 0, "models": {}}
        self.judged_cases = self.unstable_cases = 0
        self.instability: dict[str, dict[str, Any]] = {}
        self.pairwise = PairwiseFold()
        self.und_tools: dict[str, int] = {}
        self.und_cases = self.und_checked = 0
        self.route_path: dict = {}
        self.route_read = self.route_found = self.route_fell = self.route_disagree = 0
        self.result_first: dict = {}
        self.result_read = self.result_found = self.result_fell = 0
        self.id_shape: dict = {}
        self.absent_answers: list = [0, None]   # [cases, (index, case id) of the first]
        self.identities: dict[str, list] = {}   # identity key -> [reached, refusals, (index, case id) of the first]
        self.id_cases = self.id_seen = self.count = 0

    def add_all(self, records) -> "Tally":
        for i, r in enumerate(records):
            self.add(i, r)
        return self

    def add(self, index: int, r: Mapping[str, Any], verdicts: Mapping[str, str] | None = None,
            shape: LayerShape | None = None) -> None:
        """`verdicts`: score.hollow.layer_verdicts(r["layers"]), when the caller has them (read once a case);
        `shape`: score.layershape.layer_shape of them (the same layers and verdicts), or None."""
        self.count += 1
        v = r.get("verdict")
        if v != SKIPPED:
            self.attempted_all += 1
            if r.get("crashed"):
                self.crashes += 1
        if r.get("repeated_5xx"):
            self.repeated_5xx += 1
        self.rate_limited_retries += int(r.get("rate_limited_retries") or 0)
        self.scorer_errors += int(r.get("scorer_errors") or 0)
        self._judged(index, r)
        self._identity(index, r)
        if r.get("canary"):
            c = self.canaries
            c["n"] += 1
            key = "passed" if v == PASS else "failed" if v == FAIL else "not_verified"
            c[key] += 1
            return
        self.main.add(r)
        if r.get("holdout"):
            self.holdout.add(r)
        layers = r.get("layers") or {}
        verdicts = layer_verdicts(layers) if verdicts is None else verdicts
        self.table.add(index, layers, verdicts, shape)
        self._answer_absent(index, r)
        self.hollow.add(index, r, verdicts, shape)
        self.absence.add(index, r, verdicts)
        self.not_text.add(index, r)
        self._kind(index, r)
        self._undeclared(r)
        self._route_path(index, r)
        self._result_source(index, r)
        self._id_shape(index, r)

    def _kind(self, index: int, r: Mapping[str, Any]) -> None:
        if not r.get("multi_turn"):
            self.single.add(r)
        if r.get("simulated"):
            self.sims.add(r)
            name = (r.get("simulator") or {}).get("outcome")
            if name:
                self.outcomes[str(name)] = self.outcomes.get(str(name), 0) + 1
        elif r.get("multi_turn"):
            self.conv.add(r)
            t = r.get("failed_turn")
            if r.get("verdict") == FAIL and isinstance(t, int):
                self.failed_turns[str(t)] = self.failed_turns.get(str(t), 0) + 1
            if r.get("memory") == "user" and r.get("verdict") != SKIPPED:
                self.memory_user += 1
            if r.get("verdict") == UNSCORED and r.get("unscored_reason"):
                _count_first(self.conv_reasons, str(r["unscored_reason"]), index)

    def _judged(self, index: int, r: Mapping[str, Any]) -> None:
        u = r.get("judge_usage")
        if isinstance(u, dict):
            for key in self.usage:
                self.usage[key] += int(u.get(key) or 0)
        self.pairwise.add(index, r)
        entry = (r.get("layers") or {}).get("judged")
        self._served(entry)
        if r.get("canary") or not isinstance(entry, dict) or not isinstance(entry.get("rubrics"), list):
            return
        self.judged_cases += 1
        self.unstable_cases += 1 if entry.get("judge_unstable") is True else 0
        rubrics = [x for x in entry["rubrics"] if isinstance(x, dict)]
        for x in rubrics:
            if isinstance(x.get("judged"), int) and isinstance(x.get("unstable"), int):
                slot = self.instability.setdefault(str(x.get("pin")), {"judged_nodes": 0, "unstable_nodes": 0})
                slot["judged_nodes"] += x["judged"]
                slot["unstable_nodes"] += x["unstable"]
        if any(not x.get("provisional") for x in rubrics):
            v = str(entry.get("verdict"))
            self.judged_cal[v] = self.judged_cal.get(v, 0) + 1
        if any(x.get("provisional") for x in rubrics):
            v = str(entry.get("provisional_verdict"))
            self.judged_prov[v] = self.judged_prov.get(v, 0) + 1
            for reason in sorted({str(x.get("why_provisional")) for x in rubrics if x.get("provisional")}):
                self.judged_why[reason] = self.judged_why.get(reason, 0) + 1

    def _served(self, entry: Any) -> None:
        if not isinstance(entry, dict):
            return
        for name, n in (entry.get("served_models") if isinstance(entry.get("served_models"), dict) else {}).items():
            self.served[str(name)] = self.served.get(str(name), 0) + _n(n)
        other = entry.get("other_model")
        if isinstance(other, dict) and isinstance(other.get("models"), dict):
            self.other["cases"] += 1
            self.other["calibrated_cases"] += 1 if other.get("calibrated") is True else 0
            for name, n in other["models"].items():
                self.other["models"][str(name)] = self.other["models"].get(str(name), 0) + _n(n)

    def _undeclared(self, r: Mapping[str, Any]) -> None:
        names = r.get("undeclared_tools")
        if not isinstance(names, list) or not names:
            return
        self.und_cases += 1
        for name in names:
            self.und_tools[str(name)] = self.und_tools.get(str(name), 0) + 1
        if any(isinstance(e, dict) and e.get("undeclared_tools") for e in (r.get("layers") or {}).values()):
            self.und_checked += 1

    def _route_path(self, index: int, r: Mapping[str, Any]) -> None:
        entry = (r.get("layers") or {}).get("routing")
        rp = entry.get("response_path") if isinstance(entry, dict) else None
        if r.get("verdict") == SKIPPED or not isinstance(rp, dict):
            return
        if rp.get("path"):
            _first(self.route_path, "path", index, rp.get("path"))
        self.route_read += 1
        if rp.get("found"):
            self.route_found += 1
            self.route_disagree += isinstance(entry.get("trace_route"), dict)
        elif entry.get("observed_from"):
            self.route_fell += 1

    def _result_source(self, index: int, r: Mapping[str, Any]) -> None:
        entry = (r.get("layers") or {}).get("execution")
        first = entry.get("first_source") if isinstance(entry, dict) else None
        if r.get("verdict") == SKIPPED or not isinstance(first, dict):
            return
        _first(self.result_first, "first", index, (first.get("source"), first.get("path")))
        self.result_read += 1
        if first.get("found"):
            self.result_found += 1
        elif entry.get("verdict") in (PASS, FAIL):
            self.result_fell += 1

    def _identity(self, index: int, r: Mapping[str, Any]) -> None:
        """A gating refusal passed on an HTTP 4xx alone (layers.authz.refused_status) for an identity,
        and whether any case of that identity (canaries and non-gating ones too) got a 2xx."""
        ident = r.get("identity")
        if not isinstance(ident, dict) or not isinstance(ident.get("key"), str):
            return
        slot = self.identities.setdefault(ident["key"], [False, 0, None])
        if ident.get("reached") is True:
            slot[0] = True
        entry = (r.get("layers") or {}).get("authz")
        refused = entry.get("refused_status") if isinstance(entry, dict) else None
        if isinstance(refused, int) and not r.get("canary") and r.get("gating", True) is not False:
            slot[1] += 1
            if slot[2] is None or index < slot[2][0]:
                slot[2] = (index, None if r.get("holdout") else r.get("case_id"))

    def _answer_absent(self, index: int, r: Mapping[str, Any]) -> None:
        """A gating case answered 2xx with no answer at the adapter's <answer> path (layers.http.answer_absent)
        that asserted nothing about the answer: it passed or failed on its other layers alone."""
        layers = r.get("layers") or {}
        http = layers.get("http")
        if not isinstance(http, dict) or not http.get("answer_absent") or r.get("gating", True) is False:
            return
        answer = layers.get("answer")
        if answer is not None and str(answer.get("verdict") if isinstance(answer, dict) else answer) != "n/a":
            return   # an asserted answer layer says so itself (unscored: no answer at the path)
        slot = self.absent_answers
        slot[0] += 1
        if slot[1] is None or index < slot[1][0]:
            slot[1] = (index, None if r.get("holdout") else r.get("case_id"))

    def _unproven_refusals(self) -> dict | None:
        """summary.unproven_refusals: the refusals of identities no case showed the app let in."""
        slots = [s for s in self.identities.values() if s[1] and not s[0]]
        if not slots:
            return None
        first = min(s[2] for s in slots)
        return {"cases": sum(s[1] for s in slots), "identities": len(slots), "first_case": first[1]}

    def _id_shape(self, index: int, r: Mapping[str, Any]) -> None:
        entry = (r.get("layers") or {}).get("authz")
        block = entry.get("id_shape_seen") if isinstance(entry, dict) else None
        if r.get("verdict") == SKIPPED or not isinstance(block, dict):
            return
        _first(self.id_shape, "shape", index, block.get("shape"))
        self.id_cases += 1
        if block.get("seen"):
            self.id_seen += 1

    # ------------------------------------------------------------------ the summary
    def summary(self, *, status: str, missing_artifacts: list) -> dict:
        basic = self.main.doc()
        summary: dict[str, Any] = {"status": status}
        summary.update(basic)
        summary["attempted"] = self.attempted_all
        summary["crashes"] = self.crashes
        summary["infra_rate"] = _rate(basic["infra_errors"], basic["n"] - basic["skipped"])
        summary["crash_rate"] = _rate(self.crashes, self.attempted_all)
        summary["repeated_5xx"] = self.repeated_5xx
        summary["rate_limited_retries"] = self.rate_limited_retries
        summary["scorer_errors"] = self.scorer_errors
        summary["canaries"] = dict(self.canaries)
        summary["holdout"] = self.holdout.doc()
        summary["layers"] = self.table.counted()
        summary["unscorable_layers"] = {name: {"cases": n, "blocked_by": first[1] if first else None}
                                        for name, (n, first) in self.table.unscorable.items()}
        summary["unjudged"] = dict(self.table.unjudged)
        summary["hollow_layers"] = self.hollow.result()
        absence = self.absence.result()
        if absence is not None:
            summary["passes_on_presence"] = absence
        kinds = self._by_kind()
        if kinds is not None:
            summary["by_kind"] = kinds
        summary["judged"] = self._judged_doc()
        if self.und_cases:
            summary["undeclared_tools"] = {"tools": dict(sorted(self.und_tools.items())), "cases": self.und_cases,
                                           "checked_cases": self.und_checked}
        if self.route_read:
            path = self.route_path.get("path")
            summary["route_from_response"] = {"path": path[1] if path else None, "read": self.route_read, "found": self.route_found,
                                              "fell_back": self.route_fell, **({"trace_disagrees": n} if (n := self.route_disagree) else {})}
        if self.result_read:
            source, path = self.result_first["first"][1] if self.result_first.get("first") else (None, None)
            summary["result_source"] = {"source": source, "path": path, "read": self.result_read,
                                        "found": self.result_found, "fell_back": self.result_fell}
        if self.id_cases:
            shape = self.id_shape.get("shape")
            summary["record_id_shape"] = {"shape": shape[1] if shape else None, "cases": self.id_cases,
                                          "seen": self.id_seen}
        if self.absent_answers[0]:
            summary["answer_absent"] = {"cases": self.absent_answers[0], "first_case": self.absent_answers[1][1]}
        summary.update(self.not_text.result())
        unproven = self._unproven_refusals()
        if unproven is not None:
            summary["unproven_refusals"] = unproven
        summary["missing_artifacts"] = list(missing_artifacts)
        return summary

    def _by_kind(self) -> dict[str, Any] | None:
        """Conversations apart from single-turn cases (counts.py's table: present only when the run
        has a conversation or a simulated user)."""
        if not self.conv.n and not self.sims.n:
            return None
        block = self.conv.kind_block()
        block["failed_turns"] = dict(sorted(self.failed_turns.items(), key=lambda kv: int(kv[0])))
        block["memory_user"] = self.memory_user
        block["top_unscored_reason"] = _top(self.conv_reasons)
        out = {"single_turn": self.single.kind_block(), "conversation": block}
        if self.sims.n:
            sim = self.sims.kind_block()
            sim["outcomes"] = dict(sorted(self.outcomes.items()))
            sim["harness"] = sum(n for k, n in self.outcomes.items() if k in SIM_HARNESS_OUTCOMES)
            out["simulated"] = sim
        return out

    def _judged_doc(self) -> dict[str, Any]:
        instability = {}
        for pin, slot in sorted(self.instability.items()):
            instability[pin] = dict(slot, rate=_rate(slot["unstable_nodes"], slot["judged_nodes"])
                                    if slot["judged_nodes"] else None)
        out = {"cases": self.judged_cases, "calibrated": dict(self.judged_cal), "provisional": dict(self.judged_prov),
               "provisional_why": dict(self.judged_why), "usage": dict(self.usage),
               "unstable_cases": self.unstable_cases, "instability": instability}
        if self.served:
            out["served_models"] = dict(sorted(self.served.items()))
        if self.other["cases"]:
            out["other_model"] = dict(self.other, models=dict(sorted(self.other["models"].items())))
        pairwise = self.pairwise.result()
        if pairwise:
            out["pairwise"] = pairwise
        return out


def _n(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
