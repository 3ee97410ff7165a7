"""Order of a test run over pytest-xdist workers: the costly tests spread over the workers' shares.

pytest-xdist's ``worksteal`` scheduler (the suite's ``--dist``) first hands each worker a
contiguous share of the collected tests and later moves only the tail of a queue, so two
long tests in one share run one after the other while the other workers wait, and a long
test collected last runs alone at the end. :func:`spread` deals the costly tests (by a key
of each, with their measured seconds) longest first, each to the share whose costly tests add up to
the least so far, at the head of its share, the cheap ones after them (the tail other
workers may take). Only the order changes: with one process, or another scheduler, every
test still runs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

import pytest


def share_starts(count: int, workers: int) -> list[int]:
    """Where each worker's first share begins among ``count`` tests (``worksteal`` gives the
    first idle worker ``len(pending) // workers_left`` of what is left, in order).

    >>> share_starts(23, 4)
    [0, 5, 11, 17]
    """
    starts, left = [], count
    for remaining in range(workers, 0, -1):
        starts.append(count - left)
        left -= left // remaining
    return starts


def deal(costs: list[float], sizes: list[int]) -> list[list[int]]:
    """The indexes of ``costs`` dealt to shares of at most ``sizes`` tests each: the
    longest first, each to the share with the least cost so far that has room.

    >>> deal([57, 47, 43, 42, 36, 30], [3, 3, 3])
    [[0, 5], [1, 4], [2, 3]]
    """
    shares: list[list[int]] = [[] for _ in sizes]
    totals = [0.0] * len(sizes)
    for n in sorted(range(len(costs)), key=lambda n: -costs[n]):
        room = [s for s in range(len(sizes)) if len(shares[s]) < sizes[s]]
        share = min(room, key=lambda s: totals[s])
        shares[share].append(n)
        totals[share] += costs[n]
    return shares


def spread(
    config: pytest.Config,
    items: list[pytest.Item],
    costly: Mapping[Hashable, float],
    key: Callable[[pytest.Item], Hashable] = lambda item: item.nodeid,
) -> None:
    """Reorder ``items`` in place so that the costly ones (``costly``, by ``key``) head the
    workers' first shares, dealt by :func:`deal`."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    keys = [key(item) for item in items]
    found = [n for n in range(len(items)) if keys[n] in costly]
    if workers < 2 or not found:
        return
    starts = share_starts(len(items), workers)
    sizes = [end - start for start, end in zip(starts, [*starts[1:], len(items)], strict=True)]
    dealt = deal([costly[keys[n]] for n in found], sizes)
    rest = iter([item for n, item in enumerate(items) if keys[n] not in costly])
    ordered: list[pytest.Item] = []
    for size, share in zip(sizes, dealt, strict=True):
        ordered += [items[found[n]] for n in share]
        ordered += [next(rest) for _ in range(size - len(share))]
    items[:] = ordered
