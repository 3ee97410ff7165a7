"""The seeds' combined similarity formulas.

Microblog paper: Dup(A, B) = |tok(A) ∩ tok(B)| / |tok(A) ∪ tok(B)| over the two texts'
token sets, and Sim(A, B) = 1 / (Hamming(A, B) + 1) + K * Dup(A, B) with K in [2, 8]; the
texts are similar when Sim >= 1 + 0.2 K.

Document paper: score = mu * content + (1 - mu) * J_info, where content = 1 - H / 64 is the
simhash content similarity and J_info the MinHash Jaccard of the documents' other
information (keywords, tags, references); mu in [0.8, 0.9].
"""

from __future__ import annotations

from collections.abc import Iterable

from fingerprint.minhash import MinHash
from fingerprint.simhash import BITS, Simhash


def dup(tokens_a: Iterable[str], tokens_b: Iterable[str]) -> float:
    """Dup(A, B): Jaccard of the two token sets (0 when both are empty)."""
    a, b = set(tokens_a), set(tokens_b)
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _check_k(k: float) -> None:
    if not 2.0 <= k <= 8.0:
        raise ValueError(f"K must be in [2, 8], got {k}")


def microblog_sim(hamming_distance: int, dup_score: float, k: float = 4.0) -> float:
    """Sim = 1 / (H + 1) + K * Dup.

    >>> microblog_sim(0, 0.5, k=4.0)
    3.0
    """
    _check_k(k)
    if hamming_distance < 0 or not 0.0 <= dup_score <= 1.0:
        raise ValueError("Hamming distance must be >= 0 and Dup in [0, 1]")
    return 1.0 / (hamming_distance + 1) + k * dup_score


def microblog_similar(
    simhash_a: Simhash,
    simhash_b: Simhash,
    tokens_a: Iterable[str],
    tokens_b: Iterable[str],
    k: float = 4.0,
) -> bool:
    """True when Sim(A, B) >= 1 + 0.2 K."""
    sim = microblog_sim(simhash_a.distance(simhash_b), dup(tokens_a, tokens_b), k)
    return sim >= 1.0 + 0.2 * k


def combined_score(hamming_distance: int, jaccard: float, mu: float = 0.85) -> float:
    """mu * (1 - H / 64) + (1 - mu) * J, the document paper's score from its two parts.

    >>> combined_score(0, 0.5, mu=0.8)
    0.9
    """
    if not 0.8 <= mu <= 0.9:
        raise ValueError(f"mu must be in [0.8, 0.9], got {mu}")
    if not 0 <= hamming_distance <= BITS or not 0.0 <= jaccard <= 1.0:
        raise ValueError(f"Hamming distance must be in 0..{BITS} and J in [0, 1]")
    return mu * (1.0 - hamming_distance / BITS) + (1.0 - mu) * jaccard


def document_score(
    simhash_a: Simhash, simhash_b: Simhash, info_a: MinHash, info_b: MinHash, mu: float = 0.85
) -> float:
    """mu * (1 - H / 64) + (1 - mu) * Jaccard(info_a, info_b)."""
    return combined_score(simhash_a.distance(simhash_b), info_a.jaccard(info_b), mu)
