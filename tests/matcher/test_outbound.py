"""The outbound policy (:mod:`matcher.outbound`) against real servers on 127.0.0.1: one
deadline for the whole request however slowly a server sends its status line, headers or
body; internal addresses refused for query by URL and webhooks alike unless opted in;
redirects checked at every hop; bodies capped; answers cut off are failures."""

from __future__ import annotations

import ipaddress
import socket
import ssl
from contextlib import suppress
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from admin.fetch import FetchError, fetch
from matcher import outbound
from matcher.alerts import notify
from matcher.settings import SmtpConfig
from tests.servers.alerts import webhook_receiver
from tests.servers.fixture_site import FixtureSite, page
from tests.servers.outbound import (
    odd_urls,
    private_address,
    self_signed,
    slow_server,
    tls_slow_server,
)
from tests.servers.raw_servers import raw_server
from tests.servers.session import session
from tests.support.waits import eventually

DEADLINE = 1.0
HUNG_UP_GUARD_S = 10.0
"""A hang guard for the slow server to see the client's hang-up, not a speed figure: the
client has closed by then, and the server's own give-up
(:data:`tests.servers.outbound.GIVE_UP_S`) is later still."""


def outcome_of(call: Any) -> Any:
    """``call()``'s result, or the exception it raised (to be checked by the test)."""
    try:
        return call()
    except Exception as exc:
        return exc


def client_hung_up(server: Any, path: str) -> None:
    """The client, not the slow server, ended the connection to ``path``: it closed while
    the server was still dripping or holding it open, before the server's own give-up."""
    eventually(lambda: server.hung_up == [path], HUNG_UP_GUARD_S, f"the client to hang up {path}")


@pytest.mark.parametrize("mode", ["status", "headers", "body", "hang"])
def test_query_by_url_ends_by_its_deadline_however_slow_the_server(mode: str) -> None:
    with slow_server() as server:
        error = outcome_of(lambda: fetch(server.url(mode), allow_private=True, deadline=DEADLINE))
        assert server.paths == ["/" + mode]  # the server was reached, and dripped
        client_hung_up(server, "/" + mode)
    assert isinstance(error, FetchError), error
    assert error.detail == f"{server.url(mode)}: no whole answer within 1 s"
    assert "\n" not in error.detail and error.public == "that URL could not be fetched"


@pytest.mark.parametrize("mode", ["status", "headers", "hang"])
def test_a_webhook_send_ends_by_its_deadline_however_slow_the_receiver(mode: str) -> None:
    with slow_server() as server:
        outcome = notify.post_webhook(
            server.url(mode), "s", b"{}", "d1", DEADLINE, allow_private=True
        )
        assert server.paths == ["/" + mode]
        client_hung_up(server, "/" + mode)
    assert not outcome.ok and outcome.status is None
    assert outcome.error == f"{server.url(mode)}: no whole answer within 1 s"


def test_a_webhook_answer_counts_once_its_headers_are_in() -> None:
    """The receiver's body is not read: one dripping it does not hold the sender (who hangs
    up while 100,000 bytes are still to come, a byte every 0.2 s)."""
    with slow_server() as server:
        outcome = notify.post_webhook(server.url("body"), "s", b"{}", "d1", 5.0, allow_private=True)
        client_hung_up(server, "/body")
    assert outcome.ok and outcome.status == 200


def test_https_is_bounded_the_same_and_checks_the_certificate(tmp_path, monkeypatch) -> None:
    cert, key = self_signed(str(tmp_path))
    with tls_slow_server(cert, key) as server:
        untrusted = notify.post_webhook(
            server.url("hang"), "s", b"{}", "d", 5.0, allow_private=True
        )
        assert not untrusted.ok and "CERTIFICATE_VERIFY_FAILED" in untrusted.error
        trusting = ssl.create_default_context(cafile=cert)
        trusting.sslsocket_class = outbound.tls_context().sslsocket_class
        monkeypatch.setattr(outbound, "tls_context", lambda: trusting)  # trusts the test's CA
        body = notify.post_webhook(server.url("body"), "s", b"{}", "d", 5.0, allow_private=True)
        assert body.ok and body.status == 200
        client_hung_up(server, "/body")
        for mode in ("headers", "body"):
            url = server.url(mode)
            error = outcome_of(partial(fetch, url, allow_private=True, deadline=DEADLINE))
            assert isinstance(error, FetchError), url
            assert error.detail == f"{url}: no whole answer within 1 s"
        eventually(
            lambda: server.hung_up == ["/body", "/headers", "/body"],
            HUNG_UP_GUARD_S,
            "the client to hang up the TLS slow server",
        )
    with slow_server() as silent:  # takes the TLS hello for a request, and never answers
        url = silent.url("x").replace("http://", "https://")
        error = outcome_of(partial(fetch, url, allow_private=True, deadline=DEADLINE))
        eventually(lambda: len(silent.hung_up) == 1, HUNG_UP_GUARD_S, "the client to hang up")
    assert isinstance(error, FetchError)
    assert error.detail == f"{url}: no whole answer within 1 s"


def test_an_email_ends_by_its_deadline_however_slow_the_smtp_server() -> None:
    with slow_server(speaks_first=True) as server:
        smtp = SmtpConfig.parse(f"smtp://127.0.0.1:{server.port}", "fp@example.com")
        message = notify.email_message(smtp, ["a@example.com"], "slow", [])
        outcome = notify.send_email(smtp, ["a@example.com"], message, DEADLINE)
        assert server.paths == ["greeting"]
        client_hung_up(server, "greeting")  # the greeting takes 24 bytes at 0.2 s each
    assert not outcome.ok
    assert outcome.error == f"127.0.0.1:{server.port}: no whole answer within 1 s"


def test_webhooks_to_internal_addresses_need_the_opt_in(redis_client) -> None:
    redis_port = urlsplit(session().redis_base).port
    with webhook_receiver("s") as receiver:
        local = receiver.url.replace("127.0.0.1", "localhost")
        for url in (receiver.url, local, f"http://127.0.0.1:{redis_port}/"):
            outcome = notify.post_webhook(url, "s", b"{}", "d1", DEADLINE)
            assert not outcome.ok and "private, loopback or reserved address" in outcome.error
            assert "(127.0.0.1)" in outcome.error
        assert receiver.requests == []  # refused before any connection
        for url in (receiver.url, local):
            assert notify.post_webhook(url, "s", b"{}", "d1", DEADLINE, allow_private=True).ok
        assert len(receiver.requests) == 2 and all(r.signed for r in receiver.requests)


def test_a_webhook_to_a_private_address_needs_the_opt_in() -> None:
    for url in ("http://10.1.2.3:9/", "http://[fd00::1]/", "http://100.100.100.200/"):
        outcome = notify.post_webhook(url, "s", b"{}", "d1", DEADLINE)
        assert not outcome.ok and "private, loopback or reserved" in outcome.error, url
    address = private_address()  # one of this machine's own, where a receiver can listen
    if address is None:
        return  # no private interface: the literal addresses above showed the refusal
    with webhook_receiver("s", host=address) as receiver:
        refused = notify.post_webhook(receiver.url, "s", b"{}", "d1", DEADLINE)
        assert not refused.ok and f"({address})" in refused.error and receiver.requests == []
        assert notify.post_webhook(receiver.url, "s", b"{}", "d1", DEADLINE, allow_private=True).ok
        assert len(receiver.requests) == 1


def test_a_redirect_to_an_internal_address_is_refused(monkeypatch) -> None:
    """Every hop is checked: the fixture site counts as public here (everything of this
    machine is internal), the redirect's target does not."""
    real = outbound.internal
    fixture = ipaddress.ip_address("127.0.0.1")
    monkeypatch.setattr(outbound, "internal", lambda a: a != fixture and real(a))
    with FixtureSite({"/": page("<p>外网</p>")}) as site:
        site.redirects.update({
            "/hop": (302, "/"),
            "/inside": (302, f"http://127.0.0.2:{site.port}/"),
            "/metadata": (301, "http://169.254.169.254/latest/meta-data/"),
            "/file": (302, "file:///etc/passwd"),
        })  # fmt: skip
        assert fetch(site.url("/hop"))[0].decode() == "<p>外网</p>"
        for path, why in (
            ("/inside", "(127.0.0.2)"),
            ("/metadata", "(169.254.169.254)"),
            ("/file", "is not an http(s) URL"),
        ):
            with pytest.raises(FetchError) as refused:
                fetch(site.url(path))
            assert why in refused.value.detail, path
        assert site.requested() == ["/hop", "/", "/inside", "/metadata", "/file"]
        site.redirects["/loop"] = (302, "/loop")
        with pytest.raises(FetchError, match="more than 5 redirects"):
            fetch(site.url("/loop"))


def test_a_body_over_the_cap_is_refused() -> None:
    def stream() -> Any:
        for _ in range(40):
            yield b"x" * 10_000

    pages = {
        "/sized": (200, {"Content-Type": "text/html"}, b"x" * 300_000),
        "/streamed": (200, {"Content-Type": "text/html"}, stream),
    }
    with FixtureSite(pages) as site:
        for path in ("/sized", "/streamed"):
            with pytest.raises(FetchError, match="over 100,000 bytes"):
                fetch(site.url(path), allow_private=True, max_bytes=100_000)
        body, _ = fetch(site.url("/streamed"), allow_private=True, max_bytes=400_000)
    assert len(body) == 400_000


def test_a_chinese_path_is_sent_percent_encoded() -> None:
    with FixtureSite({"/%E5%B0%8F%E8%AF%B4?p=%E4%B8%80": page("<p>小说</p>")}) as site:
        body, _ = fetch(site.url("/小说?p=一"), allow_private=True)
    assert body.decode() == "<p>小说</p>"


def answering(reply: bytes) -> Any:
    """A connection handler of :func:`raw_server`: read the request, send ``reply`` exactly,
    then end the answer (the client reads its end) and read what is left of the request
    until the client closes: a socket closed with unread data answers with a reset, which
    the client may see before the answer (a request's body sent after its headers)."""

    def handle(conn: socket.socket) -> None:
        with conn, suppress(OSError):
            conn.recv(65536)
            conn.sendall(reply)
            conn.shutdown(socket.SHUT_WR)
            conn.settimeout(5.0)
            while conn.recv(65536):
                pass

    return handle


CUT_OFF = {
    "in the headers": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n",
        "the answer was cut off in its headers",
    ),
    "in the status line": (b"HTTP/1.1 200 OK", "the answer was cut off in its headers"),
    "in a header line": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/ht",
        "the answer was cut off in its headers",
    ),
    "before its Content-Length": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n<p>a",
        "the answer was cut off after 4 of 10 bytes",
    ),
    "with no body at all": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
        "the answer was cut off after 0 of 10 bytes",
    ),
    "inside a chunk": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n<p>a<\r\n5\r\n/p",
        "the answer was cut off after 7 bytes",
    ),
    "before the last chunk": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n<p>a\r\n",
        "the answer was cut off after 4 bytes",
    ),
}


@pytest.mark.parametrize("where", CUT_OFF)
def test_an_answer_cut_off_is_a_failure_not_a_short_page(where: str) -> None:
    """http.client takes headers ended by the end of the stream as whole, and a body short
    of its Content-Length as all there is: the policy does not."""
    reply, detail = CUT_OFF[where]
    with raw_server(answering(reply)) as port:
        url = f"http://127.0.0.1:{port}/cut"
        with pytest.raises(FetchError) as failed:
            fetch(url, allow_private=True, deadline=5.0)
    assert failed.value.detail == f"{url}: {detail}"
    assert failed.value.public == "that URL could not be fetched"


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n<p>a",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n<p>a\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>a",  # ends with the connection
    ],
)
def test_a_whole_answer_closed_at_once_is_whole(reply: bytes) -> None:
    with raw_server(answering(reply)) as port:
        assert fetch(f"http://127.0.0.1:{port}/", allow_private=True, deadline=5.0)[0] == b"<p>a"


def test_a_webhook_answer_cut_off_counts_only_when_its_headers_are_in() -> None:
    """Its body is not read, so a body cut off does not matter; headers cut off do."""
    whole = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok"
    with raw_server(answering(whole)) as port:
        url = f"http://127.0.0.1:{port}/hook"
        outcome = notify.post_webhook(url, "s", b"{}", "d1", 5.0, allow_private=True)
    assert outcome.ok and outcome.status == 200
    with raw_server(answering(CUT_OFF["in the headers"][0])) as port:
        url = f"http://127.0.0.1:{port}/hook"
        outcome = notify.post_webhook(url, "s", b"{}", "d1", 5.0, allow_private=True)
    assert not outcome.ok and outcome.status is None
    assert outcome.error == f"{url}: the answer was cut off in its headers"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url=odd_urls(), allow_private=st.booleans(), unresolved_ok=st.booleans())
def test_no_url_form_makes_the_policy_raise_anything_but_its_refusal(
    url: str, allow_private: bool, unresolved_ok: bool
) -> None:
    """The checks a URL meets before any connection (:func:`matcher.outbound.refusal`, as a
    webhook is saved; :func:`~matcher.outbound.origin`, :meth:`~matcher.outbound.Policy.
    owning`, as a recheck or the TSA names its own host): a one-line reason or nothing,
    never another exception (``socket.gaierror`` from an IPv6 zone or an escaped host was
    one, and a 500 in the admin)."""
    why = outbound.refusal(url, allow_private, deadline=1.0, unresolved_ok=unresolved_ok)
    assert isinstance(why, str) and "\n" not in why
    try:
        host, port = outbound.origin(url)
        outbound.Policy(1.0).owning(url)
    except outbound.OutboundError as exc:
        assert exc.detail and "\n" not in exc.detail
        assert outbound.refusal(url, True, deadline=1.0)  # what names no host is refused
    else:
        assert 0 < port < 65536 and host
    if not allow_private and not why:  # passed: no address it names or resolves to is inside
        with suppress(outbound.OutboundError, TimeoutError):
            for _, sockaddr in outbound.resolve(host, port, False, 1.0):
                assert not outbound.internal(ipaddress.ip_address(sockaddr[0].split("%")[0]))


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://[fe80::1%25lo]:7213/ok", "fe80::1%lo is a private, loopback or reserved address"),
        ("http://127.0.0.2%2f:7213/ok", "'127.0.0.2%2f' is not a host name"),
        ("http://%31%32%37.0.0.1/", "'%31%32%37.0.0.1' is not a host name"),
        ("http://[::1/", "is not a URL fptrack can request: Invalid IPv6 URL"),
        ("http://u:p@host.invalid:99999/", "Port out of range"),
        ("http://0x7f.1:7213/", "0x7f.1 is a private, loopback or reserved address (127.0.0.1)"),
        ("http://" + "a" * 64 + ".invalid/", "is not a host name: encoding with 'idna' codec"),
    ],
)
def test_odd_url_forms_are_refused_with_a_reason(url: str, why: str) -> None:
    assert why in outbound.refusal(url, False, deadline=1.0, unresolved_ok=True)
    with pytest.raises(outbound.OutboundError, match=r"private|host name|URL|Port"):
        outbound.request("GET", url, outbound.Policy(1.0))


def test_a_recheck_reaches_its_own_host_and_nothing_internal_it_redirects_to() -> None:
    """A takedown's recheck (:func:`crawler.one_page.fetcher`) fetches the noticed page on
    its own loopback host (a watched site's, where the crawl found it); a redirect to
    another internal host, or to another port of its own (another service), is refused
    unless ``FPTRACK_OUTBOUND_ALLOW_PRIVATE``."""
    from crawler.one_page import fetcher
    from matcher.settings import Settings

    with FixtureSite({"/": page("<p>外网</p>")}) as site, FixtureSite({}) as other:
        site.redirects.update({
            "/hop": (302, "/"),
            "/inside": (302, f"http://127.0.0.2:{site.port}/"),
            "/port": (302, other.url("/")),
        })  # fmt: skip
        recheck = fetcher(Settings(query_deadline=DEADLINE))
        assert recheck(site.url("/hop")).status == 200
        for path, why in (("/inside", "(127.0.0.2)"), ("/port", "(127.0.0.1)")):
            refused = recheck(site.url(path))
            assert refused.status is None and why in refused.error, path
        assert other.requested() == []
        allowed = fetcher(Settings(query_deadline=DEADLINE, outbound_allow_private=True))
        assert allowed(site.url("/port")).status == 404 and other.requested() == ["/"]
