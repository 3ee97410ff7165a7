"""The API's sites: list them, read one (with who hosts it, as its RDAP lookup found:
:mod:`matcher.sites.hosting`), add, replace or remove one, crawl one now."""

from __future__ import annotations

from typing import Any

from flask import Response, abort, jsonify

from admin.web import deps
from admin.web.api.blueprint import SITE_NAME, json_object, ok, route, when
from matcher.sites.site_config import SiteConfig, SiteConfigError


@route("GET", "/sites", "viewer", "List the watched sites", responses=ok("SiteList"))
def list_sites() -> Any:
    return jsonify(sites=[s.to_dict() for s in deps.sites().all_sites()])


@route("GET", "/sites/{name}", "viewer",
       "One site, with who hosts it (null: never looked up)", params=(SITE_NAME,),
       responses=ok("SiteDetail"))  # fmt: skip
def get_site(name: str) -> Any:
    site = deps.site_or_404(name)
    return jsonify({**site.to_dict(), "hosting": hosting_json(deps.takedowns().hosting(site.name))})


def hosting_json(hosting: dict[str, Any] | None) -> dict[str, Any] | None:
    """A site's kept hosting (:meth:`matcher.store.takedowns.Takedowns.set_hosting`) as the
    API's ``Hosting``: its times in ISO 8601."""
    if hosting is None:
        return None
    out = {k: v for k, v in hosting.items() if k not in ("looked_up_at", "attempted_at")}
    out["looked_up_at"] = when(hosting.get("looked_up_at"))
    out["attempted_at"] = when(hosting.get("attempted_at") or hosting.get("looked_up_at"))
    return out


def _save_site(config: SiteConfig) -> dict[str, Any]:
    # as the admin's form does: schedules, authorised matches
    deps.sites().save(config, by=deps.current_user().username)
    return config.to_dict()


def _config(body: dict[str, Any]) -> SiteConfig:
    if "extra" in body:
        abort(400, "extra cannot be set through the API")
    try:
        return SiteConfig.from_dict(body)
    except (SiteConfigError, TypeError, ValueError) as exc:
        abort(400, str(exc))


@route("POST", "/sites", "admin", "Add a site (its schedule is saved at once)",
       body={"application/json": "Site"}, responses={"201": "Site"})  # fmt: skip
def create_site() -> Any:
    config = _config(json_object())
    if deps.sites().get(config.name) is not None:
        abort(409, f"a site named {config.name} exists")
    response = jsonify(_save_site(config))
    response.status_code = 201
    return response


@route("PUT", "/sites/{name}", "admin", "Replace a site's configuration",
       params=(SITE_NAME,), body={"application/json": "SiteUpdate"},
       responses=ok("Site"))  # fmt: skip
def replace_site(name: str) -> Any:
    site = deps.site_or_404(name)
    body = json_object()
    if body.get("name", site.name) != site.name:
        abort(400, "the name in the body differs from the site's")
    return jsonify(_save_site(_config({**body, "name": site.name})))


@route("DELETE", "/sites/{name}", "admin", "Remove a site (its pages and matches stay)",
       params=(SITE_NAME,), responses={"204": None})  # fmt: skip
def delete_site(name: str) -> Any:
    deps.sites().remove(deps.site_or_404(name).name)
    return Response(status=204)


@route("POST", "/sites/{name}/crawl", "reviewer", "Crawl the site now",
       params=(SITE_NAME,), responses={"202": "Message"})  # fmt: skip
def crawl_site(name: str) -> Any:
    message = deps.sites().crawl(deps.site_or_404(name))
    response = jsonify(message=message)
    response.status_code = 202
    return response
