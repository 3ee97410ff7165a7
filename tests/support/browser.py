"""Helpers of the browser tests: the fixture site's pages, the XSS payloads, the flows.

The fixture site imitates a small pirate site: an index linking to a chapter page that
copies ``samples/works/tea-history.txt`` with edits (a paragraph dropped, ad lines in, a
few characters changed), an unrelated news page, and a page copying
``samples/works/lighthouse.txt`` whose title and body carry XSS payloads written
HTML-escaped, so the crawler extracts them as text and the admin must show them as text.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import ConsoleMessage, Dialog, Locator, Page, expect

from admin.context import Context
from admin.services.dispatch import InlineDispatch

ROOT = Path(__file__).resolve().parents[2]
WORKS = ROOT / "samples" / "works"
COPIED_WORK = "tea-history.txt"
XSS_WORK = "lighthouse.txt"
COPY_PATH = "/book/1021/1.html"
XSS_PATH = "/book/1099/1.html"
ROBOTS = "User-agent: *\nAllow: /\n"

PAYLOADS = (
    '<img src=x onerror="window.__xss=1;alert(1)">',
    "<script>window.__xss=2;alert(2)</script>",
)
"""Markup that runs script if the admin ever renders it as HTML (shown as text it is inert)."""
TITLE_PAYLOAD = "<script>window.__xss=3;alert(3)</script>盗版"
WORK_FILE_PAYLOAD = '<img src=x onerror="window.__xss=4;alert(4)">.txt'
"""An uploaded file name: the work's title is the name's stem, markup included."""


def paragraphs(name: str) -> list[str]:
    text = (WORKS / name).read_text(encoding="utf-8")
    return [p.strip() for p in text.split("\n") if p.strip()]


def chrome(title: str, body: str) -> str:
    """A page of the pirate site: ``title`` (escaped), nav, ad banner, ``body``, footer."""
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body>"
        "<div class='nav'><a href='/'>首页</a> <a href='/news/1.html'>新闻</a></div>"
        "<div class='ad'>广告：最新小说免费看，点击进入</div>"
        f"<div id='content'>{body}</div>"
        "<div class='footer'>书海阁 京ICP备00000000号-1</div></body></html>"
    )


def para(lines: list[str]) -> str:
    return "".join(f"<p>{html.escape(line)}</p>" for line in lines)


def copy_page() -> str:
    """A chapter page copying the work, edited: a paragraph dropped, two ad lines in, and a
    character changed in every paragraph that has 茶叶 (tea leaves)."""
    lines = paragraphs(COPIED_WORK)
    del lines[3]
    lines.insert(5, "本站最新网址：www.shuhaige.example 请收藏")
    lines.insert(12, "（广告）手机用户请浏览阅读，更优质的阅读体验。")
    edited = [line.replace("茶叶", "茶业", 1) for line in lines]
    assert edited != lines
    return chrome("茶史漫谈 - 书海阁", para(edited))


def news_page() -> str:
    text = [
        "本市图书馆自下月起延长开放时间，工作日晚上开放至九点，周末全天开放。",
        "馆方表示，新增的自习座位将于本月底投入使用，读者可以通过公众号预约。",
        "此外，社区跳蚤市场将在周六上午举行，欢迎居民带上闲置物品参加交换。",
    ]
    return chrome("社区新闻", para(text))


def xss_page() -> str:
    """A copy of the XSS work with the payloads, HTML-escaped, in the title and the text."""
    lines = paragraphs(XSS_WORK)
    body = [f"评论：{PAYLOADS[0]}", *lines[:10], f"留言：{PAYLOADS[1]}", *lines[10:]]
    return chrome(TITLE_PAYLOAD, para(body))


def index_page() -> str:
    links = [
        (COPY_PATH, "茶史漫谈 第一章"),
        ("/news/1.html", "社区新闻"),
        (XSS_PATH, "灯塔 第一章"),
    ]
    items = "".join(f"<li><a href='{href}'>{text}</a></li>" for href, text in links)
    return chrome("书海阁 - 首页", f"<ul>{items}</ul>")


def site_pages() -> dict[str, str]:
    """path -> HTML of the fixture site."""
    return {
        "/": index_page(),
        COPY_PATH: copy_page(),
        "/news/1.html": news_page(),
        XSS_PATH: xss_page(),
    }


@dataclass
class Server:
    """The admin server of a test: its base URL and what it runs on."""

    url: str
    ctx: Context
    dispatch: InlineDispatch
    app: Any


@dataclass
class PageLog:
    """What a page reported: console errors (with their URL), uncaught errors, dialogs."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.console_errors.append(f"{message.text} @ {message.location.get('url', '')}")

    def on_dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def unexpected_errors(self, *expected: str) -> list[str]:
        """Console errors other than failed loads of the ``expected`` URL paths (a refused
        login's 401) and of /favicon.ico (the admin has none), and every uncaught error."""
        allowed = ("/favicon.ico", *expected)
        return self.page_errors + [
            e
            for e in self.console_errors
            if not (e.startswith("Failed to load resource") and e.split("?")[0].endswith(allowed))
        ]


# --- flows in the browser -----------------------------------------------------------------


def log_in(page: Page, base: str, username: str, password: str) -> None:
    """Log in through the form; lands on the dashboard."""
    page.goto(base + "/login")
    form = page.locator("#login-form")
    form.locator("input[name=username]").fill(username)
    form.locator("input[name=password]").fill(password)
    form.locator("button[type=submit]").click()
    expect(page.locator("nav.top .who")).to_contain_text(username)


def log_out(page: Page) -> None:
    page.locator("nav.top button", has_text="Log out").click()
    expect(page.locator("#login-form")).to_be_visible()


def upload_works(page: Page, base: str, files: list[Any]) -> None:
    """Upload ``files`` (paths or Playwright file payloads) through the works page's script
    (one fetch per file, a progress bar, a log line each): the page does not navigate."""
    page.goto(base + "/works/")
    form = page.locator("#upload-form")
    form.locator("input[type=file]").set_input_files(files)
    form.locator("button[type=submit]").click()
    log = page.locator("#upload-log li")
    expect(log).to_have_count(len(files), timeout=30_000)
    progress = page.locator("#upload-progress")
    expect(progress).to_be_visible()
    assert progress.evaluate("p => [p.value, p.max]") == [len(files), len(files)]
    for line in log.all_text_contents():
        assert "1 work(s) registered" in line, line
    assert page.url == base + "/works/", "the script path posts with fetch, the page stays"


def add_site(page: Page, base: str, name: str, start_url: str) -> None:
    """Create a site through the site form; lands on its page."""
    page.goto(base + "/sites/")
    page.locator("#new-site").click()
    form = page.locator("#site-form")
    form.locator("input[name=name]").fill(name)
    form.locator("textarea[name=start_urls]").fill(start_url)
    form.locator("input[name=max_depth]").fill("2")
    form.locator("input[name=schedule]").fill("never")
    expect(form.locator("input[name=obey_robots]")).to_be_checked()
    form.locator("button[type=submit]").click()
    expect(page.locator("h1")).to_have_text(f"Site {name}")


def crawl_now(page: Page, dispatch: InlineDispatch, site: str, timeout: float = 60.0) -> None:
    """Click "Crawl now" on the site's page, wait for the crawl, see it finished."""
    page.locator("#crawl-now button").click()
    expect(page.locator("p.flash").first).to_contain_text(f"crawl of {site} started")
    dispatch.wait(timeout)
    assert not dispatch.busy(), f"the crawl of {site} did not finish in {timeout} s"
    page.reload()
    expect(page.locator("#crawls tbody tr").first).to_contain_text("finished")


def match_link(page: Page, base: str, url: str) -> Locator:
    """The link of the match of ``url`` in the match list (the page is loaded after the
    crawl finished, so the match is there or missing)."""
    page.goto(base + "/matches/")
    link = page.locator("#match-list a", has_text=url)
    if link.count() != 1:
        raise AssertionError(f"no match of {url} in the list:\n{page.locator('main').inner_text()}")
    return link


def csrf_token(page: Page) -> str:
    return page.locator("input[name=csrf_token]").first.get_attribute("value") or ""


def squeezed(text: str) -> str:
    """A passage's text without whitespace (its line breaks differ between the sides)."""
    return re.sub(r"\s+", "", text)


def has_route(server: Server, path: str) -> bool:
    """Whether the app serves GET ``path`` (routes other engineers add may not be there yet)."""
    from werkzeug.exceptions import MethodNotAllowed, NotFound

    adapter = server.app.url_map.bind("127.0.0.1")
    try:
        adapter.match(path, method="GET")
    except NotFound:
        return False
    except MethodNotAllowed:
        return True
    return True
