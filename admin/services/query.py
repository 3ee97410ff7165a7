"""Query: which works a text copies, or the text of a URL fetched under the outbound policy
(:mod:`admin.fetch`).

One fetch for the admin's query page (:mod:`admin.web.query`) and the API's query route
(:mod:`admin.web.api.query`): both check the URL with :func:`fetchable`, fetch it with
:meth:`QueryService.fetch` outside the embedded admin's lock, and match the text with
:meth:`QueryService.match`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from admin.fetch import fetch_url

if TYPE_CHECKING:
    from admin.context import Context

SCHEMES = ("http://", "https://")


def fetchable(url: str) -> bool:
    """Whether ``url`` is an HTTP(S) URL (its scheme in any case, as RFC 3986 reads it)."""
    return url.lower().startswith(SCHEMES)


class QueryService:
    """Queries matched by the engine of ``ctx``; URLs fetched within the limits of its
    settings as they are at each call (``FPTRACK_QUERY_ALLOW_PRIVATE``,
    ``FPTRACK_QUERY_DEADLINE``, ``FPTRACK_QUERY_MAX_BYTES``)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def fetch(self, url: str) -> str:
        """The text of the page at ``url`` (outbound IO only, no store touched); a page that
        cannot be fetched is a :class:`admin.fetch.FetchError`."""
        settings = self.ctx.settings
        return fetch_url(
            url, allow_private=settings.query_allow_private,
            deadline=settings.query_deadline, max_bytes=settings.query_max_bytes,
        )  # fmt: skip

    def match(self, text: str) -> list[dict[str, Any]]:
        """The works ``text`` copies, as match records, best score first."""
        records = self.ctx.engine.match_text(text)
        records.sort(key=lambda r: -r["score"])
        return records
