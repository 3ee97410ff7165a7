"""Log in and log out."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, redirect, render_template, request, session, url_for

from admin.web import deps, security

bp = Blueprint("auth", __name__)


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    target = request.values.get("next", "")
    if request.method == "GET":
        return render_template("login.html", next=target, error="")
    user, reason = deps.services().users.authenticate(
        request.form.get("username", ""),
        request.form.get("password", ""),
        client=request.remote_addr or "",
    )
    if user is None:
        return render_template("login.html", next=target, error=reason), 401
    session.clear()  # a new session: no fixation
    session.permanent = True
    session["user"] = user.username
    session["epoch"] = user.epoch
    security.csrf_token()
    return redirect(security.safe_next(target))


@bp.post("/logout")
def logout() -> Any:
    """End the session, and with it every session of the account (a copied cookie too)."""
    if session.get("user"):
        deps.services().users.end_sessions(session["user"])
    session.clear()
    return redirect(url_for("auth.login"))
