"""kombu's Redis transports, with channels that can be closed after their connection.

kombu 5.7's Redis channel reads its connection parameters from the kombu ``Connection`` it
belongs to whenever it makes a pool. When the broker goes away while a worker holds a
message (a task running or reserved: acknowledged late), Celery's consumer closes that
connection twice: the first close fails on the dead socket, half-way, after kombu has
detached the connection from its transport (``transport.client = None``); the second one
restores the held messages through a new pool, whose parameters come from that detached
connection, and raises ``AttributeError: 'NoneType' object has no attribute 'hostname'``.
Celery takes it for an unrecoverable error and the worker stops. It happened at every
restart of a plain Redis broker and every Sentinel failover that met a task in flight
(measured: a worker fed a task every 50 ms stopped at the first kill of the primary).

The channels here raise redis-py's ``ConnectionError`` instead once their connection is
detached, which kombu's close takes for what it is (a broker that does not answer) and
ignores: the held messages stay in the broker's unacknowledged set, their delivery time kept
fresh by the worker's heartbeat (:mod:`matcher.worker.heartbeat`) while their tasks run, each
acknowledged when its task ends, and handed to another worker after the visibility timeout
if this one dies. Celery then reconnects as it does after any outage.

:func:`install` makes kombu's names of the Redis transports (``redis``, ``rediss``,
``sentinel``) name these classes, in this process: a Sentinel connection switches from one
sentinel's URL to the next by those names, so an explicit ``broker_transport`` would not
last past the first failover.
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis

ALIASES = {
    "redis": "matcher.worker.broker_transport:Transport",
    "rediss": "matcher.worker.broker_transport:Transport",
    "sentinel": "matcher.worker.broker_transport:SentinelTransport",
}
"""kombu's transport names (URL schemes) and the classes they name once installed."""


class DetachedConnection(redis.ConnectionError):
    """A channel was asked for a pool after its kombu connection was closed."""


class _Detached:
    """Refuse to make a pool for a channel whose connection was closed (see the module)."""

    connection: Any

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:
            raise DetachedConnection("the broker connection of this channel was closed")
        return super()._connparams(asynchronous)  # type: ignore[misc]


class Channel(_Detached, kombu_redis.Channel):
    """kombu's Redis channel, closable after its connection."""


class SentinelChannel(_Detached, kombu_redis.SentinelChannel):
    """kombu's Sentinel channel, closable after its connection."""


class Transport(kombu_redis.Transport):
    """kombu's Redis transport with :class:`Channel`."""

    Channel = Channel


class SentinelTransport(kombu_redis.SentinelTransport):
    """kombu's Sentinel transport with :class:`SentinelChannel`."""

    Channel = SentinelChannel


def install() -> None:
    """Make kombu's Redis transport names name this module's classes (idempotent)."""
    from kombu import transport

    cache = getattr(transport, "_transport_cache", {})
    for name, path in ALIASES.items():
        if transport.TRANSPORT_ALIASES.get(name) != path:
            transport.TRANSPORT_ALIASES[name] = path
            cache.pop(name, None)
