"""API tokens in the admin: each user lists, makes and revokes their own (an admin: anyone's).

A new token's secret is shown once and never again (only its hash is kept,
:mod:`admin.services.api_tokens`): the form's answer redirects to the list (so reloading it
makes no second token), which takes the secret out of the session as it shows it.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, flash, g, redirect, render_template, request, session, url_for

from admin.services.accounts import ROLES, UserError
from admin.web import deps

bp = Blueprint("tokens", __name__, url_prefix="/tokens")
ISSUED_KEY = "issued_token"


def _page(error: str = "", code: int = 200) -> Any:
    roles = [r for r in ROLES if g.user.can(r)]
    tokens = deps.api_tokens().list(g.user)
    issued = session.pop(ISSUED_KEY, None)
    page = render_template("tokens.html", tokens=tokens, roles=roles, issued=issued, error=error)
    return page, code


@bp.get("/")
def index() -> Any:
    return _page()


@bp.post("/")
def create() -> Any:
    try:
        issued = deps.api_tokens().create(
            g.user, request.form.get("name", ""), request.form.get("role", "viewer")
        )
    except UserError as exc:
        return _page(error=str(exc), code=400)
    record = issued.record
    session[ISSUED_KEY] = {"secret": issued.secret, "name": record["name"], "role": record["role"]}
    return redirect(url_for("tokens.index"))


@bp.post("/<token_id>/revoke")
def revoke(token_id: str) -> Any:
    if not deps.api_tokens().revoke(g.user, token_id):
        abort(404, "no such token")
    flash("token revoked")
    return redirect(url_for("tokens.index"))
