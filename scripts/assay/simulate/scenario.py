"""`input.simulated_user`: the scenario one simulated conversation plays. Pure.

    input:
      simulated_user:
        persona: "A busy acme customer; short messages."        # who the user is (required)
        goal: "Get 25 USD refunded on invoice INV-1002."         # what they want (required; never sent)
        facts: {invoice_id: INV-1002}                            # what they know; told only when asked
        stop_when: "The assistant confirms the refund."          # when the user ends it (required)
        max_turns: 6                                             # user turns at most (default 8)
        seed: 7                                                  # recorded; sent to the simulator

`problems(case)` is the one definition of which keys apply: the linter reports each problem
(file, case, key) and the runner skips a case that has one, naming the same problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..core.casekind import SIMULATED_DEFAULT_MAX_TURNS as DEFAULT_MAX_TURNS  # the one definition
from ..core.casekind import SIMULATED_KEY, any_simulated, is_simulated  # noqa: F401 (re-exported)
from ..core.suggest import did_you_mean

REQUIRED = ("persona", "goal", "stop_when")
OPTIONAL = ("facts", "max_turns", "seed")
KEYS = REQUIRED + OPTIONAL
MAX_MAX_TURNS = 50
MAX_TEXT = 4000
# What a simulated case's expect may check: its end state. The rest reads one scripted turn.
END_STATE_KEYS = ("http", "exit_code", "tools", "args", "result", "authz", "answer", "state")
SCRIPTED_ONLY_KEYS = ("route", "route_acceptable", "clarify_ok", "format")
# input keys a simulated case may not carry beside simulated_user
OTHER_INPUT_KEYS = ("turns", "messages", "every_turn")


@dataclass(frozen=True)
class Scenario:
    persona: str
    goal: str
    facts: tuple[tuple[str, str], ...]     # (name, value) in the order written; a list of facts: ("", text)
    stop_when: str
    max_turns: int
    seed: int

    def doc(self) -> dict[str, Any]:
        """The scenario as recorded (simulator.json) and as the simulator reads it."""
        return {"persona": self.persona, "goal": self.goal, "facts": [list(f) for f in self.facts],
                "stop_when": self.stop_when, "max_turns": self.max_turns, "seed": self.seed}


def _text_ok(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= MAX_TEXT


def _int_ok(value: Any, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def problems(case: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """[(code, key path, message)] for a simulated case; [] when it can run. Pure."""
    out: list[tuple[str, str, str]] = []
    inp = case.get("input") if isinstance(case.get("input"), Mapping) else {}
    block = inp.get(SIMULATED_KEY)
    base = f"input.{SIMULATED_KEY}"
    for key in OTHER_INPUT_KEYS:
        if key in inp:
            out.append(("simulated_and_scripted", f"input.{key}",
                        f"input has both {SIMULATED_KEY} and {key}; a conversation is scripted (turns) or "
                        f"simulated ({SIMULATED_KEY}), not both: remove input.{key}"))
    if not isinstance(block, Mapping):
        out.append(("bad_simulated_user", base, f"{base} must be a mapping with persona, goal and stop_when "
                    "(and optionally facts, max_turns, seed)"))
        return out
    for key in sorted(set(block) - set(KEYS)):
        out.append(("unknown_simulated_key", f"{base}.{key}", f"{base}.{key} is not a simulated_user key"
                    f"{did_you_mean(str(key), list(KEYS))}; allowed: {', '.join(KEYS)}"))
    for key in REQUIRED:
        if not _text_ok(block.get(key)):
            what = "is missing" if key not in block else "must be a non-empty string"
            out.append(("bad_simulated_user", f"{base}.{key}", f"{base}.{key} {what} (at most {MAX_TEXT} "
                        f"characters); {_HELP[key]}"))
    facts = block.get("facts")
    if facts is not None and not _facts_ok(facts):
        out.append(("bad_simulated_user", f"{base}.facts", f"{base}.facts must be a mapping of name: value "
                    "(strings, numbers or booleans) or a list of strings: what the user knows and tells when asked"))
    if "max_turns" in block and not _int_ok(block["max_turns"], 1, MAX_MAX_TURNS):
        out.append(("bad_simulated_user", f"{base}.max_turns", f"{base}.max_turns must be an integer from 1 to "
                    f"{MAX_MAX_TURNS} (got {block['max_turns']!r}); default {DEFAULT_MAX_TURNS}"))
    if "seed" in block and not _int_ok(block["seed"], 0, 2 ** 31 - 1):
        out.append(("bad_simulated_user", f"{base}.seed", f"{base}.seed must be a non-negative integer "
                    f"(got {block['seed']!r})"))
    expect = case.get("expect")
    if isinstance(expect, Mapping):
        for key in SCRIPTED_ONLY_KEYS:
            if key in expect:
                out.append(("scripted_only_expect", f"expect.{key}",
                            f"expect.{key} does not apply to a simulated conversation: it is scored on its end "
                            f"state ({', '.join(END_STATE_KEYS)}); check {key} on a scripted case"))
    return out


_HELP = {"persona": "who the user is, in a sentence or two",
         "goal": "what the user wants done (the app never sees it)",
         "stop_when": "when the user is satisfied and ends the conversation"}


def _facts_ok(facts: Any) -> bool:
    scalar = (str, int, float, bool)
    if isinstance(facts, Mapping):
        return all(isinstance(k, str) and k.strip() and isinstance(v, scalar) for k, v in facts.items())
    if isinstance(facts, list):
        return all(_text_ok(f) for f in facts)
    return False


def scenario_of(case: Mapping[str, Any]) -> Scenario:
    """The case's scenario. Call only after problems(case) said []."""
    block = case["input"][SIMULATED_KEY]
    facts = block.get("facts") or {}
    if isinstance(facts, Mapping):
        pairs = tuple((str(k), _scalar(v)) for k, v in facts.items())
    else:
        pairs = tuple(("", str(f)) for f in facts)
    return Scenario(persona=block["persona"].strip(), goal=block["goal"].strip(), facts=pairs,
                    stop_when=block["stop_when"].strip(),
                    max_turns=int(block.get("max_turns", DEFAULT_MAX_TURNS)), seed=int(block.get("seed", 0)))


def told_facts(case: Mapping[str, Any]) -> list[str]:
    """What a simulated user tells the app when asked: its facts' values (a list's texts); [] for a
    case that is not simulated or whose block has a problem. The linter's echo check reads them. Pure."""
    inp = case.get("input")
    if not isinstance(inp, Mapping) or SIMULATED_KEY not in inp or problems(case):
        return []
    return [value for _, value in scenario_of(case).facts]


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
