"""Counting the commands a MongoDB client sends (pymongo's command monitoring)."""

from __future__ import annotations

from pymongo import monitoring


class Commands(monitoring.CommandListener):
    """The commands a client sends, by name (pymongo's command monitoring)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass
