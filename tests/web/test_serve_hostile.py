"""``fptrack admin serve`` as it runs in production (gunicorn, its asyncio workers and the
buffering front, :mod:`admin.web.front`) against hostile clients and outages: slow clients
cost no thread, bodies are bounded by route before anything reads them, two admins on one
machine share no control socket, and a stopped MongoDB makes pages say so (503, one line)
while ``/metrics`` goes on serving.

Clients are real sockets (:mod:`tests.servers.hostile_clients`, the hostile benchmark's), the
admin the console command in a process group of its own, MongoDB a SecantusDB of the test's
own that the test stops for real.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import redis
from pymongo.database import Database

from admin.services.accounts import User, Users
from admin.services.api_tokens import ApiTokens
from matcher.store import Store, mongo_client
from tests.servers.hostile_clients import (
    DRIVER_WORDS,
    Browser,
    Rise,
    message,
    raw_request,
    slow_clients,
)
from tests.servers.net import free_port
from tests.servers.outage import Service, answers, children, mongo_uri, own_mongodb
from tests.support.waits import eventually
from tests.support.web import PASSWORDS

SECRET = "a-test-secret-of-enough-length"


def accounts(store: Store) -> None:
    users = Users(store)
    for name, (role, password) in PASSWORDS.items():
        users.create(name, password, role)


def serve(
    tmp_path: Path, env: dict[str, str], name: str = "admin", *extra: str
) -> tuple[Service, str]:
    """``fptrack admin serve`` on a free port (1 worker); its base URL once it answers."""
    bind = f"127.0.0.1:{free_port()}"
    argv = ["admin", "serve", "--workers", "1", "--bind", bind, *extra]
    admin = Service(argv, {**env, "FPTRACK_ADMIN_SECRET": SECRET}, tmp_path / f"{name}.log")
    base = f"http://{bind}/"
    eventually(lambda: answers(base + "healthz"), 90, f"{name} to serve")
    return admin, base


def tree(admin: Service) -> list[int]:
    return [admin.process.pid, *children(admin.process.pid)]


def test_slow_clients_hold_no_thread_and_bodies_are_bounded(
    tmp_path: Path, mongo_db: Database, redis_client: redis.Redis
) -> None:
    accounts(Store.connect(os.environ["FPTRACK_MONGO_URI"], mongo_db.name, mongo_db.client))
    admin, base = serve(tmp_path, dict(os.environ), "admin", "--threads", "2")
    stop = threading.Event()
    try:
        # 40 clients sending headers (30) or a login form's body (10) one byte a second:
        # with gunicorn's gthread worker, the first two held the worker's two threads
        clients = slow_clients(base, 40, 1.0, stop)
        for client in clients:
            client.connected.wait(10)
        time.sleep(2.5)
        browser = Browser(base)
        started = time.perf_counter()
        status, page, _ = browser.request("login")
        took = time.perf_counter() - started
        assert status == 200 and 'id="login-form"' in page
        assert took < 1.0, f"GET /login took {took:.2f} s under 40 slow clients"
        assert browser.login("alice", PASSWORDS["alice"][1]) == 200
        assert all(client.is_alive() for client in clients)  # all still held open
        stop.set()
        # the front hands the application the request as gunicorn's WSGI workers did: the
        # query string's UTF-8, the scheme a proxy on 127.0.0.1 says it was asked with
        status, page, _ = browser.request("works/?q=" + urllib.parse.quote("茶 tea&x"))
        assert status == 200 and 'value="茶 tea&amp;x"' in page
        proxied = {"X-Forwarded-Proto": "https"}
        status, spec, _ = Browser(base).request("api/v1/openapi.json", headers=proxied)
        assert status == 200 and f'"url":"https://{urllib.parse.urlsplit(base).netloc}"' in spec

        host = urllib.parse.urlsplit(base).netloc
        body = b"a=1&" * (10 * 1024 * 1024 // 4)
        head = (
            f"POST /login HTTP/1.1\r\nHost: {host}\r\n"
            f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}"
        )
        with Rise(lambda: tree(admin)) as rise:
            status, answer = raw_request(base, head, body)
        assert status == 413, answer[:300]
        assert message(answer) == "the request is too large: this page takes at most 64 KiB"
        assert rise.rise < 50, f"an admin process grew {rise.rise:.0f} MB"
        # sent chunked, the size is learnt by reading: reading stops at the route's limit
        chunked = head.replace(f"Content-Length: {len(body)}", "Transfer-Encoding: chunked")
        chunked = chunked.replace("/login", "/works/upload")
        with Rise(lambda: tree(admin)) as rise:
            status, answer = raw_request(base, chunked, iter([b"x" * (1 << 20)] * 20))
        assert status == 413 and rise.rise < 50, answer[:300]
        # a logged-in user's upload larger than the front keeps in memory arrives whole
        text = ("茶" * 400_000 + "\n").encode()  # 1.2 MB
        boundary = "b0undary"
        form = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n'
                f"{browser.token}\r\n--{boundary}\r\nContent-Disposition: form-data; "
                'name="files"; filename="tea.txt"\r\nContent-Type: text/plain\r\n\r\n'
            ).encode()
            + text
            + f"\r\n--{boundary}--\r\n".encode()
        )
        request = urllib.request.Request(
            base + "works/upload", form,
            {"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )  # fmt: skip
        with browser.opener.open(request, timeout=120) as reply:
            assert reply.status == 200 and "tea.txt" in reply.read().decode()
        assert admin.running, admin.output()
    finally:
        stop.set()
        admin.stop()
    assert "Traceback" not in admin.output(), admin.output()


def test_two_admins_on_one_machine_share_no_control_socket(
    tmp_path: Path, mongo_db: Database, redis_client: redis.Redis
) -> None:
    home, runtime = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    runtime.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    first, first_base = serve(tmp_path, env, "first")
    try:
        second, second_base = serve(tmp_path, env, "second")
        try:
            assert answers(first_base + "healthz") and answers(second_base + "healthz")
            sockets = [p for p in (*home.rglob("*"), *runtime.rglob("*")) if p.is_socket()]
            assert sockets == []
        finally:
            second.stop()
        assert answers(first_base + "healthz")
        assert "control socket" not in first.output().lower() + second.output().lower()
    finally:
        first.stop()


def _closed_by_server(sock: socket.socket, within: float) -> float | None:
    """Seconds until the server closed ``sock`` (a byte of a header line sent every 0.5 s
    meanwhile), or ``None`` if it was still open after ``within``."""
    started = time.monotonic()
    sock.settimeout(0.5)
    while time.monotonic() - started < within:
        try:
            if sock.recv(1024) == b"":
                return time.monotonic() - started
        except TimeoutError:
            pass
        except ConnectionError:
            return time.monotonic() - started
        try:
            sock.sendall(b"X")
        except OSError:
            return time.monotonic() - started
    return None


def test_headers_too_slow_are_cut_off_and_connections_capped(
    tmp_path: Path, mongo_db: Database, redis_client: redis.Redis
) -> None:
    """A client still sending its headers after ``--header-timeout`` is closed; one past
    ``--max-connections`` is closed as it opens; a client that behaves is served."""
    options = ("--header-timeout", "2", "--max-connections", "4")
    admin, base = serve(tmp_path, dict(os.environ), "admin", *options)
    address = urllib.parse.urlsplit(base)
    where = (address.hostname, address.port)
    try:
        slow = socket.create_connection(where)
        slow.sendall(b"GET /login HTTP/1.1\r\nHost: x\r\nX-Drip: ")
        took = _closed_by_server(slow, 15)
        assert took is not None and 1.5 <= took <= 8, took
        slow.close()

        held = [socket.create_connection(where) for _ in range(4)]
        time.sleep(0.3)
        extra = socket.create_connection(where)
        took = _closed_by_server(extra, 1.5)
        assert took is not None and took < 1.5, took  # closed as it opened, not at 2 s
        for sock in [*held, extra]:
            sock.close()
        eventually(lambda: answers(base + "login"), 10, "the admin to serve again")
    finally:
        admin.stop()


def test_a_stopped_store_is_a_503_page_and_metrics_go_on(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    server = own_mongodb(tmp_path / "mongodb")
    server.start()
    uri = mongo_uri(server)
    client = mongo_client(uri)
    try:
        store = Store(client["served_outage"])
        accounts(store)
        token = ApiTokens(store).create(User("victor", "viewer"), "prometheus", "viewer").secret
    finally:
        client.close()
    env = {
        **os.environ,
        "FPTRACK_MONGO_URI": uri,
        "FPTRACK_MONGO_DB": "served_outage",
        "FPTRACK_METRICS_CACHE_SECONDS": "0",
    }
    admin, base = serve(tmp_path, env)
    bearer = {"Authorization": f"Bearer {token}"}
    try:
        browser = Browser(base)
        assert browser.login("alice", PASSWORDS["alice"][1]) == 200
        server.stop()
        status, page, headers = browser.request("matches/")
        assert status == 503, page
        assert headers["retry-after"] == "5" and headers["refresh"] == "5"
        assert message(page) == "the store (MongoDB) is not answering; retrying in 5 s."
        status, form, headers = browser.request("tokens/", {"name": "t", "role": "viewer"})
        assert status == 503 and "refresh" not in headers
        assert (
            message(form)
            == "the store (MongoDB) is not answering: send the form again in a moment."
        )
        status, api, _ = Browser(base).request("api/v1/works", headers=bearer)
        assert status == 503
        assert api.strip() == '{"error":"the store (MongoDB) is not answering; retry in 5 s"}'
        for text in (page, form, api):
            assert not [word for word in DRIVER_WORDS if word in text], text
        # Prometheus' token, read from the store when the worker started, still lets it in
        status, metrics, _ = Browser(base).request("metrics", headers=bearer)
        assert status == 200
        assert 'fptrack_metrics_source_up{source="mongodb"} 0.0' in metrics
        assert 'fptrack_metrics_source_up{source="redis"} 1.0' in metrics
        forged = {"Authorization": "Bearer fpt_" + "A" * 43}
        status, refused, headers = Browser(base).request("metrics", headers=forged)
        assert status == 503 and headers["retry-after"] == "15", refused
        assert "answered 503, MongoDB does not answer (connection refused)" in admin.output()
        server.start()
        eventually(lambda: browser.request("matches/")[0] == 200, 60, "the pages to come back")
        assert admin.running, admin.output()
    finally:
        admin.stop()
        server.stop()
    assert "Traceback" not in admin.output(), admin.output()


def test_a_stopped_redis_is_a_503_where_a_page_needs_it(tmp_path: Path, mongo_db: Database) -> None:
    from admin.context import Context
    from admin.services.dispatch import InlineDispatch
    from admin.web.app import create_app
    from matcher.index.redis_clients import COMMAND, connect_url
    from matcher.matching.engine import Engine
    from matcher.settings import Settings
    from tests.servers.outage import own_redis, redis_url
    from tests.support.web import login, post

    server = own_redis(tmp_path / "redis", keeps_data=False)
    server.start()
    try:
        index = connect_url(redis_url(server), COMMAND)  # gives up within a second
        settings = Settings.from_env(redis_prefix="fptrack-test-outage", mongo_db=mongo_db.name)
        engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=index)
        ctx = Context(settings=settings, engine=engine)
        accounts(engine.store)
        dispatch = InlineDispatch(ctx, threading.RLock())
        app = create_app(ctx, dispatch=dispatch, secret_key="k", lock=dispatch.lock)
        client = app.test_client()
        assert login(client, "alice").status_code == 302
        server.stop()
        assert client.get("/matches/").status_code == 200  # a page that needs no Redis
        answer = post(client, "/query/", {"text": "茶" * 300})
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
        page = answer.get_data(as_text=True)
        assert "Redis is not answering: send the form again in a moment." in page
        assert not [
            word for word in (*DRIVER_WORDS, "Error 111", "Connection refused") if word in page
        ]
    finally:
        server.stop()
