"""Every HTTP request fptrack makes outside the Scrapy crawl, under one policy (issue 23).

Query by URL (:mod:`admin.fetch`), alert webhooks (:mod:`matcher.alerts.notify`), pirate-site
discovery (:mod:`crawler.sample_crawl`), takedown rechecks (:mod:`crawler.one_page`) and
the Time-Stamp Authority (:mod:`matcher.evidence.timestamps`) go through :func:`request`, email
alerts' SMTP client through :func:`connect`; the crawl's own requests (pages, robots.txt,
sitemaps and feeds of an incremental crawl) are Scrapy's, bounded by ``DOWNLOAD_TIMEOUT``
and ``DOWNLOAD_MAXSIZE`` (:mod:`crawler.settings`). A :class:`Policy` gives:

- **one deadline for the whole request** (:attr:`Policy.deadline`): name resolution,
  connect, TLS handshake, sending, the status line, the headers and the body, every
  redirect included. Each socket operation gets the time left as its timeout (a server
  sending one byte every few seconds is cut off when the deadline passes, not when one
  read stalls), and the resolver runs in a thread waited on for the time left;
- **a size cap** (:attr:`Policy.max_bytes`) on the body, checked on ``Content-Length`` and
  while reading (chunked or not); headers are bounded by :mod:`http.client`;
- **no answer taken whole when it was cut off**: a connection closed inside the status line
  or the headers (before their blank line; :mod:`http.client` would take what came as all
  of them) or before the body's ``Content-Length`` or last chunk is a failure, not a short
  answer (a webhook's answer, whose body is not read, counts once its headers are in);
- **no internal addresses** unless :attr:`Policy.allow_private`, or the host and port are
  one the operator named (:attr:`Policy.own`: a watched site's, the TSA's): a host is
  resolved once, refused if any address it resolves to is not global (private, loopback,
  link-local, shared/CGNAT such as ``100.100.100.200``, reserved, multicast, unspecified;
  IPv4-mapped IPv6 unwrapped), and the connection is made to a checked address, never
  resolved again (no DNS-rebinding window); TLS still checks the certificate against the
  host name;
- **redirects** followed only when :attr:`Policy.max_redirects` allows, each hop's URL
  checked and resolved like the first (a hop to another host or port is not "own").

What lets each use reach an internal address: ``FPTRACK_QUERY_ALLOW_PRIVATE`` for query by
URL, ``FPTRACK_ALERT_ALLOW_PRIVATE`` for webhooks, ``FPTRACK_OUTBOUND_ALLOW_PRIVATE`` for
discovery's candidate sites and where a watched site's pages or a rechecked page redirect
(:func:`fetching`); a host the operator named, that host and port only (:attr:`Policy.own`):
a watched site read by discovery, a page a recheck fetches, the TSA, the SMTP server; and
``fptrack match URL`` allows them (its operator typed it). Every failure, a URL of any form
included (odd hosts, ports, IPv6 zones, percent-escapes), is :class:`OutboundError` with a
one-line ``detail``, never another exception.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any
from urllib.parse import quote, unquote, urljoin, urlsplit

from matcher.errors import OneLineError

MAX_BYTES = 10 * 1024 * 1024
CHUNK = 64 * 1024
REDIRECTS = (301, 302, 303, 307, 308)
FETCH_REDIRECTS = 5
"""Redirects a fetch of a page outside the crawl follows (query by URL, discovery, rechecks)."""
PATH_SAFE = "/?&=%:@!$'()*+,;~[]"
"""Characters left as they are in a URL's path and query (others, such as Chinese, are
percent-encoded as UTF-8)."""
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundError(OneLineError):
    """A request that failed under the policy; ``detail`` says why, in one line."""


class Unresolved(OutboundError):
    """A host name that does not resolve."""


class Refused(OutboundError):
    """A host that is, or resolves to, an internal address the policy does not allow."""


@dataclass(frozen=True)
class Policy:
    """The bounds of one outbound request (see the module docstring)."""

    deadline: float
    max_bytes: int = MAX_BYTES
    allow_private: bool = False
    max_redirects: int = 0
    """0: a 3xx is the answer (webhooks); query by URL follows up to 5."""
    own: frozenset[tuple[str, int]] = field(default_factory=frozenset)
    """``(host, port)`` pairs the operator named (a watched site, the TSA), reached even
    when internal; every other host follows :attr:`allow_private`."""

    def owning(self, *urls: str) -> Policy:
        """This policy with the host and port of each of ``urls`` its own (:attr:`own`);
        :class:`OutboundError` for a URL that names none."""
        return replace(self, own=self.own | {origin(url) for url in urls})

    def may_reach_internal(self, host: str, port: int) -> bool:
        """Whether ``host`` (as :func:`origin` gives it) may be an internal address."""
        return self.allow_private or (host, port) in self.own


def fetching(settings: Any) -> Policy:
    """The policy of fptrack's own fetches of pages outside the crawl (pirate-site
    discovery, takedown rechecks): ``FPTRACK_QUERY_DEADLINE``, ``FPTRACK_QUERY_MAX_BYTES``,
    :data:`FETCH_REDIRECTS` redirects, internal addresses only with
    ``FPTRACK_OUTBOUND_ALLOW_PRIVATE`` (or on a host made its own: :meth:`Policy.owning`)."""
    return Policy(
        settings.query_deadline, settings.query_max_bytes, settings.outbound_allow_private,
        FETCH_REDIRECTS,
    )  # fmt: skip


@dataclass(frozen=True)
class Response:
    """The final answer: its URL (after redirects), status, headers and body (read only
    when asked for)."""

    url: str
    status: int
    reason: str
    headers: http.client.HTTPMessage
    body: bytes


def internal(address: Address) -> bool:
    """Whether ``address`` is not one a request may go to without the opt-in.

    >>> [internal(ipaddress.ip_address(a)) for a in ("8.8.8.8", "10.0.0.1", "::ffff:127.0.0.1")]
    [False, True, True]
    >>> internal(ipaddress.ip_address("100.100.100.200"))  # shared space: cloud metadata
    True
    """
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (
        not address.is_global
        or address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_reserved
        or address.is_multicast
        or address.is_unspecified
    )


class Deadline:
    """The time left of one request's deadline (sockets of :func:`connect` wait at most
    that long on each read and write)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.ends = time.monotonic() + deadline

    def passed(self) -> bool:
        return time.monotonic() >= self.ends

    def left(self) -> float:
        """Seconds left; :class:`TimeoutError` once there are none."""
        left = self.ends - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        return left


class _Bounded:
    """Every read and write of the socket waits at most the time left of its budget."""

    budget: Deadline | None = None

    def _bound(self) -> None:
        if self.budget is not None:
            self.settimeout(self.budget.left())  # type: ignore[attr-defined]

    def recv(self, *args: Any) -> bytes:
        self._bound()
        return super().recv(*args)  # type: ignore[misc]

    def recv_into(self, *args: Any) -> int:
        self._bound()
        return super().recv_into(*args)  # type: ignore[misc]

    def send(self, *args: Any) -> int:
        self._bound()
        return super().send(*args)  # type: ignore[misc]

    def sendall(self, *args: Any) -> None:
        self._bound()
        return super().sendall(*args)  # type: ignore[misc]


class _NotingEOF:
    """A response's file, noting whether a line read from it ended at the end of the stream
    (no line feed) rather than at a line feed."""

    def __init__(self, fp: Any) -> None:
        self.fp = fp
        self.hit_eof = False

    def readline(self, *args: Any) -> bytes:
        line = self.fp.readline(*args)
        if not line.endswith(b"\n"):
            self.hit_eof = True
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fp, name)


class CutOffHeaders(http.client.HTTPException):
    """The connection closed before the blank line ending the headers."""


class _Response(http.client.HTTPResponse):
    """An :class:`http.client.HTTPResponse` that raises :class:`CutOffHeaders` where its
    parent, reaching the end of the stream while reading the headers, takes the lines read
    so far as all of them."""

    def begin(self) -> None:
        noting = _NotingEOF(self.fp)
        self.fp = noting
        try:
            super().begin()
        finally:
            if self.fp is noting:
                self.fp = noting.fp
        if noting.hit_eof:
            raise CutOffHeaders("the answer was cut off in its headers")


class _Socket(_Bounded, socket.socket):
    """A plain socket under its budget."""


class _TLSSocket(_Bounded, ssl.SSLSocket):
    """The same bound over TLS (``budget`` is set once the handshake is done; the handshake
    gets the time left when it starts, as a whole)."""


@cache
def tls_context() -> ssl.SSLContext:
    """The default TLS context (certificates checked against the host name), whose sockets
    honour a :class:`Deadline` once their ``budget`` is set."""
    context = ssl.create_default_context()
    context.sslsocket_class = _TLSSocket
    return context


def _target(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path-and-query)`` of an http(s) URL; :class:`OutboundError`
    for anything else (a host must be a name, an IPv4 address or a bracketed IPv6 address,
    whose zone may be percent-encoded as RFC 6874 writes it: ``[fe80::1%25eth0]``)."""
    try:
        parts = urlsplit(url)
        scheme, hostname, port = parts.scheme, parts.hostname, parts.port
    except ValueError as exc:  # an unclosed "[", a port that is not a number or too big
        raise OutboundError(f"{url!r} is not a URL fptrack can request: {exc}") from None
    if scheme not in ("http", "https") or not hostname:
        raise OutboundError(f"{url!r} is not an http(s) URL")
    host = _host(hostname, bracketed="[" in parts.netloc)
    if port == 0:
        raise OutboundError(f"{url!r}: port 0 is not a port to connect to")
    port = port or (443 if scheme == "https" else 80)
    path = quote(parts.path or "/", safe=PATH_SAFE)
    if parts.query:
        path += "?" + quote(parts.query, safe=PATH_SAFE)
    return scheme, host, port, path


def _host(hostname: str, bracketed: bool) -> str:
    """``hostname`` as it is resolved; :class:`OutboundError` when it cannot be a host."""
    if bracketed:
        literal = unquote(hostname)  # RFC 6874: the zone's "%" is written "%25"
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            raise OutboundError(f"[{hostname}] is not an IPv6 address") from None
        return literal
    if any(c in "%[]\\/@" or ord(c) <= 32 or ord(c) == 127 for c in hostname):
        raise OutboundError(f"{hostname!r} is not a host name")
    try:
        hostname.encode("idna")  # what the resolver asks: labels of 1 to 63 characters
    except UnicodeError as exc:
        raise OutboundError(f"{hostname[:100]!r} is not a host name: {exc}") from None
    return hostname


def origin(url: str) -> tuple[str, int]:
    """``(host, port)`` of an http(s) URL, as a request to it connects;
    :class:`OutboundError` when it names none.

    >>> origin("HTTP://Pirate.Example/book"), origin("https://[::1]:8443/")
    (('pirate.example', 80), ('::1', 8443))
    """
    _, host, port, _ = _target(url)
    return host, port


def _getaddrinfo(host: str, port: int, budget: Deadline) -> list[Any]:
    """``socket.getaddrinfo`` waited on for the time left (the resolver has no deadline of
    its own: a slow one is left to finish in its daemon thread)."""
    found: dict[str, Any] = {}

    def run() -> None:
        try:
            found["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, ValueError) as exc:  # UnicodeError: an IDNA label too long, empty
            found["error"] = exc

    thread = threading.Thread(target=run, name="fptrack-resolve", daemon=True)
    thread.start()
    thread.join(budget.left())
    if thread.is_alive():
        raise TimeoutError("the name did not resolve in time")
    if "error" in found:
        raise Unresolved(f"{host} does not resolve: {found['error']}")
    return found["infos"]


def resolve(
    host: str, port: int, allow_private: bool, deadline: float = 10.0
) -> list[tuple[int, Any]]:
    """The ``(family, sockaddr)`` pairs to connect to for ``host``, resolved once;
    :class:`OutboundError` when it does not resolve or (without ``allow_private``) any
    address it resolves to is internal (:func:`internal`), so a name cannot hide one."""
    return _resolve(host, port, allow_private, Deadline(deadline))


def _resolve(host: str, port: int, allow_private: bool, budget: Deadline) -> list[tuple[int, Any]]:
    try:
        literal: Address | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        _check(host, literal, allow_private)  # before any system call: no lookup at all
        try:
            infos = socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST
            )
        except (OSError, ValueError) as exc:  # a zone naming no interface of this machine
            raise OutboundError(f"{host} is not an address to connect to: {exc}") from None
    else:
        infos = _getaddrinfo(host, port, budget)
    addresses = []
    for family, _, _, _, sockaddr in infos:
        _check(host, ipaddress.ip_address(sockaddr[0].split("%", 1)[0]), allow_private)
        addresses.append((family, sockaddr))
    if not addresses:
        raise Unresolved(f"{host} does not resolve")
    return addresses


def _check(host: str, address: Address, allow_private: bool) -> None:
    if not allow_private and internal(address):
        address = ipaddress.ip_address(str(address).split("%", 1)[0])  # the zone aside
        raise Refused(f"{host} is a private, loopback or reserved address ({address})")


def refusal(
    url: str, allow_private: bool, deadline: float = 10.0, unresolved_ok: bool = False
) -> str:
    """Why a request to ``url`` would be refused (not http(s), not a host, an internal
    address without ``allow_private``, does not resolve), in one line, or "".
    ``unresolved_ok``: a name that does not resolve now (or not within ``deadline``) passes
    (checking a URL when it is saved: the request checks again). Never raises."""
    try:
        _, host, port, _ = _target(url)
        if not allow_private:
            resolve(host, port, False, deadline)
    except OutboundError as exc:
        return "" if unresolved_ok and isinstance(exc, Unresolved) else exc.detail
    except TimeoutError:
        return "" if unresolved_ok else f"{url}: the host name did not resolve in {deadline:g} s"
    return ""


def connect(
    host: str, port: int, deadline: Deadline, allow_private: bool, tls: bool = False
) -> socket.socket:
    """A socket connected to ``host`` (resolved once, checked: :func:`resolve`), TLS over it
    when ``tls``, every read and write bounded by ``deadline``; :class:`OutboundError`,
    :class:`TimeoutError` (the deadline passed) or :class:`OSError`."""
    addresses = _resolve(host, port, allow_private, deadline)
    error: OSError | None = None
    for family, sockaddr in addresses:
        sock = _Socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(deadline.left())
            sock.connect(sockaddr)
        except TimeoutError:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            error = exc
            continue
        sock.budget = deadline
        return wrap(sock, host, deadline) if tls else sock
    raise error or OSError("no address to connect to")


def wrap(sock: socket.socket, host: str, deadline: Deadline) -> ssl.SSLSocket:
    """TLS over a connected socket, the handshake and every read and write within
    ``deadline``, the certificate checked against ``host``."""
    try:
        sock.settimeout(deadline.left())
        wrapped = tls_context().wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise
    wrapped.budget = deadline  # type: ignore[attr-defined]
    return wrapped


def request(
    method: str,
    url: str,
    policy: Policy,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    read_body: bool = True,
) -> Response:
    """One request under ``policy`` (see the module docstring); :class:`OutboundError` on
    any failure (an HTTP error status is an answer: the caller reads ``status``)."""
    budget = Deadline(policy.deadline)
    try:
        return _request(method, url, policy, budget, body, dict(headers or {}), read_body)
    except TimeoutError:
        raise OutboundError(f"{url}: no whole answer within {policy.deadline:g} s") from None
    except OutboundError:
        raise
    except CutOffHeaders:
        raise OutboundError(f"{url}: the answer was cut off in its headers") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise OutboundError(f"cannot fetch {url}: {text}") from None


def _request(
    method: str,
    url: str,
    policy: Policy,
    budget: Deadline,
    body: bytes | None,
    headers: dict[str, str],
    read_body: bool,
) -> Response:
    hops = 0
    while True:
        scheme, host, port, path = _target(url)
        internal_ok = policy.may_reach_internal(host, port)
        sock = connect(host, port, budget, internal_ok, scheme == "https")
        connection = (
            http.client.HTTPSConnection(host, port, context=tls_context())
            if scheme == "https"
            else http.client.HTTPConnection(host, port)
        )
        connection.response_class = _Response
        connection.sock = sock  # connected to the checked address: never resolved again
        try:
            connection.request(method, path, body, {"Connection": "close", **headers})
            answer = connection.getresponse()
            location = answer.getheader("Location")
            if answer.status in REDIRECTS and location and policy.max_redirects:
                hops += 1
                if hops > policy.max_redirects:
                    raise OutboundError(f"{url}: more than {policy.max_redirects} redirects")
                url = urljoin(url, location.strip())
                if answer.status == 303 or (answer.status in (301, 302) and method == "POST"):
                    method, body = "GET", None
                continue
            data = _read(answer, url, policy.max_bytes) if read_body else b""
            return Response(url, answer.status, answer.reason, answer.headers, data)
        finally:
            connection.close()


def _read(answer: http.client.HTTPResponse, url: str, max_bytes: int) -> bytes:
    """The body of ``answer``, at most ``max_bytes``; :class:`OutboundError` when it is over,
    or cut off before its ``Content-Length`` or its last chunk (:meth:`read1
    <http.client.HTTPResponse.read1>` returns the short body as if whole, or raises
    :class:`http.client.IncompleteRead` for a chunked one)."""
    length = answer.getheader("Content-Length", "")
    if length.strip().isdigit() and int(length) > max_bytes:
        raise OutboundError(f"{url}: the page is over {max_bytes:,} bytes")
    chunks, size = [], 0
    while True:
        try:
            chunk = answer.read1(CHUNK)
        except http.client.IncompleteRead:
            raise OutboundError(f"{url}: the answer was cut off after {size:,} bytes") from None
        if not chunk:
            if answer.length:  # bytes still due by Content-Length
                expected = size + answer.length
                raise OutboundError(
                    f"{url}: the answer was cut off after {size:,} of {expected:,} bytes"
                )
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise OutboundError(f"{url}: the page is over {max_bytes:,} bytes")
        chunks.append(chunk)
