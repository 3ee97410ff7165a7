"""A throwaway Redis primary, its replica and the sentinels watching them, on 127.0.0.1.

``LocalSentinel()`` starts a primary (``redis-server``), ``replicas`` replicas
(``redis-server --replicaof``) and ``sentinels`` sentinels (``redis-server CONFIG
--sentinel``, the Debian redis-server binary: no other package) on free ports in a temporary
folder, the sentinels watching the primary as service :data:`SERVICE` with a quorum of a
majority, declaring it down after :data:`DOWN_AFTER_MS`. Each sentinel's configuration names
the replicas and the other sentinels (``known-replica``, ``known-sentinel``), so the group
is ready at once instead of after the sentinels' discovery (seconds). :meth:`kill_primary`
kills the primary (SIGKILL), :meth:`wait_for_failover` waits for the sentinels to promote a
replica; :meth:`stop` shuts every process down and removes the folder. Nothing is persisted
(no RDB, no AOF).

>>> LocalSentinel(sentinels=0)
Traceback (most recent call last):
...
ValueError: a Sentinel group needs at least one sentinel and one replica
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from tests.servers.local_cluster import REDIS_SERVER
from tests.servers.net import free_ports, wait_until

SERVICE = "fptrack"
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 5000
START_TIMEOUT_S = 20.0
FAILOVER_WAIT_S = 60.0


class LocalSentinel:
    """A primary, ``replicas`` replicas and ``sentinels`` sentinels on free ports of
    127.0.0.1; :attr:`url` is their ``redis+sentinel://`` URL."""

    def __init__(self, replicas: int = 1, sentinels: int = 3) -> None:
        if sentinels < 1 or replicas < 1:
            raise ValueError("a Sentinel group needs at least one sentinel and one replica")
        self.replica_count = replicas
        self.sentinel_count = sentinels
        self.servers: list[int] = []
        self.sentinels: list[int] = []
        self._dir: Path | None = None
        self._procs: dict[int, subprocess.Popen] = {}

    def url(self, db: int = 0, dead_first: int | None = None) -> str:
        """``redis+sentinel://`` with every sentinel and :data:`SERVICE`, database ``db``;
        ``dead_first``: a port where no sentinel answers, listed first."""
        ports = ([dead_first] if dead_first else []) + self.sentinels
        return "redis+sentinel://" + ",".join(f"127.0.0.1:{p}" for p in ports) + f"/{SERVICE}/{db}"

    def node(self, port: int, **options: Any) -> redis.Redis:
        """A plain client of one process (a server or a sentinel)."""
        return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, **options)

    def start(self) -> LocalSentinel:
        self._dir = Path(tempfile.mkdtemp(prefix="fptrack-sentinel-"))
        try:
            ports = free_ports(1 + self.replica_count + self.sentinel_count)
            self.servers = ports[: 1 + self.replica_count]
            self.sentinels = ports[1 + self.replica_count :]
            primary, replicas = self.servers[0], self.servers[1:]
            self._spawn(primary, self._server_args(primary))
            self._wait(lambda: self.node(primary).ping())
            for port in replicas:
                self._spawn(
                    port, [*self._server_args(port), "--replicaof", "127.0.0.1", str(primary)]
                )
            for port in replicas:
                self._wait(lambda p=port: self._linked(p))
            ids = {port: uuid.uuid4().hex + uuid.uuid4().hex[:8] for port in self.sentinels}
            for port in self.sentinels:
                config = self._sentinel_config(port, primary, replicas, ids)
                self._spawn(port, [REDIS_SERVER, str(config), "--sentinel"])
            for port in self.sentinels:
                self._wait(lambda p=port: self._watching(p, primary))
        except BaseException:
            self.stop()
            raise
        return self

    def _server_args(self, port: int) -> list[str]:
        assert self._dir is not None
        folder = self._dir / str(port)
        folder.mkdir()
        return [
            REDIS_SERVER,
            *("--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder)),
            *("--save", "", "--appendonly", "no", "--logfile", str(folder / "redis.log")),
            *("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"),
        ]

    def _sentinel_config(
        self, port: int, primary: int, replicas: list[int], ids: dict[int, str]
    ) -> Path:
        assert self._dir is not None
        folder = self._dir / f"sentinel-{port}"
        folder.mkdir()
        quorum = self.sentinel_count // 2 + 1
        lines = [
            f"port {port}",
            "bind 127.0.0.1",
            f"dir {folder}",
            f"logfile {folder / 'sentinel.log'}",
            f"sentinel myid {ids[port]}",
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary} {quorum}",
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {SERVICE} 1",
            *(f"sentinel known-replica {SERVICE} 127.0.0.1 {r}" for r in replicas),
            *(
                f"sentinel known-sentinel {SERVICE} 127.0.0.1 {other} {ids[other]}"
                for other in self.sentinels
                if other != port
            ),
        ]
        path = folder / "sentinel.conf"
        path.write_text("\n".join(lines) + "\n")
        return path

    def _spawn(self, port: int, args: list[str]) -> None:
        self._procs[port] = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def _linked(self, replica: int) -> bool:
        return self.node(replica).info("replication").get("master_link_status") == "up"

    def _watching(self, sentinel: int, primary: int) -> bool:
        state = self.node(sentinel, decode_responses=True).sentinel_master(SERVICE)
        return (
            int(state["port"]) == primary
            and state["is_master"]
            and not state["is_sdown"]
            and state["num-slaves"] == self.replica_count
            and state["num-other-sentinels"] == self.sentinel_count - 1
        )

    def _wait(self, check: Callable[[], Any], timeout: float = START_TIMEOUT_S) -> Any:
        last: list[Exception] = []

        def holds() -> Any:
            try:
                return check()
            except (redis.RedisError, OSError) as exc:  # a process still starting
                last[:] = [exc]
                return False

        if result := wait_until(holds, timeout):
            return result
        reason = last[0] if last else "not yet"
        raise RuntimeError(f"the local Sentinel group did not get there in {timeout} s: {reason}")

    def primary(self) -> int:
        """The port of the primary, as the first live sentinel sees it."""
        for port in self.sentinels:
            with contextlib.suppress(redis.ConnectionError):
                return int(self.node(port).sentinel_get_master_addr_by_name(SERVICE)[1])
        raise RuntimeError("no sentinel answers")

    def replicate(self) -> None:
        """Wait until every replica has every write the primary took (``WAIT``)."""
        acked = self.node(self.primary()).wait(self.replica_count, 10_000)
        if acked < self.replica_count:
            raise RuntimeError(f"{acked} of {self.replica_count} replicas caught up")

    def kill_primary(self) -> int:
        """SIGKILL the primary's process; its port."""
        port = self.primary()
        os.kill(self._procs[port].pid, signal.SIGKILL)
        self._procs[port].wait(10)
        return port

    def wait_for_failover(self, old: int, timeout: float = FAILOVER_WAIT_S) -> int:
        """Wait until every live sentinel names a new primary and it is one; its port."""

        def promoted() -> int | None:
            seen = {self.primary_seen_by(s) for s in self.sentinels if self._alive(s)}
            if len(seen) != 1 or old in seen:
                return None
            port = seen.pop()
            role = self.node(port).execute_command("ROLE")[0]
            return port if role in (b"master", "master") else None

        return self._wait(promoted, timeout)

    def primary_seen_by(self, sentinel: int) -> int:
        return int(self.node(sentinel).sentinel_get_master_addr_by_name(SERVICE)[1])

    def _alive(self, port: int) -> bool:
        return port in self._procs and self._procs[port].poll() is None

    def stop(self) -> None:
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs = {}
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> LocalSentinel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()
