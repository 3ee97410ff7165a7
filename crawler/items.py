"""What a crawl yields: one record per fetched HTML page with main text, under its own URL.

The item is :class:`matcher.pages.CrawledPage`, the one dataclass every layer passes on;
a chapter split over several pages gives one item per part, each with the URLs of its
"next page" and "previous page" links.
"""

from __future__ import annotations

from matcher.pages import CrawledPage

PageItem = CrawledPage

__all__ = ["PageItem"]
