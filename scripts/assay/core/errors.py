"""The one error type. It carries the exit code; only the command layer prints it."""

from __future__ import annotations

from typing import Any


class AssayError(Exception):
    """A refusal with an exit code and extra JSON fields.

    `message` says what is wrong, where (file, line, key or case id) and what to do.
    `fields` are merged into the printed `{"error": message, ...}` object.
    """

    def __init__(self, message: str, code: int = 2, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.fields = fields

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.message}
        out.update(self.fields)
        return out


def bad_input(message: str, **fields: Any) -> AssayError:
    return AssayError(message, 2, **fields)
