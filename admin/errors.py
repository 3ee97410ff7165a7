"""The errors the ``fptrack`` command prints as one line (never a traceback)."""

from __future__ import annotations


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 1 (or the one given)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status
