"""Sessions, roles, CSRF tokens and security headers of the admin platform.

- The session is Flask's signed cookie (itsdangerous, HMAC-SHA1 over the secret key),
  ``HttpOnly`` and ``SameSite=Lax``; it holds the username, read back from the ``users``
  collection on every request so a removed or demoted account loses its rights at once.
- Every POST must carry the session's CSRF token (a form field ``csrf_token`` or the
  ``X-CSRF-Token`` header), compared in constant time; anything else is refused with 400.
- Every request's body is bounded by its route (:func:`body_limit`: :data:`FORM_BYTES` for
  every form, the login and the API's JSON; more only for the routes of
  :data:`BODY_LIMITS`, and only for a request that carries a signed session naming a user or
  an API token), checked before anything else reads the request (:func:`check_body`): a
  larger one gets 413. The front of ``fptrack admin serve`` (:mod:`admin.web.front`) reads
  no more than that limit of a body. Forms are parsed within bounds too
  (:class:`BoundedRequest`): at most :data:`FORM_FIELDS` fields or parts, text parts of at
  most :data:`FORM_MEMORY_BYTES` each, files streamed to disk.
- Every response gets a Content-Security-Policy with no inline script (``script-src
  'self'``), ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff``, a
  ``Referrer-Policy``; pages for a logged-in user are ``Cache-Control: no-store``.
"""

from __future__ import annotations

import functools
import hmac
import secrets
from collections.abc import Callable
from typing import IO, Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

from flask import (
    Flask,
    Request,
    Response,
    abort,
    current_app,
    g,
    redirect,
    request,
    session,
    url_for,
)
from itsdangerous import BadSignature
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.formparser import FormDataParser
from werkzeug.http import parse_cookie

from admin.services.accounts import User, Users
from admin.services.api_tokens import TOKEN

F = TypeVar("F", bound=Callable[..., Any])

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
PUBLIC_ENDPOINTS = frozenset({"auth.login", "static", "health", "favicon"})
KIB, MIB = 1024, 1024 * 1024
FORM_BYTES = 64 * KIB
"""The body of a request by default: every form, the login, the API's JSON."""
TEXT_BYTES = 1 * MIB
"""A site's configuration, the takedown template (20,000 characters, URL-encoded)."""
QUERY_BYTES = 20 * MIB
"""A text to query (2,000,000 characters: URL-encoded, up to 9 bytes each)."""
UPLOAD_BYTES = 200 * MIB
"""Works uploaded at once."""
BODY_LIMITS = {
    "works.upload": UPLOAD_BYTES,
    "api.register_works": UPLOAD_BYTES,
    "query.index": QUERY_BYTES,
    "api.query": QUERY_BYTES,
    "reports.takedown_template": TEXT_BYTES,
    "sites.new": TEXT_BYTES,
    "sites.edit": TEXT_BYTES,
    "api.create_site": TEXT_BYTES,
    "api.replace_site": TEXT_BYTES,
}
"""The routes (endpoints) whose bodies may be larger than :data:`FORM_BYTES`."""
FORM_FIELDS = 1000
"""Fields of a URL-encoded form, parts of a multipart one, at most."""
FORM_MEMORY_BYTES = 1 * MIB
"""A multipart form's text part (not a file) at most: parts are held in memory."""


def body_limit(app: Flask, environ: dict[str, Any]) -> int:
    """The largest body the request of ``environ`` may have: its route's in
    :data:`BODY_LIMITS` when it carries credentials (:func:`credentials`), else
    :data:`FORM_BYTES`. Reads neither the body nor the store."""
    try:
        endpoint, _ = app.url_map.bind_to_environ(environ).match()
    except HTTPException:  # no such route or method, or a redirect: no body is used
        return FORM_BYTES
    limit = BODY_LIMITS.get(str(endpoint), FORM_BYTES)
    if limit > FORM_BYTES and not credentials(app, environ):
        return FORM_BYTES
    return limit


def credentials(app: Flask, environ: dict[str, Any]) -> bool:
    """Whether a request carries an API token (``Authorization: Bearer fpt_...``, its form
    only: checking it needs the store) or a session cookie signed by this application that
    names a user (not checked against the store either)."""
    scheme, _, secret = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() == "bearer" and TOKEN.match(secret.strip()):
        return True
    cookie = parse_cookie(environ.get("HTTP_COOKIE", "")).get(app.config["SESSION_COOKIE_NAME"])
    serializer = app.session_interface.get_signing_serializer(app)  # type: ignore[attr-defined]
    if not cookie or serializer is None:
        return False
    try:
        data = serializer.loads(cookie, max_age=int(app.permanent_session_lifetime.total_seconds()))
    except BadSignature:
        return False
    return isinstance(data, dict) and isinstance(data.get("user"), str)


def check_body() -> None:
    """Before anything else: refuse (413) a body larger than the route takes
    (:func:`body_limit`); what reads the body later reads no more than that."""
    limit = body_limit(current_app, request.environ)
    request.max_content_length = limit
    length = request.content_length
    if length is not None and length > limit:
        abort(413, f"the request is too large: this page takes at most {_size(limit)}")


def _size(n: int) -> str:
    """``n`` bytes in KiB or MiB.

    >>> _size(64 * 1024), _size(200 * 1024 * 1024)
    ('64 KiB', '200 MiB')
    """
    return f"{n // MIB} MiB" if n >= MIB else f"{n // KIB} KiB"


class BoundedFormParser(FormDataParser):
    """Werkzeug's form parser, with :attr:`max_form_parts` bounding the fields of a
    URL-encoded form too (Werkzeug bounds only multipart parts: a body of many empty fields
    takes about 100 times its size in memory)."""

    def _parse_urlencoded(
        self, stream: IO[bytes], mimetype: str, content_length: int | None, options: Any
    ) -> tuple[IO[bytes], MultiDict[str, str], MultiDict[str, Any]]:
        try:
            items = parse_qsl(
                stream.read().decode(),
                keep_blank_values=True,
                errors="werkzeug.url_quote",
                max_num_fields=self.max_form_parts,
            )
        except ValueError:  # more fields than max_num_fields
            raise RequestEntityTooLarge(
                f"the form has more than {self.max_form_parts:,} fields"
            ) from None
        return stream, self.cls(items), self.cls()


class BoundedRequest(Request):
    """The admin's request class: forms parsed by :class:`BoundedFormParser`."""

    form_data_parser_class = BoundedFormParser


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
