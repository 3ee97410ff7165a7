"""Sites: crawl configuration and schedule, authorised flag, crawl now, last crawls (a
failed one acknowledged, which clears it from ``fptrack check``), and the URL rules crawls
learnt (:mod:`crawler.dust`): parameter rules listed, deleted (never learnt again) and added
by hand, dead link patterns listed and forgotten."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for

from admin.human import site_facts
from admin.registration import remove_site, save_site
from admin.web import deps
from admin.web.security import requires
from matcher.sites import crawl_runs
from matcher.sites.site_config import SiteConfig, SiteConfigError
from matcher.store.common import StoreError, now

bp = Blueprint("sites", __name__, url_prefix="/sites")
LINE_FIELDS = ("start_urls", "allowed_domains", "include", "exclude")
FLAG_FIELDS = ("join_next_pages", "obey_robots", "authorised", "render")
INT_FIELDS = {"max_depth": 5, "max_pages": 0, "deadline": 0, "crawlers": 1}  # with their defaults


@bp.get("/")
def index() -> Any:
    store = deps.store()
    sites = store.sites.list_sites()
    latest = store.crawls.latest_crawls()
    crawls = {s.name: crawl_runs.outline(latest.get(s.name)) for s in sites}
    return render_template("sites.html", sites=sites, crawls=crawls)


@bp.get("/<name>")
def detail(name: str) -> Any:
    site = deps.site_or_404(name)
    store = deps.store()
    crawls = store.crawls.last_crawls(site.name, 10)
    outlines = [crawl_runs.outline(c, _found_during(c)) for c in crawls]
    rules = store.sites.site_rules(site.name)
    matches = {
        "all": store.matches.count(site=site.name, active_only=True),
        "new": store.matches.count(site=site.name, status="new", active_only=True),
    }
    return render_template(
        "site.html",
        site=site,
        facts=site_facts(site.to_dict()),
        crawls=zip(crawls, outlines, strict=True),
        rules=rules,
        matches=matches,
        unseen=_unseen_failures(site.name, crawls, store.sites.creation_times().get(site.name)),
    )


def _found_during(run: dict[str, Any]) -> int | None:
    """The matches of a crawl run's site first found while it ran (None: no start time)."""
    started = run.get("started_at")
    if not isinstance(started, datetime):
        return None
    ended = run.get("finished_at")
    return deps.store().matches.count(
        site=run["site"], since=started, until=ended if isinstance(ended, datetime) else None,
        active_only=True,
    )  # fmt: skip


def _unseen_failures(site: str, crawls: list[dict], saved: Any) -> set[str]:
    """The ids of the failed runs among ``crawls`` (a site's newest) that ``fptrack check``
    reports until someone acknowledges them (:func:`matcher.sites.crawl_runs.open_failures`,
    whatever their age)."""
    ends = [
        c["finished_at"] for c in crawls if c.get("outcome") == "finished" and c.get("finished_at")
    ]
    failed = [c for c in crawls if c.get("outcome") == "failed"]
    finished = {site: max(ends)} if ends else {}
    return {run["run_id"] for run in crawl_runs.open_failures(failed, {site: saved}, finished)}


@bp.post("/<name>/crawls/<run_id>/acknowledge")
@requires("reviewer")
def acknowledge(name: str, run_id: str) -> Any:
    """Acknowledge a failed crawl run: ``fptrack check`` no longer reports it; who and when
    are recorded with it and shown."""
    site = deps.site_or_404(name)
    by = deps.current_user().username
    done = deps.store().crawls.acknowledge_failures(site.name, by=by, at=now(), run_id=run_id)
    flash("crawl failure acknowledged" if done else "no unacknowledged failed crawl of that id")
    return redirect(url_for("sites.detail", name=site.name))


@bp.post("/<name>/rules")
@requires("admin")
def rules(name: str) -> Any:
    """Add a parameter rule, delete one, or forget a dead link pattern (``action``)."""
    site = deps.site_or_404(name)
    sites = deps.store().sites
    form = request.form
    action = form.get("action", "")
    pattern, param = form.get("pattern", "").strip(), form.get("param", "").strip()
    try:
        if action == "add":
            done = sites.add_site_rule(site.name, pattern, param)
            flash(f"links on {pattern} lose {param}" if done else "that rule exists")
        elif action == "delete":
            done = sites.delete_site_rule(site.name, pattern, param)
            flash(f"rule deleted: {param} on {pattern}" if done else "no such rule")
        elif action == "forget":
            done = sites.delete_dead_pattern(site.name, pattern)
            flash(f"{pattern} is asked for again" if done else "no such dead pattern")
        else:
            flash("unknown action")
    except StoreError as exc:
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
    s = deps.services()
    if request.method == "GET":
        return render_template("site_form.html", site=site, form=None, error="")
    try:
        config = _form_site(request.form, site.name if site else None)
    except (SiteConfigError, ValueError) as exc:
        return render_template("site_form.html", site=site, form=request.form, error=str(exc)), 400
    if site is None and s.ctx.store.sites.get_site(config.name) is not None:
        error = f"a site named {config.name} exists"
        return render_template("site_form.html", site=None, form=request.form, error=error), 400
    note = save_site(s.ctx.store, s.schedules, config, by=deps.current_user().username)
    flash(note)
    return redirect(url_for("sites.detail", name=config.name))


@bp.post("/<name>/crawl")
@requires("reviewer")
def crawl(name: str) -> Any:
    site = deps.site_or_404(name)
    flash(deps.services().dispatch.crawl(site))
    return redirect(url_for("sites.detail", name=site.name))


@bp.post("/<name>/remove")
@requires("admin")
def remove(name: str) -> Any:
    site = deps.site_or_404(name)
    s = deps.services()
    remove_site(s.ctx.store, s.schedules, site.name)
    flash(f"site {site.name} removed (its pages and matches stay)")
    return redirect(url_for("sites.index"))
