"""What a crawl yields: one record per fetched HTML page with main text, under its own URL.

The item is :class:`matcher.pages.CrawledPage`, the one dataclass every layer passes on;
a chapter split over several pages gives one item per part, each with the URLs of its
"next page" and "previous page" links. :func:`page_item` makes it of a response and its
reading, with the response's :func:`exchange_of` for the evidence archive.
"""

from __future__ import annotations

import weakref
from datetime import UTC, datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from scrapy.http import Response

from matcher.evidence.archive import Exchange
from matcher.pages import CrawledPage

if TYPE_CHECKING:
    from crawler.reading import Reading

PageItem = CrawledPage

__all__ = ["Exchanges", "PageItem", "exchange_of", "page_item"]


def page_item(
    response: Response, page: Reading, url: str, site: str, exchange: Exchange, **links: Any
) -> PageItem:
    """The item of ``page`` read from ``response``, stored under ``url`` (``links``: its
    ``next_url``, ``prev_url`` and ``aliases`` when it has them)."""
    return PageItem(
        url=url,
        site=site,
        title=page.title,
        text=page.text,
        status=response.status,
        encoding=page.encoding,
        fetched_at=exchange.fetched_at,
        exchange=exchange,
        etag=_header(response, b"ETag"),
        last_modified=_header(response, b"Last-Modified"),
        **links,
    )


class Exchanges:
    """The exchange of a response, made once however many pages it gives (a download in
    parts): every part refers to the same archived exchange."""

    def __init__(self) -> None:
        self._last: tuple[weakref.ref[Response], Exchange] | None = None

    def of(self, response: Response) -> Exchange:
        last = self._last
        if last is None or last[0]() is not response:  # not the response itself: its bytes go
            exchange = exchange_of(response, datetime.now(UTC))
            self._last = last = (weakref.ref(response), exchange)
        return last[1]


def exchange_of(response: Response, fetched_at: datetime) -> Exchange:
    """The response and its request as fetched, for the evidence archive. A page rendered
    in Chromium (:mod:`crawler.render`) keeps its document's status and headers as fetched,
    with the rendered DOM as its body, and is marked ``rendered``."""
    request = response.request

    def pairs(headers: Any) -> list[tuple[str, str]]:
        return [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, values in headers.items()
            for value in values
        ]

    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:
        reason = ""
    return Exchange(
        url=response.url,
        status=response.status,
        reason=reason,
        response_headers=pairs(response.headers),
        body=response.body,
        fetched_at=fetched_at,
        method=request.method if request is not None else "GET",
        request_headers=pairs(request.headers) if request is not None else [],
        rendered="playwright" in response.flags,
    )


def _header(response: Response, name: bytes) -> str:
    """A response header as text ("" if absent), at most 200 characters."""
    value = response.headers.get(name) or b""
    return value.decode("latin-1").strip()[:200]
