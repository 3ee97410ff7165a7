"""Accounts, sessions, CSRF, lock-out and security headers of the admin platform."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from admin.web import users as users_module
from admin.web.users import UserError, Users
from tests.web.web_support import PASSWORDS, csrf, login, post

PAGES = ["/", "/matches/", "/works/", "/sites/", "/query/", "/reports/"]


def test_logged_out_users_see_nothing(client: FlaskClient) -> None:
    for path in PAGES:
        response = client.get(path)
        assert response.status_code == 302 and "/login" in response.headers["Location"], path
    assert client.post("/matches/bulk", data={}).status_code in (400, 401)
    assert client.get("/healthz").status_code == 200


def test_login_logout_and_session(client: FlaskClient) -> None:
    response = login(client, "alice")
    assert response.status_code == 302 and response.headers["Location"] == "/"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    page = client.get("/")
    assert page.status_code == 200 and "alice (admin)" in page.get_data(as_text=True)
    assert post(client, "/logout").status_code == 302
    assert client.get("/").status_code == 302


def test_wrong_password_is_refused_without_saying_which_part(client: FlaskClient) -> None:
    wrong = login(client, "alice", "not-the-password")
    unknown = login(client, "nobody", "not-the-password")
    assert wrong.status_code == unknown.status_code == 401
    assert "wrong username or password" in wrong.get_data(as_text=True)
    assert "wrong username or password" in unknown.get_data(as_text=True)


def test_repeated_failures_lock_the_account(client: FlaskClient) -> None:
    for _ in range(users_module.MAX_FAILURES):
        assert login(client, "rita", "bad-password").status_code == 401
    locked = login(client, "rita")  # the right password, but locked
    assert locked.status_code == 401 and "locked" in locked.get_data(as_text=True)


def test_login_redirects_only_inside_the_site(client: FlaskClient) -> None:
    token = csrf(client)
    data = {"username": "alice", "password": PASSWORDS["alice"][1], "csrf_token": token}
    evil = client.post("/login", data={**data, "next": "//evil.example/x"})
    assert evil.headers["Location"] == "/"
    client.post("/logout", data={"csrf_token": csrf(client, "/")})
    token = csrf(client)
    good = client.post("/login", data={**data, "csrf_token": token, "next": "/works/"})
    assert good.headers["Location"] == "/works/"


def test_every_form_needs_the_csrf_token(as_admin: FlaskClient) -> None:
    for path in ["/logout", "/matches/bulk", "/works/upload", "/sites/new", "/query/"]:
        assert as_admin.post(path, data={}).status_code == 400, path
        wrong = as_admin.post(path, data={"csrf_token": "forged"})
        assert wrong.status_code == 400, path
    assert as_admin.get("/").status_code == 200  # still logged in


def test_login_form_needs_csrf_too(client: FlaskClient) -> None:
    data = {"username": "alice", "password": PASSWORDS["alice"][1]}
    assert client.post("/login", data=data).status_code == 400


def test_security_headers(as_viewer: FlaskClient, client: FlaskClient) -> None:
    response = as_viewer.get("/")
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Cache-Control"] == "no-store"
    assert "Content-Security-Policy" in client.get("/login").headers


def test_a_removed_account_loses_access_at_once(app, as_viewer: FlaskClient) -> None:
    assert as_viewer.get("/").status_code == 200
    app.extensions["fptrack"].users.ops.db.users.delete_one({"username": "victor"})
    assert as_viewer.get("/").status_code == 302


def test_user_rules(app) -> None:
    users: Users = app.extensions["fptrack"].users
    with pytest.raises(UserError, match="at least"):
        users.create("bob", "short", "viewer")
    with pytest.raises(UserError, match="role"):
        users.create("bob", "long-enough-password", "root")
    with pytest.raises(UserError, match="username"):
        users.create("bob$ne", "long-enough-password", "viewer")
    with pytest.raises(UserError, match="exists"):
        users.create("alice", "long-enough-password", "viewer")
    stored = users.ops.db.users.find_one({"username": "alice"})
    assert stored["password_hash"].startswith("$argon2id$")
    assert PASSWORDS["alice"][1] not in str(stored)
    # operator-shaped usernames are refused before reaching MongoDB
    assert users.authenticate({"$ne": ""}, "x") == (None, "wrong username or password")
