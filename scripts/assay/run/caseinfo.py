"""What a person reading a verdict needs to recognize a case: its title and what the user said.

Pure. The runner copies both into verdict.json so the gate, JUnit, the report and
cluster_failures.py can show them without the plan (the run dir is self-contained).
"""

from __future__ import annotations

from typing import Any, Mapping

MAX_INPUT_CHARS = 2000


def case_title(case: Mapping[str, Any]) -> str | None:
    title = case.get("title")
    return " ".join(title.split()) if isinstance(title, str) and title.strip() else None


def input_text(case: Mapping[str, Any]) -> str | None:
    """The user's words: the user message(s), or each turn's `user` as `[turn n] ...`, or a simulated
    user's persona and goal; None if none."""
    inp = case.get("input")
    if not isinstance(inp, Mapping):
        return None
    parts: list[str] = []
    messages = inp.get("messages")
    if isinstance(messages, list):
        parts += [m["content"] for m in messages if isinstance(m, Mapping) and m.get("role") == "user"
                  and isinstance(m.get("content"), str)]
    turns = inp.get("turns")
    if isinstance(turns, list):
        parts += [f"[turn {i}] {t['user']}" for i, t in enumerate(turns, 1)
                  if isinstance(t, Mapping) and isinstance(t.get("user"), str)]
    sim = inp.get("simulated_user")
    if isinstance(sim, Mapping) and isinstance(sim.get("persona"), str):
        # a simulated user's words are in its turns; the reader sees who it plays and what it wants
        parts.append(f"[simulated user] {sim['persona']} Goal: {sim.get('goal')}")
    if not parts:
        return None
    text = "\n".join(parts)
    return text if len(text) <= MAX_INPUT_CHARS else text[:MAX_INPUT_CHARS - 1] + "…"
