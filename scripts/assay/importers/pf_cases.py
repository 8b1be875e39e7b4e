"""promptfoo tests x prompts -> assay cases (plain dicts, ready to write as YAML).

One case per (prompt, test, var combination): the prompt rendered with the test's vars is
the user turn (a chat-array prompt gives its user messages: one is `input.messages`, several
are `input.turns`). A prompt that reads `_conversation` makes one conversation case per
(prompt, `metadata.conversationId`): each test is a turn, in promptfoo's order (a test with
`options.disableConversationVar` renders its own `vars._conversation` instead); a turn's
assertions are its checkpoint, the last test's are the case's `expect`. Ids are
`c-<8 hex>` of the config's name, the prompt and the test's identity, so a re-import of the
same config gives the same ids. Every assertion is mapped (assay.importers.pf_asserts) or
recorded, with its file and line, in `ImportLog.skipped`; a test with no mapped assertion
is imported `gating: false` with the weakest check (a non-empty answer) and a note (gating
when a type is one promptfoo does not know, or a regex JavaScript rejects: promptfoo fails that test).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .pf_asserts import FAILS_IN_PROMPTFOO, Mapped, map_assertion
from .pf_files import read_text
from .pf_keys import TEST_CARRYING, TEST_KEYS, refuse_near_misses
from .pf_load import Config, RawPrompt, RawTest, Skipped, Where
from .pf_refs import unresolved
from .pf_render import Unrenderable, chat_messages, loops_end, messages_of, references, render

PLACEHOLDER_CHECK = r"/\A\s*\Z/"
_CONV_LOOP = re.compile(r"\{%-?\s*for\s+\w+\s+in\s+_conversation\s*-?%\}.*?\{%-?\s*endfor\s*-?%\}", re.DOTALL)
MAX_TURNS = 8
GRADER_WHY = ("promptfoo's grader for model-graded assertions is not carried over: assay judges rubrics with the "
              "state dir's judge (references/calibration.md); set its model there")


@dataclass
class ImportLog:
    skipped: list[Skipped] = field(default_factory=list)
    mapped: list[dict[str, Any]] = field(default_factory=list)      # per assertion: case, type, exact, where
    rubrics: dict[str, dict[str, str]] = field(default_factory=dict)  # rubric_id -> {kind, criterion}
    budgets: dict[str, float] = field(default_factory=dict)
    budget_sources: dict[str, str] = field(default_factory=dict)
    comparable: dict[str, bool] = field(default_factory=dict)       # case id -> every assertion exact
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # case id -> promptfoo's test metadata


@dataclass
class Test:
    raw: RawTest
    doc: dict[str, Any]                     # merged with defaultTest
    asserts: list[tuple[dict[str, Any], Where, bool]]   # (assertion, where, from assert-set with threshold)
    vars: dict[str, Any]
    combo: int
    lost: list[dict[str, str]] = field(default_factory=list)   # assertions _flatten could not read


def short_hash(*parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:8]


_KIND = {str: "a text", dict: "a mapping", int: "a number", float: "a number", bool: "a boolean"}


def _flatten(items: Any, raw: RawTest, path: tuple[Any, ...], log: ImportLog,
             out: list[tuple[dict[str, Any], Where, bool]], lost: list[dict[str, str]],
             in_threshold_set: bool = False) -> None:
    if items is None:
        return
    if not isinstance(items, list):     # promptfoo refuses the config: "tests[N].assert must be an array"
        skipped = Skipped(raw.line_of(*path), "assert", f"is {_KIND.get(type(items), 'a value')}, not a list: promptfoo refuses "
                          "the config (assert must be an array; a file:// text is not read there); write the "
                          "assertions as a list")
        log.skipped.append(skipped)
        lost.append(lost_check(skipped.where, skipped.what, skipped.why))
        return
    for i, a in enumerate(items):
        where = raw.line_of(*path, i)
        skipped = None
        if isinstance(a, str) and a.startswith("file://"):
            skipped = Skipped(where, "assertion file", "assertions read from a file:// reference are not "
                              "imported; paste them inline")
        elif unresolved(a):
            skipped = Skipped(where, "an assertion", unresolved(a))
        elif not isinstance(a, dict):
            skipped = Skipped(where, "an assertion", "has no type")
        elif "type" not in a:
            keys = ", ".join(map(str, a)) or "none"
            skipped = Skipped(where, "an assertion", f"has no type (its keys: {keys}): {FAILS_IN_PROMPTFOO}; give "
                              "it one, {type: contains, value: ...}, and import again")
        elif a["type"] == "assert-set":
            has_thr = a.get("threshold") is not None
            _flatten(a.get("assert"), raw, path + (i, "assert"), log, out, lost, in_threshold_set or has_thr)
        else:
            out.append((a, where, in_threshold_set))
        if skipped is not None:
            log.skipped.append(skipped)
            lost.append(lost_check(skipped.where, skipped.what, skipped.why))


def merge_tests(raws: list[RawTest], default: RawTest | None, cfg: Config, log: ImportLog) -> list[Test]:
    base = default.doc if default else {}
    out: list[Test] = []
    if default is not None:
        refuse_near_misses(default.doc, TEST_KEYS, TEST_CARRYING, default.line_of, "defaultTest")
    for raw in raws:
        refuse_near_misses(raw.doc, TEST_KEYS, TEST_CARRYING, raw.line_of, "the test")
        doc = {**{k: v for k, v in base.items() if k not in ("vars", "assert", "options", "metadata")}, **raw.doc}
        doc["vars"] = {**(base.get("vars") or {}), **(raw.doc.get("vars") or {})}
        doc["options"] = {**(base.get("options") or {}), **(raw.doc.get("options") or {})}
        doc["metadata"] = {**(base.get("metadata") or {}), **(raw.doc.get("metadata") or {})}
        asserts: list[tuple[dict[str, Any], Where, bool]] = []
        lost: list[dict[str, str]] = []
        if default is not None and (raw.doc.get("options") or {}).get("disableDefaultAsserts") is not True:
            _flatten(base.get("assert"), default, ("assert",), log, asserts, lost)
        _flatten(raw.doc.get("assert"), raw, ("assert",), log, asserts, lost)
        for col in raw.doc.get("_unread_columns", []):
            log.skipped.append(Skipped(raw.where, f"CSV column {col}", "a promptfoo special column the import "
                                       "does not read"))
        variables = _file_vars(doc["vars"], cfg, raw, log)
        if variables is None:
            continue
        keys = list(variables)
        # promptfoo runs one test per combination of the values of array-of-string vars
        pools = [variables[k] if isinstance(variables[k], list) and variables[k] and
                 isinstance(variables[k][0], str) else [variables[k]] for k in keys]
        for n, combo in enumerate(itertools.product(*pools)):
            out.append(Test(raw, doc, asserts, dict(zip(keys, combo)), n, lost))
    return out


def _file_vars(variables: dict[str, Any], cfg: Config, raw: RawTest, log: ImportLog) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for k, v in variables.items():
        if isinstance(v, str) and v.startswith("file://"):
            files = cfg.resolve(v, raw.line_of("vars", k))
            f = files[0] if len(files) == 1 else None
            if f is None or f.suffix.lower() not in (".txt", ".md", "") or not f.exists():
                log.skipped.append(Skipped(raw.line_of("vars", k), f"var {k} = {v}", "only a single text file "
                                           "(.txt, .md) is read into a var; the test is not imported"))
                return None
            out[k] = read_text(f, cfg.rel(f))
        else:
            out[k] = v
    return out


def user_turns(prompt: RawPrompt, test: Test) -> tuple[list[str], list[str]]:
    """(the user messages the prompt gives for this test, notes). Raises Unrenderable."""
    opts = test.doc.get("options") or {}
    # promptfoo fills _conversation with the live history (assay's turns carry it) unless the test
    # sets disableConversationVar: then the test's own vars._conversation data is rendered as given
    closed = loops_end(prompt.raw)
    template = (prompt.raw if opts.get("disableConversationVar")
                else _CONV_LOOP.sub("", prompt.raw[:closed]) + prompt.raw[closed:])
    text = render(template, test.vars)
    text = f"{opts.get('prefix') or ''}{text}{opts.get('suffix') or ''}"
    notes: list[str] = []
    msgs = chat_messages(text)
    if msgs is None and isinstance(test.vars.get("messages"), list) and prompt.raw.strip() in (
            "{{messages}}", "{{ messages }}"):
        msgs = messages_of(test.vars["messages"])
    if msgs is None and "_conversation" in prompt.raw and not opts.get("disableConversationVar"):
        raise Unrenderable("a _conversation chat prompt that does not render to a JSON message list")
    if msgs is None:
        return [text], notes
    users = [m["content"] for m in msgs if m["role"] == "user"]
    notes.append("the prompt is a chat: promptfoo puts its whole message list into an http body's {{prompt}} "
                 "field, assay sends the user's text (the app must take a text turn)")
    if any(m["role"] == "system" for m in msgs):
        notes.append("the prompt's system message is not sent: assay sends the user's turns, the app owns its "
                     "system prompt")
    if any(m["role"] == "assistant" for m in msgs):
        notes.append("the prompt's scripted assistant messages are not replayed: assay sends each user turn to "
                     "the app in one session, and the app's own replies form the history")
    return users, notes


# Where a rubric imported from a conversation's test is judged (docs/runner-contract.md, "The judge"):
# an earlier turn's checkpoint judges that turn, as promptfoo judged that test's output; the case's
# expect (the last turn, or a chat prompt's several user messages) judges the whole transcript.
TURN, TRANSCRIPT = "turn", "transcript"
TRANSCRIPT_NOTE = ("promptfoo graded the last answer; assay judges a rubric on a conversation case over the whole "
                   "transcript (every answer is the answer), so a rubric the last answer alone meets may read "
                   "otherwise: review the pin, or move it to a turn checkpoint")


def lost_check(where: Where, what: str, why: str) -> dict[str, str]:
    """One `not_converted` entry of a case: a promptfoo check the case does not make (validate_cases
    reports ERROR check_not_converted on a gating case that carries one)."""
    return {"check": str(what), "source": str(where), "why": why}


def _unset_in_value(value: Any, render_vars: dict[str, Any]) -> str:
    """Why an assertion value reading a var the test does not set (`{{ expectd }}`) is not converted, or ''.
    promptfoo renders it empty: `not-contains: "I am {{ bda }}"` checks "I am ", never what was meant."""
    texts = [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)] \
        if isinstance(value, list) else []
    read = {v for t in texts if "{%" not in t for v in references(t)}
    unset = sorted(read - set(render_vars) - {"env", "_conversation"})
    if not unset:
        return ""
    from ..core.suggest import closest
    typo = closest(unset[0], [str(k) for k in render_vars])
    return (f"its value reads {', '.join('{{ ' + v + ' }}' for v in unset)}, which this test does not set "
            f"(promptfoo renders it empty, so the check is not the one written)"
            + (f"; the test sets {typo!r}: a misspelt var?" if typo else "")
            + "; add the var to the test's vars (or defaultTest.vars) or fix its name, and import again")


def convert_assertions(test: Test, log: ImportLog, render_vars: dict[str, Any], conversation: str | None
                       ) -> tuple[dict[str, Any], list[Mapped], list[str], list[dict[str, str]]]:
    """The test's assertions as an `expect`, plus the ones not converted (`lost_check` entries: they go
    into the case's `not_converted`, so the case never reads as checking them). `conversation`: None
    (a single-turn case), TURN (an earlier turn's checkpoint) or TRANSCRIPT (a conversation case's own
    expect)."""
    expect: dict[str, Any] = {}
    mapped: list[Mapped] = []
    notes: list[str] = []
    lost: list[dict[str, str]] = list(test.lost)
    opts = test.doc.get("options") or {}
    for a, where, in_set_thr in test.asserts:
        if opts.get("transform") or opts.get("postprocess"):
            why = "the test transforms the output with code (options.transform) before its assertions"
            log.skipped.append(Skipped(where, a.get("type", "?"), why))
            lost.append(lost_check(where, a.get("type", "?"), why))
            continue
        for key in ("provider", "rubricPrompt"):
            if a.get(key) is not None:
                what = a[key] if isinstance(a[key], str) else (a[key].get("id", "") if isinstance(a[key], dict) else "")
                log.skipped.append(Skipped(where, f"{a.get('type', '?')} {key} {what}".strip(), GRADER_WHY))
        if a.get("weight") == 0 and not isinstance(a.get("weight"), bool):
            log.skipped.append(Skipped(where, f"{a.get('type', '?')} weight 0", "promptfoo passes an assertion of "
                                       "weight 0 whatever the output (it is reported, never failed): not a check"))
            continue
        if a.get("metric"):
            log.skipped.append(Skipped(where, f"metric {a['metric']}", "promptfoo's named metric (a score summed "
                                       "over the tests) is not computed: assay reports each check per case"))
        unset = _unset_in_value(a.get("value"), render_vars)
        if unset:
            log.skipped.append(Skipped(where, str(a.get("type", "?")), unset))
            lost.append(lost_check(where, a.get("type", "?"), unset))
            continue
        m = map_assertion(a, lambda v: render(v, render_vars) if isinstance(v, str) else v)
        if m.rubric and conversation == TRANSCRIPT:
            m.exact = False
            m.note = (m.note + "; " if m.note else "") + TRANSCRIPT_NOTE
        if m.skipped:
            log.skipped.append(Skipped(where, m.ptype, m.skipped))
            lost.append(lost_check(where, m.ptype, m.skipped))
            continue
        if m.lost:
            log.skipped.append(Skipped(where, f"{m.ptype} {m.lost_part}", m.lost))
            lost.append(lost_check(where, f"{m.ptype} {m.lost_part}", m.lost))
        if in_set_thr:
            m.exact = False
            m.note = (m.note + "; " if m.note else "") + ("inside an assert-set with a threshold: promptfoo "
                                                          "passes the set when enough of it passes, assay needs each")
        mapped.append(m)
        log.mapped.append({"type": m.ptype, "exact": m.exact, "note": m.note, "file": where.file, "line": where.line})
        answer = expect.setdefault("answer", {})
        if m.must_contain:
            answer.setdefault("must_contain", []).extend(m.must_contain)
        if m.must_not_contain:
            answer.setdefault("must_not_contain", []).extend(m.must_not_contain)
        if m.json_schema is not None:
            fmt = expect.setdefault("format", {})
            fmt["json_schema"] = ({"allOf": [fmt["json_schema"], m.json_schema]} if "json_schema" in fmt
                                  else m.json_schema)
        if m.rubric:
            rid = f"pf-{m.rubric['kind'].replace('model-graded-', '')}-{short_hash(m.rubric['criterion'])}"
            log.rubrics[rid] = m.rubric
            pins = answer.setdefault("rubric", [])
            if f"{rid}-v1" not in pins:
                pins.append(f"{rid}-v1")
        if m.budget:
            for key, val in m.budget.items():
                if key not in log.budgets or val < log.budgets[key]:
                    log.budgets[key] = val
                    log.budget_sources[key] = str(where)
        if not expect.get("answer"):
            expect.pop("answer", None)
    thr = test.doc.get("threshold")
    if thr is not None and len(test.asserts) > 1:
        notes.append(f"promptfoo passes this test when the weighted score of its assertions reaches {thr}; assay "
                     "passes it only when every check passes (stricter)")
        for m in mapped:
            m.exact = False
    elif any(a.get("weight") not in (None, 0, 1) for a, _, _ in test.asserts):
        notes.append("assertion weights change promptfoo's score, not its pass/fail without a test threshold; "
                     "assay has no weights")
    return expect, mapped, notes, lost
