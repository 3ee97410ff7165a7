"""A throwaway Redis Cluster on 127.0.0.1, for the tests and the benchmarks.

``LocalCluster(masters=3)`` starts that many ``redis-server --cluster-enabled yes``
processes on free ports in a temporary folder, joins them with ``redis-cli --cluster create
... --cluster-replicas 0 --cluster-yes`` (contiguous slot ranges, as an operator's cluster
starts) and waits until every node reports ``cluster_state:ok``; :meth:`LocalCluster.stop`
shuts them down and removes the folder. Nothing is persisted (no RDB, no AOF).

>>> LocalCluster(masters=0)
Traceback (most recent call last):
...
ValueError: a cluster needs at least one master
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from tests.servers.net import free_ports, wait_until

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
START_TIMEOUT_S = 30.0
BUS_PORT_OFFSET = 10000
"""A node's cluster bus listens on its port + 10000."""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class LocalCluster:
    """``masters`` Redis Cluster masters, no replicas, on free ports of 127.0.0.1."""

    def __init__(self, masters: int = 3) -> None:
        if masters < 1:
            raise ValueError("a cluster needs at least one master")
        self.masters = masters
        self.ports: list[int] = []
        self._dir: Path | None = None
        self._procs: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        """The index URL of the cluster: ``redis+cluster://`` and every node."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def node(self, port: int) -> redis.Redis:
        """A plain (non-cluster) client of one node."""
        return redis.Redis(host="127.0.0.1", port=port)

    def start(self) -> LocalCluster:
        self._dir = Path(tempfile.mkdtemp(prefix="fptrack-cluster-"))
        try:
            self.ports = free_ports(self.masters, also_free_at=BUS_PORT_OFFSET)
            for port in self.ports:
                self._procs.append(self._server(port))
            for port in self.ports:
                self._wait(lambda p=port: self.node(p).ping())
            if self.masters == 1:  # --cluster create wants 3 masters: assign every slot
                self.node(self.ports[0]).execute_command("CLUSTER ADDSLOTSRANGE", 0, 16383)
            else:
                subprocess.run(
                    [
                        *(REDIS_CLI, "--cluster", "create"),
                        *(f"127.0.0.1:{p}" for p in self.ports),
                        *("--cluster-replicas", "0", "--cluster-yes"),
                    ],
                    check=True,
                    capture_output=True,
                    timeout=START_TIMEOUT_S,
                )
            self._wait(self._ready)
        except BaseException:
            self.stop()
            raise
        return self

    def _server(self, port: int, fresh: bool = True) -> subprocess.Popen:
        assert self._dir is not None
        folder = self._dir / str(port)
        folder.mkdir(exist_ok=not fresh)
        args = [
            REDIS_SERVER,
            *("--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes"),
            *("--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"),
            *("--save", "", "--appendonly", "no", "--dir", str(folder)),
            *("--logfile", str(folder / "redis.log")),
        ]
        return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _ready(self) -> bool:
        for port in self.ports:
            if self.node(port).cluster("INFO").get("cluster_state") != "ok":
                return False
            slots = self.node(port).execute_command("CLUSTER SLOTS")
            if len(slots) < self.masters:  # every node must know every master
                return False
        return True

    def _wait(self, check: Callable[[], Any]) -> None:
        last: list[Exception] = []

        def holds() -> Any:
            try:
                return check()
            except (redis.RedisError, OSError) as exc:  # a node still starting
                last[:] = [exc]
                return False

        if not wait_until(holds, START_TIMEOUT_S, 0.1):
            raise RuntimeError(
                f"the local Redis Cluster did not come up: {last[0] if last else None}"
            )

    def primaries(self) -> dict[int, redis.Redis]:
        """A plain client of each master, by port."""
        return {port: self.node(port) for port in self.ports}

    def owner(self, slot: int) -> int:
        """The port of the master serving ``slot``."""
        for start, end, (_, port, *_rest), *_ in self.node(self.ports[0]).cluster("SLOTS"):
            if start <= slot <= end:
                return int(port)
        raise LookupError(f"slot {slot} is not served")

    def migrate_slot(self, slot: int, to_port: int, finish: bool = True) -> int:
        """Move ``slot`` and its keys to the master at ``to_port`` the way ``redis-cli
        --cluster reshard`` does (SETSLOT IMPORTING / MIGRATING, MIGRATE, SETSLOT NODE).

        With ``finish=False`` the keys are moved but the slot stays MIGRATING / IMPORTING, so
        its old master answers ASK for each of them; call again to finish. Returns the number
        of keys moved.
        """
        from_port = self.owner(slot)
        source, target = self.node(from_port), self.node(to_port)
        source_id, target_id = (_text(node.cluster("MYID")) for node in (source, target))
        moved = 0
        if from_port != to_port:
            target.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", source_id)
            source.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", target_id)
            while keys := source.execute_command("CLUSTER GETKEYSINSLOT", slot, 1000):
                source.execute_command("MIGRATE", "127.0.0.1", to_port, "", 0, 10000, "KEYS", *keys)
                moved += len(keys)
        if finish:
            for port in self.ports:
                self.node(port).execute_command("CLUSTER SETSLOT", slot, "NODE", target_id)
        return moved

    def restart_empty(self, port: int) -> None:
        """Kill the master at ``port`` (SIGKILL) and start it again without its data, as a
        master with no persistence comes back: it keeps its cluster configuration (its
        slots), not its keys. Returns once the cluster is ``ok`` again."""
        i = self.ports.index(port)
        self._procs[i].kill()
        self._procs[i].wait()
        self._procs[i] = self._server(port, fresh=False)
        self._wait(lambda: self.node(port).ping())
        self._wait(self._ready)

    def stop(self) -> None:
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs = []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()
