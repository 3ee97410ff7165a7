"""What a crawl yields: one record per page of main text (chapters split over pages joined)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class PageItem:
    """A crawled page's main text and how it was fetched.

    ``url`` is the canonical URL of the first page; ``parts`` lists every URL whose text was
    joined into ``text`` when a chapter is split over several pages ("下一页").
    """

    url: str
    site: str
    title: str
    text: str
    status: int
    encoding: str
    fetched_at: datetime
    parts: list[str] = field(default_factory=list)
