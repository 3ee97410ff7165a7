"""Keyset pages: a list read one item past its page, and the cursor of the next page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Page:
    """One page of a list (``rows``) and the cursor of the next (None: the last page)."""

    rows: list[dict[str, Any]]
    next: str | None


def page_of(rows: list[dict[str, Any]], limit: int, cursor: Callable[[dict], str]) -> Page:
    """The page of ``rows`` read with ``limit + 1``: its first ``limit``, and the cursor of
    the last of them when there was one more."""
    shown = rows[:limit]
    more = len(rows) > limit and bool(shown)
    return Page(shown, cursor(shown[-1]) if more else None)
