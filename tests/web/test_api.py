"""The HTTP API (``/api/v1``): every route under every role, tokens made in the admin and
hashed at rest, rate limits, keyset pages, and input that can carry no MongoDB operator."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import re
import socket
from contextlib import suppress
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from admin.context import Context
from admin.services.accounts import Users
from admin.services.dispatch import InlineDispatch
from admin.web.app import create_app
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from tests.servers.raw_servers import raw_server
from tests.support.web import PASSWORDS, login, post, sample_text, seed_match

SECRET = re.compile(r'id="token-secret">([^<]+)<')
ROLE_ORDER = (None, "viewer", "reviewer", "admin")


def make_token(app: Flask, username: str, role: str | None = None) -> str:
    """A token made through the admin's form by ``username`` (with its own role by default)."""
    browser = app.test_client()
    assert login(browser, username).status_code == 302
    role = role or PASSWORDS[username][0]
    made = post(browser, "/tokens/", {"name": f"{username}-script", "role": role})
    assert made.status_code == 302, made.get_data(as_text=True)
    page = browser.get(made.headers["Location"])
    found = SECRET.search(page.get_data(as_text=True))
    assert found, "the new token is not shown"
    return found.group(1)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def seeded(web_ctx: Context) -> dict[str, str]:
    """A work with a matched page, and a site whose crawl fails at once (closed port)."""
    match, work_id = seed_match(web_ctx)
    web_ctx.store.sites.save_site(
        SiteConfig.from_dict(
            {"name": "pirate", "start_urls": ["http://127.0.0.1:9/"], "schedule": "never"}
        )
    )
    return {"work": work_id, "match": str(match["_id"])}


def routes(ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any], str | None, int]]:
    """``(method, path, request keywords, weakest role, success status)`` of every route,
    the removals last (each role runs them all on a fresh store)."""
    work, match = ids["work"], ids["match"]
    site = {"name": "second", "start_urls": ["http://127.0.0.1:9/a"], "schedule": "never"}
    return [
        ("GET", "/api/v1/openapi.json", {}, None, 200),
        ("GET", "/api/v1/works", {}, "viewer", 200),
        ("GET", f"/api/v1/works/{work}", {}, "viewer", 200),
        ("POST", "/api/v1/works", {"json": {"title": "灯塔", "text": sample_text("lighthouse")}},
         "admin", 201),
        ("GET", "/api/v1/sites", {}, "viewer", 200),
        ("GET", "/api/v1/sites/pirate", {}, "viewer", 200),
        ("POST", "/api/v1/sites", {"json": site}, "admin", 201),
        ("PUT", "/api/v1/sites/pirate",
         {"json": {"start_urls": ["http://127.0.0.1:9/b"], "schedule": "never"}}, "admin", 200),
        ("POST", "/api/v1/sites/pirate/crawl", {}, "reviewer", 202),
        ("GET", "/api/v1/matches", {}, "viewer", 200),
        ("GET", f"/api/v1/matches/{match}", {}, "viewer", 200),
        ("PUT", f"/api/v1/matches/{match}/status", {"json": {"status": "confirmed"}},
         "reviewer", 200),
        ("POST", "/api/v1/query", {"json": {"text": sample_text()}}, "viewer", 200),
        # a reviewer may have a URL fetched: this one is private, so it is refused (422)
        ("POST", "/api/v1/query", {"json": {"url": "http://127.0.0.1:9/"}}, "reviewer", 422),
        ("GET", "/api/v1/reports/summary?status=all", {}, "viewer", 200),
        ("GET", "/api/v1/reports/takedown/pirate", {}, "viewer", 200),
        ("GET", "/api/v1/candidates", {}, "viewer", 200),
        ("DELETE", "/api/v1/sites/pirate", {}, "admin", 204),
        ("DELETE", f"/api/v1/works/{work}", {}, "admin", 204),
    ]  # fmt: skip


@pytest.mark.parametrize("username", [None, "victor", "rita", "alice"])
def test_every_route_under_every_role(
    app: Flask, client: FlaskClient, seeded: dict[str, str], username: str | None
) -> None:
    role = PASSWORDS[username][0] if username else None
    headers = bearer(make_token(app, username)) if username else {}
    for method, path, kwargs, needs, success in routes(seeded):
        response = client.open(path, method=method, headers=headers, **kwargs)
        if needs is None or (role and ROLE_ORDER.index(role) >= ROLE_ORDER.index(needs)):
            expected = success
        else:
            expected = 401 if role is None else 403
        assert response.status_code == expected, (method, path, role, response.get_json())
        if expected >= 400:
            assert set(response.get_json()) == {"error"}
            if expected == 401:
                assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_query_by_url_whose_page_is_cut_off_says_it_could_not_be_fetched(
    app: Flask, client: FlaskClient, as_reviewer: FlaskClient, web_ctx: Context
) -> None:
    """A page cut off in its headers is a failed fetch (the API's 422, the query page's
    error), not an empty page taken for no text given."""
    web_ctx.__dict__["settings"] = dataclasses.replace(web_ctx.settings, query_allow_private=True)
    headers = bearer(make_token(app, "rita"))

    def cut_off(conn: socket.socket) -> None:
        with conn, suppress(OSError):
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")

    with raw_server(cut_off) as port:
        url = f"http://127.0.0.1:{port}/cut"
        answer = client.post("/api/v1/query", json={"url": url}, headers=headers)
        page = post(as_reviewer, "/query/", {"url": url})
    assert answer.status_code == 422, answer.get_json()
    assert answer.get_json() == {"error": "that URL could not be fetched"}
    assert page.status_code == 200
    assert 'id="query-error"' in page.get_data(as_text=True)
    assert "that URL could not be fetched" in page.get_data(as_text=True)


def test_the_query_page_and_the_api_take_the_same_urls(
    app: Flask, client: FlaskClient, as_reviewer: FlaskClient, web_ctx: Context, tmp_path: Any
) -> None:
    """One check of the URL a query fetches, for the page and the API alike
    (:func:`admin.services.query.fetchable`): any scheme but HTTP(S) is a 400 from both, and
    an HTTP URL written in capitals (a scheme is case-insensitive, RFC 3986) is fetched by
    both and finds the work its page copies."""
    from admin.scan import serve_directory

    text = sample_text()
    web_ctx.engine.add_work(text, title="茶史", source="t.txt")
    web_ctx.__dict__["settings"] = dataclasses.replace(web_ctx.settings, query_allow_private=True)
    headers = bearer(make_token(app, "rita"))
    body = "".join(f"<p>{line}</p>" for line in text.splitlines() if line.strip())
    (tmp_path / "copy.html").write_text(
        f"<html><head><meta charset='utf-8'><title>t</title></head><body>{body}</body></html>",
        encoding="utf-8",
    )
    for url in ("ftp://127.0.0.1/copy.html", "file:///etc/passwd", "javascript:alert(1)"):
        assert client.post("/api/v1/query", json={"url": url}, headers=headers).status_code == 400
        assert post(as_reviewer, "/query/", {"url": url}).status_code == 400
    with serve_directory(tmp_path) as base:
        url = "HTTP://" + base.removeprefix("http://") + "copy.html"
        answer = client.post("/api/v1/query", json={"url": url}, headers=headers)
        page = post(as_reviewer, "/query/", {"url": url}).get_data(as_text=True)
    assert answer.status_code == 200, answer.get_json()
    assert [r["title"] for r in answer.get_json()["results"]] == ["茶史"]
    assert 'id="query-summary">1 work(s) copied' in page


def test_what_the_routes_answer(
    app: Flask, client: FlaskClient, web_ctx: Context, seeded: dict[str, str]
) -> None:
    headers = bearer(make_token(app, "alice"))
    works = client.get("/api/v1/works", headers=headers).get_json()
    assert [w["id"] for w in works["works"]] == [seeded["work"]] and works["next"] is None
    [match] = client.get("/api/v1/matches", headers=headers).get_json()["matches"]
    assert match["id"] == seeded["match"] and match["work_id"] == seeded["work"]
    assert match["site"] == "pirate" and match["status"] == "new" and match["score"] > 0.5
    assert match["siblings"] == []  # the work has no edition
    detail = client.get(f"/api/v1/matches/{match['id']}", headers=headers).get_json()
    assert detail["evidence"] and all(e["chars"] > 0 for e in detail["evidence"])
    changed = client.put(
        f"/api/v1/matches/{match['id']}/status",
        json={"status": "takedown_sent", "note": "邮件已发"},
        headers=headers,
    ).get_json()
    assert changed["status"] == "takedown_sent"
    stored = web_ctx.store.matches.match(match_id=match["id"])
    assert stored["status"] == "takedown_sent" and stored["reviewed_by"] == "alice"
    [result] = client.post(
        "/api/v1/query", json={"text": sample_text()[:600]}, headers=headers
    ).get_json()["results"]
    assert result["work_id"] == seeded["work"] and result["passages"]
    summary = client.get("/api/v1/reports/summary", headers=headers).get_json()
    assert summary["total"] == 1 and summary["by_site"] == [{"site": "pirate", "matches": 1}]
    notice = client.get("/api/v1/reports/takedown/pirate", headers=headers).get_json()
    assert notice["matches"] == 1 and match["url"] in notice["notice"]
    site = client.get("/api/v1/sites/pirate", headers=headers).get_json()
    assert site["start_urls"] == ["http://127.0.0.1:9/"] and site["schedule"] == "never"


def test_a_match_names_the_other_editions_of_its_work(
    app: Flask, client: FlaskClient, web_ctx: Context
) -> None:
    """Two editions of a work, one with three lines reversed: a page copying the other is
    its match, which names the first edition among its siblings, no tie."""
    text = sample_text("lighthouse")
    lines = text.split("\n")
    long = [i for i, line in enumerate(lines) if len(line) > 40]
    for i in long[2:5]:
        lines[i] = lines[i][::-1]
    first = web_ctx.engine.add_work(text, title="灯塔", source="a.txt")
    second = web_ctx.engine.add_work("\n".join(lines), title="灯塔（修订版）", source="b.txt")
    [record] = web_ctx.engine.process_page("http://p.example/1", "\n".join(lines), site="p")
    headers = bearer(make_token(app, "alice"))
    match = client.get(f"/api/v1/matches/{record['_id']}", headers=headers).get_json()
    assert match["work_id"] == second
    assert match["siblings"] == [{"work_id": first, "work_title": "灯塔", "tie": False}]


def test_works_register_as_json_or_files_and_match_pages_already_crawled(
    app: Flask, client: FlaskClient, web_ctx: Context, dispatch: InlineDispatch
) -> None:
    headers = bearer(make_token(app, "alice"))
    copy = "盗版小说网\n" + sample_text("lighthouse")[:1500]
    web_ctx.engine.process_page("http://pirate.example/7", copy, site="pirate", title="第七章")
    made = client.post(
        "/api/v1/works",
        json={"title": "灯塔", "text": sample_text("lighthouse"), "author": "某人"},
        headers=headers,
    )
    assert made.status_code == 201
    [added] = made.get_json()["added"]
    dispatch.wait()
    [match] = web_ctx.store.matches.list_matches(work_id=added["id"])
    assert match["url"] == "http://pirate.example/7"
    files = {"files": [(io.BytesIO(sample_text("river-town").encode("gbk")), "河镇.txt")]}
    uploaded = client.post("/api/v1/works", data=files, headers=headers)
    assert uploaded.status_code == 201 and uploaded.get_json()["added"][0]["title"] == "河镇"
    too_short = client.post("/api/v1/works", json={"title": "短", "text": "太短"}, headers=headers)
    assert too_short.status_code == 422 and too_short.get_json()["problems"]


def test_works_and_matches_page_by_keyset(
    app: Flask, client: FlaskClient, web_ctx: Context
) -> None:
    headers = bearer(make_token(app, "victor"))
    base = sample_text("tea-history")
    for n in range(5):
        web_ctx.engine.add_work(f"第{n}卷\n" + base[n * 100 :] + base[: n * 100],
                                title=f"卷{n}", source=f"v{n}.txt")  # fmt: skip
    seen: list[str] = []
    after = ""
    while True:
        page = client.get(f"/api/v1/works?limit=2&after={after}", headers=headers).get_json()
        seen += [w["id"] for w in page["works"]]
        if page["next"] is None:
            break
        after = page["next"]
    assert len(seen) == len(set(seen)) == 5
    assert seen == sorted(seen, reverse=True)
    found = client.get("/api/v1/works?q=卷3", headers=headers).get_json()["works"]
    assert [w["title"] for w in found] == ["卷3"]


def test_input_can_carry_no_operator(app: Flask, client: FlaskClient, seeded: dict) -> None:
    headers = bearer(make_token(app, "alice"))
    for path in (
        "/api/v1/matches?site[$ne]=x&status=new",
        "/api/v1/matches?work[$gt]=",
    ):
        assert client.get(path, headers=headers).status_code == 200  # unknown args, ignored
    refused = [
        client.get("/api/v1/matches?site=$ne", headers=headers),
        client.get("/api/v1/matches?work={\"$ne\":1}", headers=headers),
        client.get("/api/v1/matches?after=1-$gt", headers=headers),
        client.put(f"/api/v1/matches/{seeded['match']}/status",
                   json={"status": {"$ne": "new"}}, headers=headers),
        client.post("/api/v1/sites", json={"name": {"$gt": ""}, "start_urls": ["http://a/"]},
                    headers=headers),
        client.post("/api/v1/sites", json={"name": "x", "start_urls": ["http://a/"],
                                           "extra": {"$where": "1"}}, headers=headers),
        client.post("/api/v1/query", json={"text": {"$ne": ""}}, headers=headers),
        client.get("/api/v1/works/{\"$ne\":null}", headers=headers),
    ]  # fmt: skip
    assert [r.status_code for r in refused] == [400] * len(refused)
    assert client.get("/api/v1/sites", headers=headers).get_json()["sites"][0]["name"] == "pirate"


def test_tokens_are_hashed_at_rest_scoped_and_revocable(
    app: Flask, client: FlaskClient, web_ctx: Context, seeded: dict
) -> None:
    secret = make_token(app, "rita", role="viewer")
    [stored] = web_ctx.store.tokens.api_tokens()
    assert stored["_id"] == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in repr(stored) and stored["hint"] == secret[:8]
    match = seeded["match"]
    review = {"json": {"status": "confirmed"}, "headers": bearer(secret)}
    assert client.get("/api/v1/matches", headers=bearer(secret)).status_code == 200
    assert client.put(f"/api/v1/matches/{match}/status", **review).status_code == 403
    # no token stronger than its user
    browser = app.test_client()
    login(browser, "rita")
    refused = post(browser, "/tokens/", {"name": "too strong", "role": "admin"})
    assert refused.status_code == 400 and "cannot make a token" in refused.get_data(as_text=True)
    # a demoted account's tokens lose the rights it lost, at once
    full = make_token(app, "rita")
    assert client.put(f"/api/v1/matches/{match}/status", json={"status": "confirmed"},
                      headers=bearer(full)).status_code == 200  # fmt: skip
    Users(web_ctx.engine.store).create("rita", "rita-password-2", "viewer", replace=True)
    assert client.put(f"/api/v1/matches/{match}/status", json={"status": "new"},
                      headers=bearer(full)).status_code == 403  # fmt: skip
    # listed for its user (not its secret), revoked from the admin
    assert login(browser, "rita", "rita-password-2").status_code == 302
    page = browser.get("/tokens/").get_data(as_text=True)
    assert "rita-script" in page and secret not in page
    token_id = stored["token_id"]
    assert post(browser, f"/tokens/{token_id}/revoke").status_code == 302
    assert client.get("/api/v1/matches", headers=bearer(secret)).status_code == 401
    # a viewer cannot revoke another user's token; an admin can
    alice_token = make_token(app, "alice")
    alice_id = hashlib.sha256(alice_token.encode()).hexdigest()[:12]
    login(browser, "victor")
    assert post(browser, f"/tokens/{alice_id}/revoke").status_code == 404
    assert client.get("/api/v1/works", headers=bearer(alice_token)).status_code == 200
    for bad in ("", "Bearer", "Bearer fpt_short", f"Basic {alice_token}", "Bearer " + "x" * 5000):
        assert client.get("/api/v1/works", headers={"Authorization": bad}).status_code == 401


def test_the_session_cookie_does_not_open_the_api(as_admin: FlaskClient) -> None:
    assert as_admin.get("/api/v1/works").status_code == 401
    assert as_admin.post("/api/v1/sites", json={}).status_code == 401


def test_requests_are_rate_limited_per_user(
    web_ctx: Context, dispatch: InlineDispatch, redis_client: Any
) -> None:
    settings = Settings.from_env(
        redis_prefix=web_ctx.settings.redis_prefix,
        mongo_db=web_ctx.settings.mongo_db,
        api_rate_per_minute=3,
    )
    ctx = Context(settings=settings, engine=web_ctx.engine)
    users = Users(web_ctx.engine.store)
    for name, (role, password) in PASSWORDS.items():
        users.create(name, password, role)
    app = create_app(ctx, dispatch=dispatch, secret_key="t", lock=dispatch.lock, schedules=False)
    client = app.test_client()
    victor, rita = bearer(make_token(app, "victor")), bearer(make_token(app, "rita"))
    codes = [client.get("/api/v1/sites", headers=victor).status_code for _ in range(4)]
    limited = client.get("/api/v1/sites", headers=victor)
    if codes[:3] != [200, 200, 200]:  # the minute turned between the requests: once more
        codes = [client.get("/api/v1/sites", headers=victor).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429] and limited.status_code == 429
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    assert limited.get_json() == {"error": "too many requests: slow down"}
    assert client.get("/api/v1/sites", headers=rita).status_code == 200  # another user
    assert client.get("/api/v1/openapi.json").status_code == 200  # no token, no limit


def test_the_document_covers_every_route(client: FlaskClient, app: Flask) -> None:
    doc = client.get("/api/v1/openapi.json").get_json()
    assert doc["openapi"].startswith("3.") and doc["servers"][0]["url"] == "http://localhost"
    documented = {(method.upper(), path) for path, ops in doc["paths"].items() for method in ops}
    served = {
        (method, re.sub(r"<(\w+)>", r"{\1}", rule.rule))
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/api/")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert documented == served and len(served) == 21
    site = doc["components"]["schemas"]["SiteCreate"]["properties"]
    assert set(site) == {f for f in SiteConfig.__dataclass_fields__ if f != "extra"}


def test_a_site_saved_authorised_classifies_its_unreviewed_matches(
    app: Flask, client: FlaskClient, web_ctx: Context, seeded: dict[str, str]
) -> None:
    headers = bearer(make_token(app, "alice"))
    body = {"start_urls": ["http://127.0.0.1:9/"], "schedule": "never", "authorised": True}
    saved = client.put("/api/v1/sites/pirate", json=body, headers=headers)
    assert saved.status_code == 200 and saved.get_json()["authorised"] is True
    stored = web_ctx.store.matches.match(match_id=seeded["match"])
    assert stored["status"] == "authorised" and stored["reviewed_by"] == "alice"
    bad_cron = {**body, "recrawl": "cron 99 * * * *"}
    assert client.put("/api/v1/sites/pirate", json=bad_cron, headers=headers).status_code == 400
