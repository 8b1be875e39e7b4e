"""Where a conversation's user turns come from: the driver (assay.invoke.conversation) asks a
`Script` for them one at a time, so the next user message can depend on what the app said.

`Scripted` plays `input.turns` as written. A simulated user (assay.simulate.script) writes each
turn from the transcript so far. `turns(sent)` is called once per conversation attempt (a
restart starts the script over); `sent` is the attempt's live list of sent turns (each with
`.spec.user` and `.scored["answer_text"]`), read when the next turn is asked for.
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol


class Script(Protocol):
    total: int      # turns_total: the script's length (a simulated user: its max_turns)

    def turns(self, sent: list[Any]) -> Iterator[Any]: ...


class Scripted:
    """input.turns, in order."""

    def __init__(self, specs: list[Any]) -> None:
        self.specs = specs
        self.total = len(specs)

    def turns(self, sent: list[Any]) -> Iterator[Any]:
        return iter(self.specs)
