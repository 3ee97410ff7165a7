"""Helpers of the admin tests: accounts, logging in, CSRF tokens, sample data."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.parse
import urllib.request
from typing import Any

from flask.testing import FlaskClient

PASSWORDS = {
    "alice": ("admin", "alice-password-1"),
    "rita": ("reviewer", "rita-password-1"),
    "victor": ("viewer", "victor-password-1"),
}
"""username -> (role, password) of the accounts the fixtures create."""
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class Browser:
    """One user's session over HTTP, with a real server (logged in as ``username``; no one
    when None)."""

    def __init__(self, base: str, username: str | None) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        if username is not None:
            self.post("login", {"username": username, "password": PASSWORDS[username][1]})

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=30) as response:
            return response.read().decode()

    def post(self, path: str, form: dict[str, str]) -> str:
        token = CSRF.search(self.get("login" if path == "login" else "")).group(1)
        data = urllib.parse.urlencode({**form, "csrf_token": token}).encode()
        with self.opener.open(self.base + path, data, timeout=30) as response:
            return response.read().decode()


def csrf(client: FlaskClient, path: str = "/login") -> str:
    """The session's CSRF token, read from a page's form."""
    found = CSRF.search(client.get(path).get_data(as_text=True))
    assert found, f"no CSRF token on {path}"
    return found.group(1)


def login(client: FlaskClient, username: str, password: str | None = None) -> Any:
    """Log in through the form; returns the response."""
    token = csrf(client)
    password = password if password is not None else PASSWORDS[username][1]
    return client.post(
        "/login", data={"username": username, "password": password, "csrf_token": token}
    )


def post(client: FlaskClient, path: str, data: dict | None = None, **kwargs: Any) -> Any:
    """POST a form with the session's CSRF token."""
    token = csrf(client, "/")
    return client.post(path, data={**(data or {}), "csrf_token": token}, **kwargs)


def sample_text(name: str = "tea-history") -> str:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    return (root / "samples" / "works" / f"{name}.txt").read_text(encoding="utf-8")


def seed_match(ctx: Any, url: str = "http://pirate.example/1", site: str = "pirate") -> Any:
    """A registered work and a page copying it, matched by the real engine; the match."""
    text = sample_text()
    work_id = ctx.engine.add_work(text, title="茶史", source="tea-history.txt")
    page = "广告：最新小说免费看\n" + text[: len(text) * 2 // 3] + "\n本站内容来自网络"
    records = ctx.engine.process_page(url, page, site=site, title="盗版页面")
    assert records, "the copy was not matched"
    return ctx.store.db.matches.find_one({"work_id": records[0]["work_id"]}), work_id
