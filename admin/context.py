"""What a CLI command works on: settings read once, and the engine, store, queue and
schedules built from them on first use (so ``fptrack --help`` needs no server).

The clients of a command give up quickly (:data:`CONNECT_TIMEOUT_S`; Redis clients with
:data:`matcher.index.redis_clients.COMMAND`): an operator waiting on a server that is down learns
it in about a second, from one line naming the server (:mod:`admin.outage`), instead of
after pymongo's default 30 s. The admin web's context rides out a Redis restart instead
(``patience=SERVICE``).

Importing it loads no driver: pymongo, redis-py and the engine are imported when a command
first opens what needs them (``fptrack check`` and every ``--help`` go through here).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from admin import outage
from admin.errors import CommandError
from matcher.errors import SettingsError
from matcher.settings import RedisTarget, Settings

if TYPE_CHECKING:
    import redis
    from celery import Celery

    from matcher.evidence.archive import Archive
    from matcher.index.index_view import IndexView
    from matcher.index.redis_clients import IndexClient, Patience
    from matcher.matching.engine import Engine
    from matcher.store import Store
    from matcher.worker.schedules import Schedules

CONNECT_TIMEOUT_S = 1.0
"""How long a command waits for MongoDB, Redis or the broker before it reports them down."""


class Context:
    """Settings (from ``FPTRACK_*`` unless given) and lazily opened connections."""

    def __init__(
        self,
        settings: Settings | None = None,
        engine: Engine | None = None,
        archive: Archive | bool | None = True,
        patience: Patience | None = None,
    ) -> None:
        """``archive``: True (the default) opens the one ``settings.archive`` names when
        first needed; an archive, or None (no evidence archive), is used as given.
        ``patience``: how long the Redis clients wait (:mod:`matcher.index.redis_clients`; default
        :data:`~matcher.index.redis_clients.COMMAND`)."""
        if patience is None:
            from matcher.index.redis_clients import COMMAND

            patience = COMMAND
        self._settings = settings
        self.patience = patience
        self._given_engine = engine is not None
        if engine is not None:
            self.__dict__["engine"] = engine
        if archive is not True:
            self.__dict__["archive"] = archive or None

    @cached_property
    def settings(self) -> Settings:
        if self._settings is not None:
            return self._settings
        if "engine" in self.__dict__:
            return self.engine.settings
        return Settings.from_env()

    @cached_property
    def mongo_client(self) -> Any:
        """A client of ``settings.mongo_uri`` (:func:`matcher.store.client.client_for`) that
        gives up after about a second; a server that does not answer is reported at once."""
        import pymongo.errors
        import pymongo.uri_parser

        from matcher.store.client import client_for

        if "engine" in self.__dict__:
            return self.engine.store.client
        uri = self.settings.mongo_uri
        try:
            parsed = pymongo.uri_parser.parse_uri(uri, connect_timeout=CONNECT_TIMEOUT_S)
        except (pymongo.errors.ConfigurationError, ValueError) as exc:
            raise SettingsError(f"FPTRACK_MONGO_URI {uri!r}: {exc}") from exc
        if parsed["nodelist"]:
            down = outage.unreachable(parsed["nodelist"], CONNECT_TIMEOUT_S)
            if down is not None:
                raise CommandError(outage.line("MongoDB", uri, down))
        return client_for(self.settings, int(CONNECT_TIMEOUT_S * 1000))

    @cached_property
    def redis_client(self) -> IndexClient:
        """A client of the indexes' Redis (``settings.index_redis``: a server, a cluster or
        Sentinel), as patient as this context."""
        from matcher.index.redis_clients import connect

        if "engine" in self.__dict__:
            return self.engine.redis
        return connect(self.settings.index_redis, self.patience)

    @cached_property
    def store(self) -> Store:
        """The store of ``settings.mongo_uri``, its indexes ensured (the engine's, when
        there is one)."""
        from matcher.store import Store

        if "engine" in self.__dict__:
            return self.engine.store
        store = Store.connect(self.settings.mongo_uri, self.settings.mongo_db, self.mongo_client)
        store.ensure_indexes()
        return store

    @cached_property
    def engine(self) -> Engine:
        from matcher.matching.engine import Engine

        return Engine.open(self.settings, redis_client=self.redis_client, store=self.store)

    @cached_property
    def indexes(self) -> IndexView:
        """The Redis indexes without the matching engine (the engine, when there is one):
        what ``fptrack check`` reads, importing no fingerprint code
        (:mod:`matcher.index.index_view`)."""
        from matcher.index.index_view import IndexView

        if "engine" in self.__dict__:
            return self.engine
        return IndexView.open(self.settings, redis_client=self.redis_client, store=self.store)

    @cached_property
    def archive(self) -> Archive | None:
        """The evidence archive ``settings.archive`` names (:mod:`matcher.evidence.archive`), in the
        store (no index server opened for it)."""
        return self.store.evidence_archive(self.settings.archive)

    @cached_property
    def app(self) -> Celery:
        """A Celery app of this context's settings (broker and redbeat), to send tasks by
        name, ping the workers and edit schedules, as patient as this context, importing no
        task (:func:`matcher.worker.celery_app.make_app`); ``fptrack worker`` and ``beat`` run it
        (they load the tasks as they start, and wait out outages themselves, naming the
        server at once)."""
        from celery import current_app

        from matcher.worker.celery_app import make_app

        self._previous_app = current_app._get_current_object()
        return make_app(self.settings, self.patience, tasks=False)  # Celery makes it current

    @cached_property
    def schedules(self) -> Schedules:
        from matcher.worker.schedules import Schedules

        return Schedules(self.app)

    def close(self) -> None:
        """Close the clients this context opened, and give back the Celery app that was
        current before it made its own: a process that runs one command after another
        (:func:`admin.cli.main` called as a function) keeps no connection, socket or pymongo
        monitor thread of a finished one. An engine given to the context is its giver's to
        close."""
        app = self.__dict__.pop("app", None)
        if app is not None:
            app.close()
            from celery import current_app

            if current_app._get_current_object() is app:
                self._previous_app.set_current()
        if self._given_engine:
            return
        for name in ("schedules", "archive", "engine"):
            self.__dict__.pop(name, None)
        for name in ("redis_client", "mongo_client"):
            client = self.__dict__.pop(name, None)
            if client is not None:
                client.close()

    def send(self, task: str, *args: Any) -> str:
        """Enqueue a task by name for the workers; returns its id."""
        from kombu.exceptions import OperationalError

        try:
            return self.app.send_task(task, args=list(args)).id
        except OperationalError as exc:
            broker = self.settings.celery_broker
            raise CommandError(outage.line("the Celery broker", broker, exc)) from exc


def redis_client(url: str, variable: str) -> redis.Redis:
    """A Redis client of ``url`` (a server or Sentinel) quick to give up
    (:data:`matcher.index.redis_clients.COMMAND`)."""
    from matcher.index.redis_clients import COMMAND, connect_server

    try:
        return connect_server(RedisTarget.parse(url), COMMAND)
    except SettingsError as exc:
        raise SettingsError(f"{variable}: {exc}") from exc
    except ValueError as exc:  # redis-py's own reading of a server URL
        raise SettingsError(f"{variable} {outage.redact(url)!r}: {exc}") from exc
