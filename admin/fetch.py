"""Fetching one page for a query (``fptrack match URL``, the admin's query by URL), guarded.

The admin fetches URLs that users type, and pages redirect where they like: fetching
``http://127.0.0.1:6379/`` or a cloud metadata address from the server would let anyone
with the reviewer role probe the network behind it. :func:`fetch` is a GET under the
outbound policy (:mod:`matcher.outbound`):

- a host that resolves to an internal address (private, loopback, link-local, shared,
  reserved, multicast or unspecified; any address it resolves to, so a name cannot hide
  one) is refused unless ``allow_private`` (``FPTRACK_QUERY_ALLOW_PRIVATE``) says
  otherwise, and the connection goes to the address checked; every redirect is checked the
  same way (at most :data:`MAX_REDIRECTS`);
- at most ``max_bytes`` (``FPTRACK_QUERY_MAX_BYTES``, :data:`MAX_BYTES`, 10 MiB) of body,
  and ``deadline`` seconds in all (``FPTRACK_QUERY_DEADLINE``, :data:`DEADLINE_S`, 20) for
  resolving, connecting, the status line, the headers and the body, however slowly the
  server sends any of them;
- raises :class:`FetchError`, whose ``public`` message is the same for every failure (the
  admin shows only that, so a refused address, a closed port and an HTTP 404 look alike)
  and whose ``detail`` says what happened (the CLI's operator sees it).
"""

from __future__ import annotations

from matcher import outbound

MAX_BYTES = outbound.MAX_BYTES
DEADLINE_S = 20.0
MAX_REDIRECTS = outbound.FETCH_REDIRECTS
USER_AGENT = "fptrack/0.1 (match)"
PUBLIC_MESSAGE = "that URL could not be fetched"


class FetchError(Exception):
    """A page that could not be fetched: one public message, and the detail."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.public = PUBLIC_MESSAGE


def refused_address(host: str, port: int) -> str:
    """Why ``host`` may not be fetched from (an address it resolves to), or ""."""
    try:
        outbound.resolve(host, port, allow_private=False)
    except outbound.OutboundError as exc:
        return exc.detail
    except TimeoutError:
        return f"{host} did not resolve in time"
    return ""


def check_url(url: str, allow_private: bool) -> None:
    """Raise :class:`FetchError` unless ``url`` is http(s) to an address that may be fetched."""
    why = outbound.refusal(url, allow_private)
    if why:
        raise FetchError(why)


def fetch(
    url: str,
    *,
    allow_private: bool = False,
    max_bytes: int = MAX_BYTES,
    deadline: float = DEADLINE_S,
) -> tuple[bytes, str]:
    """The body (at most ``max_bytes``) and ``Content-Type`` of ``url`` (see the module
    docstring); :class:`FetchError` on any failure, an HTTP error status included."""
    policy = outbound.Policy(deadline, max_bytes, allow_private, MAX_REDIRECTS)
    try:
        answer = outbound.request("GET", url, policy, headers={"User-Agent": USER_AGENT})
    except outbound.OutboundError as exc:
        raise FetchError(exc.detail) from None
    if not 200 <= answer.status < 300:
        raise FetchError(f"cannot fetch {answer.url}: HTTP {answer.status} {answer.reason}")
    return answer.body, answer.headers.get("Content-Type", "")


def fetch_url(
    url: str,
    *,
    allow_private: bool = True,
    deadline: float = DEADLINE_S,
    max_bytes: int = MAX_BYTES,
) -> str:
    """The main text of one web page (:func:`fetch`, then the crawler's decoding and
    extraction); :class:`FetchError` when it cannot be had. The command line may fetch
    private addresses (its operator's own network); the admin may not unless
    ``FPTRACK_QUERY_ALLOW_PRIVATE`` says so."""
    from crawler.one_page import page_text

    body, header = fetch(url, allow_private=allow_private, deadline=deadline, max_bytes=max_bytes)
    try:
        return page_text(body, header, url)
    except ValueError as exc:
        raise FetchError(f"{url}: {exc}") from exc
