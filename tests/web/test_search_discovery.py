"""Pirate sites found through a search engine: ``fptrack sites search`` asks a local server
answering as SearXNG's JSON API does for sentences of the registered works, and the hosts of
its results, real local sites on their own loopback addresses (127.0.0.2 ...), are sampled
over HTTP, matched and ranked, within the day's budget of queries; the search engine's
failures end the run with one line, the works not answered kept for the next run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest
from flask.testing import FlaskClient

from admin.cli import main
from admin.context import Context
from matcher.sites.site_config import SiteConfig
from matcher.store.common import now
from tests.servers.search_engine import SearchEngineServer
from tests.servers.takedown_site import ChangingSite, loopback_sites
from tests.support.web import sample_text
from tests.web.test_api import bearer, make_token
from tests.web.test_discovery import NEWS, page


@pytest.fixture
def web() -> Iterator[dict[str, ChangingSite]]:
    with loopback_sites("pirate", "honest", "watched") as sites:
        yield sites


def build(ctx: Context, web: dict[str, ChangingSite]) -> tuple[str, str]:
    """Two works registered (the tea history first); the pirate site copies both, the honest
    one is news, the watched one is watched. Returns the two texts."""
    tea, river = sample_text(), sample_text("river-town")
    ctx.engine.add_work(tea, title="茶史", source="tea-history.txt")
    ctx.engine.add_work(river, title="河镇", source="river-town.txt")
    p, h, w = web["pirate"], web["honest"], web["watched"]
    p.raw(
        "/", page("书友小说网", "最新章节", "<a href='/a.html'>茶史</a> <a href='/b.html'>河镇</a>")
    )
    p.raw("/a.html", page("茶史", tea))
    p.raw("/b.html", page("河镇", river))
    h.raw("/", page("城市新闻", NEWS))
    w.raw("/", page("盗版小说网", tea))
    ctx.store.sites.save_site(SiteConfig.from_dict({"name": "watched", "start_urls": [w.url("/")]}))
    return tea, river


def answering(web: dict[str, ChangingSite], tea: str, river: str):
    """The search engine's answer to a quoted sentence: where it is found on the local web."""

    def answer(query: str) -> list[dict]:
        sentence = query.strip('"')
        if sentence in river:
            return [
                {"url": web["pirate"].url("/b.html"), "title": "河镇 - 书友小说网"},
                {"url": web["honest"].url("/"), "title": "城市新闻"},
            ]
        if sentence in tea:
            return [
                {"url": web["pirate"].url("/a.html"), "title": "茶史 - 书友小说网"},
                {"url": web["watched"].url("/"), "title": "盗版小说网"},
            ]
        return []

    return answer


def test_search_results_lead_to_pirate_sites_within_the_day_s_budget(
    web_ctx: Context,
    web: dict[str, ChangingSite],
    as_admin: FlaskClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tea, river = build(web_ctx, web)
    with SearchEngineServer(answering(web, tea, river)) as engine:
        web_ctx.__dict__["settings"] = replace(
            web_ctx.settings, outbound_allow_private=True, search_url=engine.url("/"),
            search_daily_queries=4, search_queries_per_chapter=3,
        )  # fmt: skip
        assert main(["sites", "search", "--sample", "5", "--json"], web_ctx) == 0
        said = json.loads(capsys.readouterr().out)
        asked = list(engine.asked)
        # the budget spent: nothing more is asked today, and nothing new is found
        assert main(["sites", "search", "--sample", "5"], web_ctx) == 0
        again = capsys.readouterr().out
        assert engine.asked == asked

    # the newest work first: its one chapter's 3 sentences, then the budget's last query
    # for the other's
    assert len(asked) == 4 and all(q.startswith('"') and q.endswith('"') for q in asked)
    assert all(q.strip('"') in river for q in asked[:3]) and asked[3].strip('"') in tea
    assert (said["works"], said["queries"], said["budget_spent"], said["error"]) == (1, 4, True, "")
    assert (said["chapters"], said["index"]) == (1, "")  # chosen by the works' index
    assert said["results"] == 8
    found = {c["host"]: c for c in said["candidates"]}
    assert set(found) == {
        web["pirate"].netloc,
        web["honest"].netloc,
    }  # the watched one is no candidate
    pirate = found[web["pirate"].netloc]
    assert said["candidates"][0]["host"] == web["pirate"].netloc and pirate["pirate"]
    assert {w["title"] for w in pirate["works"]} == {"茶史", "河镇"}
    assert {lead["kind"] for lead in pirate["leads"]} == {"search"}
    assert {lead["source"] for lead in pirate["leads"]} == {q.strip('"') for q in asked}
    assert not found[web["honest"].netloc]["pirate"]
    kept = web_ctx.store.discovery.candidate(web["pirate"].netloc)
    assert kept["state"] == "new" and kept["first_seen"] and kept["score"] == pirate["score"]

    day = now().strftime("%Y-%m-%d")
    assert web_ctx.store.discovery.search_queries(day) == 4
    assert [w["title"] for w in web_ctx.store.works.works_to_search(10)] == ["茶史"]
    assert "0 chapter(s) searched for, 0 work(s) done: 0 quer(ies), 0 result(s)" in again

    listing = as_admin.get("/discovery/").get_data(as_text=True)  # the admin's Discovery page
    assert listing.index(web["pirate"].netloc) < listing.index(web["honest"].netloc)
    assert f"search for “{asked[0].strip(chr(34))}”" in listing and "河镇 - 书友小说网" in listing
    assert now().strftime("%Y-%m-%d") in listing  # first seen

    token = make_token(as_admin.application, "victor")  # a viewer reads them through the API
    api = as_admin.application.test_client()
    listed = api.get("/api/v1/candidates", headers=bearer(token)).get_json()["candidates"]
    assert [c["host"] for c in listed] == [c["host"] for c in said["candidates"]]
    assert listed[0]["leads"][0]["kind"] == "search" and listed[0]["first_seen"]
    assert "the day's 4 queries are spent (FPTRACK_SEARCH_DAILY_QUERIES)" in again


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("rate-limited", "is rate-limiting (429 Too Many Requests)"),
        ("not-json", "the answer is not SearXNG's JSON"),
        ("hang", "no whole answer within 1 s"),
    ],
)
def test_a_failing_search_engine_ends_the_run_with_one_line(
    web_ctx: Context,
    web: dict[str, ChangingSite],
    capsys: pytest.CaptureFixture[str],
    mode: str,
    said: str,
) -> None:
    tea, river = build(web_ctx, web)
    with SearchEngineServer(answering(web, tea, river), mode=mode) as engine:
        web_ctx.__dict__["settings"] = replace(
            web_ctx.settings, search_url=engine.url("/"), query_deadline=1.0
        )
        assert main(["sites", "search"], web_ctx) == 1
    out, err = capsys.readouterr()
    assert engine.asked and len(engine.asked) == 1  # not asked again after its failure
    [line] = err.strip().splitlines()
    assert line.startswith(f"fptrack sites search: the search engine at {engine.url('')}")
    assert said in line and "Traceback" not in err
    assert "0 chapter(s) searched for, 0 work(s) done: 0 quer(ies)" in out
    titles = [w["title"] for w in web_ctx.store.works.works_to_search(10)]
    assert titles == ["河镇", "茶史"]  # neither was answered: both wait for the next run


def test_without_a_search_engine_the_command_says_what_to_set(
    web_ctx: Context, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not web_ctx.settings.search_url
    assert main(["sites", "search"], web_ctx) == 2
    err = capsys.readouterr().err
    assert "no search engine: set FPTRACK_SEARCH_URL to a SearXNG instance" in err
