"""The admin's outbound requests (:mod:`matcher.outbound`) in the embedded admin of
``fptrack scan --serve`` (threaded server, one lock over its in-memory state): a fetch or a
test alert that hangs holds no other user's request; webhook rules to internal addresses
are refused when saved unless opted in, and checked again when sent."""

from __future__ import annotations

import dataclasses
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from admin.context import Context
from bench.http_server import WSGIServer
from bench.net import wait_until
from matcher.store.alerts import AlertStore
from tests.support.alerts import webhook_receiver
from tests.support.outbound import slow_server
from tests.support.raw_servers import raw_server
from tests.web.web_support import Browser, post

HANG_DEADLINE = 120.0
"""The outbound deadline while a request hangs: longer than the slow server's own give-up, so
the hang lasts until the test stops that server (the deadline is checked on its own below)."""
REACHED_GUARD_S = 30.0
"""A hang guard for the slow server to see the request, not a speed figure."""
QUERY_GUARD_S = 15.0
"""How long a query with a deadline of 1 s may keep a silent server's connection: a guard
fifteen times that deadline, and below the default one (:data:`admin.fetch.DEADLINE_S`,
20 s) that a view ignoring ``FPTRACK_QUERY_DEADLINE`` would wait."""


@contextmanager
def serving(app: Flask) -> Iterator[str]:
    """The app on a threaded server, as ``fptrack scan --serve`` runs it."""
    with WSGIServer(app, threaded=True) as server:
        yield server.url("/")


def wait_for(condition: Any) -> None:
    assert wait_until(condition, REACHED_GUARD_S, interval=0.02), "the slow server was not reached"


def opt(ctx: Context, **changes: Any) -> None:
    ctx.__dict__["settings"] = dataclasses.replace(ctx.settings, **changes)


def in_background(call: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """``call()`` in a thread of its own; ``done["page"]`` its answer once it returns."""
    done: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: done.update(page=call()))
    thread.start()
    return thread, done


@contextmanager
def silent_server() -> Iterator[tuple[str, threading.Event]]:
    """An HTTP URL whose server reads the request and never answers nor closes, and an event
    set when the client hangs up: only the client's own deadline ends such a request."""
    hung_up = threading.Event()

    def hold(conn: socket.socket) -> None:
        with conn, suppress(OSError):
            conn.recv(65536)  # the request
            while conn.recv(65536):  # b"": the client closed the connection
                pass
            hung_up.set()

    with raw_server(hold) as port:
        yield f"http://127.0.0.1:{port}/silent", hung_up


def test_other_users_are_answered_while_a_query_fetch_hangs(app: Flask, web_ctx) -> None:
    opt(web_ctx, query_allow_private=True, query_deadline=HANG_DEADLINE)
    with serving(app) as base:
        rita, victor = Browser(base, "rita"), Browser(base, "victor")
        with slow_server() as slow:
            thread, done = in_background(lambda: rita.post("query/", {"url": slow.url("hang")}))
            wait_for(lambda: slow.paths)
            victor.get("matches/")
            Browser(base, "alice")  # a login
            victor.get("matches/")
            # All answered while the fetch hangs: it ends only when the slow server stops.
            assert thread.is_alive() and done == {}
        thread.join(REACHED_GUARD_S)  # the slow server stopped: the fetch fails at once
        assert "that URL could not be fetched" in done["page"]
        # The query's deadline: a server that never answers (nor closes) is given up on.
        opt(web_ctx, query_deadline=1.0)
        with silent_server() as (url, hung_up):
            thread, done = in_background(lambda: rita.post("query/", {"url": url}))
            assert hung_up.wait(QUERY_GUARD_S)  # by fptrack: the server never closes
            thread.join(REACHED_GUARD_S)
    assert "that URL could not be fetched" in done["page"]


def test_other_users_are_answered_while_a_test_alert_hangs(app: Flask, web_ctx) -> None:
    opt(web_ctx, alert_allow_private=True, alert_timeout=HANG_DEADLINE)
    with serving(app) as base:
        alice, victor = Browser(base, "alice"), Browser(base, "victor")
        with slow_server() as slow:
            form = {"name": "slow", "scope": "all", "mode": "immediate", "channel": "webhook",
                    "url": slow.url("status")}  # fmt: skip
            alice.post("alerts/new", form)
            [rule] = AlertStore(web_ctx.engine.store).rules()
            thread, done = in_background(lambda: alice.post(f"alerts/{rule.id}/test", {}))
            wait_for(lambda: slow.paths)
            victor.get("matches/")
            victor.get("login")
            victor.get("matches/")
            assert thread.is_alive() and done == {}  # all answered while the test alert hangs
        thread.join(REACHED_GUARD_S)
        assert "test message to slow failed" in done["page"]
        # The deadline cuts a slow-loris receiver off, and the page names it.
        opt(web_ctx, alert_timeout=1.0)
        with slow_server() as slow:
            AlertStore(web_ctx.engine.store).remove_rule(rule.id)
            alice.post("alerts/new", {**form, "url": slow.url("status")})
            [rule] = AlertStore(web_ctx.engine.store).rules()
            page = alice.post(f"alerts/{rule.id}/test", {})
    assert re.search(r"test message to slow failed: .*no whole answer within 1 s", page)


def test_internal_webhooks_are_refused_when_saved_and_when_sent(
    as_admin: FlaskClient, web_ctx
) -> None:
    store = AlertStore(web_ctx.engine.store)
    with webhook_receiver("s3cret") as receiver:
        for url in (receiver.url, "http://192.168.1.10:6379/", "http://[::1]:8080/"):
            form = {"name": "inside", "scope": "all", "mode": "immediate",
                    "channel": "webhook", "url": url, "secret": "s3cret"}  # fmt: skip
            response = post(as_admin, "/alerts/new", form)
            assert response.status_code == 400, url
            page = response.get_data(as_text=True)
            assert "private, loopback or reserved address" in page
            assert "FPTRACK_ALERT_ALLOW_PRIVATE=true allows it" in page
        assert store.rules() == []
        opt(web_ctx, alert_allow_private=True)
        form["url"] = receiver.url
        assert post(as_admin, "/alerts/new", form).status_code == 302
        [rule] = store.rules()
        post(as_admin, f"/alerts/{rule.id}/test")
        assert len(receiver.requests) == 1
        opt(web_ctx, alert_allow_private=False)  # withdrawn: the send checks again
        page = post(as_admin, f"/alerts/{rule.id}/test", follow_redirects=True)
        assert "private, loopback or reserved address (127.0.0.1)" in page.get_data(as_text=True)
        assert len(receiver.requests) == 1
