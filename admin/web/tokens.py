"""API tokens in the admin: each user lists, makes and revokes their own (an admin: anyone's).

A new token's secret is shown once, on the page that answers its creation, and never again
(only its hash is kept, :mod:`admin.web.api_tokens`).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for

from admin.web.api_tokens import ApiTokens
from admin.web.users import ROLES, UserError

bp = Blueprint("tokens", __name__, url_prefix="/tokens")


def _tokens() -> ApiTokens:
    from admin.web.app import services

    return ApiTokens(services().ctx.engine.store)


def _page(issued: Any = None, error: str = "", code: int = 200) -> Any:
    roles = [r for r in ROLES if g.user.can(r)]
    tokens = _tokens().list(g.user)
    page = render_template("tokens.html", tokens=tokens, roles=roles, issued=issued, error=error)
    return page, code


@bp.get("/")
def index() -> Any:
    return _page()


@bp.post("/")
def create() -> Any:
    try:
        issued = _tokens().create(
            g.user, request.form.get("name", ""), request.form.get("role", "viewer")
        )
    except UserError as exc:
        return _page(error=str(exc), code=400)
    return _page(issued=issued)


@bp.post("/<token_id>/revoke")
def revoke(token_id: str) -> Any:
    if not _tokens().revoke(g.user, token_id):
        abort(404, "no such token")
    flash("token revoked")
    return redirect(url_for("tokens.index"))
