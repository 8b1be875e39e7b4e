"""Rules for one case: identity, classification, review, reserved fields, input and expect.

`check_case(case, ctx, report)` reports through `report(code, message)`. `ctx` holds
the suite-wide facts a case rule needs (all ids, the capability matrix, the profile's
record_id_pattern). Gradedness is decided by assay.lint.graded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from ..core.casekind import TURN_KEYS
from ..core.ids import CASE_ID_RULE, is_safe_case_id
from ..core.patterns import lazy_pattern
from ..core.suggest import closest, did_you_mean
from ..core.vocab import CATEGORIES, SPLITS, TEST_TYPES, holdout_unsealed
from .expect_rules import check_expect
from .graded import SCORED_LAYERS, enabled_scored_layers, grading_expect, layers_in_expect, scored_layers
from .key_homes import INPUT_KEYS, case_keys, misplaced

Report = Callable[[str, str], None]

RESERVED_TURN_KEYS = ("assistant", "simulate")
LONG_CONVERSATION = 8
# Who a review stamp must not come from: a generator, a model, a bot.
MACHINE_REVIEWER = lazy_pattern(
    r"\b(claude|gpt\w*|llm|model|ai|bot|generator|generated|assay|auto|automatic|machine|script|agent|pipeline)\b",
    re.I)
SOURCE_DERIVED = lazy_pattern(
    r"(source code|from the (source|code|implementation)|read (it |this )?(from|in) the code|in the code"
    r"|per the implementation|the app's code|copied from|\bgrep|\.py\b|\.ts\b|\.js\b)", re.I)


@dataclass
class CaseContext:
    ids: set[str]
    matrix: dict[str, Any] | None
    id_pattern: str | None
    id_pattern_known: bool
    routes: list[str] | None = None   # suite_rules.declared_routes: None when the profile lists none


def user_texts(case: dict[str, Any], upto: int | None = None) -> str:
    """The user's words the app has seen: every message and turn, a simulated user's facts (it tells
    them when asked), or for a turn checkpoint only turns 0..upto (a later turn's text was not sent
    yet, so it cannot be echoed)."""
    inp = case.get("input")
    if not isinstance(inp, dict):
        return ""
    from ..simulate.scenario import told_facts
    parts: list[str] = told_facts(case)
    messages = inp.get("messages") if isinstance(inp.get("messages"), list) else []
    turns = inp.get("turns") if isinstance(inp.get("turns"), list) else []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
            parts.append(m["content"])
    for t in turns if upto is None else turns[:upto + 1]:
        if isinstance(t, dict) and isinstance(t.get("user"), str):
            parts.append(t["user"])
    return "\n".join(parts)


def _unknown_top_keys(case: dict[str, Any], report: Report) -> None:
    known = case_keys()
    for key in sorted(k for k in case if k not in known):
        report("unknown_key", misplaced(key, "") or f"{key!r} is not a case key (a typo is ignored silently, so the "
               f"case would run without it){did_you_mean(key, known)}; allowed: {', '.join(known)}", key=str(key))


def check_case(case: dict[str, Any], ctx: CaseContext, report: Report) -> None:
    _unknown_top_keys(case, report)
    _identity(case, report)
    _classification(case, ctx, report)
    _review_and_reserved(case, report)
    _not_converted(case, report)
    _input(case, report)
    if "expect" in case:
        check_expect(case["expect"], "expect", report, user_text=user_texts(case),
                     id_pattern=ctx.id_pattern, id_pattern_known=ctx.id_pattern_known)
    if not _gradedness(case, ctx, report):
        _disabled_expectations(case, ctx, report)
    _undeclared_routes(case, ctx, report)


def _identity(case: dict[str, Any], report: Report) -> None:
    cid = case.get("id")
    if cid is None or cid == "":
        report("missing_id", "the case has no id; add `id: c-<8 hex>` (opaque and permanent)")
    elif not is_safe_case_id(cid):
        report("unsafe_id", f"id {cid!r} is not a safe case id ({CASE_ID_RULE})")


def _classification(case: dict[str, Any], ctx: CaseContext, report: Report) -> None:
    split = case.get("split")
    if split is None or split == []:
        report("missing_split", f"split is missing or empty, so no mode ever runs this case; add e.g. "
               f"`split: [full]` (names: {', '.join(SPLITS)})")
    elif not isinstance(split, list) or any(s not in SPLITS for s in split):
        unknown = [s for s in (split if isinstance(split, list) else [split]) if s not in SPLITS]
        hint = "".join(did_you_mean(str(s), list(SPLITS)) for s in unknown if isinstance(s, str))
        wrap = f"; write a list: [{split}]" if isinstance(split, str) and split in SPLITS else ""
        report("bad_split", f"split {split!r} must be a list of {', '.join(SPLITS)}{hint}{wrap}", key="split")
    elif holdout_unsealed(split):
        report("holdout_not_sealed", f"split {split} puts a holdout case in another split too; a case seen "
               "elsewhere cannot be measured as held out: use `split: [holdout]` alone")
    if case.get("category") not in CATEGORIES:
        report("bad_category", f"category {case.get('category')!r} must be one of {', '.join(CATEGORIES)}"
               f"{did_you_mean(str(case.get('category')), list(CATEGORIES)) if 'category' in case else ''}",
               key="category" if "category" in case else None)
    test_type = case.get("test_type")
    if "test_type" not in case or test_type is None:
        report("missing_test_type", f"test_type is missing; write one of {', '.join(TEST_TYPES)}")
    elif test_type not in TEST_TYPES:
        report("bad_test_type", f"test_type {test_type!r} must be one of {', '.join(TEST_TYPES)} (case-sensitive)",
               key="test_type")
    parent = case.get("metamorphic_parent")
    if test_type in ("INV", "DIR"):
        if not parent:
            report("missing_metamorphic_parent", f"a {test_type} case needs metamorphic_parent: the id of the "
                   "case it transforms")
        elif parent == case.get("id"):
            report("self_metamorphic_parent", "metamorphic_parent is the case itself; name the parent case")
        elif parent not in ctx.ids:
            report("dangling_metamorphic_parent", f"metamorphic_parent {parent!r} is not a case in this suite")
    elif parent:
        if parent == case.get("id"):
            report("self_metamorphic_parent", "metamorphic_parent is the case itself; name the parent case")
        elif parent not in ctx.ids:
            report("dangling_metamorphic_parent", f"metamorphic_parent {parent!r} is not a case in this suite")
    if "template_id" not in case:
        report("missing_template_id", "template_id is missing; write the template's id, or `template_id: null` "
               "for a one-off")
    template = case.get("template_id")
    params = case.get("instantiation_params")
    if template and not params:
        report("template_without_params", f"template {template!r} is set but instantiation_params is empty; "
               "record the public parameters of this instance")
    if params and not template:
        report("params_without_template", "instantiation_params without a template_id; set the template or "
               "drop the params")


def _not_converted(case: dict[str, Any], report: Report) -> None:
    """ERROR check_not_converted: a gating case carrying checks its import could not convert would
    pass without them, so a regression only they catch would read as a pass (wave 4 §1)."""
    lost = case.get("not_converted")
    if not isinstance(lost, list) or not lost or case.get("gating") is False:
        return
    named = "; ".join(f"{e.get('check')} at {e.get('source')}" if isinstance(e, dict) else repr(e) for e in lost)
    report("check_not_converted", f"gating case with {len(lost)} check(s) its import could not convert ({named}): "
           "it passes without them, so a regression only they would catch reads as a pass. Rewrite each as an "
           "assay check (expect.answer.must_contain, a /regex/, format.json_schema or a rubric) and delete its "
           "not_converted entry; or delete the entry to gate on the converted checks alone; or set gating: false",
           key="not_converted")


def _review_and_reserved(case: dict[str, Any], report: Report) -> None:
    review = case.get("review")
    if isinstance(review, dict) and review.get("status") == "accepted":
        by = review.get("by")
        if not isinstance(by, str) or not by.strip() or MACHINE_REVIEWER().search(by):
            report("machine_accepted", f"review.status is accepted but review.by is {by!r}; only a named human "
                   "accepts a case (set status: pending until one does)")
    if case.get("no_op_expectation") == "pass" and not case.get("no_op_justification"):
        report("no_op_pass", "no_op_expectation: pass means an app that does nothing passes this case; add "
               "no_op_justification or tighten the expect")
    notes = case.get("notes")
    if isinstance(notes, str) and SOURCE_DERIVED().search(notes):
        report("source_derived_expectation", "notes suggest the expectation was read from the app's source; "
               "an expectation copied from the code cannot catch the code's bug: derive it from the spec")
    if "filter" in case:
        report("filter_unattested", "filter values are not computed by any script; delete the key")
    for key, code in (("available_tools", "available_tools_not_scoped"),
                      ("excluded_tools", "excluded_tools_not_scored"), ("seed_state", "seed_state_not_loaded")):
        if key in case:
            report(code, f"{key} is reserved: nothing uses it, so it constrains nothing")


def _input(case: dict[str, Any], report: Report) -> None:
    inp = case.get("input")
    if not isinstance(inp, dict):
        report("missing_input", "input is missing; add `input: {messages: [{role: user, content: ...}]}` "
               "(or input.turns for a conversation)")
        return
    if "simulated_user" in inp:
        _simulated(case, report)
        return
    has_turns, has_messages = "turns" in inp, "messages" in inp
    if has_turns and has_messages:
        report("turns_and_messages", "input has both turns and messages; a case is single-turn (messages) or "
               "a conversation (turns), not both", key="input.messages")
    if "every_turn" in inp and not has_turns:
        report("every_turn_without_turns", "input.every_turn only applies to input.turns")
    for key in sorted(set(inp) - set(INPUT_KEYS)):
        report("bad_messages", misplaced(key, "input") or f"input.{key} is not an input key"
               f"{did_you_mean(str(key), list(INPUT_KEYS))}; allowed: {', '.join(INPUT_KEYS)}", key=f"input.{key}")
    if "session" in inp and inp["session"] != "fresh":
        report("session_not_fresh", f"input.session {inp['session']!r}: only `fresh` is supported, the runner "
               "skips this case")
    if has_messages:
        _messages(inp["messages"], report)
    elif not has_turns:
        report("missing_input", "input has none of messages, turns or simulated_user")
    if has_turns:
        _turns(case, inp, report)


def _simulated(case: dict[str, Any], report: Report) -> None:
    """input.simulated_user: the one definition of its keys is assay.simulate.scenario.problems."""
    from ..simulate.scenario import problems
    for code, key, message in problems(case):
        report(code, message, key=key)
    split = case.get("split")
    if isinstance(split, list) and "canary" in split:
        report("multi_turn_canary", "a canary must be single-turn: a simulated conversation is too variable to "
               "detect harness drift")


def _messages(messages: Any, report: Report) -> None:
    if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages):
        report("bad_messages", "input.messages must be a list of {role, content} with string values")
        return
    users = [m for m in messages if m["role"] == "user"]
    if len(users) > 1:
        report("multi_turn_in_messages", "input.messages holds more than one user message; the runner skips it. "
               "Write a conversation as input.turns")
    elif len(users) != len(messages) or not users:
        report("not_one_user_message", "input.messages must hold exactly one {role: user, content}; system or "
               "assistant entries (or no user message) make the runner skip the case")


def _turns(case: dict[str, Any], inp: dict[str, Any], report: Report) -> None:
    turns = inp["turns"]
    if not isinstance(turns, list):
        report("bad_turns", "input.turns must be a list of {user, expect?}", key="input.turns")
        return
    if len(turns) < 2:
        report("single_turn_conversation", f"input.turns has {len(turns)} turn(s); a conversation needs at "
               "least 2 (use input.messages for one turn)", key="input.turns")
    elif len(turns) > LONG_CONVERSATION:
        report("long_conversation", f"input.turns has {len(turns)} turns (over {LONG_CONVERSATION}); long "
               "scripts drift from what the app says, and the runner caps at max_turns (default 12)")
    every = inp.get("every_turn")
    if "every_turn" in inp and not isinstance(every, dict):
        report("bad_expect_shape", "input.every_turn must be a mapping of checks", key="input.every_turn")
        every = None
    if isinstance(every, dict):
        check_expect(every, "input.every_turn", report, user_text=user_texts(case))
        if isinstance(case.get("expect"), dict):
            clash = sorted(set(every) & set(case["expect"]))
            if clash:
                report("every_turn_collision", f"input.every_turn and expect both set {clash}; keep each check "
                       "in one place", key=f"expect.{clash[0]}")
    for i, turn in enumerate(turns):
        where = f"input.turns[{i}]"
        if not isinstance(turn, dict) or not isinstance(turn.get("user"), str) or not turn["user"].strip():
            report("bad_turn", f"{where} must be a mapping with a non-empty `user` string{_bad_turn_fix(turn)}",
                   key=f"input.turns.{i}")
            continue
        for key in sorted(set(turn) - set(TURN_KEYS)):
            if key in RESERVED_TURN_KEYS:
                report("turn_key_reserved", f"{where}.{key} is reserved: only user turns are scripted",
                       key=f"input.turns.{i}.{key}")
            else:
                report("unknown_turn_key", f"{where}.{key} is not a turn key (user, expect)"
                       f"{did_you_mean(str(key), list(TURN_KEYS))}", key=f"input.turns.{i}.{key}")
        if "expect" in turn:
            if i == len(turns) - 1:
                report("final_turn_expect", f"{where}.expect is on the last turn; put the final checks in the "
                       "case's top-level expect", key=f"input.turns.{i}.expect")
            else:
                check_expect(turn["expect"], f"{where}.expect", report, user_text=user_texts(case, upto=i))
                if isinstance(every, dict) and isinstance(turn["expect"], dict):
                    clash = sorted(set(every) & set(turn["expect"]))
                    if clash:
                        report("every_turn_collision", f"input.every_turn and {where}.expect both set {clash}",
                               key=f"input.turns.{i}.expect.{clash[0]}")
    split = case.get("split")
    if isinstance(split, list) and "canary" in split:
        report("multi_turn_canary", "a canary must be single-turn: conversations are too variable to detect "
               "harness drift")


def _bad_turn_fix(turn: Any) -> str:
    """What a turn without `user` text holds, and what to write instead (a chat message's
    {role, content}, a bare string, a misspelt key)."""
    if isinstance(turn, str):
        return " (got a string: write `- user: ...` with that text)"
    if not isinstance(turn, dict):
        return f" (got {type(turn).__name__}: write `- user: ...`)"
    if "user" in turn:
        return " (its user text is empty)" if isinstance(turn["user"], str) else \
            f" (user is {type(turn['user']).__name__}: quote it)"
    keys = ", ".join(map(str, turn))
    if "content" in turn:
        return (f" (got a chat message {{{keys}}}: write `- user: ...` with its content; a turn holds only "
                "the user's words, the app's replies are never scripted)")
    close = next((str(k) for k in turn if closest(str(k), ["user"])), None)
    return f" (got {keys or 'an empty mapping'}" + ("; did you mean 'user'?)" if close else ")")


def _gradedness(case: dict[str, Any], ctx: CaseContext, report: Report) -> bool:
    """True when it reported no_graded_layer (or the expect is not a mapping)."""
    expect = grading_expect(case)
    if expect is not None and not isinstance(expect, dict):
        return True  # bad_expect_shape already said it
    scored = scored_layers(case)
    if not scored and expect is None and "expect" in (case.get("input") or {}):
        return True   # its expect is indented under input: that ERROR (input.expect) is the one to fix
    if not scored:
        what = "the case has no expect" if expect is None else "its expect grades no scored layer"
        report("no_graded_layer", f"{what} (http status, state, rules and rubric cannot fail a case); add "
               "answer.must_contain, route, tools, args, result, authz or format (an agent's case: files, skills "
               "or check)", key="expect")
        return True
    if ctx.matrix is not None and not enabled_scored_layers(case, ctx.matrix):
        report("no_graded_layer", f"every layer this case grades ({', '.join(scored)}) is disabled in the "
               "capability matrix, so it can never fail; grade an enabled layer or drop the case")
        return True
    return False


def _expect_blocks(case: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(where shown, key path for the line, expect block): the case's, input.every_turn's, each checkpoint's."""
    out: list[tuple[str, str, Any]] = [("expect", "expect", case.get("expect"))]
    inp = case.get("input") if isinstance(case.get("input"), dict) else {}
    if isinstance(inp.get("turns"), list):
        out.append(("input.every_turn", "input.every_turn", inp.get("every_turn")))
        out += [(f"input.turns[{i}].expect", f"input.turns.{i}.expect", t.get("expect"))
                for i, t in enumerate(inp["turns"]) if isinstance(t, dict)]
    return [(w, k, e) for w, k, e in out if isinstance(e, dict)]


def _disabled_expectations(case: dict[str, Any], ctx: CaseContext, report: Report) -> None:
    """WARN expectation_not_scored: an expect key asserting a scored layer the capability matrix
    switches off. The run reports that layer unscorable ("NOT scored this run"), never pass or fail,
    so the case gates on its other layers alone. The key -> layer mapping is graded.layers_in_expect,
    the layer -> matrix key one vocab.matrix_enabled (via MATRIX_KEY_OF_LAYER)."""
    if ctx.matrix is None:
        return
    from ..core.vocab import MATRIX_KEY_OF_LAYER, matrix_enabled
    for where, path, expect in _expect_blocks(case):
        for key, value in expect.items():
            off = [layer for layer in layers_in_expect({key: value})
                   if layer in SCORED_LAYERS and not matrix_enabled(ctx.matrix, layer)[0]]
            if not off:
                continue   # http, rules, state are never scored (reserved_expectation says state)
            mkey = MATRIX_KEY_OF_LAYER.get(off[0]) or off[0]   # one expect key: one matrix key
            entry = ctx.matrix.get(mkey) if isinstance(ctx.matrix.get(mkey), dict) else {}
            why = f"blocked_by: {entry['blocked_by']}" if entry.get("blocked_by") else "no blocked_by given"
            report("expectation_not_scored",
                   f"{where}.{key} is not scored: the profile switches {' and '.join(off)} off (capability_matrix."
                   f"{mkey}: enabled: false, {why}), so every run reports it unscorable and the case gates on its "
                   f"other layers alone; enable {mkey} in profile.yaml, or drop {where}.{key}", key=f"{path}.{key}")


def _undeclared_routes(case: dict[str, Any], ctx: CaseContext, report: Report) -> None:
    """ERROR unknown_route: expect.route or a route_acceptable entry the profile does not declare
    (routing_contract / route_targets): the app never returns it, so expect.route can only fail and a
    route_acceptable entry never accepts. As unknown_tool: a name outside a declared list is refused."""
    if not ctx.routes:
        return
    declared = ctx.routes
    named_ones = [r for r in declared if not r.startswith("__")]   # __oos__ is accepted, never suggested
    shown = ", ".join(named_ones)
    for where, path, expect in _expect_blocks(case):
        named = [(f"{where}.route", f"{path}.route", expect.get("route"))]
        if isinstance(expect.get("route_acceptable"), list):
            named += [(f"{where}.route_acceptable[{i}]", f"{path}.route_acceptable.{i}", r)
                      for i, r in enumerate(expect["route_acceptable"])]
        accepted = {r for _, _, r in named if isinstance(r, str)}
        if len(named_ones) > 1 and isinstance(expect.get("route"), str) and accepted >= set(named_ones):
            report("vacuous_route", f"{where}.route with {where}.route_acceptable accepts every route profile.yaml "
                   f"declares ({shown}): whatever the router picks passes (it fails only when no route comes back); keep in "
                   "route_acceptable only the routes a right answer may take", key=f"{path}.route_acceptable")
        for label, key, route in named:
            if not isinstance(route, str) or not route or route in declared:
                continue
            effect = "can only fail" if label.endswith(".route") else "never accepts anything"
            report("unknown_route", f"{label} {route!r} is not a route profile.yaml declares ({shown})"
                   f"{did_you_mean(route, named_ones)} (the app never returns it, so the check {effect}); fix the "
                   "name, or add the route to profile.yaml routing_contract", key=key)
