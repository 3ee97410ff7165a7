"""Roles in the browser: a viewer sees a match but gets no status form (and a forged status
POST with their own CSRF token is refused); a reviewer gets the form; neither may upload."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.support.browser import PageLog, Server, csrf_token, log_in, log_out
from tests.support.web import PASSWORDS, seed_match


def test_viewer_cannot_review(page: Page, page_log: PageLog, server: Server) -> None:
    base = server.url
    with server.dispatch.lock:
        match, _ = seed_match(server.ctx)
    match_url = f"{base}/matches/{match['_id']}"

    log_in(page, base, "victor", PASSWORDS["victor"][1])
    expect(page.locator("nav.top .who")).to_have_text("victor (viewer)")
    page.goto(f"{base}/matches/")
    expect(page.locator("#match-list tbody tr")).to_have_count(1)
    expect(page.locator("#select-all")).to_have_count(0)
    expect(page.locator("#bulk-form select, #match-list input[name=ids]")).to_have_count(0)
    page.locator("#match-list a", has_text="pirate.example").click()
    expect(page).to_have_url(match_url)
    expect(page.locator("#match-status")).to_have_text("awaiting review")
    expect(page.locator("#passages .passage").first).to_be_visible()
    expect(page.locator("#status-form")).to_have_count(0)

    # the route itself refuses a viewer, even with a valid CSRF token
    forged = page.request.post(
        f"{match_url}/status", form={"status": "confirmed", "csrf_token": csrf_token(page)}
    )
    assert forged.status == 403, forged.status
    page.reload()
    expect(page.locator("#match-status")).to_have_text("awaiting review")

    page.goto(f"{base}/works/")
    expect(page.locator("#upload-form")).to_have_count(0)
    page.goto(f"{base}/sites/")
    expect(page.locator("#new-site")).to_have_count(0)
    log_out(page)

    # a reviewer may set the status, not upload works
    log_in(page, base, "rita", PASSWORDS["rita"][1])
    page.goto(match_url)
    expect(page.locator("#status-form")).to_be_visible()
    page.goto(f"{base}/works/")
    expect(page.locator("#upload-form")).to_have_count(0)
    assert page_log.unexpected_errors() == [] and page_log.dialogs == []
