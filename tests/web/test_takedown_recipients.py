"""Notices to the right party (issue 41, part 3), on three real local pirate sites (each on a
loopback address of its own) that take pages down when told, with every notice emailed to a
real SMTP server: the worked example follows a month of escalation, operator -> host ->
registrar -> search engines, and the figures per recipient say which channel removed what;
then every path (the command line, the admin, the API) sends to each recipient and exports
for the search engines.

The worked example: pirate-a (3 pages) and pirate-b (2) sit on one host (HOSTONE-NET, whose
abuse address the lookup found), pirate-c (2) on another (its address edited by hand, then
looked up again: the edit stays); one registrar for the three. 7 notices: 3 to the operators,
2 to the hosts (one email for pirate-a and pirate-b together), 1 to the registrar (pirate-a
and pirate-c: pirate-b has nothing left up), 1 delisting export; 6 emails.

Those tests set each site's hosting by hand; the last joins the two parts as a deployment
runs them, each command a process of its own: ``fptrack sites hosting`` asks the local RDAP
services (:mod:`tests.servers.rdap`) who hosts two sites, and ``fptrack takedowns send SITE
--to host`` emails the abuse address the lookup found; an address set by hand outlives a new
lookup."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from datetime import timedelta
from email.message import EmailMessage
from pathlib import Path

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient
from pymongo.database import Database

from admin.cli import main
from admin.context import Context
from admin.report.selection import Selection
from admin.report.takedown_send import export_delisting, send_notice
from crawler.one_page import page_text
from matcher.evidence.takedowns import figures
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.store.common import now
from matcher.worker.ingest import Ingest
from tests.matcher.test_takedown_recipients import hosting
from tests.servers.alerts import smtp_server
from tests.servers.rdap import RdapServices
from tests.servers.takedown_site import ChangingSite, loopback_sites
from tests.support.cli import fptrack
from tests.support.web import post, sample_text
from tests.web.test_api import bearer, make_token
from tests.web.test_takedowns import recheck, set_details

PAGES = {"pirate-a": 3, "pirate-b": 2, "pirate-c": 2}
ADMIN_URL = "https://fptrack.rights.example"
HOSTONE, HOSTTWO, NOC = "abuse@hostone.example", "abuse@hosttwo.example", "noc@hosttwo.example"
REGISTRAR = "abuse@registrar.example"


@pytest.fixture
def smtp() -> Iterator[tuple[str, list]]:
    with smtp_server() as server:
        yield server


@pytest.fixture
def web_ctx(redis_client: redis.Redis, mongo_db: Database, smtp: tuple[str, list]) -> Context:
    """The web suite's context, with the SMTP server for notices and the admin's address for
    evidence links."""
    settings = Settings.from_env(
        redis_prefix="fptrack-test-web", mongo_db=mongo_db.name, smtp_url=smtp[0],
        smtp_from="fptrack@rights.example", admin_url=ADMIN_URL,
    )  # fmt: skip
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)
    return Context(settings=settings, engine=engine)


@pytest.fixture
def sites() -> Iterator[dict[str, ChangingSite]]:
    with loopback_sites(*PAGES) as served:
        yield served


def path(n: int) -> str:
    return f"/book/{n}.html"


def matched(
    ctx: Context, served: dict[str, ChangingSite], starts: Mapping[str, str] | None = None
) -> None:
    """A work, copied on ``PAGES[name]`` pages of each served site, crawled, matched and
    confirmed; each site watched from its own address (or its URL in ``starts``)."""
    text = sample_text()
    ctx.engine.add_work(text, title="茶史", source="tea-history.txt")
    queued: list[str] = []
    ingest = Ingest(ctx.engine.store, queued.append)
    for name, site in served.items():
        start = (starts or {}).get(name) or site.url("/")
        ctx.store.sites.save_site(SiteConfig.from_dict({"name": name, "start_urls": [start]}))
        for n in range(1, PAGES[name] + 1):
            url = site.put(path(n), f"第{n}章", text)
            read = page_text(site.pages[path(n)].body, "text/html; charset=gbk", url)
            ingest.page(CrawledPage(url=url, site=name, title=f"第{n}章", text=read))
    for page_id in queued:
        ctx.engine.process_stored_page(page_id)
    for m in ctx.store.matches.find_matches(limit=100, fields=("url",)):
        assert ctx.store.matches.set_status(str(m["_id"]), "confirmed", "", "rita")


def copies(ctx: Context, served: dict[str, ChangingSite], capsys: pytest.CaptureFixture) -> None:
    """:func:`matched` on every site of :data:`PAGES`; each site's operator contact, and the
    lookups of their hosts and registrar set by hand (pirate-c's host address edited before
    a new lookup, which does not replace it)."""
    matched(ctx, served)
    takedowns = ctx.engine.store.takedowns
    for name, site in served.items():
        assert main(["takedowns", "contact", name, "--email", f"ops@{name}.example"], ctx) == 0
        net = (HOSTONE, "HOSTONE-NET") if name != "pirate-c" else (HOSTTWO, "HOSTTWO-NET")
        takedowns.set_hosting(
            name, hosting(net[0], REGISTRAR, name=net[1], ip=site.host, host=f"{name}.example")
        )
    assert main(["takedowns", "contact", "pirate-c", "--to", f"host={NOC}"], ctx) == 0
    assert f"host: {NOC} (HOSTTWO-NET), edited" in capsys.readouterr().out
    takedowns.set_hosting(  # a new lookup: the edit stays
        "pirate-c", hosting(HOSTTWO, REGISTRAR, name="HOSTTWO-NET", ip=served["pirate-c"].host)
    )
    set_details(ctx)


def body(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("plain",)).get_content()


def sections(text: str) -> dict[str, str]:
    """A notice's sections by site name."""
    parts = text.split("== ")[1:]
    return {p.split("网站 / Site: ", 1)[1].split(" ==", 1)[0]: p for p in parts}


def test_a_month_of_escalation_shows_which_channel_works(
    web_ctx: Context,
    app: Flask,
    as_viewer: FlaskClient,
    sites: dict[str, ChangingSite],
    smtp: tuple[str, list],
    capsys: pytest.CaptureFixture[str],
) -> None:
    copies(web_ctx, sites, capsys)
    store, settings, mail = web_ctx.engine.store, web_ctx.settings, smtp[1]
    a, b, c = sites["pirate-a"], sites["pirate-b"], sites["pirate-c"]
    t0 = now() - timedelta(days=30)

    def day(n: float) -> object:
        return t0 + timedelta(days=n, minutes=1)

    def send(site: str, recipient: str, on: float) -> object:
        chosen = Selection.parse({}, site=site, notice=True)
        return send_notice(
            store, settings, chosen, email=True, by="rita", at=t0 + timedelta(days=on),
            recipient=recipient,
        )  # fmt: skip

    # day 0: each operator is told; pirate-a takes one page down
    for name in PAGES:
        send(name, "operator", 0)
    assert [to for to, _ in mail] == [[f"ops@{n}.example"] for n in PAGES]
    a.remove(path(1))
    assert recheck(web_ctx, day(1)) == {"gone": 1, "copies": 6}
    recheck(web_ctx, day(3))
    late = figures(store.takedowns.cases(), store.takedowns.notices(), day(8), 7)
    escalate = [e for f in late["sites"] for e in f.escalate]
    assert len(escalate) == 6 and {e["next_recipient"] for e in escalate} == {"host"}

    # day 8: the hosts; one email for pirate-a and pirate-b, which share their host
    hostone = send("pirate-a", "host", 8)
    assert hostone.sites == ("pirate-a", "pirate-b") and hostone.urls == 4
    hosttwo = send("pirate-c", "host", 8)
    assert hosttwo.to == NOC and hosttwo.urls == 2
    host_mail = mail[3:]
    assert [to for to, _ in host_mail] == [[HOSTONE], [NOC]]
    text = body(host_mail[0][1])
    assert "You host the following site(s)" in text and "HOSTONE-NET" in text
    grouped = sections(text)
    assert list(grouped) == ["pirate-a", "pirate-b"]
    assert a.url(path(2)) in grouped["pirate-a"] and a.url(path(3)) in grouped["pirate-a"]
    assert a.url(path(1)) not in text  # removed already: not escalated
    assert b.url(path(1)) in grouped["pirate-b"] and b.url(path(2)) in grouped["pirate-b"]
    assert f"IP addresses: {b.host}" in grouped["pirate-b"]
    assert f"{ADMIN_URL}/matches/" in grouped["pirate-b"]
    assert "pirate-a, pirate-b" in host_mail[0][1]["Subject"]
    a.remove(path(2))
    b.remove(path(1))
    recheck(web_ctx, day(9))
    b.remove(path(2))
    recheck(web_ctx, day(11))

    # day 16: the registrar, for what is still up (nothing of pirate-b)
    registrar = send("pirate-a", "registrar", 16)
    assert registrar.sites == ("pirate-a", "pirate-c") and registrar.urls == 3
    [(to, message)] = mail[5:]
    assert to == [REGISTRAR] and "You are the registrar" in body(message)
    assert list(sections(body(message))) == ["pirate-a", "pirate-c"]
    c.remove(path(1), status=410)
    recheck(web_ctx, day(17))

    # day 18: the search engines' delisting export of what is still up
    exported = export_delisting(
        store, settings, Selection.parse({}, notice=True), by="rita", at=t0 + timedelta(days=18)
    )
    rows = list(csv.DictReader(io.StringIO(exported.csv)))
    assert [(r["site"], r["url"]) for r in rows] == [
        ("pirate-a", a.url(path(3))), ("pirate-c", c.url(path(2))),
    ]  # fmt: skip
    assert {r["work_title"] for r in rows} == {"茶史"} and rows[0]["rights_holder"] == "星河出版社"
    assert rows[0]["evidence_link"].startswith(f"{ADMIN_URL}/matches/")
    assert len(mail) == 6  # an export is no email
    c.replace(path(2), "公告", sample_text("lighthouse"))
    for n in (19, 21, 23, 25, 29):
        recheck(web_ctx, day(n))

    # the figures per recipient: notices, URLs named, removed, rate, median days
    notices = store.takedowns.notices()
    assert sorted(n.get("recipient") for n in notices) == [
        "host", "host", "operator", "operator", "operator", "registrar", "search",
    ]  # fmt: skip
    found = figures(store.takedowns.cases(), notices, now(), 7)
    by = {f.name: f for f in found["recipients"]}
    table = {
        k: (f.notices, f.urls, f.rechecked, f.removed, round(f.removal_rate or 0, 3))
        for k, f in by.items()
    }
    assert table == {
        "operator": (3, 7, 7, 1, 0.143),
        "host": (2, 6, 6, 3, 0.5),
        "registrar": (1, 3, 3, 1, 0.333),
        "search": (1, 2, 2, 1, 0.5),
    }
    assert by["operator"].median_days == pytest.approx(1.0, abs=0.01)
    assert by["host"].median_days == pytest.approx(1.0, abs=0.01)  # days 1, 1 and 3
    assert by["registrar"].median_days == pytest.approx(1.0, abs=0.01)
    assert by["search"].median_days == pytest.approx(1.0, abs=0.01)
    [still] = by["search"].escalate
    assert still["url"] == a.url(path(3)) and still["next_recipient"] is None
    assert still["recipients"] == ["operator", "host", "registrar", "search"]

    # the same, through the command line, the admin and the API
    assert main(["takedowns", "list", "--json"], web_ctx) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {r["name"]: r["removed"] for r in listed["recipients"]} == {
        "operator": 1, "host": 3, "registrar": 1, "search": 1,
    }  # fmt: skip
    assert main(["takedowns", "list"], web_ctx) == 0
    out = capsys.readouterr().out
    assert "recipients: notices" in out and "  host\t2\t6\t6\t3\t50%\t1.0\t0" in out
    assert f"{a.url(path(3))}\ttold operator+host+registrar+search; every recipient told" in out
    page = as_viewer.get("/takedowns/").get_data(as_text=True)
    table_html = page.split('id="takedowns-recipients"')[1].split("</table>")[0]
    assert "<td>registrar</td>" in table_html and "33%" in table_html and "14%" in table_html
    assert "every recipient told" in page.split('id="takedowns-escalate"')[1]
    api = app.test_client().get("/api/v1/takedowns", headers=bearer(make_token(app, "victor")))
    rates = {r["name"]: r["removal_rate"] for r in api.get_json()["recipients"]}
    assert rates["host"] == 0.5 and rates["search"] == 0.5
    [late_api] = [e for r in api.get_json()["sites"] for e in r["escalate"]]
    assert late_api["next_recipient"] is None and late_api["recipients"][-1] == "search"


def test_every_path_sends_to_each_recipient(
    web_ctx: Context,
    app: Flask,
    as_reviewer: FlaskClient,
    as_viewer: FlaskClient,
    sites: dict[str, ChangingSite],
    smtp: tuple[str, list],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    copies(web_ctx, sites, capsys)
    store, mail = web_ctx.engine.store, smtp[1]
    a, c = sites["pirate-a"], sites["pirate-c"]
    token = bearer(make_token(app, "rita"))
    api = app.test_client()

    # the admin's preview of the host's notice: both sites, every value escaped
    page = as_viewer.get("/reports/takedown/pirate-b?recipient=host").get_data(as_text=True)
    assert "Takedown notice to the host of pirate-b, pirate-a" in page
    assert f"{HOSTONE} (HOSTONE-NET), lookup" in page and "You host the following" in page
    assert a.url(path(3)) in page and c.url(path(1)) not in page
    text = as_viewer.get("/reports/takedown/pirate-b/notice.txt?recipient=registrar")
    assert text.status_code == 200 and "You are the registrar" in text.get_data(as_text=True)
    assert as_viewer.get("/reports/takedown/pirate-b?recipient=nobody").status_code == 400

    # the command line: one email to the host of pirate-a and pirate-b
    assert main(["takedowns", "send", "pirate-b", "--to", "host", "--email"], web_ctx) == 0
    said = capsys.readouterr().out
    assert f"to the host of pirate-b, pirate-a emailed to {HOSTONE}: 5 URL(s) on 2 sites" in said
    [(to, message)] = mail
    assert to == [HOSTONE] and list(sections(body(message))) == ["pirate-b", "pirate-a"]
    [notice] = store.takedowns.notices()
    assert (notice["recipient"], notice["to"], notice["sites"]) == (
        "host", HOSTONE, ["pirate-a", "pirate-b"],
    )  # fmt: skip
    assert {c_["recipient"] for c_ in store.takedowns.cases()} == {"host"}

    # the admin: the host of pirate-c, at the edited address
    sent = post(as_reviewer, "/takedowns/send/pirate-c", {"email": "1", "recipient": "host"})
    assert sent.status_code == 302 and sent.headers["Location"].endswith("/takedowns/")
    assert mail[1][0] == [NOC] and "pirate-c" in mail[1][1]["Subject"]

    # the API: the registrar, one email for the three sites
    done = api.post(
        "/api/v1/takedowns/pirate-a", json={"email": True, "recipient": "registrar"}, headers=token
    )
    assert done.status_code == 201, done.get_json()
    answer = done.get_json()
    assert answer["recipient"] == "registrar" and answer["sites"] == [
        "pirate-a",
        "pirate-b",
        "pirate-c",
    ]
    assert answer["urls"] == 7 and answer["to"] == REGISTRAR and len(mail) == 3
    refused = api.post("/api/v1/takedowns/pirate-a", json={"recipient": "search"}, headers=token)
    assert refused.status_code == 400 and "recipient must be one of" in refused.get_json()["error"]

    # the operator, as before; every case records each recipient told
    assert main(["takedowns", "send", "pirate-a"], web_ctx) == 0
    assert "to pirate-a (loopback (this machine)) marked sent: 3 URL(s)" in capsys.readouterr().out
    kept = {x["url"]: x for x in store.takedowns.cases()}
    assert kept[a.url(path(1))]["recipients"] == ["host", "registrar", "operator"]
    assert kept[c.url(path(2))]["recipients"] == ["host", "registrar"]

    # the delisting export: the command line, the admin, the API; each kept as a notice
    out = tmp_path / "delisting.csv"
    assert (
        main(["takedowns", "export-delisting", "--site", "pirate-c", "--out", str(out)], web_ctx)
        == 0
    )
    assert "to the search engines (delisting export of pirate-c) exported: 2 URL(s)" in (
        capsys.readouterr().out
    )
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8-sig"))))
    assert [r["url"] for r in rows] == [c.url(path(1)), c.url(path(2))]
    assert rows[0]["rights_holder"] == "星河出版社" and rows[0]["match_id"]
    assert main(["takedowns", "export-delisting"], web_ctx) == 0
    printed = capsys.readouterr()
    assert printed.out.count("\n") == 8 and "exported: 7 URL(s) on 3 sites" in printed.err
    download = post(as_reviewer, "/takedowns/delisting.csv", {"site": "pirate-b"})
    assert download.status_code == 200 and download.mimetype == "text/csv"
    got = list(csv.DictReader(io.StringIO(download.get_data().decode("utf-8-sig"))))
    assert {r["site"] for r in got} == {"pirate-b"} and len(got) == 2
    csv_api = api.post("/api/v1/delisting?site=pirate-a", headers=token)
    assert csv_api.status_code == 200 and csv_api.mimetype == "text/csv"
    assert csv_api.get_data(as_text=True).splitlines()[0].startswith("url,site,work_title")
    searched = [n for n in store.takedowns.notices() if n["recipient"] == "search"]
    assert len(searched) == 4 and {n["via"] for n in searched} == {"export"}
    assert all(x["recipient"] == "search" and x["next_at"] for x in store.takedowns.cases())
    assert len(mail) == 3  # exports are not emailed

    # what cannot go says why, in one line; nothing is recorded
    notices = len(store.takedowns.notices())
    store.db.site_contacts.update_one({"_id": "pirate-b"}, {"$unset": {"hosting": ""}})
    assert main(["takedowns", "send", "pirate-b", "--to", "registrar", "--email"], web_ctx) == 1
    assert "no registrar abuse address for pirate-b: set one" in capsys.readouterr().err
    assert main(["takedowns", "contact", "pirate-b", "--to", "webmaster=x@y.example"], web_ctx) == 2
    assert "--to webmaster=x@y.example: give KIND=EMAIL" in capsys.readouterr().err
    assert main(["takedowns", "contact", "pirate-b", "--to", "host=nobody"], web_ctx) == 2
    assert len(store.takedowns.notices()) == notices
    for x in a.pages:
        a.remove(x)
    recheck(web_ctx, now() + timedelta(days=1, minutes=1))
    assert main(["takedowns", "send", "pirate-a", "--to", "host"], web_ctx) == 1
    assert "every URL of pirate-a is removed already: nothing to escalate" in (
        capsys.readouterr().err
    )
    refused = api.post("/api/v1/delisting?site=pirate-a", headers=token)
    assert refused.status_code == 409 and "nothing to export" in refused.get_json()["error"]
    flashed = post(
        as_reviewer, "/takedowns/delisting.csv", {"site": "pirate-a"}, follow_redirects=True
    )
    assert "Not exported: no confirmed match still up on pirate-a" in flashed.get_data(as_text=True)


def test_what_a_lookup_says_is_shown_escaped(
    web_ctx: Context,
    as_admin: FlaskClient,
    sites: dict[str, ChangingSite],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The RDAP answer is remote data: a network or registrar name that is markup is shown as
    text on the Takedowns page and in the host's and registrar's notice previews."""
    copies(web_ctx, sites, capsys)
    hostile = hosting(
        HOSTONE, REGISTRAR, name="<script>alert('net')</script>", ip=sites["pirate-a"].host
    )
    hostile["registrar"]["name"] = "<img src=x onerror=alert('reg')>"
    web_ctx.engine.store.takedowns.set_hosting("pirate-a", hostile)
    pages = [
        as_admin.get("/takedowns/").get_data(as_text=True),
        as_admin.get("/reports/takedown/pirate-a?recipient=host").get_data(as_text=True),
        as_admin.get("/reports/takedown/pirate-a?recipient=registrar").get_data(as_text=True),
    ]
    for page in pages:
        assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(" in pages[0] and "&lt;img src=x" in pages[0]
    assert "&lt;script&gt;alert(" in pages[1] and "&lt;img src=x" in pages[2]
    bundle = as_admin.get("/reports/takedown/pirate-a/evidence.zip?recipient=host")
    assert bundle.status_code == 400

    # an admin's edit of the host's address is kept over the lookup, and can be undone
    form = {"contact": "ops@pirate-a.example", "host_email": "noc@hostone.example"}
    assert post(as_admin, "/takedowns/contact/pirate-a", form).status_code == 302
    page = as_admin.get("/reports/takedown/pirate-a?recipient=host").get_data(as_text=True)
    assert "noc@hostone.example" in page and "edited" in page
    web_ctx.engine.store.takedowns.set_hosting("pirate-a", hostile)  # looked up again
    assert "noc@hostone.example" in as_admin.get("/takedowns/").get_data(as_text=True)
    post(as_admin, "/takedowns/contact/pirate-a", {**form, "host_email": ""})
    page = as_admin.get("/reports/takedown/pirate-a?recipient=host").get_data(as_text=True)
    assert f"{HOSTONE} (" in page and "noc@hostone.example" not in page


PUBLIC = {"pirate-a": "104.16.132.229", "pirate-b": "104.16.132.230"}
"""The public addresses two of the sites are watched at: in the ARIN network of the local
RDAP services (:mod:`tests.servers.rdap`), Cloudflare's, whose abuse contact is
:data:`CLOUDFLARE`. A loopback address is never looked up, so, as in the hosting tests, the
start URL names the public address; the pages crawled and matched are the loopback sites'."""
CLOUDFLARE, EDITED = "abuse@cloudflare.com", "legal@cdn-desk.example"


def test_the_host_notice_goes_where_the_lookup_found_the_abuse_desk_unless_one_was_set(
    web_ctx: Context, smtp: tuple[str, list]
) -> None:
    """Who hosts a site (part 2) and the notice to its host (part 3) as a deployment runs
    them, each command a process of its own: ``fptrack sites hosting`` asks the RDAP
    services, ``fptrack takedowns send SITE --to host`` emails the abuse address found, one
    email for the two sites that share it; an address set by hand outlives a new lookup."""
    store, mail = web_ctx.engine.store, smtp[1]
    with loopback_sites(*PUBLIC, first=5) as served, RdapServices() as services:
        matched(web_ctx, served, {name: f"http://{ip}/" for name, ip in PUBLIC.items()})
        set_details(web_ctx)
        env = {
            "FPTRACK_RDAP_BOOTSTRAP_URL": services.bootstrap_url,
            "FPTRACK_OUTBOUND_ALLOW_PRIVATE": "true",  # the RDAP servers are on 127.0.0.2
            "FPTRACK_RDAP_DEADLINE": "2",
            "FPTRACK_SMTP_URL": smtp[0],
            "FPTRACK_SMTP_FROM": "fptrack@rights.example",
            "FPTRACK_ADMIN_URL": ADMIN_URL,
            "FPTRACK_REDIS_PREFIX": web_ctx.settings.redis_prefix,
        }

        # who hosts them: the ARIN network of each address, the same abuse desk
        looked = fptrack("sites", "hosting", env=env)
        assert looked.status == 0, looked.err
        rows = {r[0]: r[1:4] for r in (line.split("\t") for line in looked.out.splitlines()[1:])}
        assert rows == {name: [ip, "Cloudflare, Inc.", CLOUDFLARE] for name, ip in PUBLIC.items()}
        assert services.requests("rdap") == [f"/arin/registry/ip/{ip}" for ip in PUBLIC.values()]
        contacts = store.takedowns.contacts()
        assert not any(contacts[name].get("host_email") for name in PUBLIC)  # nothing by hand

        # the host's notice: one email to the abuse address found, a section per site
        sent = fptrack("takedowns", "send", "pirate-b", "--to", "host", "--email", env=env)
        assert sent.status == 0, sent.err
        assert (
            f"to the host of pirate-b, pirate-a emailed to {CLOUDFLARE}: 5 URL(s) on 2 sites"
            in sent.out
        )
        [(to, message)] = mail
        assert to == [CLOUDFLARE] and message["To"] == CLOUDFLARE
        assert message["Subject"].endswith(": pirate-b, pirate-a")
        text = body(message)
        assert "To: Cloudflare, Inc." in text and "You host the following site(s)" in text
        grouped = sections(text)
        assert list(grouped) == ["pirate-b", "pirate-a"]
        for name, ip in PUBLIC.items():
            assert f"IP addresses: {ip}" in grouped[name]
            for n in range(1, PAGES[name] + 1):
                assert served[name].url(path(n)) in grouped[name]
        [notice] = store.takedowns.notices()
        assert (notice["recipient"], notice["via"], notice["to"], notice["sites"]) == (
            "host", "email", CLOUDFLARE, ["pirate-a", "pirate-b"],
        )  # fmt: skip
        cases = store.takedowns.cases()
        assert len(cases) == 5 and {c["recipient"] for c in cases} == {"host"}

        # an address set by hand for pirate-a's host; a new lookup does not replace it
        edited = fptrack("takedowns", "contact", "pirate-a", "--to", f"host={EDITED}", env=env)
        assert edited.status == 0, edited.err
        assert f"host: {EDITED} (Cloudflare, Inc.), edited" in edited.out
        first = store.takedowns.hosting("pirate-a")["attempted_at"]
        again = fptrack("sites", "hosting", "--refresh", env=env)
        assert again.status == 0, again.err
        assert again.err.strip() == (
            "2 site(s) looked up: 2 RDAP request(s), 0 bootstrap file(s) fetched, 0 failed"
        )
        assert len(services.requests("rdap")) == 4
        kept = store.takedowns.contacts()["pirate-a"]
        assert kept["host_email"] == EDITED and kept["hosting"]["attempted_at"] > first
        assert kept["hosting"]["networks"][0]["abuse_email"] == CLOUDFLARE  # the lookup's, kept

        nxt = fptrack("takedowns", "send", "pirate-a", "--to", "host", "--email", env=env)
        assert nxt.status == 0, nxt.err
        assert f"to the host of pirate-a emailed to {EDITED}: 3 URL(s)" in nxt.out
        assert [to for to, _ in mail] == [[CLOUDFLARE], [EDITED]]
        assert list(sections(body(mail[1][1]))) == ["pirate-a"]  # pirate-b's desk is another
        later = store.takedowns.notices()
        assert sorted((n["recipient"], n["to"], tuple(n["sites"])) for n in later) == [
            ("host", CLOUDFLARE, ("pirate-a", "pirate-b")), ("host", EDITED, ("pirate-a",)),
        ]  # fmt: skip
