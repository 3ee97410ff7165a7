"""API tokens in the browser: a reviewer makes one on the tokens page, sees its secret once,
a program uses it on the API with the reviewer's rights, and the reviewer revokes it."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.support.browser import PageLog, Server, log_in
from tests.support.web import PASSWORDS, seed_match


def test_make_use_and_revoke_a_token(page: Page, page_log: PageLog, server: Server) -> None:
    base = server.url
    with server.dispatch.lock:
        match, _ = seed_match(server.ctx)
    log_in(page, base, "rita", PASSWORDS["rita"][1])
    page.locator("nav.top a", has_text="API tokens").click()
    expect(page.locator("#token-list tbody tr")).to_have_text("No token.")
    expect(page.locator("#token-form select[name=role] option")).to_have_text(
        ["viewer", "reviewer"]  # none stronger than the user
    )
    page.fill("#token-form input[name=name]", "<b>夜间脚本</b>")
    page.select_option("#token-form select[name=role]", "reviewer")
    page.click("#token-form button[type=submit]")
    secret = page.locator("#token-secret").inner_text()
    assert secret.startswith("fpt_") and len(secret) == 47
    row = page.locator("#token-list tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("td").first).to_have_text("<b>夜间脚本</b>")  # shown as text
    page.reload()  # the secret is shown once
    expect(page.locator("#token-secret")).to_have_count(0)
    assert secret not in page.content()

    api = page.context.request  # as a program would: the token, not the session, counts
    auth = {"Authorization": f"Bearer {secret}"}
    listed = api.get(f"{base}/api/v1/matches", headers=auth)
    assert listed.status == 200 and listed.json()["matches"][0]["id"] == str(match["_id"])
    review = api.put(
        f"{base}/api/v1/matches/{match['_id']}/status",
        data={"status": "confirmed", "note": "脚本确认"},
        headers=auth,
    )
    assert review.status == 200 and review.json()["status"] == "confirmed"
    assert api.post(f"{base}/api/v1/sites", data={}, headers=auth).status == 403

    page.locator("#token-list button", has_text="Revoke").click()
    expect(page.locator("#token-list tbody tr")).to_have_text("No token.")
    assert api.get(f"{base}/api/v1/matches", headers=auth).status == 401
    assert page_log.unexpected_errors() == [] and page_log.dialogs == []
