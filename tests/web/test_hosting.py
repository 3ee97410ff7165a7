"""Who hosts the sites with matches, through the command line (a process of its own, as an
operator runs it), the admin's pages and the API, against local RDAP services answering
saved answers shaped like the real ones (:mod:`tests.servers.rdap`); beat's weekly entry."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from itertools import count

import redis
from bson import ObjectId
from flask import Flask
from flask.testing import FlaskClient
from pymongo.database import Database

from admin.context import Context
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.worker.schedules import HOSTING_SITES
from tests.servers.rdap import RdapServices
from tests.support.cli import fptrack
from tests.web.test_api import bearer, make_token
from tests.web.test_evidence_stamps import context

SITES = {
    "cdn-pirate": "http://104.16.132.229/book/",
    "cn-pirate": "http://220.181.38.148/",
    "com-pirate": "http://www.fptrack-pirate-fixture.com/",
    "quiet": "http://185.220.101.7/",  # watched, no match: not looked up unless named
    "gone": "http://gone-pirate-fixture.org/",  # the same, and its registry knows nothing
}
QUIET = ("quiet", "gone")
_pages = count(1)


def watch(ctx: Context) -> None:
    """The sites of :data:`SITES`, each but :data:`QUIET` with an active match;
    ``cdn-pirate``'s provider edited by an operator."""
    for name, url in SITES.items():
        ctx.store.sites.save_site(SiteConfig.from_dict({"name": name, "start_urls": [url]}))
        if name not in QUIET:
            record = {"page_id": next(_pages), "work_id": ObjectId(), "site": name, "url": url}
            ctx.store.matches.upsert_match(record)
    ctx.store.takedowns.set_contact("cdn-pirate", provider="CDN we know", provider_from="edited")


def env(services: RdapServices) -> dict[str, str]:
    return {
        "FPTRACK_RDAP_BOOTSTRAP_URL": services.bootstrap_url,
        "FPTRACK_OUTBOUND_ALLOW_PRIVATE": "true",  # the RDAP servers are on 127.0.0.2
        "FPTRACK_RDAP_DEADLINE": "2",
    }


def test_the_command_looks_up_the_sites_with_matches_and_the_admin_shows_them(
    web_ctx: Context, app: Flask, as_admin: FlaskClient
) -> None:
    watch(web_ctx)
    with RdapServices() as services:
        ran = fptrack("sites", "hosting", env=env(services))
        assert ran.status == 0, ran.err
        rows = [line.split("\t") for line in ran.out.splitlines()]
        assert rows[0] == [
            "site", "addresses", "network owner", "abuse email", "registrar",
            "registrar abuse email", "looked up", "errors",
        ]  # fmt: skip
        table = {row[0]: row for row in rows[1:]}
        assert set(table) == {"cdn-pirate", "cn-pirate", "com-pirate"}  # not the quiet one
        assert table["cdn-pirate"][1:4] == [
            "104.16.132.229",
            "Cloudflare, Inc.",
            "abuse@cloudflare.com",
        ]
        assert table["cn-pirate"][2:4] == ["中国电信 China Telecom", "anti-spam@chinatelecom.cn"]
        assert table["com-pirate"][4:6] == ["NameSilo, LLC", "abuse@namesilo.com"]
        assert table["cdn-pirate"][7] == "-" and re.match(
            r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", table["cdn-pirate"][6]
        )
        assert ran.err.strip() == (
            "3 site(s) looked up: 4 RDAP request(s), 2 bootstrap file(s) fetched, 0 failed"
        )
        # within the week nothing is due; --refresh looks all up again, the bootstrap kept
        assert fptrack("sites", "hosting", env=env(services)).err.startswith("0 site(s)")
        again = fptrack("sites", "hosting", "--refresh", "--json", env=env(services))
        assert again.status == 0, again.err
        said = json.loads(again.out)
        assert [(d["site"], d["requests"], d["bootstrap_requests"]) for d in said] == [
            ("cdn-pirate", 1, 0), ("cn-pirate", 1, 0), ("com-pirate", 2, 0)
        ]  # fmt: skip
        assert len(services.requests("bootstrap")) == 2
        # a named site is looked up now, matches or not; when every lookup fails, status 1
        quiet = fptrack("sites", "hosting", "quiet", env=env(services))
        assert quiet.status == 0 and "names no abuse contact" in quiet.out
        gone = fptrack("sites", "hosting", "gone", env=env(services))
        assert gone.status == 1 and "1 failed" in gone.err
        assert "domain gone-pirate-fixture.org: not found (404)" in gone.out
        missing = fptrack("sites", "hosting", "nosuch", env=env(services))
        assert missing.status == 1 and missing.one_line_error()
        assert "no site nosuch" in missing.err

    # the edited provider stays, the resolved one is the network's owner
    contacts = web_ctx.store.takedowns.contacts()
    assert contacts["cdn-pirate"]["provider"] == "CDN we know"
    assert contacts["cn-pirate"]["provider"] == "中国电信 China Telecom"
    assert contacts["cn-pirate"]["provider_from"] == "resolved"

    page = as_admin.get("/sites/com-pirate").get_data(as_text=True)
    assert "<h2>Hosting</h2>" in page and "NameSilo, LLC" in page and "abuse@namesilo.com" in page
    assert "1479" in page and "+1.4805240066" in page
    page = as_admin.get("/sites/cdn-pirate").get_data(as_text=True)
    assert "abuse@cloudflare.com" in page and "NET-104-16-0-0-1 (104.16.0.0/12)" in page
    takedowns = as_admin.get("/takedowns/").get_data(as_text=True)
    cell = re.search(r'id="hosting-cn-pirate">(.*?)</td>', takedowns, re.S)
    assert cell and "anti-spam@chinatelecom.cn" in cell.group(1)
    assert "not looked up" not in cell.group(1)
    notice = as_admin.get("/reports/takedown/com-pirate").get_data(as_text=True)
    assert 'id="hosting-registrar"' in notice and "abuse@namesilo.com" in notice
    printed = as_admin.get("/reports/print?site=cdn-pirate&status=authorised")  # no match
    assert printed.status_code == 200
    printed = printed.get_data(as_text=True)
    assert "abuse@cloudflare.com" in printed

    token = make_token(app, "victor")
    got = app.test_client().get("/api/v1/sites/com-pirate", headers=bearer(token))
    assert got.status_code == 200
    body = got.get_json()
    assert body["name"] == "com-pirate" and body["start_urls"] == [SITES["com-pirate"]]
    hosting = body["hosting"]
    assert hosting["registrar"]["abuse_email"] == "abuse@namesilo.com"
    assert hosting["domain"] == "fptrack-pirate-fixture.com"
    assert re.match(r"\d{4}-\d\d-\d\dT", hosting["looked_up_at"])
    assert all(isinstance(e, str) for e in hosting["errors"])
    fresh = app.test_client().get("/api/v1/sites/quiet", headers=bearer(token)).get_json()
    assert fresh["hosting"]["networks"][0]["abuse_email"] == ""


def test_remote_values_are_escaped_and_a_site_never_looked_up_says_so(
    web_ctx: Context, app: Flask, as_admin: FlaskClient
) -> None:
    watch(web_ctx)
    page = as_admin.get("/sites/quiet").get_data(as_text=True)
    assert 'id="hosting-none"' in page and "fptrack sites hosting quiet" in page
    token = make_token(app, "victor")
    got = app.test_client().get("/api/v1/sites/quiet", headers=bearer(token)).get_json()
    assert got["hosting"] is None
    hostile = "<script>alert(1)</script>"
    web_ctx.store.takedowns.set_hosting(
        "quiet",
        {
            "looked_up_at": datetime(2025, 1, 1, tzinfo=UTC),
            "networks": [{"address": "185.220.101.7", "name": hostile, "abuse_email": hostile}],
            "registrar": {"name": hostile},
            "errors": [hostile],
        },
    )
    page = as_admin.get("/sites/quiet").get_data(as_text=True)
    assert hostile not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert hostile not in as_admin.get("/takedowns/").get_data(as_text=True)


def test_beat_looks_up_the_hosting_weekly_unless_told_not_to(
    mongo_db: Database, redis_client: redis.Redis
) -> None:
    assert Settings().hosting_every == 7 * 86400
    ctx = context(mongo_db, redis_client)
    try:
        ctx.schedules.ensure_daily(ctx.settings)
        [entry] = [e for e in ctx.schedules.entries() if e["name"] == HOSTING_SITES]
        assert entry["task"] == "fptrack.look_up_hosting"
        assert entry["schedule"] == "<freq: 7.00 days>"
        ctx.schedules.ensure_daily(replace(ctx.settings, hosting_every=0))
        assert HOSTING_SITES not in {e["name"] for e in ctx.schedules.entries()}
    finally:
        ctx.close()
