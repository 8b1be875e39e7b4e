"""The keys of each block of the case format, and where a key written in the wrong block belongs.

The linter's unknown-key rules (case_rules, expect_rules, agent_rules) read their allowed keys
here, and ask `misplaced(key, where)` before guessing a spelling: `route` under `expect.answer`
is an expect key written one level too deep (move it to `expect.route`), not a typo of `rules`;
`must_not_contain` directly under `expect` belongs under `expect.answer`; `expect` indented under
`input` is the case's own expect. The top-level case keys are the case schema's properties.
"""

from __future__ import annotations

import re

EXPECT_KEYS = ("http", "route", "route_acceptable", "clarify_ok", "tools", "args", "result", "authz",
               "answer", "format", "state", "exit_code", "skills", "files", "check", "permissions")
TOOLS_KEYS = ("subset", "order", "order_mode", "forbidden")
RESULT_KEYS = ("scalar", "rows", "ordered", "columns", "float_tolerance", "reference_query")
AUTHZ_KEYS = ("allowed_record_ids", "forbidden_record_ids", "forbidden_tools", "expect_refusal")
ANSWER_KEYS = ("must_contain", "must_not_contain", "rules", "rubric")
SKILLS_KEYS = ("must_trigger", "must_not_trigger")
FILES_KEYS = ("exists", "absent", "contains", "unchanged")
CHECK_KEYS = ("command", "exit_code", "timeout_s")
PERMISSIONS_KEYS = ("max_denied",)
INPUT_KEYS = ("messages", "session", "turns", "every_turn", "simulated_user", "fixture")
# The mappings inside an expect block, each with its keys (`args` maps tool names, `format` holds
# json_schema alone: neither has a key list to move a key into).
EXPECT_BLOCKS = {"answer": ANSWER_KEYS, "tools": TOOLS_KEYS, "result": RESULT_KEYS, "authz": AUTHZ_KEYS,
                 "skills": SKILLS_KEYS, "files": FILES_KEYS, "check": CHECK_KEYS, "permissions": PERMISSIONS_KEYS}
_TURN_EXPECT = re.compile(r"^input\.turns\[\d+\]\.expect$")


def case_keys() -> tuple[str, ...]:
    """The top-level case keys: the case schema's properties (one definition of the format)."""
    from ..schemas import load_schema
    return tuple(load_schema("case").get("properties", {}))


def _is_expect_root(path: str) -> bool:
    return path in ("expect", "input.every_turn") or bool(_TURN_EXPECT.match(path))


def _homes(key: str, where: str) -> list[tuple[str, str]]:
    """(the block a key belongs to, as the format names it; the path to write it at) for every block of
    the case format other than `where` that has `key`: the nearest first (the same expect block, then
    the case's input and top level)."""
    root, _, block = where.rpartition(".")
    if not (_is_expect_root(root) and block in EXPECT_BLOCKS):
        root, block = where, ""
    out: list[tuple[str, str]] = []
    if _is_expect_root(root):
        if block and key in EXPECT_KEYS:
            out.append(("expect", f"{root}.{key}"))
        out += [(f"expect.{name}", f"{root}.{name}.{key}") for name, keys in EXPECT_BLOCKS.items()
                if name != block and key in keys]
    elif where == "input":
        if key in EXPECT_KEYS:
            out.append(("expect", f"expect.{key}"))
        out += [(f"expect.{name}", f"expect.{name}.{key}") for name, keys in EXPECT_BLOCKS.items() if key in keys]
    elif where == "":   # the case's top level
        if key in EXPECT_KEYS:
            out.append(("expect", f"expect.{key}"))
        if key in INPUT_KEYS:
            out.append(("input", f"input.{key}"))
        out += [(f"expect.{name}", f"expect.{name}.{key}") for name, keys in EXPECT_BLOCKS.items() if key in keys]
    if where != "" and key in case_keys():
        out.append(("case", key))
    if where not in ("", "input") and key in INPUT_KEYS:
        out.append(("input", f"input.{key}"))
    return out


def misplaced(key: str, where: str) -> str | None:
    """The message for `key` written under `where` ("" the case's top level) when it is a key of
    another block of the case format: what it is, where it belongs and the move; None when no block
    has it (then the caller's spelling hint applies)."""
    homes = _homes(str(key), where)
    if not homes:
        return None
    (kind, path), others = homes[0], homes[1:]
    label = f"{where}.{key}: `{key}`" if where else f"`{key}`"
    also = "".join(f" (or {p}, if you meant {_a(k)} key)" for k, p in others)
    if kind == "case":
        move = (f"it is indented under {where}: move it out to the case's top level (`{key}:` at the left "
                "margin)")
    elif not where or path.startswith(f"{where}."):
        move = f"move it in under {path.rpartition('.')[0]} ({path})"
    else:
        move = f"move it out of {where} to {path}"
    return (f"{label} is {_a(kind)} key, not {_a(_generic(where)) if where else 'a case'} key: "
            f"{move}{also}; written here it is never read, so it checks nothing")


def _a(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _generic(where: str) -> str:
    """`input.turns[1].expect.answer` -> `expect.answer` (the block as the format names it)."""
    root, _, block = where.rpartition(".")
    if _is_expect_root(root) and block in EXPECT_BLOCKS:
        return f"expect.{block}"
    return "expect" if _is_expect_root(where) else where
