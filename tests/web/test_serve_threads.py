"""``fptrack admin serve`` as it runs in production (gunicorn, its asyncio worker and the
front's threads, :mod:`admin.web.front`): a query by URL waiting on a slow server holds one
thread of its worker, not the worker, so another user's page is answered meanwhile, even
with one worker (issue 23, "outside servers that hold fptrack hostage")."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import redis
from pymongo.database import Database

from admin.services.accounts import Users
from matcher.store import Store
from tests.servers.net import free_port
from tests.servers.outage import Service, answers
from tests.servers.outbound import slow_server
from tests.support.waits import eventually
from tests.support.web import PASSWORDS, Browser

DEADLINE_S = 6
"""FPTRACK_QUERY_DEADLINE of the server: how long each slow fetch holds its thread."""


def test_a_page_is_answered_while_two_query_fetches_hang(
    tmp_path: Path, mongo_db: Database, redis_client: redis.Redis
) -> None:
    users = Users(Store.connect(os.environ["FPTRACK_MONGO_URI"], mongo_db.name, mongo_db.client))
    for name, (role, password) in PASSWORDS.items():
        users.create(name, password, role)
    bind = f"127.0.0.1:{free_port()}"
    base = f"http://{bind}/"
    env = {
        **os.environ,
        "FPTRACK_ADMIN_SECRET": "a-test-secret-of-enough-length",
        "FPTRACK_QUERY_ALLOW_PRIVATE": "true",  # the slow server is on 127.0.0.1
        "FPTRACK_QUERY_DEADLINE": str(DEADLINE_S),
    }
    argv = ["admin", "serve", "--workers", "1", "--threads", "4", "--bind", bind]
    admin = Service(argv, env, tmp_path / "admin.log")
    try:
        eventually(lambda: answers(base + "healthz"), 60, "the admin to serve")
        rita, alice = Browser(base, "rita"), Browser(base, "alice")
        with slow_server() as slow:
            pages: dict[str, str] = {}

            def query(who: str, browser: Browser) -> None:
                pages[who] = browser.post("query/", {"url": slow.url(f"headers?{who}")})

            threads = [
                threading.Thread(target=query, args=(who, browser))
                for who, browser in (("rita", rita), ("alice", alice))
            ]
            for thread in threads:
                thread.start()
            eventually(lambda: len(slow.paths) == 2, 10, "both fetches to reach the slow server")
            login = Browser(base, None).get("login")  # a third client, logged in as no one
            pending = sorted({"rita", "alice"} - set(pages))  # when the login page came
            for thread in threads:
                thread.join(DEADLINE_S + 20)
            # The admin hung up on the slow server (its deadline), which still had bytes to send.
            eventually(
                lambda: sorted(slow.hung_up) == ["/headers?alice", "/headers?rita"],
                10,
                "the admin to hang up on the slow server",
            )
        assert 'id="login-form"' in login
        assert sorted(pages) == ["alice", "rita"], admin.output()
        assert pending == ["alice", "rita"], "the page waited for the slow fetches"
        for page in pages.values():
            assert "that URL could not be fetched" in page
        assert admin.running, admin.output()
    finally:
        admin.stop()
    assert "Traceback" not in admin.output(), admin.output()
