"""Fetching a page for a query: private addresses refused (redirects too), bodies bounded in
size and time, one public message for every failure."""

from __future__ import annotations

import time
from typing import Any

import pytest

from admin.fetch import PUBLIC_MESSAGE, FetchError, check_url, fetch, refused_address
from tests.servers.fixture_site import FixtureSite, page


def test_private_and_reserved_addresses_are_refused() -> None:
    for host in ("127.0.0.1", "10.1.2.3", "192.168.0.1", "169.254.169.254", "::1", "0.0.0.0"):
        assert refused_address(host, 80), host
    assert refused_address("8.8.8.8", 80) == ""
    with pytest.raises(FetchError) as refused:
        check_url("http://[::1]:6379/", allow_private=False)
    assert refused.value.public == PUBLIC_MESSAGE and "loopback" in refused.value.detail
    with pytest.raises(FetchError):
        check_url("gopher://example.com/", allow_private=True)


def test_a_redirect_into_the_network_is_refused() -> None:
    with FixtureSite({"/": page("<p>内网</p>")}, redirects={"/go": (302, "/")}) as site:
        assert fetch(site.url("/go"), allow_private=True)[0].decode() == "<p>内网</p>"
        with pytest.raises(FetchError, match="loopback"):
            fetch(site.url("/go"), allow_private=False)


def test_bodies_are_bounded_in_size_and_in_time() -> None:
    def slowly() -> Any:
        for _ in range(60):
            time.sleep(0.5)
            yield b"x"

    pages = {
        "/big": (200, {"Content-Type": "text/html"}, b"x" * 300_000),
        "/slow": (200, {"Content-Type": "text/html"}, slowly),
    }
    with FixtureSite(pages) as site:
        with pytest.raises(FetchError, match="over 100,000 bytes"):
            fetch(site.url("/big"), allow_private=True, max_bytes=100_000)
        with pytest.raises(FetchError, match="within 2 s"):
            fetch(site.url("/slow"), allow_private=True, deadline=2)
        with pytest.raises(FetchError) as missing:
            fetch(site.url("/nothing"), allow_private=True)
    assert missing.value.public == PUBLIC_MESSAGE and "Not Found" in missing.value.detail
