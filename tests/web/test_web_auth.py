"""Accounts, sessions, CSRF, lock-out and security headers of the admin platform."""

from __future__ import annotations

import io
import threading

import pytest
from argon2 import PasswordHasher, Type, extract_parameters, profiles
from flask.testing import FlaskClient

from admin.services import accounts as accounts_module
from admin.services.accounts import REFUSED, UserError, Users
from tests.support.web import PASSWORDS, csrf, login, post

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


def test_repeated_failures_make_that_client_wait_not_the_account(app) -> None:
    attacker = app.test_client()
    attacker.environ_base["REMOTE_ADDR"] = "203.0.113.9"
    for _ in range(accounts_module.MAX_FAILURES):
        assert login(attacker, "rita", "bad-password").status_code == 401
    waiting = login(attacker, "rita")  # the right password, but this client must wait
    unknown = login(attacker, "nobody", "bad-password")
    assert waiting.status_code == unknown.status_code == 401
    assert waiting.get_data(as_text=True) == unknown.get_data(as_text=True)  # nothing told
    owner = app.test_client()
    owner.environ_base["REMOTE_ADDR"] = "198.51.100.7"
    assert login(owner, "rita").status_code == 302  # no one can lock another out


def test_guesses_sent_together_all_count(web_ctx) -> None:
    """The threads of an admin worker check logins at once: no failure is lost to another
    (each is counted in the store by one atomic update), so a client cannot send its guesses
    together to pass the limit. A guess that finds the client already waiting is refused
    uncounted; every other one is counted."""
    users = Users(web_ctx.engine.store)
    users.create("rita", PASSWORDS["rita"][1], "reviewer")
    guesses = 3 * accounts_module.MAX_FAILURES
    counted = []
    count_failure = users.store.users.count_login_failure

    def count(**fields: str) -> int:
        counted.append(fields)  # list.append is atomic
        return count_failure(**fields)

    users.store.users.count_login_failure = count  # the real update, its calls tallied
    start = threading.Barrier(guesses)

    def guess(n: int) -> None:
        start.wait()
        assert users.authenticate("rita", f"guess-{n:04d}", "203.0.113.9") == (None, REFUSED)

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(guesses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    [mine] = web_ctx.store.users.user_record(username="rita")["throttle"].values()
    assert mine["failures"] == len(counted) >= accounts_module.MAX_FAILURES
    assert mine["until"] is not None
    assert users.authenticate("rita", PASSWORDS["rita"][1], "203.0.113.9") == (None, REFUSED)
    user, _ = users.authenticate("rita", PASSWORDS["rita"][1], "198.51.100.7")
    assert user is not None and user.username == "rita"  # another client: not locked out
    assert len(web_ctx.store.users.user_record(username="rita")["throttle"]) == 1  # the other kept


def test_logout_ends_every_session_of_the_account_a_copied_cookie_too(app) -> None:
    first, second = app.test_client(), app.test_client()
    assert login(first, "victor").status_code == 302
    assert login(second, "victor").status_code == 302
    stolen = first.get_cookie("fptrack_session").value
    assert post(first, "/logout").status_code == 302
    replay = app.test_client()
    replay.set_cookie("fptrack_session", stolen)
    assert replay.get("/").status_code == 302  # to the login page
    assert second.get("/").status_code == 302
    assert login(second, "victor").status_code == 302 and second.get("/").status_code == 200


def test_a_new_password_ends_the_sessions(app, web_ctx) -> None:
    c = app.test_client()
    assert login(c, "victor").status_code == 302 and c.get("/").status_code == 200
    Users(web_ctx.engine.store).create("victor", "another-long-password", "viewer", replace=True)
    assert c.get("/").status_code == 302


def test_login_redirects_only_inside_the_site(client: FlaskClient) -> None:
    token = csrf(client)
    data = {"username": "alice", "password": PASSWORDS["alice"][1], "csrf_token": token}
    for target in ("//evil.example/x", "/\t/evil.example/x", "/\r\n/evil.example", "/\\evil",
                   "https://evil.example/", "/x\r\nSet-Cookie: a=b"):  # fmt: skip
        evil = client.post("/login", data={**data, "next": target})
        assert evil.status_code == 302 and evil.headers["Location"] == "/", target
        client.post("/logout", data={"csrf_token": csrf(client, "/")})
        data["csrf_token"] = csrf(client)
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
    app.extensions["fptrack"].users.store.db.users.delete_one({"username": "victor"})
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
    stored = users.store.users.user_record(username="alice")
    assert stored["password_hash"].startswith("$argon2id$")
    assert PASSWORDS["alice"][1] not in str(stored)
    # operator-shaped usernames are refused before reaching MongoDB
    assert users.authenticate({"$ne": ""}, "x") == (None, accounts_module.REFUSED)


def test_the_product_hashes_with_owasp_s_first_argon2id_configuration(
    product_hasher: PasswordHasher,
) -> None:
    hashed = product_hasher.hash("long-enough-password")
    found = extract_parameters(hashed)
    assert (found.type, found.memory_cost, found.time_cost, found.parallelism) == (
        Type.ID, 19 * 1024, 2, 1,
    )  # fmt: skip
    # a hash of RFC 9106's second set (the earlier default) verifies and is made again
    earlier = PasswordHasher.from_parameters(profiles.RFC_9106_LOW_MEMORY).hash("x" * 10)
    assert product_hasher.verify(earlier, "x" * 10) and product_hasher.check_needs_rehash(earlier)
    assert product_hasher.verify(hashed, "long-enough-password")
    assert not product_hasher.check_needs_rehash(hashed)


def test_bodies_are_bounded_by_route_before_anything_reads_them(
    app, client: FlaskClient, as_admin: FlaskClient
) -> None:
    from admin.web.security import BODY_LIMITS, FORM_BYTES

    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    assert set(BODY_LIMITS) <= endpoints  # a renamed route keeps its limit
    big = "a" * (FORM_BYTES + 1)
    token = csrf(client)
    login_form = {"username": "alice", "password": big, "csrf_token": token}
    refused = client.post("/login", data=login_form)
    assert refused.status_code == 413
    assert "the request is too large: this page takes at most 64 KiB" in refused.get_data(True)
    # a body over the form limit is refused on a route with a larger one too, for anonymous
    # requests (no session naming a user, no token): nothing was read, nothing hashed
    upload = {"files": (io.BytesIO(big.encode()), "w.txt"), "csrf_token": token}
    assert client.post("/works/upload", data=upload).status_code == 413
    # a logged-in user's upload and query may be larger
    upload = {"files": (io.BytesIO(("茶" * FORM_BYTES).encode()), "tea.txt")}
    registered = post(as_admin, "/works/upload", upload, follow_redirects=True)
    assert registered.status_code == 200 and "tea.txt" in registered.get_data(True)
    assert post(as_admin, "/query/", {"text": "茶" * FORM_BYTES}).status_code == 200
    assert post(as_admin, "/tokens/", {"name": big}).status_code == 413


def test_forms_are_parsed_within_bounds(client: FlaskClient, as_admin: FlaskClient) -> None:
    from admin.web.security import FORM_FIELDS

    token = csrf(client)
    many = "&".join(["a=1"] * FORM_FIELDS) + f"&csrf_token={token}"
    refused = client.post("/login", data=many, content_type="application/x-www-form-urlencoded")
    assert refused.status_code == 413
    assert f"more than {FORM_FIELDS:,} fields" in refused.get_data(True)
    # an anonymous request's form is not parsed at all: the user is looked up first
    assert client.post("/matches/bulk", data=many).status_code == 401
    assert as_admin.get("/").status_code == 200
