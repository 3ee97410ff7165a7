"""What a CLI command works on: settings read once, and the engine, store, queue and
schedules built from them on first use (so ``fptrack --help`` needs no server)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from matcher.engine import Engine
from matcher.operations import Operations
from matcher.settings import Settings

if TYPE_CHECKING:
    from celery import Celery

    from matcher.schedules import Schedules


class Context:
    """Settings (from ``FPTRACK_*`` unless given) and lazily opened connections."""

    def __init__(self, settings: Settings | None = None, engine: Engine | None = None) -> None:
        self._settings = settings
        if engine is not None:
            self.__dict__["engine"] = engine

    @cached_property
    def settings(self) -> Settings:
        if self._settings is not None:
            return self._settings
        if "engine" in self.__dict__:
            return self.engine.settings
        return Settings.from_env()

    @cached_property
    def engine(self) -> Engine:
        return Engine.open(self.settings)

    @cached_property
    def ops(self) -> Operations:
        return Operations(self.engine.store)

    @cached_property
    def app(self) -> Celery:
        from matcher.celery_app import app

        return app

    @cached_property
    def schedules(self) -> Schedules:
        from matcher.schedules import Schedules

        return Schedules(self.app)

    def send(self, task: str, *args: Any) -> str:
        """Enqueue a task by name for the workers; returns its id."""
        return self.app.send_task(task, args=list(args)).id
