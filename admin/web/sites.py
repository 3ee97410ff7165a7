"""Sites: crawl configuration and schedule, authorised flag, crawl now, last crawls (a
failed one acknowledged, which clears it from ``fptrack check``), and the URL rules crawls
learnt (:mod:`crawler.dust`): parameter rules listed, deleted (never learnt again) and added
by hand, dead link patterns listed and forgotten."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for

from admin.human import site_facts
from admin.services.sites import RuleRefused
from admin.web import deps
from admin.web.security import requires
from matcher.sites.site_config import SiteConfig, SiteConfigError

bp = Blueprint("sites", __name__, url_prefix="/sites")
LINE_FIELDS = ("start_urls", "allowed_domains", "include", "exclude")
FLAG_FIELDS = ("join_next_pages", "obey_robots", "authorised", "render")
INT_FIELDS = {"max_depth": 5, "max_pages": 0, "deadline": 0, "crawlers": 1}  # with their defaults


@bp.get("/")
def index() -> Any:
    sites, crawls = deps.sites().overview()
    return render_template("sites.html", sites=sites, crawls=crawls)


@bp.get("/<name>")
def detail(name: str) -> Any:
    site = deps.site_or_404(name)
    found = deps.sites().detail(site)
    return render_template(
        "site.html",
        site=site,
        facts=site_facts(site.to_dict()),
        crawls=found.crawls,
        rules=found.rules,
        matches=found.matches,
        unseen=found.unseen,
        hosting=deps.takedowns().hosting(site.name),
    )


@bp.post("/<name>/crawls/<run_id>/acknowledge")
@requires("reviewer")
def acknowledge(name: str, run_id: str) -> Any:
    """Acknowledge a failed crawl run: ``fptrack check`` no longer reports it; who and when
    are recorded with it and shown."""
    site = deps.site_or_404(name)
    by = deps.current_user().username
    done = deps.sites().acknowledge(site, run_id, by=by)
    flash("crawl failure acknowledged" if done else "no unacknowledged failed crawl of that id")
    return redirect(url_for("sites.detail", name=site.name))


@bp.post("/<name>/rules")
@requires("admin")
def rules(name: str) -> Any:
    """Add a parameter rule, delete one, or forget a dead link pattern (``action``)."""
    site = deps.site_or_404(name)
    sites = deps.sites()
    form = request.form
    action = form.get("action", "")
    pattern, param = form.get("pattern", "").strip(), form.get("param", "").strip()
    try:
        if action == "add":
            done = sites.add_rule(site, pattern, param)
            flash(f"links on {pattern} lose {param}" if done else "that rule exists")
        elif action == "delete":
            done = sites.delete_rule(site, pattern, param)
            flash(f"rule deleted: {param} on {pattern}" if done else "no such rule")
        elif action == "forget":
            done = sites.forget_dead_pattern(site, pattern)
            flash(f"{pattern} is asked for again" if done else "no such dead pattern")
        else:
            flash("unknown action")
    except RuleRefused as exc:
        flash(str(exc))
    return redirect(url_for("sites.detail", name=site.name))


def _form_site(form: Any, name: str | None) -> SiteConfig:
    data: dict[str, Any] = {"name": name or form.get("name", "").strip()}
    for field in LINE_FIELDS:
        data[field] = [x.strip() for x in form.get(field, "").splitlines() if x.strip()]
    for field, default in INT_FIELDS.items():
        try:
            data[field] = int(form.get(field, "") or default)
        except ValueError:
            raise SiteConfigError(f"{field} must be a whole number") from None
    for field in FLAG_FIELDS:
        data[field] = form.get(field) == "on"
    data["content_selector"] = form.get("content_selector", "").strip()
    data["schedule"] = form.get("schedule", "daily").strip() or "daily"
    data["recrawl"] = form.get("recrawl", "never").strip() or "never"
    return SiteConfig.from_dict(data)


@bp.route("/new", methods=["GET", "POST"])
@requires("admin")
def new() -> Any:
    return _edit(None)


@bp.route("/<name>/edit", methods=["GET", "POST"])
@requires("admin")
def edit(name: str) -> Any:
    return _edit(deps.site_or_404(name))


def _edit(site: SiteConfig | None) -> Any:
    sites = deps.sites()
    if request.method == "GET":
        return render_template("site_form.html", site=site, form=None, error="")
    try:
        config = _form_site(request.form, site.name if site else None)
    except (SiteConfigError, ValueError) as exc:
        return render_template("site_form.html", site=site, form=request.form, error=str(exc)), 400
    if site is None and sites.get(config.name) is not None:
        error = f"a site named {config.name} exists"
        return render_template("site_form.html", site=None, form=request.form, error=error), 400
    note = sites.save(config, by=deps.current_user().username)
    flash(note)
    return redirect(url_for("sites.detail", name=config.name))


@bp.post("/<name>/crawl")
@requires("reviewer")
def crawl(name: str) -> Any:
    site = deps.site_or_404(name)
    flash(deps.sites().crawl(site))
    return redirect(url_for("sites.detail", name=site.name))


@bp.post("/<name>/remove")
@requires("admin")
def remove(name: str) -> Any:
    site = deps.site_or_404(name)
    deps.sites().remove(site.name)
    flash(f"site {site.name} removed (its pages and matches stay)")
    return redirect(url_for("sites.index"))
