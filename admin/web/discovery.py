"""Pirate sites discovered (:mod:`matcher.sites.discovery`): the candidates, ranked, with their
evidence, and one action to watch one.

Routes:

- ``GET /discovery/``: candidates by score (the works each copies, its sampled pages that
  copy one, the watched sites that lead to it and how: link with its anchor text,
  redirect, announced address; its sample matches), new ones first; ``fptrack sites
  discover`` fills it;
- ``POST /discovery/<host>/watch`` (admins): the candidate becomes a watched site (its home
  page the start URL, crawled daily), its state ``watched``;
- ``POST /discovery/<host>/dismiss`` (admins): not a pirate site, not sampled again.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, flash, redirect, render_template, url_for

from admin.web import deps
from admin.web.security import requires
from matcher.sites.site_config import SiteConfigError

bp = Blueprint("discovery", __name__, url_prefix="/discovery")


@bp.get("/")
def index() -> Any:
    return render_template("discovery.html", candidates=deps.discovery().candidates())


def _candidate(host: str) -> dict:
    found = deps.discovery().candidate(host)
    if found is None:
        abort(404, f"no candidate {host}")
    return found


@bp.post("/<host>/watch")
@requires("admin")
def watch(host: str) -> Any:
    candidate = _candidate(host)
    try:
        config, note = deps.discovery().watch(
            host, candidate["home"], by=deps.current_user().username
        )
    except SiteConfigError as exc:
        abort(400, str(exc))
    flash(f"{host} is watched as {config.name}: {note}.", "ok")
    return redirect(url_for("discovery.index"))


@bp.post("/<host>/dismiss")
@requires("admin")
def dismiss(host: str) -> Any:
    _candidate(host)
    deps.discovery().dismiss(host)
    flash(f"{host} dismissed: it is not sampled again.", "ok")
    return redirect(url_for("discovery.index"))
