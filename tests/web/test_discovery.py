"""Pirate sites found before anyone reports them, on a small web of real local sites, each on
its own loopback address (127.0.0.2 ...): a watched pirate site links to a second pirate
site and to an honest one (友情链接), announces its mirror's new address in its text, and
redirects one path to a third pirate site; a site only the honest one links to is two hops
away. Discovery samples each candidate over HTTP (robots.txt obeyed), matches its pages
against the registered works, ranks the pirates first with their evidence, and one action
in the admin watches one. Those sites are internal addresses: discovery reaches them only
with ``FPTRACK_OUTBOUND_ALLOW_PRIVATE`` (set explicitly here); without it, nothing but the
watched site itself is requested, and no candidate is kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest
from flask.testing import FlaskClient

from admin.cli import main
from admin.context import Context
from matcher.sites.site_config import SiteConfig
from tests.servers.takedown_site import ChangingSite, loopback_sites
from tests.support.web import post, sample_text

NEWS = (
    "今天的城市新闻：地铁三号线延长段完成试运行，沿线新增六座车站，预计下个月正式开通。"
    "市交通部门表示，早晚高峰将加密班次，并在换乘站增设引导人员。与此同时，老城区的道路"
    "改造工程进入收尾阶段，人行道拓宽后增加了自行车停放区。\n"
) * 6


def page(title: str, body: str, links: str = "") -> str:
    paragraphs = "".join(f"<p>{line}</p>" for line in body.split("\n") if line.strip())
    return (
        f"<html><head><meta charset='gbk'><title>{title}</title></head><body>"
        f"<div class='nav'>{links}</div><h1>{title}</h1><div id='content'>{paragraphs}</div>"
        "</body></html>"
    )


@pytest.fixture
def web() -> Iterator[dict[str, ChangingSite]]:
    with loopback_sites("watched", "pirate", "honest", "mirror", "redirected", "far") as sites:
        yield sites


def build(ctx: Context, web: dict[str, ChangingSite]) -> None:
    tea, river = sample_text(), sample_text("river-town")
    ctx.engine.add_work(tea, title="茶史", source="tea-history.txt")
    ctx.engine.add_work(river, title="河镇", source="river-town.txt")
    w, p, h, m, r, f = (
        web[k] for k in ("watched", "pirate", "honest", "mirror", "redirected", "far")
    )
    mirror_address = m.netloc
    w.raw("/", page(
        "盗版小说网", f"本站新地址：{mirror_address} 请收藏\n" + tea,
        f"<a href='/book/1.html'>第一章</a> 友情链接：<a href='{p.url('/')}'>书友小说网</a>"
        f" <a href='{h.url('/')}'>城市新闻</a> <a href='/go'>备用站</a>",
    ))  # fmt: skip
    w.raw("/book/1.html", page("第一章", tea))
    w.redirect("/go", r.url("/"))
    p.raw(
        "/", page("书友小说网", "最新章节", "<a href='/a.html'>茶史</a> <a href='/b.html'>河镇</a>")
    )
    p.raw("/a.html", page("茶史", tea))
    p.raw("/b.html", page("河镇", river))
    h.raw(
        "/", page("城市新闻", NEWS, f"<a href='/n1.html'>新闻</a> <a href='{f.url('/')}'>友站</a>")
    )
    h.raw("/n1.html", page("新闻", NEWS))
    m.raw("/robots.txt", "User-agent: *\nDisallow: /private/\n")
    m.raw(
        "/",
        page("镜像站", "目录", "<a href='/private/1.html'>私</a> <a href='/c/1.html'>第一章</a>"),
    )
    m.raw("/private/1.html", page("私", tea))
    m.raw("/c/1.html", page("第一章", tea))
    r.raw("/", page("备用站", river))
    f.raw("/", page("远方的盗版站", tea))
    ctx.store.sites.save_site(SiteConfig.from_dict({"name": "watched", "start_urls": [w.url("/")]}))


def test_pirate_sites_are_found_ranked_and_watched_in_one_action(
    web_ctx: Context,
    web: dict[str, ChangingSite],
    as_admin: FlaskClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    build(web_ctx, web)
    web_ctx.__dict__["settings"] = replace(web_ctx.settings, outbound_allow_private=True)
    assert main(["sites", "discover", "--sample", "5", "--json"], web_ctx) == 0
    found = {c["host"]: c for c in json.loads(capsys.readouterr().out)}
    host = {name: site.netloc for name, site in web.items()}
    assert set(found) == {host["pirate"], host["honest"], host["mirror"], host["redirected"]}
    pirates = {h for h, c in found.items() if c["pirate"]}
    assert pirates == {host["pirate"], host["mirror"], host["redirected"]}
    assert next(iter(found)) == host["pirate"]  # copies both works: ranked first
    assert {w["title"] for w in found[host["pirate"]]["works"]} == {"茶史", "河镇"}
    kinds = {h: {lead["kind"] for lead in c["leads"]} for h, c in found.items()}
    assert kinds[host["pirate"]] == {"link"} and kinds[host["mirror"]] == {"announced"}
    assert kinds[host["redirected"]] == {"redirect"}
    link = found[host["pirate"]]["leads"][0]
    assert link["site"] == "watched" and link["words"] == "书友小说网"
    assert web["mirror"].requests["/private/1.html"] == 0  # robots.txt obeyed
    assert web["far"].requests["/"] == 0  # two hops away: not a candidate
    assert found[host["honest"]]["copying_pages"] == 0 and found[host["honest"]]["pages"] == 2

    listing = as_admin.get("/discovery/").get_data(as_text=True)
    assert listing.index(host["pirate"]) < listing.index(host["honest"])
    assert "书友小说网" in listing and "茶史" in listing
    watched = post(as_admin, f"/discovery/{host['pirate']}/watch")
    assert watched.status_code == 302
    name = host["pirate"].replace(":", "-")
    site = web_ctx.store.sites.get_site(name)
    assert site is not None and site.start_urls == (web["pirate"].url("/"),)
    assert web_ctx.engine.store.discovery.candidate(host["pirate"])["state"] == "watched"

    # dismissed: not sampled again; the watched one is a watched site now, not a candidate
    assert post(as_admin, f"/discovery/{host['honest']}/dismiss").status_code == 302
    before = web["honest"].requests["/"]
    assert main(["sites", "discover", "--sample", "5"], web_ctx) == 0
    out = capsys.readouterr().out
    assert web["honest"].requests["/"] == before
    assert "2 candidate(s), 2 pirate" in out


def test_without_the_setting_no_internal_host_is_requested_nor_kept(
    web_ctx: Context, web: dict[str, ChangingSite], capsys: pytest.CaptureFixture[str]
) -> None:
    """The default: the watched site (on a loopback address, as the operator chose) is
    read, and the hosts it links to, redirects to and announces (all internal) are listed
    as refused, never requested, robots.txt included; the store keeps no candidate."""
    build(web_ctx, web)
    assert not web_ctx.settings.outbound_allow_private
    assert main(["sites", "discover", "--sample", "5"], web_ctx) == 0
    out = capsys.readouterr().out
    assert web["watched"].requests["/"] == 1 and web["watched"].requests["/book/1.html"] == 1
    assert web["watched"].requests["/go"] == 1  # its redirect to another host: not followed
    others = ("pirate", "honest", "mirror", "redirected", "far")
    assert {name: sum(web[name].requests.values()) for name in others} == dict.fromkeys(others, 0)
    assert web_ctx.engine.store.discovery.candidates() == []
    host = {name: site.netloc for name, site in web.items()}
    for name in ("pirate", "honest", "mirror"):  # linked and announced; a redirect is no lead
        assert f"refused {host[name]}\tnot requested: {web[name].host} is a private," in out
    assert "0 candidate(s), 0 pirate" in out
    assert "3 host(s) refused by the outbound policy, not kept" in out
