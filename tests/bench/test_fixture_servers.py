"""The fixture servers' base (:mod:`tests.servers.http_server`) and the ports and waits of
:mod:`tests.servers.net`, on real sockets of 127.0.0.1; and the examples of their docstrings (and of
:mod:`tests.servers.fixture_site`'s), which ``--doctest-modules`` does not collect outside the
test paths."""

from __future__ import annotations

import doctest
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from types import ModuleType

import pytest

from tests.servers import fixture_site, http_server, net
from tests.servers.fixture_site import FixtureSite, page
from tests.servers.http_server import FixtureServer, QuietHandler, WSGIServer
from tests.servers.net import free_port, free_ports, port_open, wait_for_port, wait_until
from tests.support.waits import eventually


class Echo(QuietHandler):
    def do_GET(self) -> None:
        body = self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return reply.read()


@pytest.mark.parametrize("module", [net, http_server, fixture_site], ids=lambda m: m.__name__)
def test_docstring_examples(module: ModuleType) -> None:
    failed, tried = doctest.testmod(module)
    assert tried > 0 and failed == 0


def test_the_port_is_bound_when_made_and_served_from_start_to_stop() -> None:
    server = FixtureServer(Echo)
    assert server.url("/a?b=1") == f"http://127.0.0.1:{server.port}/a?b=1"
    assert server.url("/", host="localhost") == f"http://localhost:{server.port}/"
    server.start()
    try:
        assert get(server.url("/x")) == b"/x"
    finally:
        server.stop()
    assert not port_open("127.0.0.1", server.port)
    with pytest.raises(urllib.error.URLError):
        get(server.url("/x"))


def test_a_server_never_started_stops_at_once() -> None:
    """No ``shutdown()`` of a serving loop that never ran (it would wait for ever)."""
    server = FixtureServer(Echo)
    stopping = threading.Thread(target=server.stop, daemon=True)
    stopping.start()
    eventually(lambda: not stopping.is_alive(), 10, "the stop to return")
    assert not port_open("127.0.0.1", server.port)


def test_a_subclass_gives_its_handler() -> None:
    class Counting(FixtureServer):
        def __init__(self) -> None:
            self.hits = 0
            super().__init__()

        def make_handler(self) -> type[QuietHandler]:
            owner = self

            class Handler(Echo):
                def do_GET(self) -> None:
                    owner.hits += 1
                    super().do_GET()

            return Handler

    with Counting() as server:
        assert get(server.url("/1")) == b"/1" and get(server.url("/2")) == b"/2"
    assert server.hits == 2
    with pytest.raises(TypeError, match="gives no request handler"):
        FixtureServer()


def test_a_fixture_site_is_a_fixture_server() -> None:
    with FixtureSite({"/": page("<p>你好</p>")}) as site:
        assert isinstance(site, FixtureServer)
        assert get(site.url("/")).decode() == "<p>你好</p>"
        assert site.requested() == ["/"]


def test_a_wsgi_app_is_served() -> None:
    def app(environ: dict, start_response) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [environ["PATH_INFO"].encode()]

    with WSGIServer(app) as server:
        assert get(server.url("/wsgi")) == b"/wsgi"
    assert not port_open("127.0.0.1", server.port)


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(4)
    assert len(set(ports)) == 4
    assert not any(port_open("127.0.0.1", p) for p in [*ports, free_port()])


def test_wait_until_returns_the_value_or_none_at_the_deadline() -> None:
    calls: list[float] = []

    def third_time() -> str:
        calls.append(time.monotonic())
        return "yes" if len(calls) == 3 else ""

    assert wait_until(third_time, timeout=5, interval=0.01) == "yes"
    started = time.monotonic()
    assert wait_until(lambda: False, timeout=0.3, interval=0.05) is None
    assert 0.3 <= time.monotonic() - started < 2


def test_wait_for_port_sees_a_server_come_up_or_exit() -> None:
    port = free_port()
    listen_late = (
        "import socket, time; time.sleep(0.3); s = socket.socket(); "
        f"s.bind(('127.0.0.1', {port})); s.listen(); time.sleep(30)"
    )
    late = subprocess.Popen([sys.executable, "-c", listen_late])
    try:
        assert not port_open("127.0.0.1", port)
        assert wait_for_port("127.0.0.1", port, timeout=20, process=late)
    finally:
        late.kill()
        late.wait()
    dies = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    started = time.monotonic()
    assert not wait_for_port("127.0.0.1", free_port(), timeout=30, process=dies)
    assert time.monotonic() - started < 20  # not the whole timeout: it exited
    assert not wait_for_port("127.0.0.1", free_port(), timeout=0.2)
