"""The admin's outbound requests (:mod:`matcher.outbound`) in the embedded admin of
``fptrack scan --serve`` (threaded server, one lock over its in-memory state): a fetch or a
test alert that hangs holds no other user's request; webhook rules to internal addresses
are refused when saved unless opted in, and checked again when sent."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.serving import make_server

from admin.context import Context
from matcher.store.alerts import AlertStore
from tests.alert_support import webhook_receiver
from tests.outbound_support import slow_server
from tests.web.web_support import Browser, post

HANG_DEADLINE = 5.0
ANSWERED_WITHIN = 1.0


@contextmanager
def serving(app: Flask) -> Iterator[str]:
    """The app on a threaded server, as ``fptrack scan --serve`` runs it."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


def answered_in(call: Any) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


def wait_for(condition: Any, seconds: float = 5.0) -> None:
    ends = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < ends, "the slow server was not reached"
        time.sleep(0.02)


def opt(ctx: Context, **changes: Any) -> None:
    ctx.__dict__["settings"] = dataclasses.replace(ctx.settings, **changes)


def test_other_users_are_answered_while_a_query_fetch_hangs(app: Flask, web_ctx) -> None:
    opt(web_ctx, query_allow_private=True, query_deadline=HANG_DEADLINE)
    with serving(app) as base, slow_server() as slow:
        rita, victor = Browser(base, "rita"), Browser(base, "victor")
        done: dict[str, Any] = {}

        def query() -> None:
            started = time.monotonic()
            done["page"] = rita.post("query/", {"url": slow.url("headers")})
            done["took"] = time.monotonic() - started

        thread = threading.Thread(target=query)
        thread.start()
        wait_for(lambda: slow.paths)
        assert answered_in(lambda: victor.get("matches/")) < ANSWERED_WITHIN
        assert answered_in(lambda: Browser(base, "alice")) < ANSWERED_WITHIN  # a login
        assert thread.is_alive()  # the fetch still hangs meanwhile
        thread.join(HANG_DEADLINE + 5)
    assert done["took"] < HANG_DEADLINE + 1.5
    assert "that URL could not be fetched" in done["page"]


def test_other_users_are_answered_while_a_test_alert_hangs(app: Flask, web_ctx) -> None:
    opt(web_ctx, alert_allow_private=True, alert_timeout=HANG_DEADLINE)
    with serving(app) as base, slow_server() as slow:
        alice, victor = Browser(base, "alice"), Browser(base, "victor")
        form = {"name": "slow", "scope": "all", "mode": "immediate", "channel": "webhook",
                "url": slow.url("status")}  # fmt: skip
        alice.post("alerts/new", form)
        [rule] = AlertStore(web_ctx.engine.store).rules()
        done: dict[str, Any] = {}

        def test_alert() -> None:
            started = time.monotonic()
            done["page"] = alice.post(f"alerts/{rule.id}/test", {})
            done["took"] = time.monotonic() - started

        thread = threading.Thread(target=test_alert)
        thread.start()
        wait_for(lambda: slow.paths)
        assert answered_in(lambda: victor.get("matches/")) < ANSWERED_WITHIN
        assert answered_in(lambda: victor.get("login")) < ANSWERED_WITHIN
        assert thread.is_alive()
        thread.join(HANG_DEADLINE + 5)
    assert done["took"] < HANG_DEADLINE + 1.5
    assert re.search(r"test message to slow failed: .*no whole answer within 5 s", done["page"])


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
