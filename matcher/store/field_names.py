"""Names and sizes of stored fingerprint fields that the store reads without fingerprinting
anything: the index keys' method name (:mod:`matcher.matching.prepared` writes it) and how many of a
work's near-twin hashes the store indexes (:mod:`matcher.matching.near_twins`). A module of its
own, as
:mod:`matcher.store.statuses` is, so that the store, the index state and the operations import
neither numpy nor the numba kernels (``fptrack check`` starts in a fraction of a second)."""

from __future__ import annotations

INDEX_KEYS = "index_keys"
"""The fingerprint method holding an owner's index keys (its simhash and window keys)."""
INDEX_KEYS_VERSION = 3
"""3: one anchored-window dna in two is a postings key, no fixed window's (2: every
anchored one; 1: every dna)."""
LOOKUP_KEYS = 16
"""The near-twin sketch's smallest hashes the store indexes to find candidates."""
