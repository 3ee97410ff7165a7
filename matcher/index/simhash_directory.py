"""The simhash index's split directories as one process caches them (:class:`SplitDirectories`).

Each tag group's split directory (a Redis hash: split bucket -> s) is cached with its
version token, rewritten (a random token, never reused) by every split in the group. The
cache is one snapshot (:class:`matcher.index.simhash_routing.Directory`), replaced whole
(:meth:`SplitDirectories.set`): each query, edit or split of
:class:`matcher.index.simhash_index.SimhashIndex` reads it once and checks the stored tokens
against that snapshot's, so the threads of a process may share it; a group whose token
changed is read again (:meth:`SplitDirectories.sync`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from matcher.errors import IndexUnavailable
from matcher.index.simhash_routing import Directory, Routes
from matcher.index.storage import Storage
from matcher.keys import TAG_GROUPS, IndexKeys

RETRIES = 8


class SplitDirectories:
    """The split directories of one simhash index (its ``keys`` in ``storage``), cached;
    ``check_params`` refuses the parameters stored beside them when they are not the index's."""

    def __init__(
        self,
        storage: Storage,
        keys: IndexKeys,
        routes: Routes,
        check_params: Callable[[bytes | None], None],
    ) -> None:
        self._storage = storage
        self._keys = keys
        self._routes = routes
        self._check_params = check_params
        self._lock = threading.Lock()
        self.current = Directory((b"",) * TAG_GROUPS, ({},) * TAG_GROUPS, {}, np.zeros(0, np.int64))
        """The snapshot; read it once per operation (it is replaced, never changed)."""

    def sync(self, groups: Sequence[int]) -> None:
        """Reload the split directories of ``groups`` (one round trip per node).

        Each group's version is read before and after its directory: splits rewrite both in
        one MULTI with a fresh token, so equal versions mean the directory read between them
        is the one of that version; a group caught mid-change is read again.
        """
        k = self._keys
        pending = list(groups)
        what = "reading the simhash index's split directory"
        for _ in range(RETRIES):
            commands = []
            for g in pending:
                commands += [("GET", k.params(g)), ("GET", k.version(g))]
                commands += [("HGETALL", k.split(g)), ("GET", k.version(g))]
            replies = self._storage.commands(commands, what)
            fresh, again = {}, []
            for i, g in enumerate(pending):
                stored, before, split, after = replies[4 * i : 4 * i + 4]
                self._check_params(stored)
                if before != after:
                    again.append(g)
                    continue
                split = split if before else {}
                fresh[g] = (before or b"", {name: int(s) for name, s in split.items()})
            self.set(fresh)
            if not again:
                return
            pending = again
        raise IndexUnavailable("the simhash index's split directory kept changing; retry")

    def set(self, directories: dict[int, tuple[bytes, dict[bytes, int]]]) -> None:
        """Cache the (version, split directory) of each of the given groups: a new snapshot
        (writers one at a time, so none loses another's groups; readers keep the one they
        took)."""
        with self._lock:
            versions, splits = list(self.current.versions), list(self.current.splits)
            for g, (version, split) in directories.items():
                versions[g], splits[g] = version, split
            merged = {name: s for split in splits for name, s in split.items()}
            tops = self._routes.split_tops(merged)
            self.current = Directory(tuple(versions), tuple(splits), merged, tops)
