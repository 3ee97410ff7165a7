"""Works' ids, titles and sources by seq, kept a short while in the process.

The matching engine names the works it verified and let go in each page's ``considered``
list, and reads the segments of the works it verifies by their ids: one read of ``works``
per page otherwise, for values that hardly change (a work's seq and id never do; a title
may, when the work is registered again), and the records' evidence names them
(:mod:`matcher.matching.match_records`). :class:`WorkNames` answers from what it read within
:data:`KEEP_SECONDS`; a work removed since may be named that much longer (its segments are
gone with it, and its match records are made from the store itself,
:mod:`matcher.matching.match_records`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

KEEP_SECONDS = 600.0
"""How long a work's id and title read from the store are answered without reading again:
ten minutes, so that a worker matching pages of a thousand works for minutes on end reads
each work's name about once in that time (a title changed by registering the work again
reaches new records within it)."""
MAX_WORKS = 100_000
"""At most this many works are kept; the oldest half is let go past it."""


class WorkNames:
    """``{seq: {"_id", "title", "source"}}`` of works, through ``works_by_seq`` (a store's)."""

    def __init__(
        self,
        works_by_seq: Callable[[Iterable[int], dict[str, int]], dict[int, dict]],
        keep: float = KEEP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        limit: int = MAX_WORKS,
    ) -> None:
        self._read = works_by_seq
        self._keep = keep
        self._clock = clock
        self._limit = limit
        self._known: dict[int, tuple[float, dict[str, Any]]] = {}

    def of(self, seqs: Iterable[int]) -> dict[int, dict[str, Any]]:
        """The works among ``seqs`` still registered (as of at most :data:`KEEP_SECONDS`
        ago), by seq; those not known lately are read in one query.

        >>> reads = []
        >>> def works_by_seq(seqs, projection):
        ...     reads.append(sorted(seqs))
        ...     return {n: {"_id": n, "title": f"w{n}"} for n in seqs if n < 3}
        >>> names = WorkNames(works_by_seq)
        >>> names.of([1, 2, 5])[2]
        {'_id': 2, 'title': 'w2', 'source': ''}
        >>> sorted(names.of([2, 1]))
        [1, 2]
        >>> reads
        [[1, 2, 5]]
        """
        now = self._clock()
        out: dict[int, dict[str, Any]] = {}
        missing = []
        for seq in dict.fromkeys(int(s) for s in seqs):
            known = self._known.get(seq)
            if known is not None and now - known[0] < self._keep:
                out[seq] = known[1]
            else:
                missing.append(seq)
        if missing:
            for seq, doc in self._read(missing, {"title": 1, "source": 1}).items():
                name = {
                    "_id": doc["_id"],
                    "title": doc.get("title", ""),
                    "source": doc.get("source", ""),
                }
                self._known[int(seq)] = (now, name)
                out[int(seq)] = name
            if len(self._known) > self._limit:
                for seq in list(self._known)[: len(self._known) // 2]:
                    del self._known[seq]
        return out
