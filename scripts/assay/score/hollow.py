"""No silent green: the hollow-case and hollow-layer rules (wave 2 §1), defined once.

Pure functions over layer entries (`{"verdict": ..., "reason": ...}` dicts or verdict
strings) keyed by layer name. They never list the layers that exist: a layer added to
the layer table later is held to both rules without touching this module.

- A **hollow case** passed only on liveness: every layer outside LIVENESS_LAYERS is
  `n/a` (nothing asserted) or `unscorable` (asserted but switched off). It is never
  `pass`; the rollup makes it `unscored` with HOLLOW_CASE_REASON.
- A **hollow layer** is asserted by at least one case and scored (`pass`/`fail`) in
  none of them: a check that never ran. The gate closes on it and names the layer, the
  case count, the most common reason and where to look (score.hollow_hints).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from ..core.vocab import FAIL, NA, PASS, UNSCORABLE, UNSCORED
from ..core.writer import clip

# Layers whose pass alone never makes a case pass (liveness / hygiene only).
LIVENESS_LAYERS: tuple[str, ...] = ("http", "loops")
HOLLOW_CASE_REASON = "nothing asserted beyond liveness"

# Where a user looks when a layer is never scored: the adapter (or state-dir) key that feeds it.
# A layer missing here is named generically; the rule itself still holds for it.
ADAPTER_KEY_OF_LAYER: dict[str, str] = {
    # this text is recorded in results.json's summary (hollow layers) and recounted by --verify:
    # rewording it makes every older run that holds it fail the check, so it stays as first written
    "http": "invocation.base_url / invocation.endpoint",
    "routing": "route_from_response (or a collected trace, or route_from_status)",
    "trajectory": "traces (source, location, correlation)",
    "tool_selection": "traces (source, location, correlation)",
    "loops": "traces (source, location, correlation)",
    "answer": "response_body (its <answer> path)",
    "execution": "result_from_response (or result_from_tool, result_pattern)",
    "authz": "traces and response_body (the tool calls and answer it reads)",
    "judged": "the judge configuration (judge/judge.yaml) and the rubric pins",
    "skills": "invocation.mode agent (the transcript's Skill calls)",
    "files": "invocation.mode agent with invocation.agent.workdir",
    "check": "invocation.mode agent with invocation.agent.workdir",
    "permissions": "invocation.mode agent (the transcript's permission_denials)",
}

# Layers this build never scores by design (the reason says so); asserting them is not a
# switched-off check. `judged` counts as deliberate only when the run chose not to judge.
_NEVER_SCORED = {"rules": "business rules are evaluated by the skill", "state": "reserved"}


# Skip reasons (the runner's, matched from their start) that mean the adapter, the state dir or the
# plan lacks what a case needs, not a choice: a gating case skipped for one of these never ran its
# checks, so the gate closes (a safety skip -- adversarial input, a never-live tool -- or a layer the
# profile switches off is a choice). Each gives what is missing, as the gate says it, and the fix.
ADAPTER_GAP_SKIPS: dict[str, tuple[str, str]] = {
    r"conversation not run: the adapter declares no invocation\.conversation":
        ("the adapter lacks invocation.conversation", "declare it"),
    r"identity not mapped:": ("the adapter lacks invocation.identity_map", "declare it"),
    r"simulated user not run: no simulator configured":
        ("the state dir lacks simulator/simulator.yaml", "add it"),
    r"conversation not run: .{1,80}? is more than execution\.max_turns":
        ("the plan's execution.max_turns is below the case's turns",
         "raise it with make_plan.py --max-turns or shorten the case"),
    # the case itself is in a shape the runner never sends (a system message or a whole exchange in
    # input.messages: the linter only warns; a bad turn list planned with --allow-invalid)
    r"unsupported input:":
        ("the case's input is not one the runner can send",
         "write one user message in input.messages, a conversation as input.turns (validate_cases.py "
         "names each case's fix)"),
}
FIX_OF_GAP: dict[str, str] = dict(ADAPTER_GAP_SKIPS.values())


def adapter_gap(skip_reason: Any) -> tuple[str, str] | None:
    """(what is missing, the fix) a skip reason names, or None when the skip was a choice."""
    text = str(skip_reason or "")
    return next((gap for pattern, gap in ADAPTER_GAP_SKIPS.items() if re.match(pattern, text)), None)


def adapter_gap_key(skip_reason: Any) -> str | None:
    """What a skip reason says is missing (`the adapter lacks invocation.conversation`), or None."""
    gap = adapter_gap(skip_reason)
    return gap[0] if gap else None


def verdict_of(entry: Any) -> str:
    """A layer entry is a layer dict `{"verdict": ...}` or already a verdict string (derived rows).
    Plain str/dict checks first: Mapping's ABC check costs ~1 us, and this runs per layer per
    case in every summary."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) or isinstance(entry, Mapping):
        return str(entry.get("verdict"))
    return str(entry)


def layer_verdicts(layers: Mapping[str, Any]) -> dict[str, str]:
    """{layer: verdict_of(entry)} over a case's layer map, in its order: each case's verdicts read once
    and handed to every fold that needs them (stats.tally, HollowFold, AbsenceFold, passed_on_presence).
    A plain dict or str entry is read inline; anything else goes through verdict_of."""
    out = {}
    for name, entry in layers.items():
        t = type(entry)
        out[name] = str(entry.get("verdict")) if t is dict else entry if t is str else verdict_of(entry)
    return out


def is_hollow_case(layers: Mapping[str, Any]) -> bool:
    """True when no layer beyond liveness is applicable and enabled (all `n/a` or `unscorable`)."""
    return all(verdict_of(v) in (NA, UNSCORABLE) for name, v in layers.items() if name not in LIVENESS_LAYERS)


def deliberately_unscored(layer: str, entry: Any) -> bool:
    """An `unscored` the run chose (a reserved layer, a run that does not judge), not a missing input."""
    if verdict_of(entry) != UNSCORED:
        return False
    mapping = isinstance(entry, dict) or isinstance(entry, Mapping)
    reason = str(entry.get("reason") or "") if mapping else ""
    if layer in _NEVER_SCORED and reason.startswith(_NEVER_SCORED[layer]):
        return True
    if mapping and provisional_only(entry):
        return True
    return layer == "judged" and reason.startswith("unjudged")


def provisional_only(entry: Mapping[str, Any]) -> bool:
    """A judged layer no calibrated rubric version decides: every pin it lists is provisional.
    Decided per pin, so a provisional pin beside a calibrated one that never ran does not make
    the layer a chosen unscored (the layer's own `provisional` flag is the fallback)."""
    rubrics = entry.get("rubrics")
    if isinstance(rubrics, list) and rubrics:
        return all(isinstance(r, Mapping) and r.get("provisional") is True for r in rubrics)
    return entry.get("provisional") is True


def never_ran(layer: str, entry: Any) -> bool:
    """A check the case asserts that was not scored for want of its input (or an undecided judge):
    `unscored` on a layer beyond liveness that the run did not choose to leave unscored."""
    return verdict_of(entry) == UNSCORED and layer not in LIVENESS_LAYERS and not deliberately_unscored(layer, entry)


def only_chosen_unscored(layers: Mapping[str, Any]) -> bool:
    """True when nothing beyond liveness was decided or missed: every such layer is `n/a`,
    `unscorable` or an `unscored` the run chose (rules, state, an unjudged or provisional rubric)."""
    return all(verdict_of(v) in (NA, UNSCORABLE) or deliberately_unscored(name, v)
               for name, v in layers.items() if name not in LIVENESS_LAYERS)


def unmeasured_by_mode(layers: Mapping[str, Any]) -> str | None:
    """The block of an asserted check the run's own invocation could never measure (an
    `expect.permissions.max_denied` under bypassPermissions: no call is ever denied), or None.
    Unlike a layer the profile switches off, nothing chose it: a case that is hollow because of it
    asserted a check that never ran, so the gate closes on it (gate_case.unscored_closes)."""
    from .agent import NEVER_DENIES_BLOCK
    for entry in layers.values():
        if isinstance(entry, Mapping) and verdict_of(entry) == UNSCORABLE \
                and entry.get("blocked_by") == NEVER_DENIES_BLOCK:
            return NEVER_DENIES_BLOCK
    return None


def asserted(layer: str, entry: Any) -> bool:
    """The case asserts this layer and it is switched on: neither n/a nor unscorable nor a chosen unscored."""
    return verdict_of(entry) not in (NA, UNSCORABLE) and not deliberately_unscored(layer, entry)


def _short(reason: str, limit: int = 200) -> str:
    return clip(" ".join(reason.split()), limit, ellipsis="…")


def hollow_layers(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """{layer: {cases, reason, adapter_key}} for every layer asserted by >= 1 record and scored in none.

    `records` are verdict.json records (or slim rows) of the non-canary cases; skipped
    records never count (nothing was sent). `cases` is how many records asserted the layer;
    `reason` is the most common reason those layers carried (ties: first seen).
    """
    fold = HollowFold()
    for i, record in enumerate(records):
        fold.add(i, record)
    return fold.result()


_READS_NO_ENTRY = frozenset({NA, UNSCORABLE, PASS, FAIL})   # HollowFold.add's verdicts that read no entry


class HollowFold:
    """hollow_layers() one record at a time, in any order (`index`: the record's position, so a
    tie between reasons still goes to the first seen in that order)."""

    def __init__(self) -> None:
        self.asserting: dict[str, list] = {}          # layer -> [cases, first index]
        self.scored: set[str] = set()
        self.reasons: dict[str, dict[str, list]] = {}  # layer -> reason -> [count, first index]
        # layer shapes (score.layershape) with no verdict but n/a, unscorable, pass and fail: a record of one
        # reads no entry here and asserts only layers it scores, so once its shape's first record is folded
        # (the layers put in `scored`) the rest change nothing result() says: skipped (False: not such a shape)
        self._done: dict[Any, bool] = {}

    def add(self, index: int, record: Mapping[str, Any], verdicts: Mapping[str, str] | None = None,
            shape: Any = None) -> None:
        """`verdicts`: layer_verdicts of the record's layers, when the caller has them already; `shape`:
        score.layershape.layer_shape of them, or None."""
        if record.get("verdict") == "skipped":
            return
        if shape is not None:
            done = self._done.get(shape)
            if done:
                return
            if done is None:
                self._done[shape] = all(v in _READS_NO_ENTRY for v in shape.verdicts)
        layers = record.get("layers") or {}
        for layer, v in (layer_verdicts(layers) if verdicts is None else verdicts).items():
            # asserted(layer, entry), its verdict read once
            if v == NA or v == UNSCORABLE or (v == UNSCORED and deliberately_unscored(layer, layers[layer])):
                continue
            slot = self.asserting.get(layer)
            if slot is None:
                self.asserting[layer] = [1, index]
            else:
                slot[0] += 1
                if index < slot[1]:
                    slot[1] = index
            if v == PASS or v == FAIL:
                self.scored.add(layer)
                continue
            entry = layers[layer]
            reason = entry.get("reason") if isinstance(entry, dict) or isinstance(entry, Mapping) else None
            key = _short(str(reason or v))
            got = self.reasons.setdefault(layer, {}).get(key)
            if got is None:
                self.reasons[layer][key] = [1, index]
            else:
                got[0] += 1
                got[1] = min(got[1], index)

    def result(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for layer in sorted(self.asserting, key=lambda name: self.asserting[name][1]):
            if layer in self.scored:
                continue
            counts = self.reasons.get(layer) or {}
            common = min(counts, key=lambda k: (-counts[k][0], counts[k][1])) if counts else None
            out[layer] = {"cases": self.asserting[layer][0], "reason": common,
                          "adapter_key": ADAPTER_KEY_OF_LAYER.get(layer, f"the adapter keys that feed {layer}")}
        return out


# Checks a do-nothing app (one constant sentence, no tool called, nothing returned; or an adapter
# reading the wrong field) also meets: each asserts an absence. By layer: the answer's
# `must_not_contain`; a trajectory that lists only `forbidden` tools (its mode); authz's scope
# checks in a case where no record id of the app's shape appeared (one that did showed the app
# returning a record: `id_shape_seen`), and a refusal shown by no more than an empty tool log or
# clean scope checks (an HTTP 4xx is a refusal the app made, so it is evidence). An agent that does
# nothing (answers one sentence, calls no tool, edits nothing) meets these agent checks too: skills
# that list only `must_not_trigger` (the scorer records the `must_trigger` it asked: empty), files
# whose every asserted path the agent left as the fixture had it (`absent` paths the fixture lacked,
# `unchanged` globs, an `exists`/`contains` path it did not touch: the scorer records the asserted
# paths it did change as `touched`), and any `permissions` pass (no call denied).
ABSENCE_CHECKS: frozenset[str] = frozenset({"must_not_contain"})
AUTHZ_ABSENCE_CHECKS: frozenset[str] = frozenset({"forbidden_tools", "forbidden_record_ids", "allowed_record_ids"})
ABSENCE_LAYERS: tuple[str, ...] = ("answer", "trajectory", "authz", "skills", "files", "permissions")
AGENT_ABSENCE_LAYERS: frozenset[str] = frozenset({"skills", "files", "permissions"})
# How the gate names each layer's absences (absence_only_line).
ABSENCE_WORDS: dict[str, str] = {"answer": "must_not_contain (text absent from the answer)",
                                 "trajectory": "expect.tools.forbidden (a tool not called)",
                                 "authz": "expect.authz (a tool not called, no record id returned, "
                                          "a refusal seen only as no data)",
                                 "skills": "expect.skills.must_not_trigger (a skill not invoked)",
                                 "files": "expect.files absent / unchanged (or an exists / contains path the "
                                          "agent left as the fixture had it)",
                                 "permissions": "expect.permissions.max_denied (no call denied)"}


def passed_on_presence(layers: Mapping[str, Any], verdicts: Mapping[str, str] | None = None) -> bool:
    """True when some layer beyond liveness passed on more than absences: any passing layer that is
    not absence_only. A case that passed without one would pass an app that answers nothing and
    calls no tool, or an adapter whose <answer> path reads a constant field. `verdicts`:
    layer_verdicts(layers), when the caller has them already."""
    for layer, entry in layers.items():
        if (verdict_of(entry) if verdicts is None else verdicts[layer]) != PASS or layer in LIVENESS_LAYERS:
            continue
        if not ((isinstance(entry, dict) or isinstance(entry, Mapping)) and absence_only(entry, layer)):
            return True
    return False


def _absent(check: Any, layer: str) -> bool:
    if not (isinstance(check, dict) or isinstance(check, Mapping)):
        return False
    if layer == "answer":
        return check.get("check") in ABSENCE_CHECKS
    if check.get("check") == "expect_refusal":
        return not str(check.get("refused_by") or "").startswith("HTTP ")
    return check.get("check") in AUTHZ_ABSENCE_CHECKS


def absence_only(entry: Mapping[str, Any], layer: str = "answer") -> bool:
    """A layer entry (of ABSENCE_LAYERS) whose every check asserts an absence: its `checks` (or a
    trajectory's `mode`: only `forbidden` listed; a skills layer's empty `must_trigger`; a files
    layer's empty `touched`; any permissions layer) in a verdict record, or the `absence_only` flag a
    slim record keeps in their place (rundir.derived.slim)."""
    if layer not in ABSENCE_LAYERS:
        return False
    if layer == "permissions":
        return True
    if layer == "skills" and isinstance(entry.get("must_trigger"), list):
        return not entry["must_trigger"]
    if layer == "files" and isinstance(entry.get("touched"), list):
        return not entry["touched"]
    if layer in AGENT_ABSENCE_LAYERS:   # a slim record's flag; a record from before these facts: presence
        return entry.get("absence_only") is True
    if layer == "trajectory" and "mode" in entry:
        return entry.get("mode") == "forbidden"
    seen = entry.get("id_shape_seen")
    if layer == "authz" and (isinstance(seen, dict) or isinstance(seen, Mapping)) and seen.get("seen") is True:
        return False
    checks = entry.get("checks")
    if not isinstance(checks, list):
        return entry.get("absence_only") is True
    return bool(checks) and all(_absent(c, layer) for c in checks)


class AbsenceFold:
    """Over the passing non-canary cases of a run: how many passed, and how many on presence
    (passed_on_presence), and which layers the absence-only passes stood on. The gate closes when
    cases passed and none did on presence."""

    def __init__(self) -> None:
        self.passes = self.on_presence = 0
        self.first: tuple[int, str] | None = None     # (index, case id) of the first absence-only pass
        self.layers: set[str] = set()

    def add(self, index: int, record: Mapping[str, Any], verdicts: Mapping[str, str] | None = None) -> None:
        """`verdicts`: layer_verdicts of the record's layers, when the caller has them already."""
        if record.get("verdict") != PASS or record.get("canary"):
            return
        self.passes += 1
        layers = record.get("layers") or {}
        if verdicts is None:
            verdicts = layer_verdicts(layers)
        if passed_on_presence(layers, verdicts):
            self.on_presence += 1
            return
        self.layers.update(name for name, v in verdicts.items() if name in ABSENCE_LAYERS and v == PASS)
        if self.first is None or index < self.first[0]:
            self.first = (index, None if record.get("holdout") else str(record.get("case_id")))

    def result(self) -> dict[str, Any] | None:
        if not self.passes:
            return None
        out = {"passes": self.passes, "on_presence": self.on_presence,
               "first_absence_only": self.first[1] if self.first else None}
        if self.layers - {"answer"}:    # an answer-only run keeps the block (and its line) as first written
            out["absence_layers"] = [name for name in ABSENCE_LAYERS if name in self.layers]
        return out


def absence_only_line(block: Any) -> str | None:
    """The gate's close reason when every pass of the run stood on absences only, else None."""
    if not isinstance(block, Mapping) or block.get("on_presence") != 0:
        return None
    n = block.get("passes")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return None
    first = block.get("first_absence_only")
    eg = f", e.g. {first}" if first else ""
    layers = block.get("absence_layers")
    if isinstance(layers, list) and any(name in ABSENCE_WORDS for name in layers):
        words = "; ".join(ABSENCE_WORDS[name] for name in ABSENCE_LAYERS if name in layers)
        if any(name in AGENT_ABSENCE_LAYERS for name in layers):
            who, fix = ("an agent that does nothing (answers one sentence, calls no tool, edits nothing)",
                        "add a check the work must meet (expect.skills.must_trigger, an expect.files contains text "
                        "or exists path the fixture lacks, an expect.check that fails on the untouched fixture, "
                        "must_contain)")
        else:
            who, fix = ("an app that answers the same sentence to everything and calls no tool",
                        "add a check a right answer must meet (must_contain, route, expect.tools.subset, "
                        "expect.args, format, a rubric) and check the adapter's response_body and traces")
        return (f"all {n} passing case(s) passed only on checks that something is absent: {words}{eg}: "
                f"{who} passes them too, so nothing was shown to work; {fix}")
    return (f"all {n} passing case(s) passed only on must_not_contain (text absent from the answer"
            f"{eg}): an app that answers nothing, or an adapter whose "
            "response_body <answer> path reads the wrong field, passes them too, so nothing was shown to "
            "work; add a check a right answer must meet (must_contain, route, format, a rubric) and check "
            "the adapter's response_body")
