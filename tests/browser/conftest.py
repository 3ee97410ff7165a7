"""Fixtures of the browser tests: a real admin server, a fixture site, headless Chromium.

- ``server``: the Flask app served by werkzeug (``threaded=True``) on a free port of
  127.0.0.1, over an engine on the test MongoDB server and the test Redis database, with an
  :class:`~admin.services.dispatch.InlineDispatch` whose lock serialises the requests with the
  crawl's page processing, as in ``fptrack scan --serve``; accounts of :data:`PASSWORDS`.
- ``fixture_site``: the pages of :func:`tests.support.browser.site_pages` (and a robots.txt) on
  127.0.0.1.
- ``browser``: Debian's Chromium (``/usr/bin/chromium``, else ``FPTRACK_TEST_CHROMIUM``)
  driven by Playwright, headless. A missing Chromium fails the tests: CI installs it.
- ``page``: a fresh browser context and page, recording console errors, page errors,
  dialogs and CSP violations (:class:`PageLog`).
- ``artifacts``: the folder for screenshots (``FPTRACK_TEST_ARTIFACTS``, default
  ``<repo>/test-artifacts``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, Page, expect, sync_playwright
from pymongo.database import Database
from werkzeug.serving import WSGIRequestHandler

from admin.context import Context
from admin.services.accounts import Users
from admin.services.dispatch import InlineDispatch
from admin.web.app import create_app
from crawler import reactor
from matcher.matching.engine import Engine
from matcher.settings import Settings
from tests.servers.fixture_site import FixtureSite
from tests.servers.fixture_site import page as html_resource
from tests.servers.http_server import WSGIServer
from tests.support.browser import ROBOTS, ROOT, PageLog, Server, site_pages
from tests.support.web import PASSWORDS

reactor.install()  # before anything imports twisted.internet.reactor
expect.set_options(timeout=10_000)

CHROMIUM = os.environ.get("FPTRACK_TEST_CHROMIUM", "/usr/bin/chromium")
CRAWL_OVERRIDES = {"AUTOTHROTTLE_ENABLED": False, "DOWNLOAD_TIMEOUT": 10, "LOG_LEVEL": "WARNING"}
TIMEOUT_MS = 15_000

# Recorded in every page before its own scripts run (an init script is not subject to CSP).
CSP_RECORDER = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
"""


@pytest.fixture(scope="session")
def artifacts() -> Path:
    folder = Path(os.environ.get("FPTRACK_TEST_ARTIFACTS") or ROOT / "test-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Package-scoped: Playwright's sync API keeps an event loop running on this thread while
    it is open, and later suites call ``asyncio.run``."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"the browser tests need Chromium at {CHROMIUM}: install Debian's chromium "
            "package (apt-get install chromium; .ci/run does) or set FPTRACK_TEST_CHROMIUM",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def fixture_site() -> Iterator[FixtureSite]:
    pages = {path: html_resource(body) for path, body in site_pages().items()}
    pages["/robots.txt"] = (200, {"Content-Type": "text/plain"}, ROBOTS.encode())
    with FixtureSite(pages) as site:
        yield site


class QuietHandler(WSGIRequestHandler):
    def log_request(self, *args: object, **kwargs: object) -> None:
        pass


@pytest.fixture
def server(redis_client: redis.Redis, mongo_db: Database) -> Iterator[Server]:
    settings = Settings.from_env(  # the alert receivers are on 127.0.0.1: the opt-in for them
        redis_prefix="fptrack-test-browser", mongo_db=mongo_db.name, alert_allow_private=True
    )
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)
    ctx = Context(settings=settings, engine=engine)
    dispatch = InlineDispatch(ctx, threading.RLock(), CRAWL_OVERRIDES)
    users = Users(engine.store)
    for name, (role, password) in PASSWORDS.items():
        users.create(name, password, role)
    app = create_app(
        ctx, dispatch=dispatch, secret_key="browser-test", lock=dispatch.lock, schedules=False
    )
    with WSGIServer(app, threaded=True, request_handler=QuietHandler) as httpd:
        try:
            yield Server(httpd.url(""), ctx, dispatch, app)
        finally:
            dispatch.wait()


@pytest.fixture
def page_log() -> PageLog:
    return PageLog()


@pytest.fixture
def page(browser: Browser, page_log: PageLog) -> Iterator[Page]:
    context = browser.new_context(accept_downloads=True, locale="zh-CN")
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(CSP_RECORDER)
    opened = context.new_page()
    opened.on("console", page_log.on_console)
    opened.on("pageerror", lambda e: page_log.page_errors.append(str(e)))
    opened.on("dialog", page_log.on_dialog)
    try:
        yield opened
    finally:
        context.close()
