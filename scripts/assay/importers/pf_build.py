"""The whole import in memory: a promptfoo config -> adapter, cases, rubrics, budgets, log.

`build_import(config_path, app_url_env=None, repeat=None) -> Built`; nothing is written
here (assay.importers.pf_write does that).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .pf_cases import (
    GRADER_WHY, MAX_TURNS, PLACEHOLDER_CHECK, TRANSCRIPT, TURN, ImportLog, Test, convert_assertions, lost_check,
    merge_tests, short_hash, user_turns,
)
from .pf_asserts import FAILS_IN_PROMPTFOO, js_string
from .pf_load import Config, RawPrompt, Skipped, load_config, load_default_test, load_prompts, load_tests
from .pf_provider import AdapterResult, http_adapter
from .pf_render import Unrenderable, uses_var

# Top-level keys that hold test semantics the import cannot carry over (listed when present).
UNCONVERTED_TOP = {
    "scenarios": "scenarios (config x test grids) are not expanded; write them out as tests",
    "redteam": "red-team generation is promptfoo's own; assay runs the cases it is given",
    "extensions": "extension hooks run JavaScript or Python around the eval",
    "nunjucksFilters": "custom Nunjucks filters are code; templates that use them are not rendered",
    "derivedMetrics": "derived metrics are computed from named scores; assay's numbers come from its layers",
}


@dataclass
class Built:
    cfg: Config
    adapter: AdapterResult
    cases: list[dict[str, Any]] = field(default_factory=list)
    log: ImportLog = field(default_factory=ImportLog)
    repeat: int | None = None
    max_concurrency: int | None = None
    notes: list[str] = field(default_factory=list)
    prompt_labels: dict[str, str] = field(default_factory=dict)    # case id -> its prompt's label

    @property
    def skipped(self) -> list[Skipped]:
        seen, out = set(), []
        for s in self.cfg.skipped + self.adapter.skipped + self.log.skipped:
            key = (s.where, s.what, s.why)   # a test under several prompts is listed once
            if key not in seen:
                seen.add(key)
                out.append(s)
        return out


def _constant_vars(tests: list[Test]) -> dict[str, Any]:
    """Vars every test gives the same value (an http body may read those)."""
    if not tests:
        return {}
    first = tests[0].vars
    return {k: v for k, v in first.items() if all(t.vars.get(k, object()) == v for t in tests[1:])}


def _case_shell(cid: str, title: str, where: str, prompt: RawPrompt, params: dict[str, Any]) -> dict[str, Any]:
    tid = f"pf-prompt-{short_hash(prompt.raw)}"
    scalar = {k: str(v) if isinstance(v, str) else v for k, v in params.items()   # str(): a YAML date's text
              if isinstance(v, (str, int, float, bool))}
    case: dict[str, Any] = {"id": cid, "title": title[:120], "unit": "app", "split": ["full", "smoke"],
                            "category": "happy", "test_type": "MFT",
                            "template_id": tid if scalar else None, "source": f"promptfoo:{where}",
                            "review": {"status": "pending"}, "gating": True}
    if scalar:
        case["instantiation_params"] = scalar
    return case


def _identity(built: Built, case: dict[str, Any], test: Test) -> None:
    """A per-test header (`X-User: "{{user}}"`) -> the case's identity, sent as that header."""
    if built.adapter.identity:
        case["identity"] = {key: js_string(test.vars.get(var, "")) if test.vars.get(var) is not None else ""
                            for key, var in built.adapter.identity.items()}


def _unset_vars(prompt: RawPrompt, test: Test) -> str:
    """`: the prompt reads {{ x }}, which this test does not set ...` (a var misspelt in the test), or ''."""
    from ..core.suggest import closest
    from .pf_render import references
    unset = sorted(v for v in references(prompt.raw) if v not in test.vars and v not in ("env", "_conversation"))
    if not unset:
        return ""
    typo = closest(unset[0], [str(k) for k in test.vars if k not in references(prompt.raw)])
    return (f": the prompt reads {', '.join('{{ ' + v + ' }}' for v in unset)}, which this test does not set "
            f"(promptfoo renders it empty)" + (f"; the test sets {typo!r}: a misspelt var?" if typo else "")
            + "; add the var to the test's vars (or defaultTest.vars) and import again")


def _metadata(built: Built, cid: str, test: Test) -> list[str]:
    """promptfoo's test metadata (`metadata:`, CSV `__metadata:<key>`) -> the case's notes and import.json."""
    meta = {k: v for k, v in (test.doc.get("metadata") or {}).items() if k != "conversationId"}
    if not meta:
        return []
    built.log.metadata.setdefault(cid, {}).update(meta)
    return [f"promptfoo metadata: {canonical(meta)}"]


def _finish(case: dict[str, Any], expect: dict[str, Any], notes: list[str], built: Built, comparable: bool,
            lost: list[dict[str, str]]) -> None:
    checks = [expect] + [t.get("expect") or {} for t in (case.get("input") or {}).get("turns", [])]
    gone = built.adapter.answer_lost     # code that rewrites the answer (transformResponse, the provider's transform)
    if gone and any("answer" in e or "format" in e for e in checks):
        lost = lost + [lost_check(g.where, g.what, g.why) for g in gone]
    if not expect:
        expect = {"answer": {"must_not_contain": [PLACEHOLDER_CHECK]}}
        if any(FAILS_IN_PROMPTFOO in entry["why"] for entry in lost):
            # promptfoo fails the test on a misspelt type: never a non-gating pass; make_plan refuses it
            notes.insert(0, "no assertion of this test converts to an assay check and promptfoo fails it (an "
                            "assertion type it does not know, or a regex JavaScript rejects): kept gating, so "
                            "make_plan refuses the case until the config is fixed and imported again (see "
                            "not_converted)")
        else:
            case["gating"] = False
            notes.insert(0, "no assertion of this test converts to an assay check (see IMPORT.md): imported with "
                            "gating: false and one placeholder check, a non-empty answer; write the real checks")
        comparable = False
    if built.repeat and built.repeat > 1:
        case["k"] = built.repeat
    if notes:
        case["notes"] = " ".join(dict.fromkeys(notes))
    case["expect"] = expect
    if lost:    # never read as checked: validate_cases refuses a gating case that carries them
        case["not_converted"] = lost
    built.log.comparable[case["id"]] = comparable
    built.cases.append(case)


def _unique(cid: str, seen: set[str]) -> str:
    n, out = 1, cid
    while out in seen:
        n += 1
        out = f"{cid}-{n}"
    seen.add(out)
    return out


def _single(built: Built, prompt: RawPrompt, test: Test, seen: set[str]) -> None:
    try:
        turns, notes = user_turns(prompt, test)
    except Unrenderable as exc:
        built.log.skipped.append(Skipped(test.raw.where, f"test x prompt {prompt.label}",
                                         f"the prompt uses {exc}, which the import does not evaluate"))
        return
    if not turns or not all(t.strip() for t in turns):
        built.log.skipped.append(Skipped(test.raw.where, f"test x prompt {prompt.label}",
                                         "no user message to send" + _unset_vars(prompt, test)))
        return
    ident = [built.cfg.label, prompt.raw, test.doc.get("description"), test.vars]
    cid = _unique("c-" + short_hash(*ident), seen)
    title = test.doc.get("description") or turns[-1]
    case = _case_shell(cid, str(title), str(test.raw.where), prompt, test.vars)
    _identity(built, case, test)
    built.prompt_labels[cid] = prompt.label
    notes += _metadata(built, cid, test)
    expect, mapped, more, lost = convert_assertions(test, built.log, test.vars,
                                                    conversation=TRANSCRIPT if len(turns) > 1 else None)
    for m in built.log.mapped[-len(mapped):] if mapped else []:
        m["case"] = cid
    if len(turns) == 1:
        case["input"] = {"messages": [{"role": "user", "content": turns[0]}], "session": "fresh"}
    elif len(turns) <= MAX_TURNS:
        case["input"] = {"turns": [{"user": t} for t in turns]}
        more.append("the prompt's user messages are sent as the conversation's turns; the checks apply to the "
                    "last answer")
    else:
        built.log.skipped.append(Skipped(test.raw.where, "a chat prompt", f"{len(turns)} user turns, over assay's "
                                         f"{MAX_TURNS}"))
        return
    _finish(case, expect, notes + more, built, all(m.exact for m in mapped), lost)


def _conversation(built: Built, prompt: RawPrompt, tests: list[Test], seen: set[str]) -> None:
    groups: dict[Any, list[Test]] = {}
    for t in tests:
        groups.setdefault((t.doc.get("metadata") or {}).get("conversationId"), []).append(t)
    for conv_id, members in groups.items():
        first = members[0]
        if len(members) < 2 or len(members) > MAX_TURNS:
            why = ("one test: a conversation needs two turns or more, so it is imported as a single-turn case"
                   if len(members) < 2 else f"{len(members)} turns, over assay's {MAX_TURNS}")
            if len(members) < 2:
                _single(built, prompt, first, seen)
                continue
            built.log.skipped.append(Skipped(first.raw.where, f"conversation {conv_id}", why))
            continue
        turns: list[dict[str, Any]] = []
        notes: list[str] = ["promptfoo sent the earlier turns inside each prompt (_conversation); assay sends one "
                            "user turn per request in one session, so the app must keep the conversation"]
        comparable = True
        cid = _unique("c-" + short_hash(built.cfg.label, prompt.raw, "conversation", conv_id,
                                         [t.vars for t in members]), seen)
        final_expect: dict[str, Any] = {}
        lost: list[dict[str, str]] = []
        for n, t in enumerate(members):
            try:
                users, more = user_turns(prompt, t)
            except Unrenderable as exc:
                built.log.skipped.append(Skipped(t.raw.where, f"conversation {conv_id}", f"the prompt uses {exc}"))
                turns = []
                break
            expect, mapped, more2, lost_here = convert_assertions(
                t, built.log, t.vars, conversation=TURN if n < len(members) - 1 else TRANSCRIPT)
            lost += [dict(e, check=f"{e['check']} (turn {n + 1})") for e in lost_here]
            for m in built.log.mapped[-len(mapped):] if mapped else []:
                m["case"], m["turn"] = cid, n + 1
            comparable = comparable and all(m.exact for m in mapped)
            notes += more + more2
            turn: dict[str, Any] = {"user": users[-1] if users else ""}
            if n < len(members) - 1 and expect:
                turn["expect"] = expect
            elif n == len(members) - 1:
                final_expect = expect
            turns.append(turn)
        if not turns:
            continue
        title = first.doc.get("description") or f"conversation {conv_id or 1}: {turns[0]['user']}"
        case = _case_shell(cid, str(title), str(first.raw.where), prompt, {})
        _identity(built, case, first)
        built.prompt_labels[cid] = prompt.label
        for t in members:
            notes += _metadata(built, cid, t)
        case["input"] = {"turns": turns}
        case["category"] = "multistep"
        if not final_expect and any("expect" in t for t in turns):
            final_expect = {"answer": {"must_not_contain": [PLACEHOLDER_CHECK]}}
            notes.append("the last turn has no convertible check: the case checks only that its answer is not "
                         "empty (the earlier turns keep their checkpoints)")
        _finish(case, final_expect, notes, built, comparable, lost)


def build_import(config_path: str, app_url_env: str | None = None, repeat: int | None = None) -> Built:
    cfg = load_config(config_path)
    log = ImportLog()
    prompts = load_prompts(cfg)
    tests = merge_tests(load_tests(cfg), load_default_test(cfg), cfg, log)
    conversation = any(uses_var(p.raw, "_conversation") for p in prompts) and any(
        not (t.doc.get("options") or {}).get("disableConversationVar") for t in tests)
    adapter = http_adapter(cfg, _constant_vars(tests), app_url_env, conversation)
    built = Built(cfg, adapter, log=log)
    ev = cfg.doc.get("evaluateOptions") or {}
    cli = cfg.doc.get("commandLineOptions") or {}
    built.repeat = repeat or ev.get("repeat") or cli.get("repeat")
    if isinstance(ev.get("maxConcurrency"), int) and ev["maxConcurrency"] >= 1:
        built.max_concurrency = ev["maxConcurrency"]
        if adapter.invocation:
            adapter.invocation["max_concurrency"] = ev["maxConcurrency"]
    if ev.get("delay"):
        built.notes.append(f"evaluateOptions.delay {ev['delay']} ms is not carried over: the runner paces itself "
                           "(rate limits: docs/runner-contract.md)")
    _graders(built, tests)
    for key, why in UNCONVERTED_TOP.items():
        if key in cfg.doc:
            cfg.skipped.append(Skipped(cfg.where(key), key, why))
    seen: set[str] = set()
    for prompt in prompts:
        conv_tests = [t for t in tests if uses_var(prompt.raw, "_conversation")
                      and not (t.doc.get("options") or {}).get("disableConversationVar")]
        for t in tests:
            if t in conv_tests:
                continue
            if _skip_test(built, t):
                continue
            _single(built, prompt, t, seen)
        if conv_tests:
            _conversation(built, prompt, [t for t in conv_tests if not _skip_test(built, t)], seen)
    return built


def _graders(built: Built, tests: list[Test]) -> None:
    """The grader provider and rubric prompt (defaultTest's or a test's options) are listed, once each."""
    seen: set[int] = set()
    for t in tests:
        for src in ([built.cfg.doc.get("defaultTest")] if isinstance(built.cfg.doc.get("defaultTest"), dict)
                    else []) + [t.raw.doc]:
            opts = src.get("options") if isinstance(src.get("options"), dict) else {}
            for key in ("provider", "rubricPrompt"):
                if opts.get(key) is not None and id(opts) not in seen:
                    where = built.cfg.where("defaultTest", "options", key) if src is not t.raw.doc else \
                        t.raw.line_of("options", key)
                    what = opts[key] if isinstance(opts[key], str) else (opts[key].get("id", "")
                                                                          if isinstance(opts[key], dict) else "")
                    built.cfg.skipped.append(Skipped(where, f"options.{key} {what}".strip(), GRADER_WHY))
            if opts:
                seen.add(id(opts))


def _skip_test(built: Built, t: Test) -> bool:
    doc = t.doc
    why = None
    if doc.get("providerOutput") is not None:
        why = "providerOutput checks the assertions on a fixed output, never the app"
    elif (doc.get("options") or {}).get("storeOutputAs"):
        why = "options.storeOutputAs feeds this test's output into later tests' vars; assay cases are independent"
    elif (doc.get("options") or {}).get("transformVars"):
        own = (t.raw.doc.get("options") or {}).get("transformVars")
        at = t.raw.line_of("options", "transformVars") if own else built.cfg.where("defaultTest", "options",
                                                                                    "transformVars")
        why = (f"options.transformVars ({at}) rewrites the vars with code before the prompt and the assertions are "
               "rendered; the import renders the vars as written, so the message and every check that reads a "
               "var would differ (a var the code sets renders empty, loosening the check): write the vars it "
               "computes into the test's vars and import again")
    elif doc.get("provider") or doc.get("providers"):
        why = "the test picks its own provider; a state dir calls one app"
    if why and t.combo == 0:
        built.log.skipped.append(Skipped(t.raw.where, "a test", why))
        for a, where, _ in t.asserts:
            built.log.skipped.append(Skipped(where, str(a.get("type")), f"its test is not imported ({why})"))
    return why is not None


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
