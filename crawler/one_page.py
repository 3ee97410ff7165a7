"""One page fetched outside a crawl, and its main text: what a takedown's recheck reads
(:mod:`matcher.takedowns`) and what a query by URL reads (:mod:`admin.fetch`).

:func:`fetch_page` is a GET under :mod:`matcher.outbound`'s policy (one deadline for the
whole request, a size cap, redirects checked); it answers the status whatever it is (a 404
or 410 is what a recheck looks for) and, for a 2xx answer, the text as the crawler reads it
(:func:`page_text`: the crawler's decoding, then its extraction).
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.encoding import decode_body
from crawler.extract import extract
from matcher import outbound

USER_AGENT = "fptrack/0.1 (recheck)"
MAX_REDIRECTS = 5


@dataclass(frozen=True)
class Fetched:
    """What one fetch came to: the final status (None when there was no answer), the main
    text of a 2xx answer, and a one-line error ("" when it was answered)."""

    status: int | None
    text: str = ""
    error: str = ""


def page_text(body: bytes, content_type: str, url: str) -> str:
    """The main text of a page's ``body``, decoded and extracted as the crawler does;
    :class:`ValueError` when it cannot be decoded."""
    text, _ = decode_body(body, content_type)
    return extract(text, url).text


def fetch_page(url: str, *, deadline: float, max_bytes: int, allow_private: bool = True) -> Fetched:
    """``url`` fetched once (see the module docstring); never raises."""
    policy = outbound.Policy(deadline, max_bytes, allow_private, MAX_REDIRECTS)
    try:
        answer = outbound.request("GET", url, policy, headers={"User-Agent": USER_AGENT})
    except outbound.OutboundError as exc:
        return Fetched(None, error=exc.detail)
    if not 200 <= answer.status < 300:
        return Fetched(answer.status, error=f"HTTP {answer.status} {answer.reason}")
    try:
        return Fetched(
            answer.status, page_text(answer.body, answer.headers.get("Content-Type", ""), url)
        )
    except ValueError as exc:
        return Fetched(answer.status, error=f"{url}: {exc}")
