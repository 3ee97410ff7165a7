"""The alerts page in Chromium: an admin adds a webhook rule through the form, a new match is
delivered to a real receiver, the test button and the delivery log show it, hostile values
stay text; a reviewer has no link to the page."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from matcher.store.alerts import AlertStore
from matcher.worker import alert_delivery as alerts
from tests.servers.alerts import webhook_receiver
from tests.support.browser import PageLog, Server, log_in, log_out
from tests.support.web import PASSWORDS, seed_match

SECRET = "browser-secret-1"
HOSTILE = "<img src=x onerror=alert(1)>"


def test_an_admin_creates_a_rule_and_sees_its_deliveries(
    page: Page, page_log: PageLog, server: Server, artifacts
) -> None:
    base = server.url
    store = AlertStore(server.ctx.engine.store)
    with webhook_receiver(SECRET) as receiver:
        log_in(page, base, "alice", PASSWORDS["alice"][1])
        page.locator("nav.top a", has_text="Alerts").click()
        expect(page.locator("#rule-list")).to_contain_text("No rule")
        page.locator("#new-rule").click()
        form = page.locator("#alert-form")
        form.locator("input[name=name]").fill(HOSTILE)
        form.locator("select[name=scope]").select_option("site")
        form.locator("input[name=target]").fill("pirate")
        form.locator("select[name=mode]").select_option("immediate")
        form.locator("input[name=url]").fill(receiver.url)
        form.locator("input[name=secret]").fill(SECRET)
        form.locator("button[type=submit]").click()
        expect(page.locator(".flash")).to_contain_text("saved")
        row = page.locator("#rule-list tbody tr").first
        expect(row).to_contain_text(HOSTILE)  # shown as text, not run
        expect(row).to_contain_text("site pirate")

        row.locator("button", has_text="Send a test").click()
        expect(page.locator(".flash")).to_contain_text("delivered")
        with server.dispatch.lock:
            seed_match(server.ctx)
            assert alerts.deliver_due(store, server.ctx.settings)["delivered"] == 1
        assert [r.data["mode"] for r in receiver.requests] == ["test", "immediate"]
        assert all(r.signed for r in receiver.requests)

    page.reload()
    log = page.locator("#delivery-log tbody tr")
    expect(log).to_have_count(2)
    expect(log.first).to_contain_text("immediate")
    expect(log.first).to_contain_text("HTTP 204")
    expect(page.locator("#outbox-counts")).to_have_text("delivered: 1")
    page.screenshot(path=str(artifacts / "alerts-page.png"), full_page=True)

    page.locator("#rule-list button", has_text="Disable").click()
    expect(page.locator("#rule-list tbody tr").first).to_contain_text("no")
    assert page_log.unexpected_errors() == [] and page_log.dialogs == []
    log_out(page)

    log_in(page, base, "rita", PASSWORDS["rita"][1])
    expect(page.locator("nav.top a", has_text="Alerts")).to_have_count(0)
