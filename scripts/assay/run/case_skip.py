"""Whether a case is sent at all: the safety gates and the inputs this runner supports. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..core.casekind import DEFAULT_MAX_TURNS, every_expect_of, is_conversation, is_simulated
from ..core.vocab import ADVERSARIAL_CATEGORIES

if TYPE_CHECKING:   # the conversation code is loaded only when a conversation case is met
    from ..invoke import conversation as convo


def skip_reason(case: Mapping[str, Any], adapter: Mapping[str, Any], safety: Mapping[str, Any],
                mode: str, *, conv: "convo.ConversationConfig | None" = None,
                max_turns: int = DEFAULT_MAX_TURNS, matrix: Mapping[str, Any] | None = None,
                simulator: Any = None) -> str | None:
    """Why a case is not sent (safety gates and unsupported inputs), or None. Pure."""
    inp = case.get("input") or {}
    if not isinstance(inp, Mapping):
        return "unsupported input: input is not a mapping (validate_cases.py names the fix)"
    if not isinstance(case.get("expect") or {}, Mapping):
        return "unsupported input: expect is not a mapping (validate_cases.py names the fix)"
    if "session" in inp and inp["session"] != "fresh":
        return f"unsupported input: input.session {inp['session']!r} (only `fresh` is supported)"
    if is_simulated(case):
        from .simulated import skip_reason as simulated_skip
        why = simulated_skip(case, conv, max_turns, matrix, simulator)
        if why:
            return why
    elif is_conversation(case):
        from ..invoke.conversation import skip_reason as conversation_skip
        why = conversation_skip(case, conv, max_turns, matrix)
        if why:
            return why
    else:
        msgs = inp.get("messages") or []
        if not (isinstance(msgs, list) and len(msgs) == 1 and isinstance(msgs[0], Mapping)
                and msgs[0].get("role") == "user"):
            return "unsupported input: input.messages must hold exactly one user message"
    if case.get("category") in ADVERSARIAL_CATEGORIES and not safety.get("safe_to_attack"):
        return f"category {case.get('category')!r} not sent: environment.safe_to_attack is false"
    if safety.get("live_environment") and safety.get("never_live_tools"):
        named = _tools_named(case) & set(safety["never_live_tools"])
        if named:
            return (f"could trigger never-live tool(s) {', '.join(sorted(named))} in environment "
                    f"{safety.get('environment_kind')!r}; not sent")
    ident = case.get("identity")
    if isinstance(ident, Mapping) and ident:
        imap = (adapter.get("invocation") or {}).get("identity_map") or {}
        if mode == "function":
            return "identity not mapped: function mode cannot carry identity headers"
        unmapped = sorted(k for k in ident if k != "token_env" and k not in imap)
        if unmapped:
            return f"identity not mapped: invocation.identity_map has no header for {', '.join(unmapped)}"
    return None


def _tools_named(case: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for expect in every_expect_of(case) or [{}]:
        _tools_in_expect(expect, names)
    for key in ("available_tools",):
        if isinstance(case.get(key), list):
            names.update(str(t) for t in case[key])
    if case.get("unit"):
        names.add(str(case["unit"]))
    return names


def _tools_in_expect(expect: Mapping[str, Any], names: set[str]) -> None:
    tools = expect.get("tools")
    if isinstance(tools, Mapping):
        for key in ("subset", "order", "forbidden"):
            if isinstance(tools.get(key), list):
                names.update(str(t) for t in tools[key])
    elif isinstance(tools, list):
        names.update(str(t) for t in tools)
    if isinstance(expect.get("args"), Mapping):
        names.update(str(t) for t in expect["args"])
    authz = expect.get("authz")
    if isinstance(authz, Mapping) and isinstance(authz.get("forbidden_tools"), list):
        names.update(str(t) for t in authz["forbidden_tools"])
