"""The Redis indexes know when any part of them is lost, and rebuild that part from the store.

Redis holds only what can be rebuilt from MongoDB (design: storage model), and it can lose
any part of it: a standalone server restarted without persistence loses everything; a
Redis Cluster master restarted empty loses the tag groups whose slots it serves (a third of
them on three masters); a flush or a failover to an empty replica, likewise. Matching on
what is left would miss copies silently, and a match checked again on it could look gone.

**Markers.** Every tag group (:data:`matcher.keys.TAG_GROUPS`) has a marker key in its own
hash slot (:meth:`matcher.keys.Keys.marker`), holding a random token written when the
group's part of the indexes was built or rebuilt. A server that lost a group lost its
marker with it. A :class:`Snapshot` is the 32 markers read at once (one ``MGET`` on a
server, one per group, pipelined, on a cluster):

- before the index is read, the snapshot must be whole, or the missing groups are rebuilt
  first (:meth:`Integrity.ready`);
- before anything found on it is written, the snapshot is read again and must be the same
  (:meth:`Integrity.unchanged`, :meth:`Integrity.confirm`): a group lost and rebuilt
  meanwhile has a new token, so work done across a loss is never written
  (:class:`matcher.errors.IndexLost`; it is done again).

Nothing partial is ever adopted: a group without its marker is always rebuilt before use,
and a new deployment (no marker, no fingerprint in the store) starts whole.

**Rebuild.** One process at a time rebuilds, under a lease kept in MongoDB
(:class:`matcher.store.index_state.IndexState`), renewed while it works, so a rebuild whose process
died is taken over when the lease ends; the others wait for the markers. Within a process
(the threads of an admin worker share one engine, and the lease's holder), one thread at a
time holds it: the others wait for the markers as another process's would. Only the lost
groups are cleared and loaded (every owner's entries in those groups, from the store's
fingerprints); the groups Redis kept are left as they are. The rebuild is recorded in the
store with the time the indexes were last seen whole: the heal job
(:func:`matcher.worker.jobs.heal_indexes`) then matches again the pages processed and the works
registered since, whatever the lost part could have touched.

The heal job also runs every :data:`matcher.worker.schedules.HEAL_SECONDS` seconds on its own, so
an index lost while nothing is being matched is rebuilt within a minute, with no command.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Collection, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from matcher.errors import IndexLost, IndexUnavailable, MatcherError, redis_errors
from matcher.index import maintenance
from matcher.index.storage import Storage
from matcher.keys import TAG_GROUPS, Keys
from matcher.store.index_state import IndexState

if TYPE_CHECKING:
    from collections.abc import Iterator

    from matcher.index.engine_protocol import IndexedEngine

log = logging.getLogger(__name__)

LEASE_SECONDS = 60.0
"""A rebuild's lease in the store; renewed every third of it while the rebuild runs."""
WAIT_SECONDS = 600.0
"""How long a process waits for a rebuild elsewhere before it gives up (its task retries)."""
POLL_SECONDS = 0.5
LOAD_ATTEMPTS = 3
"""Loads of a group tried in a row: a write landing in a cleared group between the clear
and the load makes the load refuse it, and the group is cleared again."""
ALL_GROUPS = tuple(range(TAG_GROUPS))


@dataclass(frozen=True)
class Snapshot:
    """The markers of every tag group, read at once (``None``: the group is lost)."""

    markers: tuple[bytes | None, ...]

    @property
    def lost(self) -> list[int]:
        return [g for g, m in enumerate(self.markers) if m is None]

    @property
    def whole(self) -> bool:
        return all(m is not None for m in self.markers)


def read_markers(storage: Storage, keys: Keys) -> Snapshot:
    """Every tag group's marker under ``keys``, in one round trip (one per node on a
    cluster)."""
    names = [keys.marker(g) for g in ALL_GROUPS]
    values, _ = storage.mget(names, "reading the index markers", np.arange(TAG_GROUPS))
    return Snapshot(tuple(values))


class Integrity:
    """The markers and rebuilds of one engine's indexes (see the module docstring)."""

    def __init__(self, engine: IndexedEngine, wait: float = WAIT_SECONDS) -> None:
        self.engine = engine
        self.state = IndexState(engine.store)
        self.wait = wait
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._lease_lost = threading.Event()
        self._leasing = threading.Lock()
        """Held by the thread of this process that holds the lease."""

    @property
    def kinds(self) -> tuple[str, ...]:
        """The sides this engine keeps (the pages' too unless they are bulk-loaded later)."""
        return ("work", "page") if self.engine.index_pages else ("work",)

    def snapshot(self) -> Snapshot:
        """Every group's marker, in one round trip (one per node on a cluster)."""
        return read_markers(self.engine.storage, self.engine.keys)

    def start(self) -> None:
        """Mark a new deployment's empty indexes whole: no marker at all and no fingerprint
        in the store. Anything else without its markers is left to :meth:`ready`."""
        with redis_errors("reading the index markers"):
            if any(self.snapshot().markers):
                return
            if self.engine.store.fingerprints.any_fingerprints():
                return
            self._mark(ALL_GROUPS, only_new=True)

    def ready(self) -> Snapshot:
        """A whole snapshot: the lost groups are rebuilt first (here, or by the process that
        holds the rebuild lease, waited for up to ``wait`` seconds)."""
        deadline = time.monotonic() + self.wait
        while True:
            snap = self.snapshot()
            if snap.whole:
                return snap
            if self.heal(snap.lost, "Redis had lost them"):
                continue
            if time.monotonic() > deadline:
                raise IndexUnavailable(
                    f"the indexes are being rebuilt elsewhere ({len(snap.lost)} of"
                    f" {TAG_GROUPS} tag groups); try again"
                )
            time.sleep(POLL_SECONDS)

    def changed(self, snap: Snapshot) -> list[int]:
        """The groups whose marker is not the one of ``snap`` (lost, or rebuilt, since)."""
        now = self.snapshot()
        return [g for g in ALL_GROUPS if now.markers[g] != snap.markers[g]]

    def unchanged(self, snap: Snapshot) -> bool:
        """True if every group still holds the marker it had in ``snap`` (nothing was lost,
        nor rebuilt, since)."""
        return self.snapshot() == snap

    def confirm(self, snap: Snapshot, what: str) -> None:
        """Raise :class:`~matcher.errors.IndexLost` when a group was lost (or rebuilt) since
        ``snap``: what was found on the index while ``what`` is not written."""
        if not self.unchanged(snap):
            raise IndexLost(f"the Redis indexes lost a part while {what}")

    def heal(self, groups: Collection[int], reason: str) -> bool:
        """Rebuild the groups of ``groups`` still without a marker; False when another
        process holds the rebuild lease (nothing done)."""
        with self._lease(groups) as held:
            if not held:
                return False
            lost = self.snapshot().lost
            if lost:
                self._rebuild(lost, reason, self.kinds, full=False)
        return True

    def rebuild(
        self, groups: Iterable[int], reason: str, kinds: Iterable[str] = maintenance.KINDS
    ) -> dict[str, int]:
        """Rebuild ``groups`` of the ``kinds`` sides whether lost or not (``fptrack index
        rebuild``: every group), waiting for a rebuild elsewhere; the counts loaded."""
        chosen = sorted(set(groups))
        deadline = time.monotonic() + self.wait
        while True:
            with self._lease(chosen) as held:
                if held:
                    full = len(chosen) == TAG_GROUPS
                    return self._rebuild(chosen, reason, tuple(kinds), full=full)
            if time.monotonic() > deadline:
                raise IndexUnavailable("the indexes are being rebuilt elsewhere; try again")
            time.sleep(POLL_SECONDS)

    def _rebuild(
        self, groups: list[int], reason: str, kinds: tuple[str, ...], *, full: bool
    ) -> dict[str, int]:
        """Clear and load ``groups`` (every key of the prefix when ``full``), then mark them
        whole and record the rebuild. The lease is held."""
        started = time.monotonic()
        log.warning(
            "rebuilding %d of %d index tag groups from the store: %s", len(groups), TAG_GROUPS,
            reason,
        )  # fmt: skip
        counts: dict[str, int] = {}
        for attempt in range(LOAD_ATTEMPTS):
            if full:
                maintenance.clear_sides(self.engine, kinds)
            maintenance.clear_groups(self.engine, groups, kinds)
            try:
                for kind in kinds:
                    counts[kind] = maintenance.load_side(
                        self.engine, kind, groups=None if full else groups, tick=self._renew
                    )
                break
            except ValueError:  # a write landed in a cleared group: clear it again
                if attempt == LOAD_ATTEMPTS - 1:
                    raise IndexUnavailable(
                        "the lost index groups kept receiving writes while rebuilt; try again"
                    ) from None
        self._mark(groups)
        self.state.healed(groups, counts, reason)
        message = (
            f"rebuilt {len(groups)} of {TAG_GROUPS} tag groups of the indexes from the store in"
            f" {time.monotonic() - started:.1f} s ({reason}):"
            f" {counts.get('work', 0)} work segment(s), {counts.get('page', 0)} page(s) read"
        )
        if reason != "a rebuild was requested":
            log.warning(message)
            self.engine.problems.append(message)
        return counts

    def _mark(self, groups: Iterable[int], *, only_new: bool = False) -> None:
        """Write a new token into each group's marker (``only_new``: where there is none)."""
        keys = self.engine.keys
        flags = ("NX",) if only_new else ()
        commands = [("SET", keys.marker(g), secrets.token_hex(8), *flags) for g in groups]
        self.engine.storage.commands(commands, "writing the index markers")

    def _renew(self) -> None:
        """Called now and then by a load: stop when the lease was lost to another process."""
        if self._lease_lost.is_set():
            raise IndexUnavailable("the index rebuild lease was lost (the store was unreachable)")

    @contextmanager
    def _lease(self, groups: Collection[int]) -> Iterator[bool]:
        """Hold the rebuild lease (renewed by a thread) while the block runs; yields False
        when another process, or another thread of this one, holds it."""
        if not self._leasing.acquire(blocking=False):
            yield False
            return
        try:
            with self._claimed(groups) as held:
                yield held
        finally:
            self._leasing.release()

    @contextmanager
    def _claimed(self, groups: Collection[int]) -> Iterator[bool]:
        """The lease of :meth:`_lease`, taken by this process (its thread holds
        ``_leasing``)."""
        if not self.state.claim(self.holder, groups, LEASE_SECONDS):
            yield False
            return
        stop = threading.Event()
        self._lease_lost.clear()

        def renew() -> None:
            while not stop.wait(LEASE_SECONDS / 3):
                try:
                    if not self.state.renew(self.holder, LEASE_SECONDS):
                        self._lease_lost.set()
                        return
                except MatcherError as exc:  # the store may be down a while: try again
                    log.warning("could not renew the index rebuild lease: %s", exc)

        thread = threading.Thread(target=renew, name="fptrack-index-lease", daemon=True)
        thread.start()
        try:
            yield True
        finally:
            stop.set()
            thread.join()
            try:
                self.state.release(self.holder)
            except MatcherError as exc:  # it expires on its own
                log.warning("could not release the index rebuild lease: %s", exc)
