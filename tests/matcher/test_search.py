"""Search-engine discovery's parts (:mod:`matcher.sites.search`) against a local server that
answers as SearXNG's JSON API does, and fails as a real instance does."""

from __future__ import annotations

import pytest

from matcher.outbound import Policy
from matcher.sites.query_choice import MAX_CHARS, query_sentences
from matcher.sites.search import (
    SEARCH_SITE,
    Result,
    SearchEngine,
    SearchError,
    parse_results,
    search_leads,
)
from tests.servers.search_engine import SearchEngineServer

CHAPTER = (
    "第十二章 渡口\n"
    "上一章 目录 下一章\n"
    "那天夜里雨下得很大，渡口的灯笼被风吹得左右摇晃。\n"
    "船夫把缆绳又紧了一圈，回头望着岸上那排黑沉沉的仓库和远处的钟楼。\n"
    "她提着竹篮走下石阶。\n"
    "竹篮里装着给父亲的药和半块冷掉的米糕，还有一封没有拆开的旧信。\n"
    "上一章 目录 下一章\n"
    "雨声里忽然传来三下急促的敲门声，仿佛有人在黑暗中等了很久很久。\n"
)
POLICY = Policy(5.0)  # the outbound policy's defaults: no internal address but its own


def test_query_sentences_are_long_said_once_and_spread_over_the_text() -> None:
    chosen = query_sentences(CHAPTER, 3)
    assert chosen == [  # the longest of each third of the text's sentences
        "那天夜里雨下得很大，渡口的灯笼被风吹得左右摇晃",
        "船夫把缆绳又紧了一圈，回头望着岸上那排黑沉沉的仓库和远处的钟楼",
        "雨声里忽然传来三下急促的敲门声，仿佛有人在黑暗中等了很久很久",
    ]
    assert query_sentences(CHAPTER, 1) == [chosen[1]]  # the longest of the whole text
    assert query_sentences(CHAPTER, 0) == []
    assert query_sentences("上一章 目录 下一章\n" * 5, 3) == []  # navigation, said again
    assert query_sentences("短句。" * 3 + "长" * (MAX_CHARS + 1) + "。", 2) == []
    english = "The rain fell hard that night over the ferry landing, and the lanterns swung."
    assert query_sentences(english, 2) == []


def test_the_results_are_read_from_searxng_json_and_bounded() -> None:
    body = (
        b'{"query": "q", "results": ['
        b'{"url": "http://pirate.example/1.html", "title": "  \\u7b2c\\u5341\\u4e8c\\u7ae0 ",'
        b' "content": "snippet"},'
        b'{"url": "http://pirate.example/1.html", "title": "again"},'
        b'{"url": "ftp://files.example/x"}, {"url": 7}, "text", {"title": "no url"},'
        b'{"url": "https://mirror.example/2"}, {"url": "http://third.example/"}]}'
    )
    assert parse_results(body, limit=2) == [
        Result("http://pirate.example/1.html", "第十二章", "snippet"),
        Result("https://mirror.example/2"),
    ]
    for bad in (b"<html>", b"[1, 2]", b'{"results": "none"}', b"\xff\xfe"):
        with pytest.raises(SearchError, match="not SearXNG's JSON"):
            parse_results(bad)


def test_a_query_is_an_exact_phrase_and_its_answers_become_leads() -> None:
    def answer(query: str) -> list[dict]:
        return [
            {"url": "http://127.0.0.3:8001/book/12.html", "title": "第十二章 渡口 - 笔趣阁"},
            {"url": "http://watched.example/12.html", "title": "already watched"},
        ]

    with SearchEngineServer(answer) as server:
        engine = SearchEngine(server.url("/"), POLICY, results=5)
        sentence = query_sentences(CHAPTER, 1)[0]
        found = {sentence: engine.search(sentence)}
    assert server.asked == [f'"{sentence}"']  # quoted: an exact phrase
    [lead] = search_leads(found, watched={"watched.example"})
    assert (lead.host, lead.kind, lead.site) == ("127.0.0.3:8001", "search", SEARCH_SITE)
    assert lead.url == "http://127.0.0.3:8001/book/12.html"
    assert lead.source == sentence and lead.words == "第十二章 渡口 - 笔趣阁"


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("rate-limited", "is rate-limiting (429 Too Many Requests)"),
        ("no-json-format", "refused the JSON format (403 Forbidden): list json in search.formats"),
        ("not-json", "the answer is not SearXNG's JSON"),
        ("hang", "no whole answer within 1 s"),
    ],
)
def test_each_failure_of_the_search_engine_is_one_line(mode: str, said: str) -> None:
    with SearchEngineServer(lambda q: [], mode=mode) as server:
        engine = SearchEngine(server.url("/"), Policy(1.0))
        with pytest.raises(SearchError) as failed:
            engine.search("那天夜里雨下得很大渡口的灯笼被风吹得左右摇晃")
    detail = failed.value.detail
    assert said in detail and f"the search engine at {server.url('')}" in detail
    assert "\n" not in detail and "Traceback" not in detail


def test_the_search_engine_may_be_internal_but_its_url_must_be_http() -> None:
    with SearchEngineServer(lambda q: [{"url": "http://a.example/"}]) as server:
        # 127.0.0.1 is internal: reached because the operator named it
        assert SearchEngine(server.url("/"), POLICY).search("x") == [Result("http://a.example/")]
    for bad in ("ftp://search.example/", "search.example", "http://"):
        with pytest.raises(SearchError, match="must be http"):
            SearchEngine(bad, POLICY)
