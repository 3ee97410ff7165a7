"""Fetching one page for a query (``fptrack match URL``, the admin's query by URL), guarded.

The admin fetches URLs that users type, and pages redirect where they like: fetching
``http://127.0.0.1:6379/`` or a cloud metadata address from the server would let anyone
with the reviewer role probe the network behind it. :func:`fetch_text`:

- refuses a host that resolves to a private, loopback, link-local, reserved, multicast or
  unspecified address (every address it resolves to, so a name cannot hide one), unless
  ``allow_private`` (``FPTRACK_QUERY_ALLOW_PRIVATE``) says otherwise; every redirect is
  checked the same way (at most :data:`MAX_REDIRECTS`);
- reads at most ``max_bytes`` (:data:`MAX_BYTES`, 10 MiB) of the body, in chunks, and gives
  up after ``deadline`` seconds in all (:data:`DEADLINE_S`, 20), however slowly the server
  sends;
- raises :class:`FetchError`, whose ``public`` message is the same for every failure (the
  admin shows only that, so a refused address, a closed port and an HTTP 404 look alike)
  and whose ``detail`` says what happened (the CLI's operator sees it).
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urljoin, urlsplit

MAX_BYTES = 10 * 1024 * 1024
DEADLINE_S = 20.0
MAX_REDIRECTS = 5
CHUNK = 64 * 1024
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
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        return f"{host} does not resolve: {exc}"
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if (
            address.is_private
            or address.is_loopback
            or address.is_link_local
            or address.is_reserved
            or address.is_multicast
            or address.is_unspecified
        ):
            return f"{host} is a private, loopback or reserved address ({address})"
    return ""


def check_url(url: str, allow_private: bool) -> None:
    """Raise :class:`FetchError` unless ``url`` is http(s) to an address that may be fetched."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"{url!r} is not an http(s) URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise FetchError(f"{url!r}: {exc}") from None
    if not allow_private:
        why = refused_address(parts.hostname, port)
        if why:
            raise FetchError(why)


class _Redirects(urllib.request.HTTPRedirectHandler):
    max_redirections = MAX_REDIRECTS

    def __init__(self, allow_private: bool) -> None:
        self.allow_private = allow_private

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str):
        check_url(urljoin(req.full_url, newurl), self.allow_private)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch(
    url: str,
    *,
    allow_private: bool = False,
    max_bytes: int = MAX_BYTES,
    deadline: float = DEADLINE_S,
) -> tuple[bytes, str]:
    """The body (at most ``max_bytes``) and ``Content-Type`` of ``url`` (see the module
    docstring); :class:`FetchError` on any failure."""
    check_url(url, allow_private)
    opener = urllib.request.build_opener(_Redirects(allow_private))
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    ends = time.monotonic() + deadline
    try:
        with opener.open(request, timeout=min(deadline, 10.0)) as response:
            content_type = response.headers.get("Content-Type", "")
            chunks, size = [], 0
            while True:
                if time.monotonic() > ends:
                    raise FetchError(f"{url}: no whole answer within {deadline:g} s")
                chunk = response.read1(CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise FetchError(f"{url}: the page is over {max_bytes:,} bytes")
                chunks.append(chunk)
    except FetchError:
        raise
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        raise FetchError(f"cannot fetch {url}: {getattr(exc, 'reason', exc)}") from None
    return b"".join(chunks), content_type
