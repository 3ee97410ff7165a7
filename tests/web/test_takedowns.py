"""Takedowns followed to the end, on a real local site that removes, keeps, changes and
restores the pages a notice names, with the notice emailed to a real SMTP server: every
recheck fetches the page for real and verifies the works on all their segments; the figures
per site and per provider, the list to escalate, the admin page, the API, the CSV and the
command line agree with what the site was made to do. A notice names only matches a person
confirmed (unreviewed ones by an explicit choice the notice keeps) and is never sent while
the template's placeholders remain, from the admin, the API or the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient
from pymongo.database import Database

from admin.cli import main
from admin.context import Context
from admin.report.takedown import DETAILS_STATE_KEY, PLACEHOLDERS
from crawler.one_page import fetcher, page_text
from matcher.evidence.takedowns import figures, recheck_due
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.worker.ingest import Ingest
from tests.servers.alerts import closed_port_url, smtp_server
from tests.servers.takedown_site import ChangingSite
from tests.support.web import post, sample_text
from tests.web.test_api import bearer, make_token

CONTACT = "abuse@pirate.example"
PATHS = ("/book/1.html", "/book/2.html", "/book/3.html", "/book/4.html")


@pytest.fixture
def smtp() -> Iterator[tuple[str, list]]:
    with smtp_server() as server:
        yield server


@pytest.fixture
def web_ctx(redis_client: redis.Redis, mongo_db: Database, smtp: tuple[str, list]) -> Context:
    """The web suite's context, with the SMTP server for notices."""
    settings = Settings.from_env(
        redis_prefix="fptrack-test-web", mongo_db=mongo_db.name, smtp_url=smtp[0],
        smtp_from="fptrack@rights.example",
    )  # fmt: skip
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)
    return Context(settings=settings, engine=engine)


@pytest.fixture
def site() -> Iterator[ChangingSite]:
    with ChangingSite() as served:
        yield served


def copies(ctx: Context, site: ChangingSite) -> None:
    """A work, and a page of the site copying it at each of :data:`PATHS`, crawled and
    matched; the site watched as ``pirate``."""
    text = sample_text()
    ctx.engine.add_work(text, title="茶史", source="tea-history.txt")
    ctx.store.sites.save_site(
        SiteConfig.from_dict({"name": "pirate", "start_urls": [site.url("/")]})
    )
    queued: list[str] = []
    ingest = Ingest(ctx.engine.store, queued.append)
    for n, path in enumerate(PATHS, 1):
        url = site.put(path, f"第{n}章", text)
        read = page_text(site.pages[path].body, "text/html; charset=gbk", url)  # as crawled
        ingest.page(CrawledPage(url=url, site="pirate", title=f"第{n}章", text=read))
    for page_id in queued:
        ctx.engine.process_stored_page(page_id)


fetch = fetcher(Settings())
"""A recheck's fetch as a deployment's: the noticed page's own (loopback) host reached."""


def confirm_all(reviewer: FlaskClient, site: str = "pirate") -> None:
    """A reviewer confirms every match of ``site``, as the match list's bulk form does."""
    done = post(
        reviewer, f"/matches/bulk?site={site}", {"new_status": "confirmed", "scope": "filtered"}
    )
    assert done.status_code == 302


def set_details(ctx: Context) -> None:
    """The rights holder and contact a notice names, as an admin saves them."""
    details = {"rights_holder": "星河出版社", "contact": "legal@rights.example"}
    ctx.store.state.set_state(DETAILS_STATE_KEY, details)


def recheck(ctx: Context, at: object) -> dict[str, int]:
    return recheck_due(ctx.engine.store, fetch, ctx.engine.still_copies, at).outcomes


def test_a_notice_is_followed_until_its_copies_are_gone(
    web_ctx: Context,
    app: Flask,
    as_reviewer: FlaskClient,
    as_viewer: FlaskClient,
    site: ChangingSite,
    smtp: tuple[str, list],
    capsys: pytest.CaptureFixture[str],
) -> None:
    copies(web_ctx, site)
    assert main(["takedowns", "contact", "pirate", "--email", CONTACT], web_ctx) == 0
    capsys.readouterr()
    set_details(web_ctx)
    confirm_all(as_reviewer)

    sent = post(as_reviewer, "/takedowns/send/pirate", {"email": "1"})
    assert sent.status_code == 302 and sent.headers["Location"].endswith("/takedowns/")
    [(to, message)] = smtp[1]
    assert to == [CONTACT] and "pirate" in message["Subject"]
    body = message.get_body(preferencelist=("plain",)).get_content()
    assert all(site.url(p) in body for p in PATHS)
    store = web_ctx.engine.store
    cases = {c["url"]: c for c in store.takedowns.cases()}
    assert set(cases) == {site.url(p) for p in PATHS}
    assert {c["state"] for c in cases.values()} == {"pending"}
    assert {c["provider"] for c in cases.values()} == {"loopback (this machine)"}
    statuses = {
        m["status"] for m in web_ctx.store.matches.find_matches(limit=10, active_only=False)
    }
    assert statuses == {"takedown_sent"}
    sent_at = next(iter(cases.values()))["first_sent_at"]
    assert recheck(web_ctx, sent_at + timedelta(hours=23)) == {}  # nothing due before a day

    # day 1: 1 taken down, 2 replaced by another text, 3 kept, 4 kept with a changed page
    site.remove(PATHS[0])
    site.replace(PATHS[1], "公告", sample_text("lighthouse"))
    site.replace(PATHS[3], "第4章", "新增的一段广告文字，与作品无关。\n" + sample_text())
    day1 = recheck(web_ctx, sent_at + timedelta(days=1, minutes=1))
    assert day1 == {"gone": 1, "no_copy": 1, "copies": 1, "changed": 1}
    assert store.pages.page_by_url(site.url(PATHS[0]))["gone"]["status"] == 404  # "removed since"
    assert recheck(web_ctx, sent_at + timedelta(days=1, minutes=2)) == {}  # each once

    # day 3: 1 is back (reopened), 3 is gone (410); the site goes on answering
    site.restore(PATHS[0])
    site.remove(PATHS[2], status=410)
    day3 = recheck(web_ctx, sent_at + timedelta(days=3, minutes=1))
    assert day3 == {"copies": 1, "no_copy": 1, "gone": 1, "changed": 1}
    assert "gone" not in store.pages.page_by_url(site.url(PATHS[0]))  # back: no longer "removed"
    states = {c["url"]: c["state"] for c in store.takedowns.cases()}
    assert states == {
        site.url(PATHS[0]): "reopened", site.url(PATHS[1]): "removed",
        site.url(PATHS[2]): "removed", site.url(PATHS[3]): "up",
    }  # fmt: skip

    at = sent_at + timedelta(days=8)
    found = figures(store.takedowns.cases(), store.takedowns.notices(), at, 7)
    [pirate], [provider] = found["sites"], found["providers"]
    assert (pirate.notices, pirate.urls, pirate.rechecked, pirate.removed) == (1, 4, 4, 2)
    assert pirate.reopened == 1 and pirate.removal_rate == 0.5
    assert pirate.median_days == pytest.approx(2.0, abs=0.01)  # removed on days 1 and 3
    assert {e["url"] for e in pirate.escalate} == {site.url(PATHS[0]), site.url(PATHS[3])}
    assert provider.name == "loopback (this machine)" and provider.urls == 4
    assert (
        figures(store.takedowns.cases(), [], sent_at + timedelta(days=6), 7)["sites"][0].escalate
        == []
    )  # not yet 7 days

    # eight days on: the notices as sent a week and a day ago (the rechecks as made)
    eight_days_ago = sent_at - timedelta(days=8)
    store.db.takedown_cases.update_many(
        {}, {"$set": {"first_sent_at": eight_days_ago, "sent_at": eight_days_ago}}
    )
    page = as_viewer.get("/takedowns/").get_data(as_text=True)
    assert 'id="takedowns-sites"' in page and "50%" in page and site.url(PATHS[3]) in page
    csv = as_viewer.get("/takedowns/cases.csv").get_data(as_text=True)
    assert csv.count("\n") == 5 and "reopened" in csv and "gone" in csv
    token = bearer(make_token(app, "victor"))
    api = app.test_client().get("/api/v1/takedowns", headers=token)
    assert api.status_code == 200
    sites = api.get_json()["sites"]
    assert sites[0]["removal_rate"] == 0.5 and sites[0]["still_up"] == 2
    assert main(["takedowns", "list", "--json"], web_ctx) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["providers"][0]["removed"] == 2


def test_a_notice_that_cannot_go_records_nothing(
    web_ctx: Context, site: ChangingSite, capsys: pytest.CaptureFixture[str]
) -> None:
    copies(web_ctx, site)
    set_details(web_ctx)
    assert main(["takedowns", "send", "pirate", "--email", "--include-unreviewed"], web_ctx) == 1
    assert "no contact for pirate" in capsys.readouterr().err
    web_ctx.engine.store.takedowns.set_contact("pirate", contact=CONTACT)
    smtp_down = closed_port_url().replace("http://", "smtp://").removesuffix("/hook")
    ctx = Context(settings=replace(web_ctx.settings, smtp_url=smtp_down), engine=web_ctx.engine)
    assert main(["takedowns", "send", "pirate", "--email", "--include-unreviewed"], ctx) == 1
    assert f"the notice was not sent to {CONTACT}" in capsys.readouterr().err
    assert web_ctx.engine.store.takedowns.cases() == []
    assert main(["takedowns", "send", "nosuch"], web_ctx) == 1
    assert "nothing to notify" in capsys.readouterr().err

    # marked sent by hand: the rechecks start; a site that does not answer keeps its state
    assert main(["takedowns", "send", "pirate", "--include-unreviewed"], web_ctx) == 0
    assert "marked sent: 4 URL(s), 4 unreviewed match(es) named by choice" in (
        capsys.readouterr().out
    )
    [case, *_] = web_ctx.engine.store.takedowns.cases()
    site.stop()
    assert recheck(web_ctx, case["first_sent_at"] + timedelta(days=1, minutes=1)) == {
        "unreachable": 4
    }
    assert {c["state"] for c in web_ctx.engine.store.takedowns.cases()} == {"pending"}


def test_a_notice_names_what_a_person_confirmed_and_no_placeholder(
    web_ctx: Context,
    app: Flask,
    as_reviewer: FlaskClient,
    site: ChangingSite,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every path that sends refuses while the template's placeholders remain and says why;
    by default a notice names only the confirmed matches; naming unreviewed ones is a choice
    the notice keeps, and their status history says so."""
    copies(web_ctx, site)
    store = web_ctx.engine.store
    token = bearer(make_token(app, "rita"))
    api = app.test_client()
    one = next(iter(web_ctx.store.matches.find_matches(limit=1, fields=("url",))))
    assert web_ctx.store.matches.set_status(str(one["_id"]), "confirmed", "", "rita")

    # placeholders left: refused everywhere, with the reason; nothing recorded
    refused = api.post("/api/v1/takedowns/pirate", json={}, headers=token)
    assert refused.status_code == 409
    reason = refused.get_json()["error"]
    assert reason.startswith("not ready: the notice still has the placeholder(s)")
    assert PLACEHOLDERS["rights_holder"] in reason and PLACEHOLDERS["contact"] in reason
    assert main(["takedowns", "send", "pirate"], web_ctx) == 1
    assert "still has the placeholder(s)" in capsys.readouterr().err
    sent = post(as_reviewer, "/takedowns/send/pirate", {})
    assert sent.status_code == 302 and sent.headers["Location"] == "/reports/takedown/pirate"
    page = as_reviewer.get("/reports/takedown/pirate").get_data(as_text=True)
    assert "Not sent: not ready: the notice still has the placeholder(s)" in page
    preview = api.get("/api/v1/reports/takedown/pirate", headers=token).get_json()
    assert preview["ready"] is False and preview["placeholders"] == list(PLACEHOLDERS.values())
    assert store.takedowns.cases() == [] and store.takedowns.notices() == []

    # set: the notice names the confirmed match only, and says what it leaves out
    set_details(web_ctx)
    preview = api.get("/api/v1/reports/takedown/pirate", headers=token).get_json()
    assert preview["ready"] is True and preview["not_ready"] is None
    assert (preview["matches"], preview["unreviewed_left_out"]) == (1, 3)
    done = api.post("/api/v1/takedowns/pirate", json={}, headers=token)
    assert done.status_code == 201 and done.get_json()["unreviewed_named"] == 0
    assert {c["url"] for c in store.takedowns.cases()} == {one["url"]}
    [first] = store.takedowns.notices()
    assert first["statuses"] == {"confirmed": 1} and first["unreviewed_chosen"] is False
    statuses = {m["url"]: m["status"] for m in web_ctx.store.matches.find_matches(limit=10)}
    assert sorted(statuses.values()) == ["new", "new", "new", "takedown_sent"]

    # the unreviewed ones, by an explicit choice the notice keeps
    preview = api.get("/api/v1/reports/takedown/pirate?unreviewed=true", headers=token)
    assert preview.get_json()["unreviewed_named"] == 3
    done = api.post("/api/v1/takedowns/pirate?unreviewed=true", json={}, headers=token)
    assert done.status_code == 201 and done.get_json()["unreviewed_named"] == 3
    latest = store.takedowns.notices()[0]
    assert latest["statuses"] == {"new": 3, "takedown_sent": 1}
    assert latest["unreviewed_chosen"] is True
    history = [
        m for m in web_ctx.store.matches.find_matches(limit=10) if m["url"] != one["url"]
    ]  # the three named unreviewed
    assert {m["status"] for m in history} == {"takedown_sent"}
    assert all("named unreviewed, by choice" in m["note"] for m in history)
