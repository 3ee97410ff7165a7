"""``fptrack alerts``: add, list, test (to a real receiver on 127.0.0.1), remove; bad input
gets one line and exit status 2."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from admin.cli import main
from admin.context import Context
from matcher.store.alerts import AlertStore
from tests.servers.alerts import closed_port_url, webhook_receiver


def run(capsys, ctx: Context, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv), ctx)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def opted_in(ctx: Context) -> Context:
    """``ctx`` with FPTRACK_ALERT_ALLOW_PRIVATE (the receivers are on 127.0.0.1)."""
    return Context(settings=replace(ctx.settings, alert_allow_private=True), engine=ctx.engine)


def test_add_list_test_remove(capsys, opted_in: Context) -> None:
    ctx = opted_in
    with webhook_receiver("cli-secret") as receiver:
        status, out, _ = run(capsys, ctx, "alerts", "add", "ops", "--site", "pirate",
                             "--webhook", receiver.url, "--secret", "cli-secret")  # fmt: skip
        assert status == 0 and "site pirate, immediate, webhook" in out
        [rule] = AlertStore(ctx.engine.store).rules()
        status, out, _ = run(capsys, ctx, "alerts", "test", rule.id)
        assert status == 0 and "delivered" in out
        [got] = receiver.requests
        assert got.signed and got.data["mode"] == "test"
    status, out, _ = run(capsys, ctx, "alerts", "list", "--json")
    [listed] = json.loads(out)
    assert listed["id"] == rule.id and listed["secret"] is None  # never printed by list
    status, out, _ = run(capsys, ctx, "alerts", "remove", rule.id)
    assert status == 0 and AlertStore(ctx.engine.store).rules() == []


def test_a_new_webhook_rule_prints_its_random_secret(capsys, ctx: Context) -> None:
    status, out, _ = run(capsys, ctx, "alerts", "add", "x", "--webhook", "https://h.example/")
    [rule] = AlertStore(ctx.engine.store).rules()
    assert status == 0 and f"its webhook secret: {rule.secret}" in out


def test_email_without_smtp_warns(capsys, ctx: Context) -> None:
    status, _, err = run(capsys, ctx, "alerts", "add", "m", "--email", "a@example.com",
                         "--mode", "daily")  # fmt: skip
    assert status == 0 and "email is not configured (FPTRACK_SMTP_URL)" in err


def test_bad_input_is_one_line(capsys, ctx: Context, opted_in: Context) -> None:
    for argv in (
        ("alerts", "add", "x", "--webhook", "file:///etc/passwd"),
        ("alerts", "add", "x", "--work", "nope", "--webhook", "http://h.example/"),
        ("alerts", "remove", "not-an-id"),
    ):
        status, _, err = run(capsys, ctx, *argv)
        assert status == 2, argv
        assert len([x for x in err.splitlines() if x.startswith("fptrack: error:")]) == 1
    status, _, err = run(capsys, ctx, "alerts", "remove", "0123456789abcdef01234567")
    assert status == 1 and "no alert rule" in err
    run(capsys, opted_in, "alerts", "add", "down", "--webhook", closed_port_url())
    [rule] = AlertStore(ctx.engine.store).rules()
    status, _, err = run(capsys, opted_in, "alerts", "test", rule.id)
    assert status == 1 and "Connection refused" in err and "Traceback" not in err


def test_internal_webhooks_are_refused_without_the_opt_in(capsys, ctx, opted_in) -> None:
    with webhook_receiver("s") as receiver:
        for url in (receiver.url, "http://10.0.0.7:6379/", "http://localhost:6379/"):
            status, out, err = run(capsys, ctx, "alerts", "add", "in", "--webhook", url)
            assert status == 2 and out == "", url
            [line] = err.splitlines()
            assert "private, loopback or reserved address" in line
            assert "FPTRACK_ALERT_ALLOW_PRIVATE=true allows it" in line
        assert AlertStore(ctx.engine.store).rules() == []
        status, _, _ = run(capsys, opted_in, "alerts", "add", "in", "--webhook", receiver.url)
        assert status == 0
        [rule] = AlertStore(ctx.engine.store).rules()
        # the opt-in withdrawn, sending checks again
        status, _, err = run(capsys, ctx, "alerts", "test", rule.id)
        assert status == 1 and "(127.0.0.1)" in err and receiver.requests == []
