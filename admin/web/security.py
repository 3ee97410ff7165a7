"""Sessions, roles, CSRF tokens and security headers of the admin platform.

- The session is Flask's signed cookie (itsdangerous, HMAC-SHA1 over the secret key),
  ``HttpOnly`` and ``SameSite=Lax``; it holds the username, read back from the ``users``
  collection on every request so a removed or demoted account loses its rights at once.
- Every POST must carry the session's CSRF token (a form field ``csrf_token`` or the
  ``X-CSRF-Token`` header), compared in constant time; anything else is refused with 400.
- Every response gets a Content-Security-Policy with no inline script (``script-src
  'self'``), ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff``, a
  ``Referrer-Policy``; pages for a logged-in user are ``Cache-Control: no-store``.
"""

from __future__ import annotations

import functools
import hmac
import secrets
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from flask import Response, abort, g, redirect, request, session, url_for

from admin.web.users import User, Users

F = TypeVar("F", bound=Callable[..., Any])

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
PUBLIC_ENDPOINTS = frozenset({"auth.login", "static", "health", "favicon"})


def csrf_token() -> str:
    """The session's CSRF token (made on first use)."""
    token = session.get("csrf")
    if not token:
        token = session["csrf"] = secrets.token_urlsafe(32)
    return token


def check_csrf() -> None:
    """Refuse a POST without the session's token."""
    if request.method != "POST":
        return
    unread = request.mimetype == "multipart/form-data" and (request.content_length or 0) > 0
    if unread and not request.form and not request.files:
        # Werkzeug drops a whole multipart body it cannot parse, such as one whose file name
        # is not UTF-8 (a GBK name from an older browser or tool): say that, not "expired".
        abort(400, "the upload could not be read: is a file name not UTF-8? rename it and retry")
    sent = request.form.get("csrf_token") or request.headers.get("X-CSRF-Token") or ""
    expected = session.get("csrf") or ""
    if not expected or not hmac.compare_digest(str(sent), str(expected)):
        abort(400, "the form has expired or did not come from this site: reload and retry")


def load_user(users: Users) -> Response | None:
    """Set ``g.user`` from the session; send anyone not logged in to the login page."""
    g.user = users.get(session.get("user"), session.get("epoch"))
    if g.user is None and request.endpoint not in PUBLIC_ENDPOINTS:
        session.pop("user", None)
        if request.method == "GET":
            return redirect(url_for("auth.login", next=request.full_path))
        abort(401)
    return None


def requires(role: str) -> Callable[[F], F]:
    """A view only users with ``role`` (or a stronger one) may run; others get 403."""

    def wrap(view: F) -> F:
        @functools.wraps(view)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            user: User | None = g.get("user")
            if user is None:
                abort(401)
            if not user.can(role):
                abort(403, f"this needs the {role} role")
            return view(*args, **kwargs)

        return guarded  # type: ignore[return-value]

    return wrap


def add_headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    if g.get("user") is not None or request.endpoint == "auth.login":
        response.headers["Cache-Control"] = "no-store"
        response.headers["Pragma"] = "no-cache"
    return response


def safe_next(target: str | None) -> str:
    """A redirect target inside this site (else the dashboard): a path, with no control
    character (browsers drop tabs and line breaks, so ``/<TAB>/evil.example`` would be
    ``//evil.example``), no backslash, and nothing a URL parser reads as a host or scheme."""
    if not target or any(ord(c) < 32 or c == "\x7f" for c in target) or "\\" in target:
        return url_for("dashboard.index")
    parts = urlsplit(target)
    if target.startswith("/") and not target.startswith("//") and not parts.scheme + parts.netloc:
        return target
    return url_for("dashboard.index")


def http_url(value: object) -> str:
    """``value`` when it is an http(s) URL, else ``#`` (no ``javascript:`` links)."""
    text = str(value or "")
    return text if text.lower().startswith(("http://", "https://")) else "#"
