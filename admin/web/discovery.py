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

from admin.registration import save_site
from admin.web import deps
from admin.web.security import requires
from matcher.sites.discovery import site_name_for
from matcher.sites.site_config import SiteConfig, SiteConfigError

bp = Blueprint("discovery", __name__, url_prefix="/discovery")


@bp.get("/")
def index() -> Any:
    found = deps.engine().store.discovery.candidates()
    order = {"new": 0, "watched": 1, "dismissed": 2}
    found.sort(key=lambda c: (order.get(c.get("state", "new"), 3), -c.get("score", 0), c["_id"]))
    return render_template("discovery.html", candidates=found)


def _candidate(host: str) -> dict:
    found = deps.engine().store.discovery.candidate(host)
    if found is None:
        abort(404, f"no candidate {host}")
    return found


@bp.post("/<host>/watch")
@requires("admin")
def watch(host: str) -> Any:
    candidate = _candidate(host)
    try:
        config = SiteConfig.from_dict(
            {"name": site_name_for(host), "start_urls": [candidate["home"]]}
        )
    except SiteConfigError as exc:
        abort(400, str(exc))
    s = deps.services()
    note = save_site(s.ctx.store, s.schedules, config, by=deps.current_user().username)
    deps.engine().store.discovery.set_candidate_state(host, "watched")
    flash(f"{host} is watched as {config.name}: {note}.", "ok")
    return redirect(url_for("discovery.index"))


@bp.post("/<host>/dismiss")
@requires("admin")
def dismiss(host: str) -> Any:
    _candidate(host)
    deps.engine().store.discovery.set_candidate_state(host, "dismissed")
    flash(f"{host} dismissed: it is not sampled again.", "ok")
    return redirect(url_for("discovery.index"))
