"""The outbound policy (:mod:`matcher.outbound`) against real servers on 127.0.0.1: one
deadline for the whole request however slowly a server sends its status line, headers or
body; internal addresses refused for query by URL and webhooks alike unless opted in;
redirects checked at every hop; bodies capped."""

from __future__ import annotations

import ipaddress
import ssl
import time
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import pytest

from admin.fetch import FetchError, fetch
from bench.fixture_site import FixtureSite, page
from matcher import notify, outbound
from tests.support.alerts import webhook_receiver
from tests.support.outbound import private_address, self_signed, slow_server, tls_slow_server
from tests.support.servers import session

DEADLINE = 1.0
MARGIN = 1.5
"""A request ends at most this long after its deadline (generous: it proves the bound)."""


def timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    try:
        result = call()
    except Exception as exc:  # returned, to be checked by the test
        result = exc
    return result, time.monotonic() - started


@pytest.mark.parametrize("mode", ["status", "headers", "body", "hang"])
def test_query_by_url_ends_by_its_deadline_however_slow_the_server(mode: str) -> None:
    with slow_server() as server:
        error, took = timed(lambda: fetch(server.url(mode), allow_private=True, deadline=DEADLINE))
        assert server.paths == ["/" + mode]  # the server was reached, and dripped
    assert isinstance(error, FetchError), error
    assert took < DEADLINE + MARGIN, f"{mode}: {took:.1f} s"
    assert error.detail == f"{server.url(mode)}: no whole answer within 1 s"
    assert "\n" not in error.detail and error.public == "that URL could not be fetched"


@pytest.mark.parametrize("mode", ["status", "headers", "hang"])
def test_a_webhook_send_ends_by_its_deadline_however_slow_the_receiver(mode: str) -> None:
    with slow_server() as server:
        outcome, took = timed(
            lambda: notify.post_webhook(
                server.url(mode), "s", b"{}", "d1", DEADLINE, allow_private=True
            )
        )
        assert server.paths == ["/" + mode]
    assert took < DEADLINE + MARGIN, f"{mode}: {took:.1f} s"
    assert not outcome.ok and outcome.status is None
    assert outcome.error == f"{server.url(mode)}: no whole answer within 1 s"


def test_a_webhook_answer_counts_once_its_headers_are_in() -> None:
    """The receiver's body is not read: one dripping it does not hold the sender."""
    with slow_server() as server:
        outcome, took = timed(
            lambda: notify.post_webhook(
                server.url("body"), "s", b"{}", "d1", 5.0, allow_private=True
            )
        )
    assert outcome.ok and outcome.status == 200 and took < 2


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
        for url in (server.url("headers"), server.url("body")):
            error, took = timed(partial(fetch, url, allow_private=True, deadline=DEADLINE))
            assert isinstance(error, FetchError) and took < DEADLINE + MARGIN, url
            assert error.detail.endswith("no whole answer within 1 s"), error.detail
    with slow_server() as silent:  # takes the TLS hello for a request, and never answers
        url = silent.url("x").replace("http://", "https://")
        error, took = timed(partial(fetch, url, allow_private=True, deadline=DEADLINE))
    assert isinstance(error, FetchError) and took < DEADLINE + MARGIN
    assert error.detail == f"{url}: no whole answer within 1 s"


def test_an_email_ends_by_its_deadline_however_slow_the_smtp_server() -> None:
    with slow_server(speaks_first=True) as server:
        smtp = notify.SmtpConfig.parse(f"smtp://127.0.0.1:{server.port}", "fp@example.com")
        message = notify.email_message(smtp, ["a@example.com"], "slow", [])
        outcome, took = timed(lambda: notify.send_email(smtp, ["a@example.com"], message, 1.0))
        assert server.paths == ["greeting"]
    assert took < DEADLINE + MARGIN and not outcome.ok
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
