"""The admin's outbound requests (:mod:`matcher.outbound`) in the embedded admin of
``fptrack scan --serve`` (threaded server, one lock over its in-memory state): a fetch or a
test alert that hangs holds no other user's request; webhook rules to internal addresses
are refused when saved unless opted in, and checked again when sent; no URL form, however
odd, answers 500."""

from __future__ import annotations

import dataclasses
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings

from admin.context import Context
from matcher.store.alerts import AlertStore
from tests.servers.alerts import webhook_receiver
from tests.servers.http_server import WSGIServer
from tests.servers.net import wait_until
from tests.servers.outbound import odd_urls, slow_server
from tests.servers.raw_servers import raw_server
from tests.support.web import Browser, csrf, post

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


FORM_ERROR = re.compile(r'<p class="error" id="form-error">([^<]*)</p>')


def webhook_form(url: str) -> dict[str, str]:
    return {"name": "odd", "scope": "all", "mode": "immediate", "channel": "webhook",
            "url": url, "secret": "s3cret"}  # fmt: skip


def test_odd_webhook_urls_get_a_reason_in_the_form_the_cli_and_the_api(
    as_admin: FlaskClient, as_reviewer: FlaskClient, web_ctx: Context,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """An IPv6 zone and a percent-escaped host: a one-line reason (they were HTTP 500,
    ``socket.gaierror`` out of the policy), the same from ``fptrack alerts add``; a query by
    URL of either answers the API's one refusal (422), the form's page its message."""
    from admin.cli import main

    opt(web_ctx, alert_timeout=1.0)
    for url, why in (
        ("http://[fe80::1%25lo]:7213/ok", "fe80::1%lo is a private, loopback or reserved"),
        ("http://127.0.0.2%2f:7213/ok", "&#39;127.0.0.2%2f&#39; is not a host name"),
    ):
        response = post(as_admin, "/alerts/new", webhook_form(url))
        assert response.status_code == 400, url
        [reason] = FORM_ERROR.findall(response.get_data(as_text=True))
        assert why in reason and "FPTRACK_ALERT_ALLOW_PRIVATE=true allows it" in reason
        assert main(["alerts", "add", "odd", "--webhook", url], web_ctx) == 2
        err = capsys.readouterr().err
        assert why.replace("&#39;", "'") in err and err.count("\n") == 1
        api = as_reviewer.post("/api/v1/query", json={"url": url})
        assert api.status_code in (401, 403, 422), url  # never 500
        page = post(as_reviewer, "/query/", {"url": url})
        assert page.status_code == 200 and "that URL could not be fetched" in page.get_data(
            as_text=True
        )
    assert AlertStore(web_ctx.engine.store).rules() == []


@settings(
    max_examples=120, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(url=odd_urls())
def test_no_webhook_url_form_answers_500(as_admin: FlaskClient, web_ctx: Context, url: str) -> None:
    """Whatever the URL's form, saving it answers 302 (saved: it names a host outside) or 400
    with a one-line reason, never 500."""
    opt(web_ctx, alert_timeout=1.0)
    token = csrf(as_admin, "/alerts/new")
    response = as_admin.post("/alerts/new", data={**webhook_form(url), "csrf_token": token})
    assert response.status_code in (302, 400), (url, response.status_code)
    if response.status_code == 400:
        [reason] = FORM_ERROR.findall(response.get_data(as_text=True))
        assert reason.strip() and "\n" not in reason
