"""The admin's alerts page: rules made through the form, roles, CSRF, escaping, the log of a
real delivery to a receiver on 127.0.0.1."""

from __future__ import annotations

import dataclasses

import pytest
from flask.testing import FlaskClient

from matcher.store.alerts import AlertStore
from matcher.worker import alert_delivery as alerts
from tests.servers.alerts import webhook_receiver
from tests.support.web import login, post, seed_match

HOSTILE = '<script>alert("x")</script>'


@pytest.fixture(autouse=True)
def receivers_on_this_machine(web_ctx) -> None:
    """The receivers are on 127.0.0.1: FPTRACK_ALERT_ALLOW_PRIVATE (see test_outbound_admin
    for the refusal without it)."""
    web_ctx.__dict__["settings"] = dataclasses.replace(web_ctx.settings, alert_allow_private=True)


def test_an_admin_adds_a_rule_that_then_delivers(as_admin: FlaskClient, web_ctx) -> None:
    store = AlertStore(web_ctx.engine.store)
    with webhook_receiver("s3cret-for-test") as receiver:
        form = {"name": HOSTILE, "scope": "site", "target": "pirate", "mode": "immediate",
                "channel": "webhook", "url": receiver.url, "secret": "s3cret-for-test"}  # fmt: skip
        response = post(as_admin, "/alerts/new", form)
        assert response.status_code == 302
        [rule] = store.rules()
        assert (rule.scope, rule.target, rule.url, rule.name) == (
            "site", "pirate", receiver.url, HOSTILE,
        )  # fmt: skip
        seed_match(web_ctx)
        result = alerts.deliver_due(store, web_ctx.settings)
        assert result["delivered"] == 1
        [got] = receiver.requests
        assert got.signed and got.data["matches"][0]["site"] == "pirate"
    page = as_admin.get("/alerts/").get_data(as_text=True)
    assert HOSTILE not in page and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert receiver.url in page and "HTTP 204" in page and "delivered: 1" in page


def test_a_bad_rule_is_refused_with_the_reason(as_admin: FlaskClient, web_ctx) -> None:
    form = {"name": "x", "scope": "all", "mode": "immediate", "channel": "webhook",
            "url": "javascript:alert(1)"}  # fmt: skip
    response = post(as_admin, "/alerts/new", form)
    assert response.status_code == 400
    assert "http:// or https://" in response.get_data(as_text=True)
    assert AlertStore(web_ctx.engine.store).rules() == []


def test_disable_and_remove(as_admin: FlaskClient, web_ctx) -> None:
    store = AlertStore(web_ctx.engine.store)
    form = {"name": "team", "scope": "all", "channel": "email", "emails": "a@example.com",
            "mode": "daily"}  # fmt: skip
    page = post(as_admin, "/alerts/new", form, follow_redirects=True).get_data(as_text=True)
    assert "email is not configured" in page
    [rule] = store.rules()
    post(as_admin, f"/alerts/{rule.id}/enabled")
    assert store.rule(rule.id).enabled is False
    post(as_admin, f"/alerts/{rule.id}/remove")
    assert store.rules() == []
    assert post(as_admin, f"/alerts/{rule.id}/remove").status_code == 404
    assert post(as_admin, "/alerts/not-an-id/remove").status_code == 400


def test_only_admins_see_or_change_alerts(app, web_ctx) -> None:
    for name in ("rita", "victor"):
        c = app.test_client()
        login(c, name)
        assert c.get("/alerts/").status_code == 403
        assert "/alerts/" not in c.get("/").get_data(as_text=True)
        form = {"name": "x", "url": "http://127.0.0.1:9/h"}
        assert post(c, "/alerts/new", form).status_code == 403
    assert AlertStore(web_ctx.engine.store).rules() == []


def test_a_form_without_the_csrf_token_is_refused(as_admin: FlaskClient, web_ctx) -> None:
    response = as_admin.post("/alerts/new", data={"name": "x", "url": "http://127.0.0.1:9/h"})
    assert response.status_code == 400
    assert AlertStore(web_ctx.engine.store).rules() == []
