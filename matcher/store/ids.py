"""Ids that need no global counter, so that the store's collections shard.

- A page's ``_id`` is a 63-bit integer derived from its canonical URL:
  ``xxh3_64(url as UTF-8, seed 0) & (2**63 - 1)``, the first of :data:`PROBES` candidate
  slots (the next ones add 1, 2, 3 modulo 2**63). A page lives in the first candidate that
  is free or already holds its URL, so the URL's uniqueness is the ``_id``'s, the shard key
  of ``pages`` (two URLs sharing all four 63-bit slots would need about 2**190 pages).
- Works and pages also get a small integer ``seq``: the owner id of the Redis indexes (a
  uint32). Seqs come from :data:`STRIPES` counter documents instead of one: stripe ``s``
  hands out ``s + STRIPES * n`` for ``n = 1, 2, ...`` (its own ``$inc``); a work's writer
  uses the stripe of its key, and a process storing pages takes their seqs in blocks from
  the stripe of the first page it stores (:data:`matcher.store.pages.SEQ_BLOCK`), so
  concurrent writers rarely touch the same counter. Each stripe has ``2**32 / STRIPES``
  (67 million) seqs: 4.29 billion pages in all; a work's seq leaves 12 bits of the owner
  id to its segments (:data:`matcher.keys.MAX_WORK_SEQ`): about a million works.

Pure functions; the store does the IO.

>>> page_id("http://example.org/book/1.html")
4289838569994412722
>>> list(candidates(2**63 - 2))
[9223372036854775806, 9223372036854775807, 0, 1]
>>> seq_of(stripe=5, n=1), stripe_of(seq_of(stripe=5, n=1))
(69, 5)
"""

from __future__ import annotations

from collections.abc import Iterator

import xxhash

ID_BITS = 63
ID_MASK = (1 << ID_BITS) - 1
PROBES = 4
STRIPES = 64
MAX_SEQ = 2**32 - 1


class SeqExhausted(OverflowError):
    """A counter stripe has handed out every seq that fits in 32 bits."""


def page_id(url: str) -> int:
    """The first candidate ``_id`` of the page at ``url`` (a canonical URL)."""
    return xxhash.xxh3_64_intdigest(url.encode("utf-8", "surrogatepass")) & ID_MASK


def candidates(first: int) -> Iterator[int]:
    """The :data:`PROBES` slots a page whose first candidate is ``first`` may occupy."""
    for step in range(PROBES):
        yield (first + step) & ID_MASK


def stripe_of(value: int) -> int:
    """The counter stripe of an id, a key's hash or a seq."""
    return value % STRIPES


def key_stripe(key: str) -> int:
    """The counter stripe of a work key."""
    return stripe_of(xxhash.xxh3_64_intdigest(key.encode("utf-8", "surrogatepass")))


def seq_of(*, stripe: int, n: int, limit: int = MAX_SEQ) -> int:
    """The ``n``-th seq (from 1) of counter stripe ``stripe``, at most ``limit``."""
    seq = stripe + STRIPES * n
    if not 0 <= stripe < STRIPES or n < 1 or seq > limit:
        raise SeqExhausted(f"counter stripe {stripe} has no seq number {n}")
    return seq


def first_n_after(seq: int) -> int:
    """The counter value every stripe must start from so that its next seq exceeds ``seq``
    (converting a single counter's ids: ``fptrack migrate``)."""
    return seq // STRIPES
