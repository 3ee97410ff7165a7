"""A crawled page carrying XSS payloads (in its text and its title), copying a work whose
uploaded file name is itself a payload: every view that shows them shows them as text, no
script runs, no dialog opens, and the Content-Security-Policy is sent. Checked twice: with
the CSP enforced (no violation reported either), and with the browser told to bypass it, so
the escaping alone is shown to hold."""

from __future__ import annotations

from urllib.parse import quote

from playwright.sync_api import Browser, Page, expect

from tests.servers.fixture_site import FixtureSite
from tests.support.browser import (
    PAYLOADS,
    TITLE_PAYLOAD,
    WORK_FILE_PAYLOAD,
    WORKS,
    XSS_PATH,
    XSS_WORK,
    PageLog,
    Server,
    add_site,
    crawl_now,
    has_route,
    log_in,
    match_link,
    upload_works,
)
from tests.support.web import PASSWORDS

WORK_TITLE = WORK_FILE_PAYLOAD.removesuffix(".txt")
LOGIN_PAYLOAD = '"><script>window.__xss=5;alert(5)</script>'


def assert_inert(page: Page, log: PageLog, where: str) -> None:
    """Nothing of the payloads ran or became an element on the current page."""
    assert page.evaluate("typeof window.__xss") == "undefined", f"a payload ran on {where}"
    assert log.dialogs == [], f"a dialog opened on {where}: {log.dialogs}"
    assert page.locator("img[onerror], img[src=x]").count() == 0, where
    inline = page.locator("script:not([src])")
    assert inline.count() == 0, f"inline script on {where}: {inline.all_text_contents()}"
    assert page.locator("[onerror], [onload], [onclick]").count() == 0, where
    violations = page.evaluate("window.__cspViolations || []")  # none: nothing reached the CSP
    assert violations == [], f"CSP violations on {where}: {violations}"


def visit(page: Page, log: PageLog, url: str, where: str) -> None:
    response = page.goto(url)
    assert response is not None and response.ok, f"{where}: {response and response.status}"
    csp = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in csp and "object-src 'none'" in csp, f"{where}: CSP {csp!r}"
    assert "'unsafe-inline'" not in csp
    assert_inert(page, log, where)


def test_payloads_show_as_text(
    browser: Browser, page: Page, page_log: PageLog, server: Server, fixture_site: FixtureSite
) -> None:
    base = server.url

    # a reflected payload in the login page's "next" is an attribute value, never markup
    visit(page, page_log, f"{base}/login?next={quote(LOGIN_PAYLOAD)}", "the login page")
    assert page.locator("input[name=next]").input_value() == LOGIN_PAYLOAD

    log_in(page, base, "alice", PASSWORDS["alice"][1])
    text = (WORKS / XSS_WORK).read_bytes()
    upload_works(
        page, base, [{"name": WORK_FILE_PAYLOAD, "mimeType": "text/plain", "buffer": text}]
    )
    expect(page.locator("#upload-log li")).to_contain_text(WORK_FILE_PAYLOAD)
    add_site(page, base, "pirate-xss", fixture_site.url("/"))
    crawl_now(page, server.dispatch, "pirate-xss")
    stored = server.ctx.store.db.pages.find_one({"url": fixture_site.url(XSS_PATH)})
    assert stored["title"] == TITLE_PAYLOAD, "the crawler kept the escaped title as text"
    assert all(p in stored["text"] for p in PAYLOADS), "the crawler kept the payloads as text"

    # the match list: the work's title is the payload, shown as text
    xss_url = fixture_site.url(XSS_PATH)
    link = match_link(page, base, xss_url)
    expect(page.locator("#match-list tbody tr", has_text=xss_url)).to_contain_text(WORK_TITLE)
    assert_inert(page, page_log, "the match list")
    match_url = base + link.get_attribute("href")

    # the match view: the payloads are text of the page side (and of the passages)
    visit(page, page_log, match_url, "the match view")
    expect(page.locator("h1")).to_have_text(f"Match: {WORK_TITLE}")
    for payload in PAYLOADS:
        expect(page.locator("#page-text")).to_contain_text(payload)
    expect(page.get_by_text(f"评论：{PAYLOADS[0]}").first).to_be_visible()
    assert page.locator("#page-text mark").count() >= 1, "the copied passages are marked"

    # every other view showing the work's title, the page's title or URL
    views = [
        (f"{base}/matches/", "the match list"),
        (f"{base}/", "the dashboard"),
        (f"{base}/works/", "the works list"),
        (f"{base}/works/?q={quote(WORK_TITLE)}", "a works search"),
        (
            base + page.locator("#match-facts a", has_text=WORK_TITLE).get_attribute("href"),
            "the work page",
        ),
    ]
    views += [
        (base + path, f"reports {path}")
        for path in ("/reports/", "/reports/print", "/reports/takedown/pirate-xss")
        if has_route(server, path)
    ]
    for url, where in views:
        visit(page, page_log, url, where)
        if url.endswith("/reports/print"):  # the printable report names the pages' titles
            expect(page.locator("body")).to_contain_text(TITLE_PAYLOAD)
    page.goto(f"{base}/")
    expect(page.locator("#chart-works svg")).to_contain_text(WORK_TITLE[:27])
    page.goto(f"{base}/works/")
    expect(page.locator("#work-list")).to_contain_text(WORK_TITLE)

    assert page_log.unexpected_errors() == []  # a CSP refusal is a console error too

    # the same views with the CSP bypassed: the escaping alone keeps the payloads inert
    context = browser.new_context(bypass_csp=True)
    bare_log = PageLog()
    bare = context.new_page()
    bare.on("dialog", bare_log.on_dialog)
    bare.on("pageerror", lambda e: bare_log.page_errors.append(str(e)))
    try:
        log_in(bare, base, "alice", PASSWORDS["alice"][1])
        for url, where in [(match_url, "the match view"), *views]:
            bare.goto(url)
            assert_inert(bare, bare_log, f"{where} (CSP bypassed)")
        assert bare_log.page_errors == []
    finally:
        context.close()
