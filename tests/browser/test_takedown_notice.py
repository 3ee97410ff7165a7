"""A takedown notice in the browser: it names the match a reviewer confirmed and leaves the
unreviewed one out, saying so; the send button stays disabled, with the reason, while the
template's placeholders remain; naming the unreviewed match takes ticking a box (the browser
refuses the form without it), and the notice sent keeps that choice. The match's scores are
shown on 0-1, each said in words."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from admin.report.takedown import PLACEHOLDERS
from tests.support.browser import PageLog, Server, log_in, log_out
from tests.support.web import PASSWORDS, sample_text

CONFIRMED_URL = "http://pirate.example/book/1.html"
UNREVIEWED_URL = "http://pirate.example/book/2.html"


def seed(server: Server) -> str:
    """Two pages of ``pirate`` copying two works, matched; the first confirmed by a
    reviewer. The first match's id."""
    engine, store = server.ctx.engine, server.ctx.store
    with server.dispatch.lock:
        for url, name, title in ((CONFIRMED_URL, "tea-history", "茶史"),
                                 (UNREVIEWED_URL, "lighthouse", "灯塔")):  # fmt: skip
            text = sample_text(name)
            engine.add_work(text, title=title, source=f"{name}.txt")
            copy = "广告：最新小说免费看\n" + text[: len(text) * 2 // 3]
            assert engine.process_page(url, copy, site="pirate", title=title), url
        matches = {
            m["url"]: str(m["_id"]) for m in store.matches.find_matches(limit=10, fields=("url",))
        }
        assert store.matches.set_status(
            matches[CONFIRMED_URL], "confirmed", "chapter copied", "rita"
        )
    return matches[CONFIRMED_URL]


def test_a_notice_names_what_was_confirmed_and_waits_for_its_details(
    page: Page, page_log: PageLog, server: Server, artifacts: Path
) -> None:
    base = server.url
    match_id = seed(server)
    log_in(page, base, "rita", PASSWORDS["rita"][1])

    # the match's scores: each on 0-1, in words
    page.goto(f"{base}/matches/{match_id}")
    lines = page.locator("tr.match-score-line")
    expect(lines.first).to_be_visible()
    for value in lines.locator("td").all_inner_texts():
        assert 0.0 <= float(value.split()[0]) <= 1.0, value
    expect(page.locator("#match-facts")).to_contain_text("Simhash similarity")
    expect(page.locator("#match-facts")).to_contain_text("of 64 simhash bits differ")
    expect(page.locator("#match-facts")).not_to_contain_text("simhash_distance")

    # the notice: the confirmed match only; the unreviewed one left out, and said so
    page.goto(f"{base}/reports/takedown/pirate")
    notice = page.locator("#notice")
    expect(notice).to_contain_text(CONFIRMED_URL)
    expect(notice).not_to_contain_text(UNREVIEWED_URL)
    expect(page.locator("#notice-left-out")).to_contain_text("1 unreviewed match(es)")
    # not ready: the placeholders are still in it; sending is disabled, with the reason
    reason = page.locator("#notice-not-ready")
    expect(reason).to_contain_text(PLACEHOLDERS["rights_holder"])
    expect(reason).to_contain_text(PLACEHOLDERS["contact"])
    send = page.locator("#notice-send button[type=submit]")
    expect(send).to_be_disabled()
    expect(page.locator("#notice-txt")).to_have_count(0)
    page.screenshot(path=str(artifacts / "takedown-not-ready.png"), full_page=True)

    # naming the unreviewed match takes the box ticked: the browser refuses the form without
    left_out = page.locator("#notice-left-out")
    left_out.locator("button[type=submit]").click()
    assert "unreviewed=1" not in page.url
    expect(notice).not_to_contain_text(UNREVIEWED_URL)
    left_out.locator("input[name=unreviewed]").check()
    left_out.locator("button[type=submit]").click()
    expect(page).to_have_url(f"{base}/reports/takedown/pirate?unreviewed=1")
    expect(notice).to_contain_text(UNREVIEWED_URL)
    expect(page.locator("#notice-unreviewed")).to_contain_text("names 1 unreviewed match(es)")
    expect(send).to_be_disabled()
    log_out(page)

    # an admin sets the rights holder and the contact
    log_in(page, base, "alice", PASSWORDS["alice"][1])
    page.goto(f"{base}/reports/takedown-template")
    form = page.locator("#template-form")
    form.locator("input[name=rights_holder]").fill("星河出版社")
    form.locator("input[name=contact]").fill("legal@rights.example")
    form.locator("button[type=submit]").click()
    expect(page.locator("p.flash")).to_contain_text("takedown template saved")

    # ready: sent (marked sent) with the unreviewed match, a choice the notice keeps
    page.goto(f"{base}/reports/takedown/pirate?unreviewed=1")
    expect(page.locator("#notice-not-ready")).to_have_count(0)
    expect(notice).to_contain_text("星河出版社")
    expect(send).to_be_enabled()
    send.click()
    expect(page).to_have_url(f"{base}/takedowns/")
    expect(page.locator("p.flash")).to_contain_text(
        "marked sent: 2 URL(s), 1 unreviewed match(es) named by choice"
    )
    with server.dispatch.lock:
        [sent] = server.ctx.engine.store.takedowns.notices()
    assert sent["unreviewed_chosen"] is True
    assert sent["statuses"] == {"confirmed": 1, "new": 1}
    assert page_log.unexpected_errors() == [] and page_log.dialogs == []
    assert page.evaluate("window.__cspViolations") == []
